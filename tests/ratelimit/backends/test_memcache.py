"""MemcacheStore on two real memcached nodes: upstream's decide-then-increment semantics, the
CRC-32 key placement, malformed keys, expirations, failures and TLS."""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
import zlib
from collections.abc import AsyncIterator, Awaitable, Callable

import pytest

from handlers.ratelimit.backends.base import BackendError, Increment
from handlers.ratelimit.backends.memcache import MemcacheStore
from handlers.ratelimit.backends.memcache_connections import GETS, CasValues, MemcacheConnection
from handlers.ratelimit.backends.memcache_servers import pick
from handlers.ratelimit.stats import StatsStore
from tests.ratelimit.memcached_servers import (
    MemcachedProcess,
    memcached_nodes,
    memcached_tls_node,
    node_of,
    open_store,
    store_settings,
    ttl,
)
from tests.ratelimit.redis_servers import eventually

__all__ = ["memcached_nodes", "memcached_tls_node"]  # the fixtures

TIMEOUT = 0.5


def unique(name: str = "k") -> str:
    return f"mc-{uuid.uuid4().hex[:12]}-{name}"


def inc(key: str, amount: int = 1, expire: int = 60) -> Increment:
    return Increment(key, amount, expire, False)


def key_on(index: int, count: int = 2) -> str:
    """A fresh key that the CRC-32 selection puts on node ``index``."""
    while True:
        key = unique()
        if zlib.crc32(key.encode()) % count == index:
            return key


@pytest.fixture
async def store(memcached_nodes: list[MemcachedProcess]) -> AsyncIterator[MemcacheStore]:
    async with open_store(store_settings(memcached_nodes), timeout=TIMEOUT) as opened:
        yield opened


def test_pick_is_crc32_ieee_modulo_the_node_count() -> None:
    # 0xCBF43926 is the CRC-32/IEEE check value of "123456789" (Go's crc32.ChecksumIEEE)
    counts = (2, 3, 7)
    assert [pick(b"123456789", n) for n in counts] == [0xCBF43926 % n for n in counts]
    assert pick(b"123456789", 1) == 0


async def test_keys_land_on_the_node_upstream_picks(
    store: MemcacheStore, memcached_nodes: list[MemcachedProcess]
) -> None:
    keys = [unique(str(i)) for i in range(40)]
    await store.increment([inc(key) for key in keys])
    await store.flush()
    placed = {key: node_of(memcached_nodes, key) for key in keys}
    assert all(held == {zlib.crc32(key.encode()) % 2: b"1"} for key, held in placed.items())
    assert {index for held in placed.values() for index in held} == {0, 1}


async def test_decides_on_the_value_read_then_increments(
    store: MemcacheStore, memcached_nodes: list[MemcachedProcess]
) -> None:
    key = unique()
    assert await store.increment([inc(key, 3)]) == [3]
    await store.flush()
    assert await store.increment([inc(key, 2), inc(key, 4)]) == [5, 7]  # both read 3
    await store.flush()
    assert node_of(memcached_nodes, key) == {zlib.crc32(key.encode()) % 2: b"9"}


async def test_concurrent_calls_each_decide_before_the_others_increments(
    store: MemcacheStore,
) -> None:
    key = unique()
    values = await asyncio.gather(*(store.increment([inc(key)]) for _ in range(5)))
    assert values == [[1]] * 5  # all read 0: upstream's brief overshoot
    await store.flush()
    assert await store.get([(key, False)]) == [5]


async def test_missing_key_is_added_with_its_expiration_and_a_lost_add_increments_again(
    memcached_nodes: list[MemcachedProcess],
) -> None:
    stats = StatsStore()
    async with open_store(store_settings(memcached_nodes), stats=stats) as store:
        key = unique()
        await store.increment([inc(key, 1, expire=70), inc(key, 2, expire=70)])
        await store.flush()
    node = memcached_nodes[zlib.crc32(key.encode()) % 2]
    assert node_of(memcached_nodes, key) == {memcached_nodes.index(node): b"3"}
    assert 60 < (ttl(node, key) or 0) <= 70
    counters = stats.counters()
    # both incr missed, the first add stored, the second lost the race and incremented
    assert counters["ratelimit.memcache.increment.__code=miss"] == 2
    assert counters["ratelimit.memcache.add.__code=success"] == 1
    assert counters["ratelimit.memcache.add.__code=not_stored"] == 1
    assert counters["ratelimit.memcache.increment.__code=success"] == 1
    assert counters["ratelimit.memcache.multiget.__code=success"] == 1
    assert counters["ratelimit.memcache.keys_requested"] == 2


async def test_expiry_is_set_when_the_counter_is_created_and_not_refreshed(
    store: MemcacheStore, memcached_nodes: list[MemcachedProcess]
) -> None:
    key = key_on(1)
    await store.increment([inc(key, 1, expire=60)])
    await store.flush()
    first = ttl(memcached_nodes[1], key)
    assert first is not None and 55 < first <= 60
    await store.increment([inc(key, 1, expire=3600)])
    await store.flush()
    later = ttl(memcached_nodes[1], key)
    assert later is not None and later <= first
    assert await store.get([(key, False)]) == [2]


async def test_expiration_over_30_days_is_sent_as_a_unix_time(
    store: MemcacheStore, memcached_nodes: list[MemcachedProcess]
) -> None:
    month_with_jitter = 30 * 24 * 3600 + 100  # a relative value this large would be 1970
    key = key_on(0)
    await store.increment([inc(key, 1, expire=month_with_jitter)])
    await store.flush()
    left = ttl(memcached_nodes[0], key)
    # memcached's clock ticks once a second, so the time left can read a second long
    assert left is not None and month_with_jitter - 5 <= left <= month_with_jitter + 2
    assert await store.get([(key, False)]) == [1]


@pytest.mark.parametrize(
    "key",
    ["k" * 251, "with space", "tab\there", "nön-ascii"],
    ids=["251 bytes", "space", "control", "non-ascii"],
)
async def test_a_malformed_key_fails_the_call_without_touching_the_cache(
    memcached_nodes: list[MemcachedProcess], key: str
) -> None:
    stats = StatsStore()
    async with open_store(store_settings(memcached_nodes), stats=stats) as store:
        good = unique()
        with pytest.raises(BackendError, match="malformed: key is too long or contains invalid"):
            await store.increment([inc(good), inc(key)])
        await store.flush()
        assert node_of(memcached_nodes, good) == {}  # nothing of the call was applied
        assert stats.value("ratelimit.memcache.multiget.__code=error") == 1


async def test_a_key_of_250_bytes_is_accepted(store: MemcacheStore) -> None:
    key = unique()
    key += "x" * (250 - len(key))
    assert await store.increment([inc(key, 2)]) == [2]
    await store.flush()
    assert await store.get([(key, False)]) == [2]


async def test_values_that_are_not_int32_read_as_zero_and_fail_to_increment(
    store: MemcacheStore,
    memcached_nodes: list[MemcachedProcess],
    caplog: pytest.LogCaptureFixture,
) -> None:
    keys = {"text": unique("text"), "big": unique("big"), "max": unique("max")}
    stored = {"text": b"abc", "big": b"2147483648", "max": b"2147483647"}
    for name, key in keys.items():
        node = memcached_nodes[zlib.crc32(key.encode()) % 2]
        client = node.client()
        try:
            # pymemcache sends ``noreply`` by default: the set would race the store's reads,
            # which go on another connection (and memcached does not order connections)
            assert client.set(key, stored[name], expire=60, noreply=False)
        finally:
            client.close()
    with caplog.at_level(logging.ERROR, logger="handlers.ratelimit.backends.memcache"):
        values = await store.get([(keys[name], False) for name in ("text", "big", "max")])
        assert values == [0, 0, 2147483647]
        await store.increment([inc(keys["text"])])
        await store.flush()
    messages = [record.getMessage() for record in caplog.records]
    assert any("non-numeric value in memcached for key " + keys["text"] in m for m in messages)
    assert any("Failed to increment key " + keys["text"] in m for m in messages)


async def test_a_stopped_node_fails_its_keys_within_the_timeout_and_recovers(
    store: MemcacheStore, memcached_nodes: list[MemcachedProcess]
) -> None:
    on_first, on_second = key_on(0), key_on(1)
    await store.increment([inc(on_first), inc(on_second)])
    await store.flush()
    memcached_nodes[1].stop()
    try:
        began = time.monotonic()
        with pytest.raises(BackendError, match=f"memcached {memcached_nodes[1].address}"):
            await store.increment([inc(on_first), inc(on_second)])
        assert time.monotonic() - began < TIMEOUT + 0.5
        assert await store.increment([inc(on_first)]) == [2]  # the other node still serves
        await eventually(_not(store.connected), what="connected() to turn false")
    finally:
        memcached_nodes[1].start()
    await store.flush()
    assert await eventually(lambda: _succeeds(store.increment([inc(on_second)])), what="recovery")
    assert store.connected()


async def test_a_node_that_does_not_answer_times_out_and_recovers(
    store: MemcacheStore, memcached_nodes: list[MemcachedProcess]
) -> None:
    key = key_on(0)
    await store.increment([inc(key)])
    with memcached_nodes[0].paused():
        began = time.monotonic()
        with pytest.raises(BackendError, match=r"no reply within 0\.5s"):
            await store.increment([inc(key)])
        assert TIMEOUT <= time.monotonic() - began < TIMEOUT + 0.5
    await store.flush()
    assert await eventually(lambda: _succeeds(store.get([(key, False)])), what="recovery")


async def test_tls_with_client_certificates(memcached_tls_node: MemcachedProcess) -> None:
    tls = memcached_tls_node.tls
    assert tls is not None
    settings = store_settings(
        [memcached_tls_node],
        tls=True,
        tls_cacert=str(tls.ca),
        tls_client_cert=str(tls.client_cert),
        tls_client_key=str(tls.client_key),
        tls_skip_hostname_verification=True,  # the certificate names redis.invalid
    )
    async with open_store(settings) as store:
        key = unique()
        assert await store.increment([inc(key, 4)]) == [4]
        await store.flush()
        assert await store.get([(key, False)]) == [4]
        assert store.connected()
    verified = store_settings([memcached_tls_node], tls=True, tls_cacert=str(tls.ca))
    async with open_store(verified) as store:
        with pytest.raises(
            BackendError, match=r"cannot connect.*(IP address mismatch|CERTIFICATE)"
        ):
            await store.get([(unique(), False)])


async def test_start_logs_a_node_that_does_not_answer_and_connects_later(
    memcached_nodes: list[MemcachedProcess], caplog: pytest.LogCaptureFixture
) -> None:
    missing = MemcachedProcess(memcached_nodes[0].directory)  # a free port, not started
    settings = store_settings([memcached_nodes[0], missing])
    with caplog.at_level(logging.WARNING, logger="handlers.ratelimit.backends.memcache"):
        async with open_store(settings, timeout=TIMEOUT) as store:
            assert not store.connected()
            key = key_on(0)
            assert await store.increment([inc(key)]) == [1]
    assert any(
        f"memcached {missing.address} does not answer" in r.getMessage() for r in caplog.records
    )


async def test_a_gets_reply_in_pieces_gives_each_value_and_its_cas_unique() -> None:
    """The parser of ``gets`` replies (the store's compare-and-swap reads), fed a byte at a
    time: values are read by their length (this one holds a CRLF), each with its unique."""
    connection = MemcacheConnection("test", lambda _: None)
    reply = connection.call(b"gets a b c\r\n", (GETS,))
    data = b"VALUE a 0 3 17\r\nx\r\n\r\nVALUE b 5 1 18446744073709551615\r\n1\r\nEND\r\n"
    for index in range(len(data)):
        assert not reply.done()
        connection.data_received(data[index : index + 1])
    assert await reply == [CasValues({b"a": (b"x\r\n", 17), b"b": (b"1", 2**64 - 1)})]
    broken = connection.call(b"gets a\r\n", (GETS,))
    connection.data_received(b"VALUE a 0 1\r\n1\r\nEND\r\n")  # no unique: not a gets reply
    with pytest.raises(BackendError, match="protocol error: no CAS unique in a gets reply"):
        await broken


def _not(probe: Callable[[], bool]) -> Callable[[], Awaitable[bool]]:
    async def negated() -> bool:
        return not probe()

    return negated


async def _succeeds(call: Awaitable[object]) -> bool:
    try:
        await call
    except BackendError:
        return False
    return True
