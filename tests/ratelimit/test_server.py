"""The whole service: in-process (startup, reload through the listeners, graceful shutdown)
and as real ``ratelimit`` processes (logs, signals, workers, settings errors, the client)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from pathlib import Path

import grpc
import httpx
import pytest

from generated.proto.envoy.service.ratelimit.v3 import rls_pb2, rls_pb2_grpc
from handlers.ratelimit.backends.base import Increment
from handlers.ratelimit.backends.memory import MemoryStore
from handlers.ratelimit.client import main as client_main
from handlers.ratelimit.server import RateLimitServer
from handlers.ratelimit.settings import Settings
from tests.ratelimit.conftest import descriptor, request
from tests.ratelimit.redis_servers import free_port

PYTHON = sys.executable
RULES = """
domain: edge
descriptors:
  - key: remote_address
    rate_limit: {unit: minute, requests_per_unit: 2}
"""


def runtime(tmp_path: Path, text: str = RULES) -> dict[str, str]:
    config = tmp_path / "runtime" / "config"
    config.mkdir(parents=True)
    (config / "edge.yaml").write_text(text)
    return {
        "RUNTIME_ROOT": str(tmp_path / "runtime"),
        "RUNTIME_WATCH_ROOT": "false",
        "RUNTIME_APPDIRECTORY": "config",
    }


class SlowStore(MemoryStore):
    """Increments take a while, so a call is in flight when shutdown starts."""

    def __init__(self) -> None:
        super().__init__()
        self.entered = asyncio.Event()

    async def increment(self, increments: Sequence[Increment]) -> list[int]:
        self.entered.set()
        await asyncio.sleep(0.5)
        return await super().increment(increments)


@pytest.fixture
async def server(tmp_path: Path) -> AsyncIterator[RateLimitServer]:
    settings = Settings.from_env({**runtime(tmp_path), "BACKEND_TYPE": "memory"}).changed(
        host="127.0.0.1",
        port=0,
        grpc_host="127.0.0.1",
        grpc_port=0,
    )
    running = RateLimitServer(settings, store=SlowStore())
    await running.start()
    try:
        yield running
    finally:
        await running.stop()


async def test_graceful_shutdown_finishes_in_flight_calls(server: RateLimitServer) -> None:
    store = server.store
    assert isinstance(store, SlowStore)
    async with grpc.aio.insecure_channel(f"127.0.0.1:{server.grpc_port}") as channel:
        stub = rls_pb2_grpc.RateLimitServiceStub(channel)
        call = asyncio.ensure_future(
            stub.ShouldRateLimit(request("edge", descriptor(("remote_address", "a"))))
        )
        await asyncio.wait_for(store.entered.wait(), 5)
        server.terminating()
        await server.stop()
        response = await call
    assert response.overall_code == rls_pb2.RateLimitResponse.OK
    assert response.statuses[0].limit_remaining == 1


async def test_sigterm_makes_health_fail_on_both_ports(server: RateLimitServer) -> None:
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{server.http_port}") as client:
        assert (await client.get("/healthcheck")).text == "OK"
        server.terminating()
        assert (await client.get("/healthcheck")).status_code == 500


# -- real processes ------------------------------------------------------------------------


class Process:
    def __init__(self, env: dict[str, str]) -> None:
        self.http = free_port()
        self.grpc = free_port()
        self.env = {
            **os.environ,
            "HOST": "127.0.0.1",
            "PORT": str(self.http),
            "GRPC_HOST": "127.0.0.1",
            "GRPC_PORT": str(self.grpc),
            "LOG_LEVEL": "info",
            **env,
        }
        self.popen = subprocess.Popen(
            [PYTHON, "-m", "handlers.ratelimit.server"],
            env=self.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,  # its workers too can be killed as one group
        )

    def wait_healthy(self, timeout: float = 20.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.popen.poll() is not None:
                raise AssertionError(f"exited {self.popen.returncode}: {self.popen.stderr.read()}")  # type: ignore[union-attr]
            try:
                if httpx.get(f"http://127.0.0.1:{self.http}/healthcheck").text == "OK":
                    return
            except httpx.TransportError:
                pass
            time.sleep(0.05)
        raise AssertionError("the service did not become healthy")

    def post(self, body: Mapping[str, object]) -> httpx.Response:
        return httpx.post(f"http://127.0.0.1:{self.http}/json", json=body)

    def stop(self) -> tuple[int, str]:
        if self.popen.poll() is None:
            self.popen.send_signal(signal.SIGTERM)
        _, err = self.popen.communicate(timeout=20)
        return self.popen.returncode, err


@pytest.fixture
def processes() -> Iterator[list[Process]]:
    started: list[Process] = []
    yield started
    for process in started:
        # the whole group: a worker left behind would hold the pipes open, and reading them
        # to their end would wait forever
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.popen.pid, signal.SIGKILL)
        process.popen.communicate(timeout=20)


BODY = {"domain": "edge", "descriptors": [{"entries": [{"key": "remote_address", "value": "x"}]}]}


def test_process_serves_logs_and_stops_on_sigterm(tmp_path: Path, processes: list[Process]) -> None:
    process = Process({**runtime(tmp_path), "BACKEND_TYPE": "memory", "LOG_FORMAT": "json"})
    processes.append(process)
    process.wait_healthy()
    assert process.post(BODY).json()["statuses"][0]["limitRemaining"] == 1
    code, err = process.stop()
    assert code == 0
    lines = [json.loads(line) for line in err.splitlines()]
    assert all(set(line) == {"@message", "@timestamp", "level"} for line in lines)
    messages = [line["@message"] for line in lines]
    assert f"Listening for HTTP on '127.0.0.1:{process.http}'" in messages
    assert f"Listening for gRPC on '127.0.0.1:{process.grpc}'" in messages
    assert "loaded domain 'edge'" in messages
    assert "waiting for runtime update" in messages
    assert lines[0]["@timestamp"].endswith("Z") and len(lines[0]["@timestamp"]) == 30


def test_the_startup_heap_is_frozen_once_serving(tmp_path: Path, processes: list[Process]) -> None:
    process = Process({**runtime(tmp_path), "BACKEND_TYPE": "memory", "LOG_LEVEL": "debug"})
    processes.append(process)
    process.wait_healthy()
    _, err = process.stop()
    (frozen,) = re.findall(r"startup heap frozen: (\d+) objects", err)
    assert int(frozen) > 10_000  # modules, rules and clients: tens of thousands of objects


def test_hot_reload_through_the_running_service(tmp_path: Path, processes: list[Process]) -> None:
    env = runtime(tmp_path)
    process = Process({**env, "BACKEND_TYPE": "memory"})
    processes.append(process)
    process.wait_healthy()
    other = {"domain": "reload", "descriptors": [{"entries": [{"key": "k", "value": "v"}]}]}
    assert process.post(other).json()["statuses"] == [{"code": "OK"}]
    config = Path(env["RUNTIME_ROOT"]) / "config"
    (config / "reload.yaml").write_text(
        "domain: reload\ndescriptors:\n  - key: k\n"
        "    rate_limit: {unit: hour, requests_per_unit: 1}\n"
    )
    deadline = time.monotonic() + 10
    while "currentLimit" not in process.post(other).json()["statuses"][0]:
        assert time.monotonic() < deadline, "the new rules were not loaded"
        time.sleep(0.05)
    (config / "reload.yaml").write_text("domain: [broken\n")
    time.sleep(0.5)  # a failed load must not change anything; give it time to happen
    assert process.post(other).status_code == 429  # previous rules still active


def test_invalid_setting_stops_startup_naming_it(tmp_path: Path) -> None:
    result = subprocess.run(
        [PYTHON, "-m", "handlers.ratelimit.server"],
        env={**os.environ, "KVSTORE_POOL_ON_EMPTY_BEHAVIOR": "PANIC"},
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert result.returncode == 2
    assert (
        "KVSTORE_POOL_ON_EMPTY_BEHAVIOR='PANIC' is invalid: expected one of CREATE, ERROR, WAIT"
        in result.stderr
    )


def test_memory_backend_runs_one_worker_and_says_so(
    tmp_path: Path, processes: list[Process]
) -> None:
    process = Process({**runtime(tmp_path), "BACKEND_TYPE": "memory", "WORKERS": "4"})
    processes.append(process)
    process.wait_healthy()
    _, err = process.stop()
    assert "WORKERS=4 ignored: the memory backend keeps its counters in one process" in err


HOURLY_1000 = RULES.replace(
    "unit: minute, requests_per_unit: 2", "unit: hour, requests_per_unit: 1000"
)


def test_workers_share_the_ports_with_redis(tmp_path: Path, processes: list[Process]) -> None:
    prefix = f"workers-{os.getpid()}-{time.time_ns()}:"
    process = Process(
        {
            **runtime(tmp_path, HOURLY_1000),
            "BACKEND_TYPE": "redis",
            "KVSTORE_SOCKET_TYPE": "tcp",
            "KVSTORE_URL": "127.0.0.1:6379",
            "CACHE_KEY_PREFIX": prefix,
            "WORKERS": "2",
        }
    )
    processes.append(process)
    process.wait_healthy()
    children = subprocess.run(
        ["pgrep", "-P", str(process.popen.pid)], capture_output=True, text=True
    ).stdout.split()
    assert len(children) >= 2
    # 40 answers inside one hour's window: a window that ended between two of them would
    # start counting again and repeat answers (it failed so with per-minute windows)
    left_in_hour = 3600 - time.time() % 3600
    if left_in_hour < 60:
        time.sleep(left_in_hour + 0.5)
    remaining = set()
    for _ in range(40):  # new connections, spread over the workers by the kernel
        with httpx.Client() as client:
            body = client.post(f"http://127.0.0.1:{process.http}/json", json=BODY).json()
        remaining.add(body["statuses"][0]["limitRemaining"])
    # one shared counter: every answer is a distinct count
    assert remaining == set(range(960, 1000))
    code, _ = process.stop()
    assert code == 0


def test_client_cli(
    tmp_path: Path, processes: list[Process], capsys: pytest.CaptureFixture[str]
) -> None:
    process = Process({**runtime(tmp_path), "BACKEND_TYPE": "memory"})
    processes.append(process)
    process.wait_healthy()
    code = client_main(
        [
            "-dial_string",
            f"127.0.0.1:{process.grpc}",
            "-domain",
            "edge",
            "-descriptors",
            "remote_address=10.0.0.1",
            "-descriptors=other=1,more=2",
        ]
    )
    out = capsys.readouterr().out
    assert code == 0
    assert out.splitlines()[0] == "domain: edge"
    assert (
        'descriptor: entries { key: "other" value: "1" } entries { key: "more" value: "2" }' in out
    )
    assert (
        "response: overall_code: OK statuses { code: OK current_limit "
        "{ requests_per_unit: 2 unit: MINUTE } limit_remaining: 1" in out
    )
    failed = client_main(["-dial_string", f"127.0.0.1:{process.grpc}", "-domain", ""])
    assert failed == 1
    assert "request error: UNKNOWN: rate limit domain must not be empty" in capsys.readouterr().err

    # -counters: the HTTP port's POST /counters, counting nothing (twice: the same answer)
    counters = ["-counters", "-http_address", f"127.0.0.1:{process.http}", "-domain", "edge"]
    for _ in range(2):
        code = client_main([*counters, "-descriptors=remote_address=10.0.0.1", "-descriptors=x=y"])
        output = capsys.readouterr()
        lines = output.out.splitlines()
        assert code == 0, output
        assert lines[3:] == [  # after the domain and the two descriptors
            "descriptor 0 (remote_address=10.0.0.1): limited",
            "  * (unnamed): fixed_window, 2 per 60000 ms, used 1, remaining 1, reset in "
            + lines[4].rsplit("reset in ", 1)[-1],
            "descriptor 1 (x=y): no_limit",
        ]
    assert client_main([*counters[:3], "-domain", ""]) == 1
    assert "request error" in capsys.readouterr().err


async def test_grpc_on_a_unix_socket(tmp_path: Path) -> None:
    path = tmp_path / "rls.sock"
    settings = Settings.from_env({**runtime(tmp_path), "BACKEND_TYPE": "memory"}).changed(
        host="127.0.0.1",
        port=0,
        grpc_uds=str(path),
    )
    running = RateLimitServer(settings)
    await running.start()
    try:
        async with grpc.aio.insecure_channel(f"unix:{path}") as channel:
            stub = rls_pb2_grpc.RateLimitServiceStub(channel)
            response = await stub.ShouldRateLimit(
                request("edge", descriptor(("remote_address", "u")))
            )
        assert response.statuses[0].limit_remaining == 1
    finally:
        await running.stop()


async def test_configuration_health_component(tmp_path: Path) -> None:
    env = runtime(tmp_path, "domain: edge\ndescriptors: []\n")
    (Path(env["RUNTIME_ROOT"]) / "config" / "edge.yaml").unlink()
    settings = (
        Settings.from_env(
            {**env, "BACKEND_TYPE": "memory", "HEALTHY_WITH_AT_LEAST_ONE_CONFIG_LOADED": "true"}
        )
    ).changed(
        host="127.0.0.1",
        port=0,
        grpc_host="127.0.0.1",
        grpc_port=0,
    )
    running = RateLimitServer(settings)
    await running.start()
    try:
        url = f"http://127.0.0.1:{running.http_port}/healthcheck"
        async with httpx.AsyncClient() as client:
            assert (await client.get(url)).status_code == 500  # no domain loaded
            (Path(env["RUNTIME_ROOT"]) / "config" / "edge.yaml").write_text(RULES)
            deadline = asyncio.get_running_loop().time() + 10
            while (await client.get(url)).status_code != 200:
                assert asyncio.get_running_loop().time() < deadline
                await asyncio.sleep(0.05)
            (Path(env["RUNTIME_ROOT"]) / "config" / "edge.yaml").unlink()
            while (await client.get(url)).status_code != 500:
                assert asyncio.get_running_loop().time() < deadline + 10
                await asyncio.sleep(0.05)
    finally:
        await running.stop()


def test_unreachable_cache_stops_startup_with_one_line(tmp_path: Path) -> None:
    result = subprocess.run(
        [PYTHON, "-m", "handlers.ratelimit.server"],
        env={
            **os.environ,
            **runtime(tmp_path),
            "KVSTORE_SOCKET_TYPE": "tcp",
            "KVSTORE_URL": f"127.0.0.1:{free_port()}",
            "KVSTORE_STARTUP_MAX_ELAPSED_TIME": "1s",
        },
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 1
    assert "cannot start:" in result.stderr
    assert "Traceback" not in result.stderr
