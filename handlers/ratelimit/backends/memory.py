"""The in-memory counter store: the embedded default, with Redis's counting semantics.

Counters live in this process (one worker), expire like Redis keys (the expiry is refreshed
by every increment) and are swept lazily as windows pass. Issue 23's limits (sliding windows,
token buckets, windows of any length) keep the state ``algorithms.py`` returns, with its
expiry in the limiter's clock, and are decided by the functions there.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

from handlers.ratelimit import algorithms
from handlers.ratelimit.backends.base import Increment, LimitCheck
from handlers.ratelimit.backends.stored_state import decide

_SWEEP_EVERY = 4096


class MemoryStore:
    """Counters in a dict: ``key -> [value, expires_at]``."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._counters: dict[str, list[float]] = {}
        self._clock = clock
        self._operations = 0
        self._states: dict[str, tuple[Any, int]] = {}
        """Issue 23's limits: ``key -> (state, expires at in the limiter's ms)``."""
        self._decisions = 0

    async def start(self) -> None:
        return None

    async def get(self, keys: Sequence[tuple[str, bool]]) -> list[int]:
        now = self._clock()
        values = []
        for key, _ in keys:
            entry = self._counters.get(key)
            values.append(int(entry[0]) if entry is not None and entry[1] > now else 0)
        return values

    async def increment(self, increments: Sequence[Increment]) -> list[int]:
        now = self._clock()
        counters = self._counters
        results = []
        for inc in increments:
            entry = counters.get(inc.key)
            if entry is None or entry[1] <= now:
                entry = counters[inc.key] = [0, 0.0]
            entry[0] += inc.amount
            entry[1] = now + inc.expire_seconds
            results.append(int(entry[0]))
        self._operations += len(increments)
        if self._operations >= _SWEEP_EVERY:
            self._operations = 0
            self._sweep(now)
        return results

    async def decide(
        self, checks: Sequence[LimitCheck], now_ms: int
    ) -> list[algorithms.Decision[Any]]:
        """Decides each check with ``algorithms.py`` and keeps its new state until its
        ``ttl_ms`` (no ``await`` in between: atomic within the process)."""
        states = self._states
        results: list[algorithms.Decision[Any]] = []
        for check in checks:
            entry = states.get(check.key)
            state = entry[0] if entry is not None and entry[1] > now_ms else None
            decision = decide(check, state, now_ms)
            if decision.state is None:
                states.pop(check.key, None)
            else:
                states[check.key] = (decision.state, now_ms + decision.ttl_ms)
            results.append(decision)
        self._decisions += len(checks)
        if self._decisions >= _SWEEP_EVERY:
            self._decisions = 0
            expired = [key for key, (_, expires) in states.items() if expires <= now_ms]
            for key in expired:
                del states[key]
        return results

    async def peek(
        self, checks: Sequence[LimitCheck], now_ms: int
    ) -> list[algorithms.Decision[Any]]:
        """Each check decided on its key's state at ``now_ms``, nothing stored."""
        states = self._states
        results: list[algorithms.Decision[Any]] = []
        for check in checks:
            entry = states.get(check.key)
            state = entry[0] if entry is not None and entry[1] > now_ms else None
            results.append(decide(check, state, now_ms))
        return results

    def _sweep(self, now: float) -> None:
        expired = [key for key, (_, expires) in self._counters.items() if expires <= now]
        for key in expired:
            del self._counters[key]

    def __len__(self) -> int:
        return len(self._counters) + len(self._states)

    def connected(self) -> bool:
        return True

    async def close(self) -> None:
        self._counters.clear()
        self._states.clear()
