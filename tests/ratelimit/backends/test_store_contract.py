"""The counter store contract: the same cases against MemoryStore, RedisStore (single) and
MemcacheStore (two nodes).

Time passes on a fake clock for the memory store and for real (sleeping) for Redis and
memcached, whose expiry runs on the server's clock.

memcached is driven as upstream's integration tests drive it: each call returns once its
background increments are applied (:class:`~tests.ratelimit.memcached_servers.SettledStore`).
Two of its semantics legitimately differ, and are flags of the harness, each tested in its
own right in ``test_memcache.py``: ``decides_before_increment`` (a call's values are the
counters read before the call plus each amount, so the same key twice in one call does not
see its first increment, and counters above int32 read as 0) and
``increments_refresh_expiry`` (memcached sets the expiry when a counter is created only).
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass

import pytest

from handlers.ratelimit.backends.base import CounterStore, Increment
from handlers.ratelimit.backends.memcache import MemcacheStore
from handlers.ratelimit.backends.memory import MemoryStore
from handlers.ratelimit.backends.redis import RedisStore
from handlers.ratelimit.settings import KvStoreSettings
from tests.ratelimit.memcached_servers import SettledStore, memcached_nodes, store_settings

__all__ = ["memcached_nodes"]  # the fixture


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@dataclass
class Harness:
    store: CounterStore
    elapse: Callable[[float], Awaitable[None]]
    prefix: str
    decides_before_increment: bool = False
    """memcache: values are the counters read before the call plus each amount."""
    increments_refresh_expiry: bool = True
    """Every increment restarts the counter's expiry (not memcache's)."""

    def key(self, name: str) -> str:
        return self.prefix + name

    def inc(
        self, name: str, amount: int = 1, expire: int = 60, per_second: bool = False
    ) -> Increment:
        return Increment(self.key(name), amount, expire, per_second)


@pytest.fixture(params=["memory", "redis", "memcache"])
async def harness(request: pytest.FixtureRequest) -> AsyncIterator[Harness]:
    prefix = f"contract-{uuid.uuid4().hex[:8]}-"
    store: CounterStore
    elapse: Callable[[float], Awaitable[None]]
    if request.param == "memory":
        clock = FakeClock()

        async def advance(seconds: float) -> None:
            clock.now += seconds

        store, elapse = MemoryStore(clock), advance
    elif request.param == "redis":
        server = request.getfixturevalue("redis_server")
        store = RedisStore(KvStoreSettings(socket_type="tcp", url=server.address))
        elapse = asyncio.sleep
    else:
        nodes = request.getfixturevalue("memcached_nodes")
        store, elapse = SettledStore(MemcacheStore(store_settings(nodes))), asyncio.sleep
    memcache = request.param == "memcache"
    await store.start()
    try:
        yield Harness(
            store,
            elapse,
            prefix,
            decides_before_increment=memcache,
            increments_refresh_expiry=not memcache,
        )
    finally:
        await store.close()


async def test_increment_returns_each_value_after_its_increment(harness: Harness) -> None:
    store = harness.store
    assert await store.increment([harness.inc("a", 3), harness.inc("b", 1)]) == [3, 1]
    assert await store.increment([harness.inc("b", 5), harness.inc("a", 1)]) == [6, 4]


async def test_same_key_twice_in_one_call_counts_in_order(harness: Harness) -> None:
    store = harness.store
    values = await store.increment([harness.inc("a", 2), harness.inc("a", 3)])
    assert values == ([2, 3] if harness.decides_before_increment else [2, 5])
    assert await store.get([(harness.key("a"), False)]) == [5]


async def test_zero_amount_reads_without_changing(harness: Harness) -> None:
    store = harness.store
    assert await store.increment([harness.inc("a", 0)]) == [0]
    await store.increment([harness.inc("a", 7)])
    assert await store.increment([harness.inc("a", 0)]) == [7]


async def test_large_amounts(harness: Harness) -> None:
    big = 2**40
    values = await harness.store.increment([harness.inc("a", big), harness.inc("a", big)])
    if harness.decides_before_increment:  # both read 0; 2**41 then reads as 0 (not an int32)
        assert values == [big, big]
        assert await harness.store.get([(harness.key("a"), False)]) == [0]
    else:
        assert values == [big, 2 * big]


async def test_get_missing_is_zero_and_keeps_order(harness: Harness) -> None:
    store = harness.store
    await store.increment([harness.inc("a", 4), harness.inc("c", 2)])
    keys = [(harness.key(name), False) for name in ("c", "missing", "a")]
    assert await store.get(keys) == [2, 0, 4]


async def test_get_does_not_create_or_change(harness: Harness) -> None:
    store = harness.store
    assert await store.get([(harness.key("a"), False)]) == [0]
    assert await store.get([(harness.key("a"), False)]) == [0]
    assert await store.increment([harness.inc("a")]) == [1]


async def test_empty_calls(harness: Harness) -> None:
    assert await harness.store.increment([]) == []
    assert await harness.store.get([]) == []


async def test_per_second_flag_without_a_second_instance_uses_the_same_counters(
    harness: Harness,
) -> None:
    store = harness.store
    await store.increment([harness.inc("a", 2, per_second=True), harness.inc("a", 1)])
    assert await store.get([(harness.key("a"), True), (harness.key("a"), False)]) == [3, 3]


async def test_counter_expires_after_expire_seconds(harness: Harness) -> None:
    store = harness.store
    assert await store.increment([harness.inc("a", 5, expire=1)]) == [5]
    await harness.elapse(1.1)
    assert await store.get([(harness.key("a"), False)]) == [0]
    assert await store.increment([harness.inc("a", 2, expire=1)]) == [2]


async def test_every_increment_refreshes_the_expiry(harness: Harness) -> None:
    if not harness.increments_refresh_expiry:
        pytest.skip(
            "memcache sets the expiry when a counter is created only (upstream); see "
            "test_memcache.py::test_expiry_is_set_when_the_counter_is_created_and_not_refreshed"
        )
    store = harness.store
    await store.increment([harness.inc("a", 1, expire=2)])
    await harness.elapse(1.0)
    await store.increment([harness.inc("a", 1, expire=2)])
    await harness.elapse(1.5)  # past the first expiry, within the refreshed one
    assert await store.get([(harness.key("a"), False)]) == [2]
    await harness.elapse(0.6)
    assert await store.get([(harness.key("a"), False)]) == [0]


async def test_connected_once_started(harness: Harness) -> None:
    assert harness.store.connected()
