"""The in-memory counter store: the embedded default, with Redis's counting semantics.

Counters live in this process (one worker), expire like Redis keys (the expiry is refreshed
by every increment) and are swept lazily as windows pass.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

from handlers.ratelimit.backends.base import Increment

_SWEEP_EVERY = 4096


class MemoryStore:
    """Counters in a dict: ``key -> [value, expires_at]``."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._counters: dict[str, list[float]] = {}
        self._clock = clock
        self._operations = 0

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

    def _sweep(self, now: float) -> None:
        expired = [key for key, (_, expires) in self._counters.items() if expires <= now]
        for key in expired:
            del self._counters[key]

    def __len__(self) -> int:
        return len(self._counters)

    def connected(self) -> bool:
        return True

    async def close(self) -> None:
        self._counters.clear()
