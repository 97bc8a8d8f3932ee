"""The service end to end on two memcached nodes (BACKEND_TYPE=memcache): decisions and
upstream keys, statistics, a node failure answered as a cache failure, and cache health."""

from __future__ import annotations

import asyncio
import itertools
import zlib
from collections.abc import AsyncIterator
from pathlib import Path

import grpc
import httpx
import pytest

from generated.proto.envoy.service.ratelimit.v3 import rls_pb2, rls_pb2_grpc
from handlers.ratelimit.backends.memcache import MemcacheStore
from handlers.ratelimit.server import RateLimitServer
from handlers.ratelimit.settings import Settings
from tests.ratelimit.conftest import descriptor, request
from tests.ratelimit.memcached_servers import MemcachedProcess, memcached_nodes, node_of, ttl
from tests.ratelimit.test_server import RULES, runtime

__all__ = ["memcached_nodes"]  # the fixture

OK = rls_pb2.RateLimitResponse.OK
OVER_LIMIT = rls_pb2.RateLimitResponse.OVER_LIMIT


@pytest.fixture
async def service(
    tmp_path: Path, memcached_nodes: list[MemcachedProcess]
) -> AsyncIterator[RateLimitServer]:
    env = {
        **runtime(tmp_path, RULES),
        "BACKEND_TYPE": "memcache",
        "ALTCACHE_HOST_PORT": ",".join(node.address for node in memcached_nodes),
        "KVSTORE_HEALTH_CHECK_ACTIVE_CONNECTION": "true",
        "CACHE_KEY_PREFIX": f"{tmp_path.name}:",
        "EXPIRATION_JITTER_MAX_SECONDS": "0",
        "STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT": "true",  # no effect on memcache
    }
    settings = Settings.from_env(env).changed(
        host="127.0.0.1", port=0, grpc_host="127.0.0.1", grpc_port=0
    )
    running = RateLimitServer(settings)
    await running.start()
    try:
        yield running
    finally:
        await running.stop()


def store_of(server: RateLimitServer) -> MemcacheStore:
    assert isinstance(server.store, MemcacheStore)
    return server.store


def window(server: RateLimitServer) -> int:
    return server.limiter.now() // 60 * 60


def key(server: RateLimitServer, value: str) -> str:
    return f"{server.settings.cache_key_prefix}edge_remote_address_{value}_{window(server)}"


async def call_on(server: RateLimitServer, node: int, label: str) -> rls_pb2.RateLimitResponse:
    """A call whose counter is on ``node`` (made again if a window boundary passes during
    it: the window is part of the key)."""
    while True:
        start = window(server)
        value = next(
            f"{label}-{n}"
            for n in itertools.count()
            if zlib.crc32(key(server, f"{label}-{n}").encode()) % 2 == node
        )
        try:
            response = await call(server, value)
        except grpc.aio.AioRpcError:
            if window(server) == start:
                raise
            continue
        if window(server) == start:
            return response


async def call(server: RateLimitServer, value: str) -> rls_pb2.RateLimitResponse:
    async with grpc.aio.insecure_channel(f"127.0.0.1:{server.grpc_port}") as channel:
        stub = rls_pb2_grpc.RateLimitServiceStub(channel)
        response: rls_pb2.RateLimitResponse = await stub.ShouldRateLimit(
            request("edge", descriptor(("remote_address", value)))
        )
        return response


async def test_over_limit_after_the_limit_under_the_upstream_key(
    service: RateLimitServer, memcached_nodes: list[MemcachedProcess]
) -> None:
    store = store_of(service)
    responses = []
    for _ in range(3):
        responses.append(await call(service, "10.0.0.1"))
        await store.flush()  # as upstream's integration tests: increments land between calls
    assert [r.overall_code for r in responses] == [OK, OK, OVER_LIMIT]
    assert [r.statuses[0].limit_remaining for r in responses] == [1, 0, 0]
    counter = key(service, "10.0.0.1")
    node = zlib.crc32(counter.encode()) % 2
    assert node_of(memcached_nodes, counter) == {node: b"3"}
    left = ttl(memcached_nodes[node], counter)
    assert left is not None and 0 < left <= 60  # the window, no jitter
    stats = service.stats.store
    prefix = "ratelimit.service.rate_limit.edge.remote_address."
    assert [
        stats.value(prefix + name)
        for name in ("total_hits", "within_limit", "near_limit", "over_limit")
    ] == [3, 2, 1, 1]
    assert stats.value("ratelimit.memcache.multiget.__code=success") >= 3


async def test_a_stopped_node_is_a_cache_failure_and_health_follows(
    service: RateLimitServer, memcached_nodes: list[MemcachedProcess]
) -> None:
    health = f"http://127.0.0.1:{service.http_port}/healthcheck"
    loop = asyncio.get_running_loop()
    async with httpx.AsyncClient() as client:
        assert (await call_on(service, 0, "before")).overall_code == OK
        assert (await client.get(health)).status_code == 200
        memcached_nodes[1].stop()
        try:
            with pytest.raises(grpc.aio.AioRpcError) as raised:
                await call_on(service, 1, "during")
            assert raised.value.code() == grpc.StatusCode.UNKNOWN
            assert "memcached " + memcached_nodes[1].address in str(raised.value.details())
            counters = service.stats.store
            assert counters.value("ratelimit.service.call.should_rate_limit.redis_error") == 1
            # keys on the other node are still served
            assert (await call_on(service, 0, "other")).overall_code == OK
            deadline = loop.time() + 10
            while (await client.get(health)).status_code != 500:
                assert loop.time() < deadline
                await asyncio.sleep(0.05)
        finally:
            memcached_nodes[1].start()
        deadline = loop.time() + 10
        for attempt in itertools.count():
            try:
                await call_on(service, 1, f"after{attempt}")
                break
            except grpc.aio.AioRpcError:
                assert loop.time() < deadline
                await asyncio.sleep(0.05)
        while (await client.get(health)).status_code != 200:
            assert loop.time() < deadline
            await asyncio.sleep(0.05)
