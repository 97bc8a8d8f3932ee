"""Fixed-window counting: cache keys, one round trip to the store, statuses and statistics.

The arithmetic is the upstream's, to the unit: uint64 hit counts, uint32 remaining
allowance, and the near-limit threshold computed in float32.
"""

from __future__ import annotations

import struct
import time
from collections.abc import Callable, Mapping, Sequence
from random import random
from typing import Any, NamedTuple, TypeAlias

from generated.proto.envoy.service.ratelimit.v3 import rls_pb2
from handlers.ratelimit import algorithms
from handlers.ratelimit.backends.base import (
    BackendError,
    CounterStore,
    Increment,
    LimitCheck,
)
from handlers.ratelimit.local_cache import LocalCache
from handlers.ratelimit.matching import Entries, MatchedLimit

Code: TypeAlias = rls_pb2.RateLimitResponse.Code.ValueType
OK = rls_pb2.RateLimitResponse.OK
OVER_LIMIT = rls_pb2.RateLimitResponse.OVER_LIMIT

_UINT64 = 1 << 64
# makes an Increment without calling its constructor (a NamedTuple's is a Python function)
_new_tuple = tuple.__new__
_FLOAT32 = struct.Struct("f")


def float32(value: float) -> float:
    """``value`` rounded to the nearest float32, as Go's ``float32(value)``."""
    result: float = _FLOAT32.unpack(_FLOAT32.pack(value))[0]
    return result


def near_limit_threshold(limit: int, ratio: float) -> int:
    """``floor(float32(limit) * float32(ratio))`` as the upstream computes it."""
    return int(float32(float32(limit) * float32(ratio)))


def key_stem(prefix: str, domain: str, entries: Entries, limit: MatchedLimit) -> str:
    """The counter key of ``entries`` under ``limit`` without its window start:
    ``prefix + domain_ + (key_value_ per entry)``, a share_threshold entry counted under its
    wildcard."""
    patterns = limit.share_patterns
    if patterns:
        entries = tuple(
            (key, patterns.get(index, value)) for index, (key, value) in enumerate(entries)
        )
    body = "".join([f"{key}_{value}_" for key, value in entries])
    stem = f"{prefix}{domain}_{body}"
    if limit.tag and not limit.advanced:
        # a fixed window of whole seconds that is not one unit: upstream's counting, under a
        # key of its own (``stem + "fw30000_" + window start``)
        return f"{stem}{limit.tag}_"
    return stem  # an advanced limit's keys are ``stem + tag`` of each of its limits


Reported: TypeAlias = dict[int, tuple[MatchedLimit, int]]
"""Statuses of issue 23's limits (``MatchedLimit.advanced``), by index: the limit reported as
``current_limit`` (the deciding one of several) and the whole seconds until reset (rounded
up)."""

Counted: TypeAlias = tuple[list[Code], list[int], int, Reported | None]
"""What counting a request's descriptors gave: per descriptor in order, its code (OK or
OVER_LIMIT; OK without a limit or in shadow mode) and the hits left in its window (0 where over
the limit or without a limit); then the time counted at, in whole seconds (the windows' reset
is measured from it); then the statuses of issue 23's limits, None when there is none. A plain
tuple: one is made per request."""


def response_message(
    overall_code: Code,
    codes: Sequence[Code],
    remaining: Sequence[int],
    limits: Sequence[MatchedLimit | None],
    now: int,
    resets: Mapping[int, int] | None = None,
) -> rls_pb2.RateLimitResponse:
    """The response with these statuses: each with its code and remaining hits, and where it
    has a limit, that limit as ``current_limit`` and the seconds until its window resets
    (``resets[i]`` where given: issue 23's limits)."""
    response = rls_pb2.RateLimitResponse()
    if overall_code:  # set as an attribute: a keyword argument to the constructor costs more
        response.overall_code = overall_code
    # statuses are built in place: a status made on its own is copied again when added
    add = response.statuses.add
    for index, (code, left, limit) in enumerate(zip(codes, remaining, limits, strict=True)):
        status = add()
        status.code = code
        if left:
            status.limit_remaining = left
        if limit is not None:
            status.current_limit.CopyFrom(limit.current)
            if resets is not None and index in resets:
                status.duration_until_reset.seconds = resets[index]
                continue
            divider = limit.divider  # seconds_until_reset, without a call per status
            status.duration_until_reset.seconds = divider - now % divider
    return response


class LimitReading(NamedTuple):
    """One limit's state, read without counting (the counters API)."""

    limit: MatchedLimit
    used: int
    """The allowance taken: the allowance (``burst`` or ``requests_per_unit``) minus
    ``remaining``."""
    remaining: int
    """The most hits a request could carry now and be admitted by this limit."""
    reset_ms: int
    """Until the whole allowance is back with nothing else counted: a fixed window's end
    (whatever its count, as its ``duration_until_reset``), 0 for a sliding window or a token
    bucket that is whole."""
    deciding: bool
    """Whether a decision now would report this limit."""


class Limiter:
    """Counts a request's hits in a :class:`CounterStore` and decides each descriptor."""

    def __init__(
        self,
        store: CounterStore,
        *,
        cache_key_prefix: str = "",
        near_limit_ratio: float = 0.8,
        expiration_jitter_max_seconds: int = 300,
        stop_increment_when_over_limit: bool = False,
        local_cache: LocalCache | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.store = store
        self._prefix = cache_key_prefix
        self._ratio = near_limit_ratio
        self._jitter_max = expiration_jitter_max_seconds
        self._stop_when_over = stop_increment_when_over_limit
        self._local_cache = local_cache
        self._clock = clock
        self._near: dict[int, int] = {}

    def now(self) -> int:
        return int(self._clock())

    def key_stem(self, domain: str, entries: Entries, limit: MatchedLimit) -> str:
        """:func:`key_stem` with this limiter's cache key prefix (callers may keep it for as
        long as ``limit`` applies to ``entries``)."""
        return key_stem(self._prefix, domain, entries, limit)

    async def count(
        self,
        stems: Sequence[str],
        limits: Sequence[MatchedLimit | None],
        hits: Sequence[int],
        checks: Sequence[LimitCheck] | None = None,
    ) -> Counted:
        """Counts each descriptor's hits under its limit and decides it; ``None`` limits (no
        rule, replaced, unlimited) are OK without touching the store. ``stems`` are the
        descriptors' :meth:`key_stem` (any string for a ``None`` limit); ``checks`` are
        :meth:`checks` of the same arguments where the caller kept them. The statuses of a
        response are :func:`response_message` of what this returns.

        This runs for every request: the common steps are written out here rather than
        called (a call per descriptor costs more than the step)."""
        clock = self._clock()
        now = int(clock)
        keys: list[str] = []  # "" where nothing is counted
        advanced = counted = False
        for limit, stem, hit in zip(limits, stems, hits, strict=True):
            if limit is None:
                keys.append("")
            else:
                limit.stats.total_hits.value += hit
                if limit.advanced:
                    keys.append("")
                    advanced = True
                    continue
                divider = limit.divider  # cache_key, inline
                keys.append(f"{stem}{now // divider * divider}")
                counted = True
        reported: Reported | None = None
        statuses: dict[int, tuple[Code, int]] = {}
        if advanced:
            if checks is None:
                checks = self.checks(stems, limits, hits)
            reported, statuses = await self._decide_advanced(limits, hits, checks, clock)
            if not counted:  # only issue 23's limits (and none): nothing for the counters
                only_codes: list[Code] = [OK] * len(keys)
                only_remaining = [0] * len(keys)
                for i, (code, left) in statuses.items():
                    only_codes[i] = code
                    only_remaining[i] = left
                return only_codes, only_remaining, now, reported

        # which keys are over in the local cache (None: none is)
        local_over: list[bool] | None = None
        cache = self._local_cache
        if cache is not None:
            local_over = [bool(key) and cache.contains(key) for key in keys]
            if not any(local_over):
                local_over = None

        amounts = hits
        if self._stop_when_over:
            amounts = await self._stop_amounts(keys, limits, hits, local_over is not None)

        increments: list[Increment] = []
        jitter_max = self._jitter_max
        for i, key in enumerate(keys):
            if key and (local_over is None or not local_over[i]):
                limit = limits[i]
                assert limit is not None
                expire = limit.divider
                if jitter_max > 0:
                    expire += int(random() * jitter_max)
                increments.append(
                    _new_tuple(Increment, (key, amounts[i], expire, limit.per_second))
                )
        results = await self.store.increment(increments) if increments else ()

        codes: list[Code] = []
        remaining: list[int] = []
        position = 0
        near_thresholds = self._near
        for i, key in enumerate(keys):
            limit = limits[i]
            if limit is None:
                codes.append(OK)
                remaining.append(0)
            elif limit.advanced:
                codes.append(OK)  # set by _decide_advanced below
                remaining.append(0)
            elif local_over is not None and local_over[i]:
                codes.append(self._local_over(limit, hits[i]))
                remaining.append(0)
            else:
                after = results[position]
                position += 1
                hit = hits[i]
                ceiling = limit.requests_per_unit
                near = near_thresholds.get(ceiling)
                if near is None:
                    near = self._near_threshold(ceiling)
                if hit <= after <= near and after <= ceiling:  # short of near the limit
                    codes.append(OK)
                    limit.stats.within_limit.value += hit
                    remaining.append(ceiling - after)
                else:
                    codes.append(self._decide(limit, key, after, hit))
                    remaining.append(ceiling - after if after <= ceiling else 0)
        if reported is not None:
            for i, (code, left) in statuses.items():
                codes[i] = code
                remaining[i] = left
        return codes, remaining, now, reported

    async def read(
        self, stems: Sequence[str], limits: Sequence[MatchedLimit | None]
    ) -> list[tuple[LimitReading, ...]]:
        """Each descriptor's limits (``()`` for a ``None`` limit) and their state now, read
        from the store without counting: upstream's windows with a ``get`` of the counter
        :meth:`count` would increment, issue 23's limits decided with 0 hits by the store's
        ``peek``."""
        clock = self._clock()
        now, now_ms = int(clock), int(clock * 1000)
        readings: list[tuple[LimitReading, ...]] = [() for _ in limits]
        counted = [
            (i, limit, limit.divider)
            for i, limit in enumerate(limits)
            if limit is not None and not limit.advanced
        ]
        if counted:
            values = await self.store.get(
                [
                    (f"{stems[i]}{now // divider * divider}", limit.per_second)
                    for i, limit, divider in counted
                ]
            )
            for (i, limit, divider), value in zip(counted, values, strict=True):
                left = max(limit.requests_per_unit - value, 0)
                end_ms = (now // divider * divider + divider) * 1000
                used = limit.requests_per_unit - left
                readings[i] = (LimitReading(limit, used, left, max(end_ms - now_ms, 0), True),)
        checks = self.checks(stems, limits, [0] * len(limits))
        if not checks:
            return readings
        peek = getattr(self.store, "peek", None)
        if peek is None:  # every backend has it; a store of the tests may not
            raise BackendError("this backend decides only upstream's fixed windows")
        decisions: list[algorithms.Decision[Any]] = await peek(checks, now_ms)
        position = 0
        for i, matched in enumerate(limits):
            if matched is None or not matched.advanced:
                continue
            group = (matched, *matched.others)
            found = decisions[position : position + len(group)]
            position += len(group)
            reported = algorithms.combine(found).reported  # as _decide_advanced reports
            readings[i] = tuple(
                LimitReading(
                    each,
                    (each.burst or each.requests_per_unit) - decision.limit_remaining,
                    decision.limit_remaining,
                    decision.duration_until_reset_ms,
                    index == reported,
                )
                for index, (each, decision) in enumerate(zip(group, found, strict=True))
            )
        return readings

    @staticmethod
    def checks(
        stems: Sequence[str], limits: Sequence[MatchedLimit | None], hits: Sequence[int]
    ) -> tuple[LimitCheck, ...]:
        """What the store decides for the descriptors of issue 23's limits (each limit of
        each, in order); a function of its arguments alone, so callers that see the same
        request again may keep it (the service keeps it in the request's plan)."""
        checks: list[LimitCheck] = []
        for limit, stem, hit in zip(limits, stems, hits, strict=True):
            if limit is not None and limit.advanced:
                for each in (limit, *limit.others):
                    checks.append(
                        LimitCheck(
                            stem + each.tag,
                            each.algorithm,
                            each.requests_per_unit,
                            each.window_ms,
                            each.burst,
                            hit,
                        )
                    )
        return tuple(checks)

    async def _decide_advanced(
        self,
        limits: Sequence[MatchedLimit | None],
        hits: Sequence[int],
        checks: Sequence[LimitCheck],
        clock: float,
    ) -> tuple[Reported, dict[int, tuple[Code, int]]]:
        """Decides the descriptors of issue 23's limits in the store (one call for all) and
        counts their statistics; returns what their statuses report, and their codes and
        remaining hits, by index."""
        # an attribute, not isinstance(store, AlgorithmStore): a runtime Protocol check costs
        # more than the decision
        decide = getattr(self.store, "decide", None)
        if decide is None:  # every backend has it; a store of the tests may not
            raise BackendError("this backend decides only upstream's fixed windows")
        decisions: list[algorithms.Decision[Any]] = await decide(checks, int(clock * 1000))
        reported: Reported = {}
        statuses: dict[int, tuple[Code, int]] = {}
        position = 0
        for i, limit in enumerate(limits):
            if limit is None or not limit.advanced:
                continue
            count = 1 + len(limit.others)
            group = decisions[position : position + count]
            position += count
            shown = limit
            if count == 1:
                over = group[0].over_limit
                left = group[0].limit_remaining
                duration_ms = group[0].duration_until_reset_ms
            else:
                combined = algorithms.combine(group)
                shown = (limit, *limit.others)[combined.reported]
                over = combined.over_limit
                left = combined.limit_remaining
                duration_ms = combined.duration_until_reset_ms
            statuses[i] = (self._advanced_code(limit, shown, over, left, hits[i]), left)
            reported[i] = (shown, -(-duration_ms // 1000))
        return reported, statuses

    def _advanced_code(
        self, limit: MatchedLimit, shown: MatchedLimit, over: bool, left: int, hits: int
    ) -> Code:
        """The statistics and code of an issue 23 descriptor: over counts all its hits (only
        admitted hits are counted by the sliding window and the token bucket), near counts the
        admitted hits past the near-limit share of the reported limit's allowance (its
        ``burst`` for a token bucket), used = allowance - remaining playing upstream's
        "after"."""
        stats = limit.stats
        if over:
            stats.over_limit.add(hits)
            if limit.shadow_mode:
                stats.shadow_mode.add(hits)
                return OK
            return OVER_LIMIT
        stats.within_limit.add(hits)
        allowance = shown.burst or shown.requests_per_unit
        near = self._near_threshold(allowance)
        used = allowance - left
        if used > near:
            stats.near_limit.add(min(hits, used - near))
        return OK

    async def _stop_amounts(
        self,
        keys: list[str],
        limits: Sequence[MatchedLimit | None],
        hits: Sequence[int],
        any_local_over: bool,
    ) -> list[int]:
        """STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT: when one key would go over, only the keys
        that would go over are incremented; when one is over in the local cache, none."""
        if any_local_over:
            return [0] * len(keys)
        present = [(i, key) for i, key in enumerate(keys) if key]
        if not present:
            return list(hits)
        values = await self.store.get(
            [(key, limits[i].per_second) for i, key in present]  # type: ignore[union-attr]
        )
        would_exceed = [False] * len(keys)
        for (i, _), value in zip(present, values, strict=True):
            limit = limits[i]
            assert limit is not None
            would_exceed[i] = value + hits[i] > limit.requests_per_unit
        if not any(would_exceed):
            return list(hits)
        return [h if over else 0 for h, over in zip(hits, would_exceed, strict=True)]

    def _near_threshold(self, limit: int) -> int:
        found = self._near.get(limit)
        if found is None:
            found = self._near[limit] = near_limit_threshold(limit, self._ratio)
        return found

    def _local_over(self, limit: MatchedLimit, hits: int) -> Code:
        """Counts a key over its limit in the local cache; its code."""
        stats = limit.stats
        stats.over_limit.add(hits)
        stats.over_limit_with_local_cache.add(hits)
        code = OVER_LIMIT
        if limit.shadow_mode:
            code = OK
            stats.shadow_mode.add(hits)
        return code

    def _decide(self, limit: MatchedLimit, key: str, after: int, hits: int) -> Code:
        """Counts the statistics of a key counted to ``after``; its code."""
        stats = limit.stats
        ceiling = limit.requests_per_unit
        near = self._near_threshold(ceiling)
        before = (after - hits) % _UINT64
        if after > ceiling:
            code = OVER_LIMIT
            if before >= ceiling:
                stats.over_limit.add(hits)
            else:
                stats.over_limit.add(after - ceiling)
                stats.near_limit.add(ceiling - max(near, before))
            if self._local_cache is not None:
                self._local_cache.add(key, limit.divider)
        else:
            code = OK
            stats.within_limit.add(hits)
            if after > near:
                stats.near_limit.add(hits if before >= near else after - near)
        if code == OVER_LIMIT and limit.shadow_mode:
            code = OK
            stats.shadow_mode.add(hits if before >= ceiling else after - ceiling)
        return code
