"""The debug port over a real uvicorn server inside a real RateLimitServer."""

from __future__ import annotations

import marshal
from collections.abc import AsyncIterator
from pathlib import Path

import grpc
import httpx
import pytest

from generated.proto.envoy.service.ratelimit.v3 import rls_pb2_grpc
from handlers.ratelimit.server import RateLimitServer
from handlers.ratelimit.settings import Settings
from tests.ratelimit.conftest import descriptor, request

RULES = """
domain: edge
descriptors:
  - key: remote_address
    rate_limit: {unit: minute, requests_per_unit: 2}
  - key: path
    value: /login
    shadow_mode: true
    descriptors:
      - key: user
        rate_limit: {unit: second, requests_per_unit: 5}
  - key: client
    value: internal
    rate_limit: {unlimited: true}
"""


@pytest.fixture
async def server(tmp_path: Path) -> AsyncIterator[RateLimitServer]:
    config = tmp_path / "runtime" / "config"
    config.mkdir(parents=True)
    (config / "edge.yaml").write_text(RULES)
    env = {
        "RUNTIME_ROOT": str(tmp_path / "runtime"),
        "RUNTIME_WATCH_ROOT": "false",
        "BACKEND_TYPE": "memory",
        "DEBUG_HOST": "127.0.0.1",
        "DEBUG_PORT": "0",
        "DISABLE_STATS": "true",
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


@pytest.fixture
async def debug(server: RateLimitServer) -> AsyncIterator[httpx.AsyncClient]:
    assert server.debug_listener is not None
    base = f"http://127.0.0.1:{server.debug_listener.port}"
    async with httpx.AsyncClient(base_url=base, timeout=10) as client:
        yield client


async def test_index_lists_the_endpoints(debug: httpx.AsyncClient) -> None:
    response = await debug.get("/")
    assert response.status_code == 200
    assert response.headers["content-type"] == "text/plain; charset=utf-8"
    assert response.text == (
        "/debug/pprof/: root of various pprof endpoints. hit for help.\n"
        "/debug/pprof/profile: CPU profiling endpoint\n"
        "/rlconfig: print out the currently loaded configuration for debugging\n"
        "/stats: print out stats\n"
    )


async def test_rlconfig_prints_one_line_per_rule(debug: httpx.AsyncClient) -> None:
    response = await debug.get("/rlconfig")
    assert sorted(response.text.splitlines()) == [
        "edge.client_internal: unit=UNKNOWN requests_per_unit=0, shadow_mode: false, "
        "quota_mode: false",
        "edge.path_/login.user: unit=SECOND requests_per_unit=5, shadow_mode: false, "
        "quota_mode: false",
        "edge.remote_address: unit=MINUTE requests_per_unit=2, shadow_mode: false, "
        "quota_mode: false",
    ]


async def test_stats_show_every_stat(server: RateLimitServer, debug: httpx.AsyncClient) -> None:
    async with grpc.aio.insecure_channel(f"127.0.0.1:{server.grpc_port}") as channel:
        stub = rls_pb2_grpc.RateLimitServiceStub(channel)
        for _ in range(3):
            await stub.ShouldRateLimit(request("edge", descriptor(("remote_address", "1.2.3.4"))))
    lines = (await debug.get("/stats")).text.splitlines()
    assert lines == sorted(lines)
    prefix = "ratelimit.service.rate_limit.edge.remote_address."
    for line in (
        f"{prefix}total_hits: 3",
        f"{prefix}over_limit: 1",
        f"{prefix}near_limit: 1",
        f"{prefix}within_limit: 2",
        f"{prefix}shadow_mode: 0",
        "ratelimit.service.config_load_success: 1",
        "ratelimit_server.ShouldRateLimit.total_requests: 3",
    ):
        assert line in lines
    timer = next(x for x in lines if x.startswith("ratelimit_server.ShouldRateLimit.response_time"))
    assert timer.startswith("ratelimit_server.ShouldRateLimit.response_time: count=3 total_ms=")


async def test_pprof_index_and_stacks(debug: httpx.AsyncClient) -> None:
    index = (await debug.get("/debug/pprof/")).text
    for name in ("cmdline", "goroutine", "heap", "profile"):
        assert f"/debug/pprof/{name}: " in index
    stacks = (await debug.get("/debug/pprof/goroutine")).text
    assert stacks.startswith("threads:\n\nthread ")
    assert "MainThread" in stacks
    assert "\nasyncio tasks:\n\ntask " in stacks
    assert "goroutine" in stacks  # this very request's handler is on the loop's stack


async def test_cpu_profile_of_one_second(server: RateLimitServer, debug: httpx.AsyncClient) -> None:
    response = await debug.get("/debug/pprof/profile", params={"seconds": 1})
    assert response.status_code == 200
    assert response.text.startswith("CPU profile of the event loop thread over 1 s\n")
    assert "Ordered by: cumulative time" in response.text
    assert "base_events.py" in response.text  # the event loop itself was profiled
    raw = await debug.get("/debug/pprof/profile", params={"seconds": 1, "format": "pstats"})
    assert raw.headers["content-type"] == "application/octet-stream"
    assert isinstance(marshal.loads(raw.content), dict)


async def test_bad_profile_requests(debug: httpx.AsyncClient) -> None:
    response = await debug.get("/debug/pprof/profile", params={"seconds": 0})
    assert response.status_code == 400
    assert "seconds" in response.text
    assert (await debug.get("/debug/pprof/profile?format=svg")).status_code == 400
    assert (await debug.get("/nothing")).status_code == 404


async def test_heap_profile_starts_and_stops_tracemalloc(debug: httpx.AsyncClient) -> None:
    first = (await debug.get("/debug/pprof/heap")).text
    try:
        assert first.startswith("tracemalloc was off and is tracing allocations from now on")
        second = (await debug.get("/debug/pprof/heap", params={"top": 5})).text
        assert second.startswith("traced memory: current ")
        assert "top 5 allocation sites:" in second
        assert len(second.splitlines()) <= 7
    finally:
        stopped = (await debug.get("/debug/pprof/heap", params={"stop": "true"})).text
    assert stopped == "tracemalloc stopped\n"
