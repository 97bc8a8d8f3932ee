"""A real RateLimitServer pushing its statistics to a UDP receiver every flush interval."""

from __future__ import annotations

import time
from pathlib import Path

import grpc

from generated.proto.envoy.service.ratelimit.v3 import rls_pb2_grpc
from handlers.ratelimit.server import RateLimitServer
from handlers.ratelimit.settings import Settings
from tests.ratelimit.conftest import descriptor, request
from tests.ratelimit.sinks.udp import UdpReceiver, udp_receiver

RULES = """
domain: edge
descriptors:
  - key: remote_address
    rate_limit: {unit: minute, requests_per_unit: 2}
"""


def pushing_server(tmp_path: Path, receiver: UdpReceiver, **env: str) -> RateLimitServer:
    """A server on loopback with :data:`RULES` that pushes to ``receiver`` every 100 ms."""
    config = tmp_path / "runtime" / "config"
    config.mkdir(parents=True)
    (config / "edge.yaml").write_text(RULES)
    env = {
        "RUNTIME_ROOT": str(tmp_path / "runtime"),
        "RUNTIME_WATCH_ROOT": "false",
        "BACKEND_TYPE": "memory",
        "DEBUG_PORT": "0",
        "DEBUG_HOST": "127.0.0.1",
        "METRICSD_HOST": "127.0.0.1",
        "METRICSD_PORT": str(receiver.port),
        "STATS_FLUSH_INTERVAL": "100ms",
        **env,
    }
    settings = Settings.from_env(env).changed(
        host="127.0.0.1", port=0, grpc_host="127.0.0.1", grpc_port=0
    )
    return RateLimitServer(settings)


async def test_server_pushes_statsd_lines_every_interval(tmp_path: Path) -> None:
    with udp_receiver() as receiver:
        server = pushing_server(tmp_path, receiver)
        await server.start()
        try:
            first = await receiver.receive(1)
            assert first == ["ratelimit.service.config_load_success:1|c"]
            async with grpc.aio.insecure_channel(f"127.0.0.1:{server.grpc_port}") as channel:
                stub = rls_pb2_grpc.RateLimitServiceStub(channel)
                await stub.ShouldRateLimit(request("edge", descriptor(("remote_address", "a"))))
            lines = await receiver.receive(4)
        finally:
            await server.stop()
    assert sorted(line for line in lines if line.endswith("|c")) == [
        "ratelimit.service.rate_limit.edge.remote_address.total_hits:1|c",
        "ratelimit.service.rate_limit.edge.remote_address.within_limit:1|c",
        "ratelimit_server.ShouldRateLimit.total_requests:1|c",
    ]
    [timer] = [line for line in lines if line.endswith("|ms")]
    assert timer.startswith("ratelimit_server.ShouldRateLimit.response_time:")


async def test_local_cache_gauges_are_pushed(tmp_path: Path) -> None:
    """The eight ``ratelimit.localcache`` gauges of the reference, with their values after
    three calls over a limit of 2 (the third fills the cache) and a fourth it answers."""
    with udp_receiver() as receiver:
        server = pushing_server(tmp_path, receiver, LOCAL_CACHE_SIZE_IN_BYTES="1048576")
        await server.start()
        try:
            async with grpc.aio.insecure_channel(f"127.0.0.1:{server.grpc_port}") as channel:
                stub = rls_pb2_grpc.RateLimitServiceStub(channel)
                for _ in range(4):
                    call = request("edge", descriptor(("remote_address", "a")))
                    await stub.ShouldRateLimit(call)
            called = int(time.time())
            gauges: dict[str, int] = {}
            # the flushes before the last call show other values: keep what follows the
            # first hitCount of 1, until all eight are in
            while len(gauges) < 8 or gauges.get("hitCount") != 1:
                for line in await receiver.receive(1):
                    name, _, value = line.partition(":")
                    if name.startswith("ratelimit.localcache.") and value.endswith("|g"):
                        gauge, number = name.removeprefix("ratelimit.localcache."), int(value[:-2])
                        if gauge == "hitCount" and number == 1 and gauges.get(gauge) != 1:
                            gauges = {}
                        gauges[gauge] = number
        finally:
            await server.stop()
    accessed = gauges.pop("averageAccessTime")
    assert called - 5 <= accessed <= called
    assert gauges == {
        "hitCount": 1,
        "missCount": 3,
        "lookupCount": 4,
        "entryCount": 1,
        "expiredCount": 0,
        "evacuateCount": 0,
        "overwriteCount": 0,
    }
