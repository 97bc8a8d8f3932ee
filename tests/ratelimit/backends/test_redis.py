"""RedisStore, type single, against real throwaway servers: the commands it sends, one round
trip per instance per call, per-second routing, auth, unix socket, TLS, timeouts, a server
going down, startup retries, pool stats and credential masking."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
import redis.asyncio as aioredis

from handlers.ratelimit.backends.base import BackendError, Increment
from handlers.ratelimit.backends.redis import SENTINEL_URL_ERROR, RedisStore, mask_credentials
from handlers.ratelimit.settings import KvStoreSettings
from handlers.ratelimit.stats import StatsStore
from tests.ratelimit.redis_servers import (
    ACL_PASSWORD,
    ACL_USER,
    HOST,
    PASSWORD,
    RedisProcess,
    eventually,
    free_port,
    open_store,
    paused_writes,
    read_and_write_events,
    store_settings,
)


@contextlib.contextmanager
def _observer(server: RedisProcess) -> Iterator[redis.Redis]:
    with server.client() as client:
        client.ping()  # connected before the first reading
        yield client


def unique(name: str = "k") -> str:
    return f"rl-test-{uuid.uuid4().hex[:10]}-{name}"


def inc(key: str, amount: int = 1, expire: int = 60, per_second: bool = False) -> Increment:
    return Increment(key, amount, expire, per_second)


# --- commands and round trips ---------------------------------------------------------


async def _monitored(server: RedisProcess, count: int, call: object) -> list[str]:
    monitor_client = aioredis.Redis(host=HOST, port=server.port)
    try:
        async with monitor_client.monitor() as monitor:
            await call  # type: ignore[misc]
            commands = []
            for _ in range(count):
                seen = await asyncio.wait_for(monitor.next_command(), 5)
                commands.append(seen["command"])
            return commands
    finally:
        await monitor_client.aclose()


async def test_increment_sends_incrby_then_expire_per_key(redis_server: RedisProcess) -> None:
    a, b = unique("a"), unique("b")
    async with open_store(store_settings(redis_server.address)) as store:
        commands = await _monitored(
            redis_server, 4, store.increment([inc(a, 3, 60), inc(b, 1, 3600)])
        )
    assert commands == [f"INCRBY {a} 3", f"EXPIRE {a} 60", f"INCRBY {b} 1", f"EXPIRE {b} 3600"]
    with redis_server.client() as client:
        assert client.get(a) == "3"
        assert client.ttl(a) in (59, 60)
        assert client.ttl(b) in (3599, 3600)


async def test_get_sends_only_gets(redis_server: RedisProcess) -> None:
    a, b = unique("a"), unique("b")
    with redis_server.client() as client:
        client.set(a, 12)
    async with open_store(store_settings(redis_server.address)) as store:
        values: list[int] = []

        async def call() -> None:
            values.extend(await store.get([(a, False), (b, False)]))

        commands = await _monitored(redis_server, 2, call())
    assert commands == [f"GET {a}", f"GET {b}"]
    assert values == [12, 0]
    with redis_server.client() as client:
        assert client.exists(b) == 0


async def test_one_round_trip_per_call(redis_server: RedisProcess) -> None:
    keys = [unique(str(i)) for i in range(20)]
    with _observer(redis_server) as observer:
        async with open_store(store_settings(redis_server.address)) as store:
            before = read_and_write_events(observer)
            await store.increment([inc(key, i + 1) for i, key in enumerate(keys)])
            after = read_and_write_events(observer)
            # one read and one write event for the call, one of each for the INFO itself
            assert (after[0] - before[0], after[1] - before[1]) == (2, 2)

            before = read_and_write_events(observer)
            assert await store.get([(key, False) for key in keys]) == list(range(1, 21))
            after = read_and_write_events(observer)
            assert (after[0] - before[0], after[1] - before[1]) == (2, 2)

            # the measure can fail: three calls are three round trips
            before = read_and_write_events(observer)
            for key in keys[:3]:
                await store.increment([inc(key)])
            after = read_and_write_events(observer)
            assert after[0] - before[0] == 4


async def test_error_reply_is_a_backend_error(redis_server: RedisProcess) -> None:
    text, listed = unique("text"), unique("list")
    with redis_server.client() as client:
        client.set(text, "abc")
        client.rpush(listed, "x")
    async with open_store(store_settings(redis_server.address)) as store:
        with pytest.raises(BackendError, match="not an integer"):
            await store.increment([inc(text)])
        with pytest.raises(BackendError, match="WRONGTYPE"):
            await store.get([(listed, False)])
        assert await store.increment([inc(unique())]) == [1]  # the connection is still good


# --- per-second instance --------------------------------------------------------------


async def test_per_second_keys_go_to_the_second_instance(
    redis_server: RedisProcess, redis_second_server: RedisProcess
) -> None:
    minute, second, other = unique("minute"), unique("second"), unique("other")
    stats = StatsStore()
    async with open_store(
        store_settings(redis_server.address),
        per_second=store_settings(redis_second_server.address),
        stats=stats,
    ) as store:
        with redis_server.client() as main, redis_second_server.client() as per_second:
            main_before = read_and_write_events(main)
            second_before = read_and_write_events(per_second)
            values = await store.increment(
                [inc(minute, 2), inc(second, 5, 1, per_second=True), inc(other, 1), inc(minute)]
            )
            assert values == [2, 5, 1, 3]
            assert read_and_write_events(main)[0] - main_before[0] == 2
            assert read_and_write_events(per_second)[0] - second_before[0] == 2
        got = await store.get([(second, True), (minute, False), (second, False)])
        assert got == [5, 3, 0]
        only_second = unique("only-second")
        assert await store.increment([inc(only_second, 2, per_second=True)]) == [2]
        assert await store.get([(only_second, True)]) == [2]
        assert store.connected()
    with redis_server.client() as main, redis_second_server.client() as per_second:
        assert (main.get(minute), main.exists(second)) == ("3", 0)
        assert (per_second.get(second), per_second.exists(minute)) == ("5", 0)
        assert (per_second.get(only_second), main.exists(only_second)) == ("2", 0)
        assert per_second.ttl(second) == 1
    assert stats.value("ratelimit.redis_pool.cx_total") == 1
    assert stats.value("ratelimit.redis_per_second_pool.cx_total") == 1


async def test_both_instances_are_called_concurrently(
    redis_server: RedisProcess, redis_second_server: RedisProcess
) -> None:
    minute, second = unique("minute"), unique("second")
    async with open_store(
        store_settings(redis_server.address),
        per_second=store_settings(redis_second_server.address),
    ) as store:
        with redis_second_server.client() as client:

            async def second_written() -> bool:
                return bool(client.get(second) == "1")

            with paused_writes(redis_server):
                call = asyncio.create_task(
                    store.increment([inc(minute), inc(second, per_second=True)])
                )
                # the main server holds its pipeline; the per-second one is not waiting for it
                await eventually(second_written, what="the per-second increment")
                assert not call.done()
        assert await call == [1, 1]


# --- connections: auth, unix socket, URL credentials, TLS ------------------------------


async def test_password_auth(redis_auth_server: RedisProcess) -> None:
    key = unique()
    async with open_store(store_settings(redis_auth_server.address, auth=PASSWORD)) as store:
        assert await store.increment([inc(key, 2)]) == [2]
    for auth, error in (("", "Authentication required|NOAUTH"), ("wrong", "invalid|WRONGPASS")):
        settings = store_settings(redis_auth_server.address, auth=auth)
        async with open_store(settings, start=False) as store:
            with pytest.raises(BackendError, match=error):
                await store.increment([inc(key)])
            assert not store.connected()


async def test_user_and_password_auth(redis_auth_server: RedisProcess) -> None:
    key = unique()
    settings = store_settings(redis_auth_server.address, auth=f"{ACL_USER}:{ACL_PASSWORD}")
    async with open_store(settings) as store:
        assert await store.increment([inc(key, 4)]) == [4]
        with redis_auth_server.client() as client:
            users = {c["user"] for c in client.client_list() if c["cmd"] == "expire"}
        assert users == {ACL_USER}  # the observer is user default
    settings = store_settings(redis_auth_server.address, auth=f"{ACL_USER}:nope")
    async with open_store(settings, start=False) as store:
        with pytest.raises(BackendError, match=r"invalid|WRONGPASS"):
            await store.get([(key, False)])


async def test_credentials_in_a_redis_url(
    redis_auth_server: RedisProcess, caplog: pytest.LogCaptureFixture
) -> None:
    key = unique()
    url = f"redis://{ACL_USER}:{ACL_PASSWORD}@{redis_auth_server.address}"
    with caplog.at_level(logging.INFO, logger="handlers.ratelimit.backends"):
        async with open_store(store_settings(url)) as store:
            assert await store.increment([inc(key)]) == [1]
    assert f"redis://*****@{redis_auth_server.address}" in caplog.text
    assert ACL_PASSWORD not in caplog.text


async def test_unix_socket(redis_unix_server: RedisProcess) -> None:
    key = unique()
    assert redis_unix_server.unix_socket is not None
    settings = KvStoreSettings(socket_type="unix", url=str(redis_unix_server.unix_socket))
    async with open_store(settings) as store:
        assert await store.increment([inc(key, 3, 30)]) == [3]
        assert await store.get([(key, False)]) == [3]
    with redis_unix_server.client() as client:
        assert client.ttl(key) in (29, 30)


def _tls_settings(server: RedisProcess, **changes: object) -> KvStoreSettings:
    assert server.tls is not None
    options: dict[str, object] = {
        "tls": True,
        "tls_cacert": str(server.tls.ca),
        "tls_client_cert": str(server.tls.client_cert),
        "tls_client_key": str(server.tls.client_key),
        "tls_skip_hostname_verification": True,
    }
    options.update(changes)
    return store_settings(server.address, **options)


async def test_tls_with_client_certificate(redis_tls_server: RedisProcess) -> None:
    key = unique()
    async with open_store(_tls_settings(redis_tls_server)) as store:
        assert await store.increment([inc(key, 2)]) == [2]
    with redis_tls_server.client() as client:
        assert client.get(key) == "2"


@pytest.mark.parametrize(
    ("changes", "error"),
    [
        # the server's certificate names redis.invalid, not 127.0.0.1
        ({"tls_skip_hostname_verification": False}, "IP address mismatch"),
        # the chain is still verified when the hostname is not
        ({"tls_cacert": ""}, "self-signed certificate in certificate chain"),
        # the server requires a client certificate
        ({"tls_client_cert": "", "tls_client_key": ""}, r"reset|certificate required|closed"),
    ],
)
async def test_tls_failures(
    redis_tls_server: RedisProcess, changes: dict[str, object], error: str
) -> None:
    async with open_store(_tls_settings(redis_tls_server, **changes), start=False) as store:
        with pytest.raises(BackendError, match=error):
            await store.increment([inc(unique())])


# --- failures: timeout, server down, startup --------------------------------------------


async def test_timeout_is_a_backend_error_and_the_connection_is_replaced(
    redis_server: RedisProcess,
) -> None:
    key = unique()
    stats = StatsStore()
    settings = store_settings(redis_server.address, timeout=0.3)
    async with open_store(settings, stats=stats) as store:
        with paused_writes(redis_server):
            began = time.monotonic()
            with pytest.raises(BackendError, match="Timeout"):
                await store.increment([inc(key)])
            assert 0.25 < time.monotonic() - began < 3
            assert stats.value("ratelimit.redis_pool.cx_local_close") == 1
            assert not store.connected()
        # a new connection goes on; the timed-out batch may or may not have been applied
        # (its connection is closed before the server runs it, or not: a race)
        (value,) = await store.increment([inc(key)])
        assert value in (1, 2)
        with redis_server.client() as client:
            assert client.get(key) == str(value)
        assert stats.value("ratelimit.redis_pool.cx_total") == 2
        assert store.connected()


async def test_cancelled_call_leaves_the_pool_usable(redis_server: RedisProcess) -> None:
    key = unique()
    async with open_store(store_settings(redis_server.address, pool_size=1)) as store:
        with paused_writes(redis_server):
            call = asyncio.create_task(store.increment([inc(key)]))
            await eventually(_in_use(store, 1), what="the call to hold the connection")
            call.cancel()
            with pytest.raises(asyncio.CancelledError):
                await call
        (value,) = await store.increment([inc(key)])
        with redis_server.client() as client:
            assert client.get(key) == str(value)


async def test_nothing_listening_is_a_backend_error() -> None:
    settings = store_settings(f"{HOST}:{free_port()}", timeout=2)
    async with open_store(settings, start=False) as store:
        with pytest.raises(BackendError, match=r"Connection refused|connecting"):
            await store.increment([inc(unique())])
        with pytest.raises(BackendError):
            await store.get([(unique(), False)])
        assert not store.connected()


async def test_server_going_down_and_coming_back(tmp_path: Path) -> None:
    key = unique()
    stats = StatsStore()
    server = RedisProcess(tmp_path).start()
    try:
        async with open_store(store_settings(server.address), stats=stats) as store:
            assert await store.increment([inc(key)]) == [1]
            assert store.connected()
            server.stop()
            with pytest.raises(BackendError):
                await store.increment([inc(key)])
            assert not store.connected()
            assert stats.value("ratelimit.redis_pool.cx_active") == 0
            server.start()
            assert await store.increment([inc(key)]) == [1]  # a new, empty server
            assert store.connected()
            assert stats.value("ratelimit.redis_pool.cx_total") == 2
    finally:
        server.stop()


async def test_start_retries_until_the_server_comes_up(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    server = RedisProcess(tmp_path)
    async with open_store(store_settings(server.address), start=False) as store:
        with caplog.at_level(logging.WARNING, logger="handlers.ratelimit.backends"):
            starting = asyncio.create_task(store.start())

            async def retrying() -> bool:
                return "retrying in" in caplog.text

            try:
                await eventually(retrying, what="the first failed PING")
                assert not starting.done()
                server.start()
                await asyncio.wait_for(starting, 10)
            finally:
                starting.cancel()
                server.stop()
        assert store.connected()


async def test_start_gives_up_after_the_max_elapsed_time() -> None:
    settings = store_settings(f"{HOST}:{free_port()}", startup_max_elapsed_time=1.2)
    async with open_store(settings, start=False) as store:
        began = time.monotonic()
        with pytest.raises(BackendError, match=r"after retries: .*(Connection refused|connecting)"):
            await store.start()
        assert time.monotonic() - began < 2.5


async def test_start_checks_every_instance(redis_server: RedisProcess) -> None:
    dead = store_settings(f"{HOST}:{free_port()}", startup_max_elapsed_time=0.1)
    async with open_store(
        store_settings(redis_server.address), per_second=dead, start=False
    ) as store:
        with pytest.raises(BackendError, match="after retries"):
            await store.start()


# --- pool ---------------------------------------------------------------------------------


def _pool(store: RedisStore):  # type: ignore[no-untyped-def]
    return store._main.pool  # type: ignore[union-attr]


def _in_use(store: RedisStore, count: int):  # type: ignore[no-untyped-def]
    async def probe() -> bool:
        return bool(_pool(store).in_use == count)

    return probe


async def test_pool_wait_blocks_until_a_connection_is_free(redis_server: RedisProcess) -> None:
    key = unique()
    stats = StatsStore()
    settings = store_settings(
        redis_server.address,
        pool_size=1,
        pool_on_empty_behavior="WAIT",
        pool_on_empty_wait_duration=0.05,
    )
    async with open_store(settings, stats=stats) as store:
        with paused_writes(redis_server):
            first = asyncio.create_task(store.increment([inc(key)]))
            await eventually(_in_use(store, 1), what="the first call to hold the connection")
            second = asyncio.create_task(store.increment([inc(key)]))
            await asyncio.sleep(0.3)  # well past the wait duration, which WAIT ignores
            assert not second.done()
        assert await first == [1]
        assert await second == [2]
    assert stats.value("ratelimit.redis_pool.cx_total") == 1


async def test_pool_error_fails_after_the_wait_duration(redis_server: RedisProcess) -> None:
    key = unique()
    settings = store_settings(
        redis_server.address,
        pool_size=1,
        pool_on_empty_behavior="ERROR",
        pool_on_empty_wait_duration=0.2,
    )
    async with open_store(settings) as store:
        with paused_writes(redis_server):
            first = asyncio.create_task(store.increment([inc(key)]))
            await eventually(_in_use(store, 1), what="the first call to hold the connection")
            began = time.monotonic()
            with pytest.raises(BackendError, match="connection pool is empty"):
                await store.increment([inc(key)])
            assert 0.15 < time.monotonic() - began < 2
        assert await first == [1]
        assert await store.increment([inc(key)]) == [2]


async def test_pool_create_opens_an_overflow_connection(redis_server: RedisProcess) -> None:
    key = unique()
    stats = StatsStore()
    settings = store_settings(
        redis_server.address,
        pool_size=1,
        pool_on_empty_behavior="CREATE",
        pool_on_empty_wait_duration=0.2,
    )

    async def overflow_opened() -> bool:
        return stats.value("ratelimit.redis_pool.cx_total") == 2

    async with open_store(settings, stats=stats) as store:
        with paused_writes(redis_server):
            first = asyncio.create_task(store.increment([inc(key)]))
            await eventually(_in_use(store, 1), what="the first call to hold the connection")
            began = time.monotonic()
            second = asyncio.create_task(store.increment([inc(key)]))
            await eventually(overflow_opened, what="the overflow connection")
            assert time.monotonic() - began >= 0.15  # only after the wait duration
            assert stats.value("ratelimit.redis_pool.cx_active") == 2
        assert sorted([*await first, *await second]) == [1, 2]

        async def overflow_closed() -> bool:
            return stats.value("ratelimit.redis_pool.cx_local_close") == 1

        await eventually(overflow_closed, what="the overflow connection to close")
        assert stats.value("ratelimit.redis_pool.cx_active") == 1
        assert _pool(store).members == 1
        assert await store.increment([inc(key)]) == [3]


async def test_pool_size_bounds_the_connections(redis_server: RedisProcess) -> None:
    keys = [unique(str(i)) for i in range(10)]
    stats = StatsStore()
    settings = store_settings(redis_server.address, pool_size=3, pool_on_empty_behavior="WAIT")
    async with open_store(settings, stats=stats) as store:
        results = await asyncio.gather(*(store.increment([inc(k)]) for k in keys * 3))
        assert sorted(v for (v,) in results) == sorted([1, 2, 3] * 10)
    # calls made together share one batch, on one connection (test_redis_batching has the
    # pool size bounding the batches in flight)
    assert stats.value("ratelimit.redis_pool.cx_total") == 1
    assert stats.value("ratelimit.redis_pool.cx_local_close") == 1
    assert stats.value("ratelimit.redis_pool.cx_active") == 0


# --- settings and helpers ------------------------------------------------------------------


def test_settings_errors() -> None:
    with pytest.raises(BackendError) as raised:
        RedisStore(KvStoreSettings(type="sentinel", url="mymaster"))
    assert str(raised.value) == SENTINEL_URL_ERROR
    assert SENTINEL_URL_ERROR == (
        "Expected master name and a list of urls for the sentinels, in the format: "
        "<redis master name>,<sentinel1>,...,<sentineln>"
    )
    with pytest.raises(BackendError, match="Unrecognized redis type bogus"):
        RedisStore(KvStoreSettings(type="bogus", url="localhost:6379"))
    with pytest.raises(BackendError, match="host:port"):
        RedisStore(KvStoreSettings(socket_type="tcp", url="no-port-here"))


@pytest.mark.parametrize(
    ("url", "masked"),
    [
        ("redis:6379", "redis:6379"),
        ("redis://foo:bar@redis:6379", "redis://*****@redis:6379"),
        ("redis1:6379,redis2:6379", "redis1:6379,redis2:6379"),
        (
            "redis://foo:bar@redis1:6379,redis://foo:bar@redis2:6379",
            "redis://*****@redis1:6379,redis://*****@redis2:6379",
        ),
        (
            "redis://foo:b@r@redis1:6379,redis://foo:b@r@redis2:6379",
            "redis://*****@redis1:6379,redis://*****@redis2:6379",
        ),
        (
            "foobar,redis://foo:bar@redis1:6379,redis://foo:bar@redis2:6379",
            "foobar,redis://*****@redis1:6379,redis://*****@redis2:6379",
        ),
        ("rediss://secret@redis:6380", "rediss://*****@redis:6380"),
        ("/var/run/redis.sock", "/var/run/redis.sock"),
    ],
)
def test_mask_credentials(url: str, masked: str) -> None:
    assert mask_credentials(url) == masked
