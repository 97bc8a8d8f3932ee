"""The over-limit local cache and its upstream gauges (``ratelimit.localcache.*``)."""

from __future__ import annotations

from handlers.ratelimit.local_cache import GAUGE_PREFIX, LocalCache
from handlers.ratelimit.stats import StatsStore

GAUGES = (
    "hitCount",
    "missCount",
    "lookupCount",
    "entryCount",
    "expiredCount",
    "evacuateCount",
    "overwriteCount",
    "averageAccessTime",
)
"""Every local-cache gauge the reference names (§2.13 and §5)."""


class Clocks:
    """A monotonic clock and a wall clock moved by hand."""

    def __init__(self) -> None:
        self.monotonic = 100.0
        self.wall = 1_700_000_000.0

    def advance(self, seconds: float) -> None:
        self.monotonic += seconds
        self.wall += seconds


def gauges(store: StatsStore) -> dict[str, int]:
    values = store.gauges()
    return {name: values[GAUGE_PREFIX + name] for name in GAUGES}


def make_cache(size_bytes: int = 1 << 20) -> tuple[LocalCache, StatsStore, Clocks]:
    store, clocks = StatsStore(), Clocks()
    cache = LocalCache(size_bytes, store, lambda: clocks.monotonic, lambda: clocks.wall)
    return cache, store, clocks


def test_every_gauge_exists_from_the_start() -> None:
    _, store, _ = make_cache()
    assert gauges(store) == dict.fromkeys(GAUGES, 0)


def test_lookups_count_hits_and_misses_and_expired_entries() -> None:
    cache, store, clocks = make_cache()
    assert not cache.contains("a_1")
    cache.add("a_1", 60)
    assert cache.contains("a_1")
    assert cache.contains("a_1")
    clocks.advance(61)
    assert not cache.contains("a_1")  # expired: removed, counted, a miss
    assert gauges(store) | {"averageAccessTime": 0} == {
        "hitCount": 2,
        "missCount": 2,
        "lookupCount": 4,
        "entryCount": 0,
        "expiredCount": 1,
        "evacuateCount": 0,
        "overwriteCount": 0,
        "averageAccessTime": 0,
    }
    assert len(cache) == 0


def test_adding_a_known_key_overwrites_it() -> None:
    cache, store, clocks = make_cache()
    cache.add("a_1", 10)
    clocks.advance(8)
    cache.add("a_1", 10)  # a new expiry from now
    clocks.advance(8)
    assert cache.contains("a_1")
    assert gauges(store)["overwriteCount"] == 1
    assert gauges(store)["entryCount"] == 1


def test_live_entries_are_evacuated_and_expired_ones_counted_as_expired() -> None:
    key_size = len("key_0") + 96  # the key's bytes and the per-entry estimate
    cache, store, clocks = make_cache(size_bytes=3 * key_size)
    cache.add("key_0", 5)
    cache.add("key_1", 60)
    cache.add("key_2", 60)
    clocks.advance(10)  # key_0 is past its expiry but still held
    cache.add("key_3", 60)  # evicts key_0: expired
    cache.add("key_4", 60)  # evicts key_1: live, evacuated
    assert len(cache) == 3
    assert not cache.contains("key_1")
    assert cache.contains("key_4")
    values = gauges(store)
    assert (values["expiredCount"], values["evacuateCount"], values["entryCount"]) == (1, 1, 3)


def test_average_access_time_is_the_mean_unix_second_of_the_last_access() -> None:
    cache, store, clocks = make_cache()
    start = int(clocks.wall)
    cache.add("a_1", 600)
    assert gauges(store)["averageAccessTime"] == start
    clocks.advance(100)
    cache.add("b_1", 600)
    assert gauges(store)["averageAccessTime"] == start + 50
    clocks.advance(100)
    assert cache.contains("a_1")  # a hit moves a_1's access to start + 200
    assert gauges(store)["averageAccessTime"] == (start + 200 + start + 100) // 2
    clocks.advance(1000)
    assert not cache.contains("a_1")  # expired and removed: only b_1 is left
    assert gauges(store)["averageAccessTime"] == start + 100
    assert not cache.contains("b_1")
    assert gauges(store)["averageAccessTime"] == 0
