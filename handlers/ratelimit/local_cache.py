"""The in-process cache of over-limit keys (``LOCAL_CACHE_SIZE_IN_BYTES``).

Once a key is found over its limit, later requests in the same window are answered
OVER_LIMIT from here without touching the cache server. The window start is part of the
key, so a new window never hits an old entry; entries also expire after the window length.
Memory is bounded by an estimate of each entry's size; the least recently used entries are
evicted first.

Its gauges are upstream's (freecache's counters): ``ratelimit.localcache.hitCount``,
``missCount`` and ``lookupCount`` (every lookup is a hit or a miss), ``entryCount``,
``expiredCount`` (entries found or evicted past their expiry), ``evacuateCount`` (live entries
evicted for room), ``overwriteCount`` (a key added again) and ``averageAccessTime`` (the mean
Unix time, in seconds, at which the entries were last added or found).
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

from handlers.ratelimit.stats import StatsStore

# bookkeeping per entry besides the key's bytes (dict slot, float, list, linked node)
_ENTRY_OVERHEAD = 96
GAUGE_PREFIX = "ratelimit.localcache."


@dataclass(slots=True)
class _Entry:
    expires: float  # on the monotonic clock
    accessed: int  # Unix seconds of the last add or hit


class LocalCache:
    """Over-limit keys with their expiry, bounded to about ``size_bytes`` of memory.

    ``clock`` times the expiries; ``wall_clock`` gives the Unix time of ``averageAccessTime``.
    """

    def __init__(
        self,
        size_bytes: int,
        stats: StatsStore | None = None,
        clock: Callable[[], float] = time.monotonic,
        wall_clock: Callable[[], float] = time.time,
    ) -> None:
        self._capacity = size_bytes
        self._used = 0
        self._entries: OrderedDict[str, _Entry] = OrderedDict()
        self._clock = clock
        self._wall_clock = wall_clock
        self._accessed_total = 0  # sum of the entries' access times
        store = stats if stats is not None else StatsStore()
        prefix = GAUGE_PREFIX
        self._hits = store.gauge(prefix + "hitCount")
        self._misses = store.gauge(prefix + "missCount")
        self._lookups = store.gauge(prefix + "lookupCount")
        self._entry_count = store.gauge(prefix + "entryCount")
        self._expired = store.gauge(prefix + "expiredCount")
        self._evacuated = store.gauge(prefix + "evacuateCount")
        self._overwritten = store.gauge(prefix + "overwriteCount")
        self._average_access_time = store.gauge(
            prefix + "averageAccessTime", averaged_over=prefix + "entryCount"
        )

    def contains(self, key: str) -> bool:
        """Whether ``key`` is known to be over its limit (counts a hit or a miss)."""
        self._lookups.value += 1
        entry = self._entries.get(key)
        if entry is not None:
            if entry.expires > self._clock():
                self._entries.move_to_end(key)
                self._touch(entry)
                self._hits.value += 1
                return True
            self._remove(key)
            self._expired.value += 1
        self._misses.value += 1
        return False

    def add(self, key: str, ttl_seconds: int) -> None:
        """Remember ``key`` as over its limit for ``ttl_seconds``."""
        expires = self._clock() + ttl_seconds
        entry = self._entries.get(key)
        if entry is not None:
            self._overwritten.value += 1
            self._entries.move_to_end(key)
            entry.expires = expires
            self._touch(entry)
        else:
            self._used += len(key) + _ENTRY_OVERHEAD
            entry = _Entry(expires, int(self._wall_clock()))
            self._entries[key] = entry
            self._accessed_total += entry.accessed
        now = self._clock()
        while self._used > self._capacity and self._entries:
            oldest = next(iter(self._entries))
            expired = self._entries[oldest].expires <= now
            self._remove(oldest)
            (self._expired if expired else self._evacuated).value += 1
        self._update_gauges()

    def _touch(self, entry: _Entry) -> None:
        accessed = int(self._wall_clock())
        self._accessed_total += accessed - entry.accessed
        entry.accessed = accessed
        self._update_gauges()

    def _remove(self, key: str) -> None:
        entry = self._entries.pop(key)
        self._used -= len(key) + _ENTRY_OVERHEAD
        self._accessed_total -= entry.accessed
        self._update_gauges()

    def _update_gauges(self) -> None:
        count = len(self._entries)
        self._entry_count.value = count
        self._average_access_time.value = self._accessed_total // count if count else 0

    def __len__(self) -> int:
        return len(self._entries)
