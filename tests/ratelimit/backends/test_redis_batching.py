"""RedisStore (single) batching the calls of concurrent callers: each call's results are its
own, one write carries many calls, calls queue while every connection is busy, a failed batch
fails its calls only, and ``pipeline_window`` gathers calls spread over time."""

from __future__ import annotations

import asyncio
import time
import uuid
from typing import Any

import pytest
import redis

from handlers.ratelimit.backends.base import BackendError, Increment
from handlers.ratelimit.backends.redis import RedisStore
from handlers.ratelimit.backends.redis_protocol import RedisConnection
from handlers.ratelimit.stats import StatsStore
from tests.ratelimit.redis_servers import (
    RedisProcess,
    eventually,
    open_store,
    paused_writes,
    read_and_write_events,
    store_settings,
)


def unique(name: str = "k") -> str:
    return f"rl-batch-{uuid.uuid4().hex[:10]}-{name}"


def inc(key: str, amount: int = 1, expire: int = 60) -> Increment:
    return Increment(key, amount, expire, False)


def connections(store: RedisStore) -> list[RedisConnection]:
    return list(store._main.pool._members)  # type: ignore[union-attr]


def blocked_clients(client: redis.Redis) -> list[dict[str, Any]]:
    """Clients held by CLIENT PAUSE (flag b) with a command read."""
    return [c for c in client.client_list() if "b" in c["flags"]]


async def _blocked(client: redis.Redis, count: int = 1) -> None:
    async def probe() -> bool:
        return len(blocked_clients(client)) >= count

    await eventually(probe, what="the store's batch to reach the paused server")


async def test_concurrent_calls_get_their_own_results(redis_server: RedisProcess) -> None:
    shared, other = unique("shared"), unique("other")
    own = [unique(f"own-{i}") for i in range(60)]
    async with open_store(store_settings(redis_server.address)) as store:

        async def call(i: int) -> list[int]:
            return await store.increment([inc(shared), inc(own[i], i + 1, 30), inc(other)])

        results = await asyncio.gather(*(call(i) for i in range(60)))
        # every call saw its own replies: its own key's value, and the shared keys' values
        # after its own INCRBY (its INCRBY and EXPIRE pairs are adjacent, in its order)
        assert [own_value for _, own_value, _ in results] == [i + 1 for i in range(60)]
        assert sorted(value for value, _, _ in results) == list(range(1, 61))
        assert sorted(value for _, _, value in results) == list(range(1, 61))
        assert all(first == last for first, _, last in results)

        gets = await asyncio.gather(
            store.get([(shared, False)]),
            store.increment([inc(shared, 5)]),
            store.get([(own[7], False), (unique("missing"), False)]),
        )
        assert list(gets) == [[60], [65], [8, 0]]
    with redis_server.client() as client:
        assert client.get(shared) == "65"
        assert client.ttl(own[0]) in (29, 30)
        assert client.ttl(shared) in (59, 60)


async def test_one_write_carries_the_calls_of_concurrent_callers(
    redis_server: RedisProcess,
) -> None:
    keys = [unique(str(i)) for i in range(20)]
    stats = StatsStore()
    async with open_store(store_settings(redis_server.address), stats=stats) as store:
        with redis_server.client() as observer:
            observer.ping()
            before = read_and_write_events(observer)
            results = await asyncio.gather(*(store.increment([inc(key)]) for key in keys))
            after = read_and_write_events(observer)
        assert results == [[1]] * 20
        # one read and one write event for the 20 calls, one of each for the INFO itself;
        # one call per write would be 20 (on up to pool_size connections)
        assert (after[0] - before[0], after[1] - before[1]) == (2, 2)
    assert stats.value("ratelimit.redis_pool.cx_total") == 1


async def test_calls_queue_while_every_connection_is_busy(redis_server: RedisProcess) -> None:
    key = unique()
    settings = store_settings(redis_server.address, pool_size=1, pool_on_empty_behavior="WAIT")
    async with open_store(settings) as store:
        with redis_server.client() as observer:
            with paused_writes(redis_server):
                first = asyncio.create_task(store.increment([inc(key)]))
                await _blocked(observer)
                before = read_and_write_events(observer)
                later = []
                for _ in range(10):  # one per event-loop pass, 5 ms apart
                    later.append(asyncio.create_task(store.increment([inc(key)])))
                    await asyncio.sleep(0.005)
                assert read_and_write_events(observer)[0] - before[0] == 1  # its own INFO
                assert not any(task.done() for task in [first, *later])
            assert await first == [1]
            # in the order they were made, in one batch
            assert [await task for task in later] == [[n] for n in range(2, 12)]
            after = read_and_write_events(observer)
        # read events: the two INFOs, the UNPAUSE and its client closing, and one batch (one
        # batch per call would be 10)
        assert after[0] - before[0] == 2 + 2 + 1


async def test_pool_size_bounds_the_batches_in_flight(redis_server: RedisProcess) -> None:
    key = unique()
    stats = StatsStore()
    settings = store_settings(redis_server.address, pool_size=2, pool_on_empty_behavior="WAIT")
    async with open_store(settings, stats=stats) as store:
        with redis_server.client() as observer:
            with paused_writes(redis_server):
                calls = []
                for n in range(5):  # each in its own loop pass
                    calls.append(asyncio.create_task(store.increment([inc(key)])))
                    await asyncio.sleep(0.02)
                    if n < 2:
                        await _blocked(observer, n + 1)
                await asyncio.sleep(0.1)
                assert len(blocked_clients(observer)) == 2  # the third batch waits
                assert not any(call.done() for call in calls)
            values = [value for call in calls for value in await call]
        assert sorted(values) == [1, 2, 3, 4, 5]
        assert sorted(values[2:]) == values[2:]  # the queued calls: one batch, in order
    assert stats.value("ratelimit.redis_pool.cx_total") == 2
    assert stats.value("ratelimit.redis_pool.cx_active") == 0


async def test_a_killed_connection_fails_its_batch_and_the_next_call_succeeds(
    redis_server: RedisProcess,
) -> None:
    key, bystander = unique(), unique("bystander")
    stats = StatsStore()
    async with open_store(store_settings(redis_server.address), stats=stats) as store:
        with redis_server.client() as observer:
            with paused_writes(redis_server):
                batch = [asyncio.create_task(store.increment([inc(key)])) for _ in range(10)]
                await _blocked(observer)
                (held,) = blocked_clients(observer)
                observer.client_kill_filter(_id=held["id"])
                results = await asyncio.gather(*batch, return_exceptions=True)
                assert all(isinstance(result, BackendError) for result in results), results
                assert "lost" in str(results[0]) or "closed" in str(results[0])
                assert not store.connected()
            # a fresh connection; the killed batch never ran
            assert await store.increment([inc(key), inc(bystander)]) == [1, 1]
            assert observer.get(key) == "1"
    assert stats.value("ratelimit.redis_pool.cx_total") == 2
    assert stats.value("ratelimit.redis_pool.cx_local_close") == 2


async def test_an_idle_connection_killed_by_the_server_is_replaced(
    redis_server: RedisProcess,
) -> None:
    key = unique()
    async with open_store(store_settings(redis_server.address)) as store:
        assert await store.increment([inc(key)]) == [1]
        (connection,) = connections(store)
        host, port = connection.sockname
        with redis_server.client() as observer:
            observer.client_kill(f"{host}:{port}")

        async def closed() -> bool:
            return not store.connected()

        await eventually(closed, what="the store to see its connection closed")
        assert await store.increment([inc(key)]) == [2]  # reconnects, no failed call
        assert store.connected()


async def test_a_timeout_fails_every_call_of_the_batch(redis_server: RedisProcess) -> None:
    key = unique()
    settings = store_settings(redis_server.address, timeout=0.3)
    async with open_store(settings) as store:
        with paused_writes(redis_server):
            began = time.monotonic()
            results = await asyncio.gather(
                *(store.increment([inc(key)]) for _ in range(5)), return_exceptions=True
            )
            assert 0.25 < time.monotonic() - began < 3
        assert [str(result) for result in results] == [
            f"Timeout reading from {redis_server.address}"
        ] * 5
        (value,) = await store.increment([inc(key)])
        with redis_server.client() as client:
            assert client.get(key) == str(value)


async def test_an_error_reply_fails_only_its_own_call(redis_server: RedisProcess) -> None:
    text, key = unique("text"), unique()
    with redis_server.client() as client:
        client.set(text, "abc")
    async with open_store(store_settings(redis_server.address)) as store:
        results = await asyncio.gather(
            store.increment([inc(key)]),
            store.increment([inc(text)]),
            store.increment([inc(key)]),
            return_exceptions=True,
        )
        assert results[0] == [1] and results[2] == [2]
        assert isinstance(results[1], BackendError) and "not an integer" in str(results[1])


async def test_a_cancelled_call_leaves_the_others_of_its_batch(redis_server: RedisProcess) -> None:
    key = unique()
    async with open_store(store_settings(redis_server.address)) as store:
        with redis_server.client() as observer:
            with paused_writes(redis_server):
                calls = [asyncio.create_task(store.increment([inc(key)])) for _ in range(3)]
                await _blocked(observer)
                calls[1].cancel()
            assert await calls[0] == [1]
            assert await calls[2] == [3]  # the cancelled call's commands were already sent
            with pytest.raises(asyncio.CancelledError):
                await calls[1]
            assert await store.increment([inc(key)]) == [4]


async def test_pipeline_window_gathers_calls_spread_over_the_window(
    redis_server: RedisProcess,
) -> None:
    key = unique()
    settings = store_settings(redis_server.address, pipeline_window=0.3)
    async with open_store(settings) as store:
        with redis_server.client() as observer:
            observer.ping()
            before = read_and_write_events(observer)
            began = time.monotonic()
            calls = []
            for _ in range(5):  # over about 100 ms
                calls.append(asyncio.create_task(store.increment([inc(key)])))
                await asyncio.sleep(0.02)
            assert not any(call.done() for call in calls)
            assert [await call for call in calls] == [[n] for n in range(1, 6)]
            waited = time.monotonic() - began
            after = read_and_write_events(observer)
        assert 0.25 < waited < 3  # the first call waited for the window
        assert (after[0] - before[0], after[1] - before[1]) == (2, 2)  # one batch, the INFO


async def test_no_window_sends_a_lone_call_at_once(redis_server: RedisProcess) -> None:
    key = unique()
    async with open_store(store_settings(redis_server.address)) as store:
        durations = []
        for n in range(1, 6):
            began = time.monotonic()
            assert await store.increment([inc(key)]) == [n]
            durations.append(time.monotonic() - began)
        assert min(durations) < 0.05


async def test_each_batch_gets_the_whole_timeout(redis_server: RedisProcess) -> None:
    key = unique()
    settings = store_settings(redis_server.address, timeout=0.5)
    async with open_store(settings) as store:
        assert await store.increment([inc(key)]) == [1]  # its deadline is 0.5 s from now
        await asyncio.sleep(0.3)
        with paused_writes(redis_server):
            began = time.monotonic()
            with pytest.raises(BackendError, match="Timeout"):
                await store.increment([inc(key)])
            assert 0.45 < time.monotonic() - began < 3  # not the 0.2 s left of the first
