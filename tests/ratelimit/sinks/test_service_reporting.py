"""A real RateLimitServer pushing its statistics to a UDP receiver every flush interval."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import grpc

from generated.proto.envoy.service.ratelimit.v3 import rls_pb2_grpc
from handlers.ratelimit.server import RateLimitServer
from handlers.ratelimit.settings import Settings
from tests.ratelimit.conftest import descriptor, request
from tests.ratelimit.sinks.udp import udp_receiver

RULES = """
domain: edge
descriptors:
  - key: remote_address
    rate_limit: {unit: minute, requests_per_unit: 2}
"""


async def test_server_pushes_statsd_lines_every_interval(tmp_path: Path) -> None:
    config = tmp_path / "runtime" / "config"
    config.mkdir(parents=True)
    (config / "edge.yaml").write_text(RULES)
    with udp_receiver() as receiver:
        env = {
            "RUNTIME_ROOT": str(tmp_path / "runtime"),
            "RUNTIME_WATCH_ROOT": "false",
            "BACKEND_TYPE": "memory",
            "DEBUG_PORT": "0",
            "DEBUG_HOST": "127.0.0.1",
            "METRICSD_HOST": "127.0.0.1",
            "METRICSD_PORT": str(receiver.port),
            "STATS_FLUSH_INTERVAL": "100ms",
        }
        settings = replace(
            Settings.from_env(env), host="127.0.0.1", port=0, grpc_host="127.0.0.1", grpc_port=0
        )
        server = RateLimitServer(settings)
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
