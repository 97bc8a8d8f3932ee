"""The service on a real Redis: upstream-identical keys, backend failures answered as the
upstream does, and the cache health component (KVSTORE_HEALTH_CHECK_ACTIVE_CONNECTION)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import grpc
import httpx
import pytest

from generated.proto.envoy.service.ratelimit.v3 import rls_pb2, rls_pb2_grpc
from handlers.ratelimit.server import RateLimitServer
from handlers.ratelimit.settings import Settings
from tests.ratelimit.conftest import descriptor, request
from tests.ratelimit.redis_servers import RedisProcess, redis_server  # noqa: F401
from tests.ratelimit.test_server import RULES, runtime


@pytest.fixture
async def service(tmp_path: Path, redis_server: RedisProcess) -> AsyncIterator[RateLimitServer]:  # noqa: F811
    env = {
        **runtime(tmp_path, RULES),
        "BACKEND_TYPE": "redis",
        "KVSTORE_SOCKET_TYPE": "tcp",
        "KVSTORE_URL": redis_server.address,
        "KVSTORE_TIMEOUT": "1s",
        "KVSTORE_HEALTH_CHECK_ACTIVE_CONNECTION": "true",
        "CACHE_KEY_PREFIX": f"{tmp_path.name}:",
        "EXPIRATION_JITTER_MAX_SECONDS": "0",
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


async def call(server: RateLimitServer, value: str) -> rls_pb2.RateLimitResponse:
    async with grpc.aio.insecure_channel(f"127.0.0.1:{server.grpc_port}") as channel:
        stub = rls_pb2_grpc.RateLimitServiceStub(channel)
        response: rls_pb2.RateLimitResponse = await stub.ShouldRateLimit(
            request("edge", descriptor(("remote_address", value)))
        )
        return response


async def test_counts_in_redis_under_the_upstream_key(
    service: RateLimitServer,
    redis_server: RedisProcess,  # noqa: F811
) -> None:
    first = await call(service, "10.0.0.1")
    await call(service, "10.0.0.1")
    third = await call(service, "10.0.0.1")
    assert first.statuses[0].limit_remaining == 1
    assert third.overall_code == rls_pb2.RateLimitResponse.OVER_LIMIT
    window = int(service.limiter.now()) // 60 * 60
    key = f"{service.settings.cache_key_prefix}edge_remote_address_10.0.0.1_{window}"
    with redis_server.client() as client:
        assert client.get(key) == "3"
        assert 0 < client.ttl(key) <= 60


async def test_cache_failure_is_unknown_and_health_follows_the_connection(
    service: RateLimitServer,
    redis_server: RedisProcess,  # noqa: F811
) -> None:
    health = f"http://127.0.0.1:{service.http_port}/healthcheck"
    async with httpx.AsyncClient() as client:
        await call(service, "before")
        assert (await client.get(health)).status_code == 200
        redis_server.stop()
        try:
            with pytest.raises(grpc.aio.AioRpcError) as raised:
                await call(service, "during")
            assert raised.value.code() == grpc.StatusCode.UNKNOWN
            json_call = await client.post(
                f"http://127.0.0.1:{service.http_port}/json",
                json={
                    "domain": "edge",
                    "descriptors": [{"entries": [{"key": "remote_address", "value": "x"}]}],
                },
            )
            assert (json_call.status_code, json_call.text) == (400, "Bad Request\n")
            counters = service.stats.store
            assert counters.value("ratelimit.service.call.should_rate_limit.redis_error") == 2
            deadline = asyncio.get_running_loop().time() + 10
            while (await client.get(health)).status_code != 500:
                assert asyncio.get_running_loop().time() < deadline
                await asyncio.sleep(0.05)
        finally:
            redis_server.start()
        deadline = asyncio.get_running_loop().time() + 10
        while True:
            try:
                await call(service, "after")
                break
            except grpc.aio.AioRpcError:
                assert asyncio.get_running_loop().time() < deadline
                await asyncio.sleep(0.05)
        assert (await client.get(health)).status_code == 200
