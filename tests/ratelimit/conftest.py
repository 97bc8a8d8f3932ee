"""Shared helpers: rules from YAML text, a fixed clock, a store that records its calls."""

from __future__ import annotations

import textwrap
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from generated.proto.envoy.extensions.common.ratelimit.v3 import ratelimit_pb2
from generated.proto.envoy.service.ratelimit.v3 import rls_pb2
from handlers.ratelimit import algorithms
from handlers.ratelimit.backends.base import Increment, LimitCheck
from handlers.ratelimit.backends.memory import MemoryStore
from handlers.ratelimit.config.model import RuleSet, Unit
from handlers.ratelimit.config.parse import load_rule_set
from handlers.ratelimit.limiter import Limiter
from handlers.ratelimit.local_cache import LocalCache
from handlers.ratelimit.matching import MatchedLimit
from handlers.ratelimit.service import RateLimitService
from handlers.ratelimit.settings import Modes
from handlers.ratelimit.stats import ServiceStats


def rules(*documents: str, merge: bool = False) -> RuleSet:
    files = [(f"file{i}.yaml", textwrap.dedent(text)) for i, text in enumerate(documents)]
    return load_rule_set(files, merge_domains=merge)


def descriptor(
    *entries: tuple[str, str],
    hits: int | None = None,
    limit: tuple[int, int] | None = None,
) -> ratelimit_pb2.RateLimitDescriptor:
    d = ratelimit_pb2.RateLimitDescriptor()
    for key, value in entries:
        d.entries.add(key=key, value=value)
    if hits is not None:
        d.hits_addend.value = hits
    if limit is not None:
        d.limit.requests_per_unit, d.limit.unit = limit  # type: ignore[assignment]
    return d


def request(
    domain: str, *descriptors: ratelimit_pb2.RateLimitDescriptor, hits: int = 0
) -> rls_pb2.RateLimitRequest:
    return rls_pb2.RateLimitRequest(domain=domain, descriptors=descriptors, hits_addend=hits)


class Clock:
    def __init__(self, now: float = 1234.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


@dataclass
class RecordingStore:
    """A MemoryStore that records every call (one list entry per round trip)."""

    inner: MemoryStore = field(default_factory=MemoryStore)
    increments: list[list[Increment]] = field(default_factory=list)
    gets: list[list[tuple[str, bool]]] = field(default_factory=list)
    decisions: list[list[LimitCheck]] = field(default_factory=list)
    peeks: list[list[LimitCheck]] = field(default_factory=list)

    async def start(self) -> None:
        return None

    async def get(self, keys: Sequence[tuple[str, bool]]) -> list[int]:
        self.gets.append(list(keys))
        return await self.inner.get(keys)

    async def increment(self, increments: Sequence[Increment]) -> list[int]:
        self.increments.append(list(increments))
        return await self.inner.increment(increments)

    async def decide(
        self, checks: Sequence[LimitCheck], now_ms: int
    ) -> list[algorithms.Decision[Any]]:
        self.decisions.append(list(checks))
        return await self.inner.decide(checks, now_ms)

    async def peek(
        self, checks: Sequence[LimitCheck], now_ms: int
    ) -> list[algorithms.Decision[Any]]:
        self.peeks.append(list(checks))
        return await self.inner.peek(checks, now_ms)

    def connected(self) -> bool:
        return True

    async def close(self) -> None:
        return None

    async def value(self, key: str) -> int:
        return (await self.inner.get([(key, False)]))[0]


@dataclass
class Harness:
    service: RateLimitService
    stats: ServiceStats
    store: RecordingStore
    clock: Clock

    def counter(self, name: str) -> int:
        return self.stats.store.value(name)

    def rule(self, key: str) -> dict[str, int]:
        s = self.stats.rate_limit(key)
        return {
            "total_hits": s.total_hits.value,
            "over_limit": s.over_limit.value,
            "near_limit": s.near_limit.value,
            "within_limit": s.within_limit.value,
            "over_limit_with_local_cache": s.over_limit_with_local_cache.value,
            "shadow_mode": s.shadow_mode.value,
        }


def harness(
    *documents: str,
    modes: Modes | None = None,
    local_cache_bytes: int = 0,
    now: float = 1234.0,
    **limiter: Any,
) -> Harness:
    clock = Clock(now)
    stats = ServiceStats()
    store = RecordingStore()
    cache = LocalCache(local_cache_bytes, stats.store) if local_cache_bytes else None
    service = RateLimitService(
        Limiter(
            store,
            clock=clock,
            expiration_jitter_max_seconds=limiter.pop("expiration_jitter_max_seconds", 0),
            local_cache=cache,
            **limiter,
        ),
        stats,
        modes,
    )
    if documents:
        service.set_rules(rules(*documents), modes)
    return Harness(service, stats, store, clock)


def every_kind_of_limit() -> list[MatchedLimit | None]:
    """None (a status without a limit) and a limit of every unit, with and without a name
    (one that needs JSON escapes, one long enough for a status over 127 bytes) and with
    requests_per_unit from 0 to the uint32 maximum: for checking the hand-written encoders."""
    stats = ServiceStats()
    made: list[MatchedLimit | None] = [None]
    for unit, requests, name in [
        (Unit.SECOND, 1, ""),
        (Unit.MINUTE, 0, "named"),
        (Unit.HOUR, 1_000_000_000, 'q"\\ ✓'),
        (Unit.DAY, 127, ""),
        (Unit.WEEK, 128, "w" * 200),
        (Unit.MONTH, (1 << 32) - 1, ""),
        (Unit.YEAR, 3, "y"),
    ]:
        made.append(
            MatchedLimit(
                requests_per_unit=requests,
                unit=unit,
                stats=stats.rate_limit(f"d.{unit.name}"),
                name=name,
            )
        )
    return made
