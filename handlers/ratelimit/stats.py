"""Statistics kept in memory: counters, gauges and timers by name, and the per-rule set.

Names follow the upstream (gostats) paths, e.g.
``ratelimit.service.rate_limit.<domain>.<key>.total_hits``; rule keys and domains are
sanitized as upstream (``:`` and ``|`` become ``_``, the dots of IPv4 addresses too). Sinks
read the values through :meth:`StatsStore.counters`, ``gauges`` and ``timers``.
"""

from __future__ import annotations

import random
import re
import threading
from dataclasses import dataclass

_IPV4 = re.compile(r"\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3}")
_SEPARATORS = str.maketrans({":": "_", "|": "_"})


def sanitize(name: str) -> str:
    """A rule key or domain as it may appear in a stat name."""
    return _IPV4.sub(lambda m: m.group(0).replace(".", "_"), name.translate(_SEPARATORS))


class Counter:
    """A monotonically increasing count."""

    __slots__ = ("name", "value")

    def __init__(self, name: str) -> None:
        self.name = name
        self.value = 0

    def add(self, amount: int = 1) -> None:
        self.value += amount


class Gauge:
    """A value that goes up and down. ``averaged_over`` names the gauge that counts what this
    one is an average over (e.g. entries): merged over processes, it is the mean weighted by
    that gauge, not the sum."""

    __slots__ = ("averaged_over", "name", "value")

    def __init__(self, name: str, averaged_over: str | None = None) -> None:
        self.name = name
        self.value = 0
        self.averaged_over = averaged_over

    def set(self, value: int) -> None:
        self.value = value


MAX_PENDING_SAMPLES = 4096
"""Timer samples kept between two drains; beyond that a uniform sample of them is kept."""


@dataclass(frozen=True, slots=True)
class TimerSamples:
    """What a timer recorded since the last drain: the exact ``count`` and ``total_ms``, and the
    samples (all of them, or a uniform sample of ``MAX_PENDING_SAMPLES`` when there were more)."""

    samples_ms: list[float]
    count: int
    total_ms: float


class Timer:
    """Durations in milliseconds: how many were recorded, their sum, and the samples recorded
    since the last :meth:`drain` (for the sinks)."""

    __slots__ = ("_pending", "_pending_count", "_pending_total_ms", "count", "name", "total_ms")

    def __init__(self, name: str) -> None:
        self.name = name
        self.count = 0
        self.total_ms = 0.0
        self._pending: list[float] = []
        self._pending_count = 0
        self._pending_total_ms = 0.0

    def record(self, milliseconds: float) -> None:
        self.count += 1
        self.total_ms += milliseconds
        self._pending_count += 1
        self._pending_total_ms += milliseconds
        if len(self._pending) < MAX_PENDING_SAMPLES:
            self._pending.append(milliseconds)
        else:  # reservoir sampling keeps the kept samples uniform over the interval
            # (random() rather than randrange: this runs on every request once the reservoir
            # is full, as it stays where no sink drains it)
            slot = int(random.random() * self._pending_count)
            if slot < MAX_PENDING_SAMPLES:
                self._pending[slot] = milliseconds

    def drain(self) -> TimerSamples:
        """The samples since the last drain, and start a new interval."""
        drained = TimerSamples(self._pending, self._pending_count, self._pending_total_ms)
        self._pending = []
        self._pending_count = 0
        self._pending_total_ms = 0.0
        return drained


class StatsStore:
    """Every stat of the process by name; creating one that exists returns it."""

    def __init__(self) -> None:
        self._counters: dict[str, Counter] = {}
        self._gauges: dict[str, Gauge] = {}
        self._timers: dict[str, Timer] = {}
        self._lock = threading.Lock()

    def counter(self, name: str) -> Counter:
        found = self._counters.get(name)
        if found is None:
            with self._lock:
                found = self._counters.setdefault(name, Counter(name))
        return found

    def gauge(self, name: str, *, averaged_over: str | None = None) -> Gauge:
        """The gauge ``name``; ``averaged_over``: see :class:`Gauge`."""
        found = self._gauges.get(name)
        if found is None:
            with self._lock:
                found = self._gauges.setdefault(name, Gauge(name, averaged_over))
        return found

    def timer(self, name: str) -> Timer:
        found = self._timers.get(name)
        if found is None:
            with self._lock:
                found = self._timers.setdefault(name, Timer(name))
        return found

    def counters(self) -> dict[str, int]:
        return {name: c.value for name, c in list(self._counters.items())}

    def gauges(self) -> dict[str, int]:
        return {name: g.value for name, g in list(self._gauges.items())}

    def gauge_weights(self) -> dict[str, str]:
        """``{gauge: the gauge it is averaged over}`` for the averaged gauges."""
        return {
            name: g.averaged_over
            for name, g in list(self._gauges.items())
            if g.averaged_over is not None
        }

    def timers(self) -> dict[str, Timer]:
        return dict(self._timers)

    def value(self, name: str) -> int:
        """A counter's or gauge's current value (0 if never created): for tests and /stats."""
        if name in self._counters:
            return self._counters[name].value
        if name in self._gauges:
            return self._gauges[name].value
        return 0


@dataclass(frozen=True, slots=True)
class RateLimitStats:
    """The counters of one rule (or one detailed/override stats key)."""

    key: str
    total_hits: Counter
    over_limit: Counter
    near_limit: Counter
    over_limit_with_local_cache: Counter
    within_limit: Counter
    shadow_mode: Counter


class ServiceStats:
    """The service's named stats over a store; per-rule stats are shared by key across
    configuration reloads."""

    def __init__(self, store: StatsStore | None = None) -> None:
        self.store = store if store is not None else StatsStore()
        s = self.store
        self.config_load_success = s.counter("ratelimit.service.config_load_success")
        self.config_load_error = s.counter("ratelimit.service.config_load_error")
        self.global_shadow_mode = s.counter("ratelimit.service.global_shadow_mode")
        self.redis_error = s.counter("ratelimit.service.call.should_rate_limit.redis_error")
        self.service_error = s.counter("ratelimit.service.call.should_rate_limit.service_error")
        self._rules: dict[str, RateLimitStats] = {}
        self._domains: dict[str, Counter] = {}

    def rate_limit(self, key: str) -> RateLimitStats:
        """The counters of stats key ``key`` (``domain.path``), created on first use."""
        found = self._rules.get(key)
        if found is not None:
            return found
        prefix = "ratelimit.service.rate_limit." + sanitize(key) + "."
        s = self.store
        found = RateLimitStats(
            key=key,
            total_hits=s.counter(prefix + "total_hits"),
            over_limit=s.counter(prefix + "over_limit"),
            near_limit=s.counter(prefix + "near_limit"),
            over_limit_with_local_cache=s.counter(prefix + "over_limit_with_local_cache"),
            within_limit=s.counter(prefix + "within_limit"),
            shadow_mode=s.counter(prefix + "shadow_mode"),
        )
        return self._rules.setdefault(key, found)

    def domain_not_found(self, domain: str) -> Counter:
        found = self._domains.get(domain)
        if found is None:
            name = "ratelimit.service.rate_limit." + sanitize(domain) + ".domain_not_found"
            found = self._domains.setdefault(domain, self.store.counter(name))
        return found
