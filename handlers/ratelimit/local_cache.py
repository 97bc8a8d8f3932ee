"""The in-process cache of over-limit keys (``LOCAL_CACHE_SIZE_IN_BYTES``).

Once a key is found over its limit, later requests in the same window are answered
OVER_LIMIT from here without touching the cache server. The window start is part of the
key, so a new window never hits an old entry; entries also expire after the window length.
Memory is bounded by an estimate of each entry's size; the least recently used entries are
evicted first.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable

from handlers.ratelimit.stats import StatsStore

# bookkeeping per entry besides the key's bytes (dict slot, float, list, linked node)
_ENTRY_OVERHEAD = 96


class LocalCache:
    """Over-limit keys with their expiry, bounded to about ``size_bytes`` of memory."""

    def __init__(
        self,
        size_bytes: int,
        stats: StatsStore | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._capacity = size_bytes
        self._used = 0
        self._entries: OrderedDict[str, float] = OrderedDict()
        self._clock = clock
        store = stats if stats is not None else StatsStore()
        prefix = "ratelimit.localcache."
        self._hits = store.gauge(prefix + "hitCount")
        self._misses = store.gauge(prefix + "missCount")
        self._lookups = store.gauge(prefix + "lookupCount")
        self._entry_count = store.gauge(prefix + "entryCount")
        self._expired = store.gauge(prefix + "expiredCount")
        self._evacuated = store.gauge(prefix + "evacuateCount")
        self._overwritten = store.gauge(prefix + "overwriteCount")

    def contains(self, key: str) -> bool:
        """Whether ``key`` is known to be over its limit (counts a hit or a miss)."""
        self._lookups.value += 1
        expires = self._entries.get(key)
        if expires is not None:
            if expires > self._clock():
                self._entries.move_to_end(key)
                self._hits.value += 1
                return True
            self._remove(key)
            self._expired.value += 1
        self._misses.value += 1
        return False

    def add(self, key: str, ttl_seconds: int) -> None:
        """Remember ``key`` as over its limit for ``ttl_seconds``."""
        if key in self._entries:
            self._overwritten.value += 1
            self._entries.move_to_end(key)
        else:
            self._used += len(key) + _ENTRY_OVERHEAD
        self._entries[key] = self._clock() + ttl_seconds
        while self._used > self._capacity and self._entries:
            oldest = next(iter(self._entries))
            self._remove(oldest)
            self._evacuated.value += 1
        self._entry_count.value = len(self._entries)

    def _remove(self, key: str) -> None:
        del self._entries[key]
        self._used -= len(key) + _ENTRY_OVERHEAD
        self._entry_count.value = len(self._entries)

    def __len__(self) -> int:
        return len(self._entries)
