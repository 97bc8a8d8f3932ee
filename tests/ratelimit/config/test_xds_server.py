"""The whole service with CONFIG_TYPE=GRPC_XDS_SOTW: decisions follow the rules the management
server pushes; a refused configuration keeps the previous rules and is counted; startup waits
for the first configuration unless forced, and a signal ends that wait."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable

import grpc
import pytest

from generated.proto.envoy.service.ratelimit.v3 import rls_pb2, rls_pb2_grpc
from generated.proto.ratelimit.config.ratelimit.v3 import rls_conf_pb2 as rls
from handlers.ratelimit.config.parse import dump
from handlers.ratelimit.server import RateLimitServer
from tests.ratelimit.config.test_xds import acks, config, nacks, rule, xds_settings
from tests.ratelimit.config.test_xds import server as server  # the fixture
from tests.ratelimit.conftest import descriptor, request
from tests.ratelimit.redis_servers import free_port
from tests.ratelimit.test_server import Process
from tests.ratelimit.xds_management_server import TIMEOUT, ManagementServer

OK = rls_pb2.RateLimitResponse.OK
OVER_LIMIT = rls_pb2.RateLimitResponse.OVER_LIMIT
EDGE = config("edge", rule("remote_address", "", rls.MINUTE, 2))


@pytest.fixture
async def service(server: ManagementServer) -> AsyncIterator[Callable[..., RateLimitServer]]:
    """Builds services on the management server (started by the test), stopped at the end."""
    services: list[RateLimitServer] = []

    def build(**env: str) -> RateLimitServer:
        settings = (
            xds_settings(server, BACKEND_TYPE="memory", DISABLE_STATS="true", **env)
        ).changed(
            host="127.0.0.1",
            port=0,
            grpc_host="127.0.0.1",
            grpc_port=0,
            debug_host="127.0.0.1",
            debug_port=0,
        )
        services.append(RateLimitServer(settings))
        return services[-1]

    yield build
    for running in services:
        await running.stop()


async def decide(running: RateLimitServer, value: str) -> rls_pb2.RateLimitResponse.Code.ValueType:
    async with grpc.aio.insecure_channel(f"127.0.0.1:{running.grpc_port}") as channel:
        stub = rls_pb2_grpc.RateLimitServiceStub(channel)
        response = await stub.ShouldRateLimit(
            request("edge", descriptor(("remote_address", value))), timeout=TIMEOUT
        )
        return response.overall_code


async def until(condition: Callable[[], bool]) -> None:
    deadline = asyncio.get_running_loop().time() + TIMEOUT
    while not condition():
        assert asyncio.get_running_loop().time() < deadline
        await asyncio.sleep(0.01)


def counter(running: RateLimitServer, name: str) -> int:
    return running.stats.store.value(f"ratelimit.service.{name}")


async def test_decisions_follow_the_pushed_rules(
    server: ManagementServer, service: Callable[..., RateLimitServer]
) -> None:
    server.set_snapshot("1", [EDGE])
    running = service()
    await running.start()
    assert [await decide(running, "a") for _ in range(3)] == [OK, OK, OVER_LIMIT]
    assert counter(running, "config_load_success") == 1

    # a refused configuration: NACKed, counted, and the rules in force stay
    server.set_snapshot("2", [config("edge", rls.RateLimitDescriptor(key="remote_address"))] * 2)
    nack = await server.wait_for_request(nacks)
    assert nack.error == "edge: duplicate domain 'edge' in config file"
    assert counter(running, "config_load_error") == 1
    assert [await decide(running, "b") for _ in range(3)] == [OK, OK, OVER_LIMIT]

    server.set_snapshot("3", [config("edge", rule("remote_address", "", rls.MINUTE, 1))])
    await server.wait_for_request(acks("3"))
    assert counter(running, "config_load_success") == 2
    assert running.service.rules is not None
    assert dump(running.service.rules) == [
        "edge.remote_address: unit=MINUTE requests_per_unit=1, shadow_mode: false, "
        "quota_mode: false"
    ]
    assert [await decide(running, "c") for _ in range(2)] == [OK, OVER_LIMIT]


async def test_start_waits_for_the_first_configuration(
    server: ManagementServer, service: Callable[..., RateLimitServer]
) -> None:
    running = service()
    starting = asyncio.create_task(running.start())
    await server.wait_for_request(lambda r: True)
    assert not starting.done() and running.grpc_server is None
    server.set_snapshot("1", [EDGE])
    await asyncio.wait_for(starting, TIMEOUT)
    assert await decide(running, "a") == OK


async def test_forced_start_serves_before_any_configuration(
    server: ManagementServer, service: Callable[..., RateLimitServer]
) -> None:
    running = service(FORCE_START_WITHOUT_INITIAL_CONFIG="true")
    await running.start()
    with pytest.raises(grpc.aio.AioRpcError) as raised:
        await decide(running, "a")
    assert raised.value.code() == grpc.StatusCode.UNKNOWN
    assert raised.value.details() == "no rate limit configuration loaded"
    server.set_snapshot("1", [EDGE])
    await until(lambda: running.service.rules is not None)
    assert await decide(running, "a") == OK


async def test_sigterm_while_waiting_for_the_first_configuration_stops_the_process(
    server: ManagementServer,
) -> None:
    process = Process(
        {
            "CONFIG_TYPE": "GRPC_XDS_SOTW",
            "CONFIG_GRPC_XDS_SERVER_URL": server.address,
            "BACKEND_TYPE": "memory",
            "DEBUG_PORT": str(free_port()),
            "USE_METRICSD": "false",
        }
    )
    try:
        await server.wait_for_request(lambda r: r.node_id == "default")
        code, log = await asyncio.to_thread(process.stop)
    finally:
        if process.popen.poll() is None:
            process.popen.kill()
            process.popen.communicate()
    assert code == 0, log
    assert "waiting for the initial configuration from the xDS management server" in log
    assert "shutting down before startup finished" in log
