"""ConnectionPool on its own, with connections that need no server: hand-over order,
the on-empty behaviours, cancellation while waiting, stats."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any, cast

import pytest
from redis.exceptions import ConnectionError as RedisConnectionError

from handlers.ratelimit.backends.redis_connections import (
    ConnectionPool,
    Endpoint,
    PoolStats,
    parse_endpoint,
    split_auth,
)
from handlers.ratelimit.backends.redis_protocol import RedisConnection
from handlers.ratelimit.stats import StatsStore


class FakeConnection:
    """Just the parts of a RedisConnection the pool uses."""

    def __init__(self, number: int) -> None:
        self.number = number
        self.is_connected = False
        self.connects = 0
        self.address = f"fake-{number}"
        self.on_close: Callable[[Any], None] | None = None

    async def connect(self) -> None:
        self.connects += 1
        self.is_connected = True

    def close(self) -> None:
        if self.is_connected:
            self.is_connected = False
            if self.on_close is not None:
                self.on_close(self)

    async def disconnect(self) -> None:
        self.close()


def make_pool(
    size: int = 1, on_empty: str = "WAIT", wait: float = 0.1
) -> tuple[ConnectionPool, StatsStore, list[FakeConnection]]:
    stats = StatsStore()
    made: list[FakeConnection] = []

    def factory() -> RedisConnection:
        made.append(FakeConnection(len(made)))
        return cast(RedisConnection, made[-1])

    pool = ConnectionPool(
        factory,
        size=size,
        stats=PoolStats(stats, "ratelimit.redis_pool"),
        on_empty=on_empty,
        wait_duration=wait,
    )
    return pool, stats, made


async def test_connections_are_reused_and_lazily_connected() -> None:
    pool, stats, made = make_pool(size=2)
    first = await pool.acquire()
    pool.release(first)
    assert await pool.acquire() is first
    second = await pool.acquire()
    assert len(made) == 2 and pool.in_use == 2
    pool.release(first)
    pool.release(second)
    assert stats.value("ratelimit.redis_pool.cx_total") == 2
    assert stats.value("ratelimit.redis_pool.cx_active") == 2
    await pool.close()
    assert stats.value("ratelimit.redis_pool.cx_active") == 0
    assert stats.value("ratelimit.redis_pool.cx_local_close") == 2


async def test_take_gives_only_a_ready_idle_connection() -> None:
    pool, stats, made = make_pool(size=2)
    assert pool.take() is None  # nothing connected yet: acquire() connects
    first = await pool.acquire()
    assert pool.take() is None  # in use
    pool.release(first)
    assert pool.take() is first
    pool.release(first)
    pool.invalidate()
    assert pool.take() is None  # connected before invalidate(): acquire() reconnects it
    assert await pool.acquire() is first and made[0].connects == 2
    pool.release(first)
    made[0].close()  # closed by the server while idle: counted at once
    assert stats.value("ratelimit.redis_pool.cx_active") == 0
    assert pool.take() is None
    assert await pool.acquire() is first and made[0].connects == 3
    assert stats.value("ratelimit.redis_pool.cx_total") == 3
    pool.release(first)
    await pool.close()


async def test_waiters_are_served_in_order() -> None:
    pool, _, made = make_pool(size=1, on_empty="WAIT")
    held = await pool.acquire()
    order: list[int] = []

    async def take(n: int) -> None:
        connection = await pool.acquire()
        order.append(n)
        pool.release(connection)

    waiting = [asyncio.create_task(take(n)) for n in range(3)]
    await asyncio.sleep(0)
    pool.release(held)
    await asyncio.gather(*waiting)
    assert order == [0, 1, 2]
    assert len(made) == 1
    await pool.close()


async def test_error_when_empty_after_the_wait() -> None:
    pool, _, _ = make_pool(size=1, on_empty="ERROR", wait=0.05)
    held = await pool.acquire()
    with pytest.raises(RedisConnectionError, match="connection pool is empty"):
        await pool.acquire()
    pool.release(held)
    assert await pool.acquire() is held
    await pool.close()


async def test_create_when_empty_closes_the_overflow_on_release() -> None:
    pool, stats, made = make_pool(size=1, on_empty="CREATE", wait=0.05)
    held = await pool.acquire()
    overflow = await pool.acquire()
    assert overflow is not held and pool.members == 2
    pool.release(held)  # over size: this one is closed, whichever comes back first
    await asyncio.sleep(0)
    assert pool.members == 1
    assert not made[0].is_connected
    assert stats.value("ratelimit.redis_pool.cx_local_close") == 1
    pool.release(overflow)
    assert pool.members == 1 and pool.in_use == 0
    await pool.close()


async def test_cancelled_waiter_does_not_take_a_connection() -> None:
    pool, _, _ = make_pool(size=1, on_empty="WAIT")
    held = await pool.acquire()
    waiter = asyncio.create_task(pool.acquire())
    await asyncio.sleep(0)
    waiter.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiter
    pool.release(held)
    assert pool.in_use == 0
    assert await pool.acquire() is held
    await pool.close()


async def test_a_connection_handed_to_a_cancelled_waiter_comes_back() -> None:
    pool, _, _ = make_pool(size=1, on_empty="WAIT")
    held = await pool.acquire()
    waiter = asyncio.create_task(pool.acquire())
    await asyncio.sleep(0)
    pool.release(held)  # handed over, but the waiter is cancelled before it resumes
    waiter.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiter
    assert pool.in_use == 0
    assert await pool.acquire() is held
    await pool.close()


async def test_waiters_fail_when_the_pool_closes() -> None:
    pool, _, _ = make_pool(size=1, on_empty="WAIT")
    await pool.acquire()
    waiter = asyncio.create_task(pool.acquire())
    await asyncio.sleep(0)
    await pool.close()
    with pytest.raises(RedisConnectionError, match="closed"):
        await waiter
    with pytest.raises(RedisConnectionError, match="closed"):
        await pool.acquire()


def test_unknown_on_empty_behaviour() -> None:
    with pytest.raises(ValueError, match="CREATE, ERROR or WAIT"):
        make_pool(on_empty="SOMETIMES")


@pytest.mark.parametrize(
    ("text", "socket_type", "endpoint"),
    [
        ("127.0.0.1:6379", "tcp", Endpoint(host="127.0.0.1", port=6379)),
        (" redis:6380 ", "tcp", Endpoint(host="redis", port=6380)),
        ("[::1]:6379", "tcp", Endpoint(host="::1", port=6379)),
        ("/var/run/redis.sock", "unix", Endpoint(path="/var/run/redis.sock")),
        ("unix:///tmp/r.sock", "tcp", Endpoint(path="/tmp/r.sock")),
        (
            "redis://user:p%40ss@host:7000/2",
            "tcp",
            Endpoint(host="host", port=7000, username="user", password="p@ss", db=2),
        ),
        (
            "rediss://:secret@host",
            "tcp",
            Endpoint(host="host", port=6379, password="secret", tls=True),
        ),
    ],
)
def test_parse_endpoint(text: str, socket_type: str, endpoint: Endpoint) -> None:
    assert parse_endpoint(text, socket_type) == endpoint


@pytest.mark.parametrize("text", ["no-port", "host:abc", "http://host:80"])
def test_parse_endpoint_rejects(text: str) -> None:
    with pytest.raises(ValueError):
        parse_endpoint(text)


def test_split_auth() -> None:
    assert split_auth("") == (None, None)
    assert split_auth("secret") == (None, "secret")
    assert split_auth("user:pa:ss") == ("user", "pa:ss")
