"""The gRPC port, called with our generated stub and with an independent client: the
``envoy-data-plane`` package's stubs (betterproto2 messages; grpclib and grpcio channels)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import grpc
import pytest
from envoy_data_plane.envoy.extensions.common.ratelimit.v3 import (
    RateLimitDescriptor,
    RateLimitDescriptorEntry,
)
from envoy_data_plane.envoy.service.ratelimit.v3 import (
    RateLimitRequest,
    RateLimitResponseCode,
    RateLimitServiceAsyncStub,
    RateLimitServiceSyncStub,
)
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpclib.client import Channel

from generated.proto.envoy.service.ratelimit.v3 import rls_pb2, rls_pb2_grpc
from handlers.ratelimit import health as components
from handlers.ratelimit.grpc_server import SERVICE, create_grpc_server
from handlers.ratelimit.health import Health
from tests.ratelimit.conftest import Harness, descriptor, harness, request

RULES = """
domain: edge
descriptors:
  - key: remote_address
    rate_limit: {unit: minute, requests_per_unit: 2}
"""


class Running:
    def __init__(self, h: Harness, health: Health, server: grpc.aio.Server, port: int) -> None:
        self.h, self.health, self.server, self.port = h, health, server, port

    @property
    def target(self) -> str:
        return f"127.0.0.1:{self.port}"


@pytest.fixture
async def running() -> AsyncIterator[Running]:
    h = harness(RULES)
    health = Health(config_required=True)
    health.config_loaded(1)
    server, ports = await create_grpc_server(h.service, health, h.stats.store, ["127.0.0.1:0"])
    try:
        yield Running(h, health, server, ports[0])
    finally:
        await server.stop(None)


async def test_generated_stub_gets_decisions(running: Running) -> None:
    async with grpc.aio.insecure_channel(running.target) as channel:
        stub = rls_pb2_grpc.RateLimitServiceStub(channel)
        call = request("edge", descriptor(("remote_address", "10.0.0.1")))
        first = await stub.ShouldRateLimit(call)
        await stub.ShouldRateLimit(call)
        third = await stub.ShouldRateLimit(call)
    assert first.overall_code == rls_pb2.RateLimitResponse.OK
    assert first.statuses[0].limit_remaining == 1
    assert third.overall_code == rls_pb2.RateLimitResponse.OVER_LIMIT
    assert third.statuses[0].duration_until_reset.seconds == 26
    store = running.h.stats.store
    assert store.value("ratelimit_server.ShouldRateLimit.total_requests") == 3


async def test_an_unparsable_request_is_internal_and_not_counted(running: Running) -> None:
    async with grpc.aio.insecure_channel(running.target) as channel:
        call = channel.unary_unary(f"/{SERVICE}/ShouldRateLimit")  # bytes as they are
        for body in (b"\xff\xff\xff", b"\x0a\x05ab"):  # a bad tag; a string cut short
            with pytest.raises(grpc.aio.AioRpcError) as raised:
                await call(body)
            assert raised.value.code() == grpc.StatusCode.INTERNAL
            assert (raised.value.details() or "").startswith("grpc: error unmarshalling request: ")
        good = request("edge", descriptor(("remote_address", "10.0.0.9")))
        answer = rls_pb2.RateLimitResponse.FromString(await call(good.SerializeToString()))
    assert answer.overall_code == rls_pb2.RateLimitResponse.OK
    store = running.h.stats.store
    assert store.value("ratelimit_server.ShouldRateLimit.total_requests") == 1


async def test_service_errors_are_status_unknown_with_the_message(running: Running) -> None:
    async with grpc.aio.insecure_channel(running.target) as channel:
        stub = rls_pb2_grpc.RateLimitServiceStub(channel)
        with pytest.raises(grpc.aio.AioRpcError) as raised:
            await stub.ShouldRateLimit(rls_pb2.RateLimitRequest(domain="edge"))
    assert raised.value.code() == grpc.StatusCode.UNKNOWN
    assert raised.value.details() == "rate limit descriptor list must not be empty"


async def test_envoy_data_plane_async_client(running: Running) -> None:
    channel = Channel("127.0.0.1", running.port)
    try:
        stub = RateLimitServiceAsyncStub(channel)
        response = await stub.should_rate_limit(
            RateLimitRequest(
                domain="edge",
                descriptors=[
                    RateLimitDescriptor(
                        entries=[RateLimitDescriptorEntry(key="remote_address", value="10.9.9.9")]
                    )
                ],
                hits_addend=2,
            ),
            timeout=5,
        )
    finally:
        channel.close()
    assert response.overall_code == RateLimitResponseCode.OK
    assert response.to_dict() == {
        "overallCode": "OK",
        "statuses": [
            {
                "code": "OK",
                "currentLimit": {"requestsPerUnit": 2, "unit": "MINUTE"},
                "durationUntilReset": "26s",
            }
        ],
    }


async def test_envoy_data_plane_sync_client_over_grpcio(running: Running) -> None:
    def call() -> RateLimitResponseCode:
        with grpc.insecure_channel(running.target) as channel:
            stub = RateLimitServiceSyncStub(channel)
            response = stub.should_rate_limit(
                RateLimitRequest(
                    domain="edge",
                    descriptors=[
                        RateLimitDescriptor(
                            entries=[RateLimitDescriptorEntry(key="remote_address", value="a")]
                        )
                    ],
                    hits_addend=3,
                )
            )
            return response.overall_code

    assert await asyncio.to_thread(call) == RateLimitResponseCode.OVER_LIMIT


async def test_health_service_follows_the_components(running: Running) -> None:
    async with grpc.aio.insecure_channel(running.target) as channel:
        stub = health_pb2_grpc.HealthStub(channel)
        check_health = stub.Check  # type: ignore[attr-defined]  # the stubs omit the methods
        check = health_pb2.HealthCheckRequest(service="ratelimit")
        assert (await check_health(check)).status == health_pb2.HealthCheckResponse.SERVING
        running.health.set(components.SIGTERM, False)
        deadline = asyncio.get_running_loop().time() + 5
        while (await check_health(check)).status != health_pb2.HealthCheckResponse.NOT_SERVING:
            assert asyncio.get_running_loop().time() < deadline
            await asyncio.sleep(0.01)
        empty = await check_health(health_pb2.HealthCheckRequest(service=""))
        assert empty.status == health_pb2.HealthCheckResponse.SERVING
    store = running.h.stats.store
    checks = store.value("ratelimit_server.Check.total_requests")
    assert checks >= 3  # counted and timed as upstream's interceptor does every method
    assert store.timers()["ratelimit_server.Check.response_time"].count == checks
