"""Riding out cache outages (issue 5, item 7): a real service process under steady gRPC load
while its real Redis crashes, comes back, stops answering and resumes, or drops connections.
Every call returns within the configured timeout with the upstream's error, health follows
the connection, the process never dies, and it recovers by itself."""

from __future__ import annotations

import asyncio
import contextlib
import signal
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import grpc
import httpx
import pytest

from generated.proto.envoy.service.ratelimit.v3 import rls_pb2_grpc
from tests.ratelimit.conftest import descriptor, request
from tests.ratelimit.redis_servers import RedisProcess
from tests.ratelimit.test_server import RULES, Process, runtime

TIMEOUT_S = 1.0  # KVSTORE_TIMEOUT of the service under test
SLACK_S = 0.75  # scheduling slack on a loaded 2-core machine
CALLERS = 12

pytestmark = pytest.mark.slow


@dataclass
class Load:
    """``CALLERS`` loops calling ShouldRateLimit back to back, recording every outcome."""

    port: int
    outcomes: list[tuple[float, float, grpc.StatusCode]] = field(default_factory=list)
    _stop: asyncio.Event = field(default_factory=asyncio.Event)
    _tasks: list[asyncio.Task[None]] = field(default_factory=list)

    async def __aenter__(self) -> Load:
        self._channel = grpc.aio.insecure_channel(f"127.0.0.1:{self.port}")
        stub = rls_pb2_grpc.RateLimitServiceStub(self._channel)
        for caller in range(CALLERS):
            self._tasks.append(asyncio.create_task(self._loop(stub, caller)))
        return self

    async def _loop(self, stub: rls_pb2_grpc.RateLimitServiceAsyncStub, caller: int) -> None:
        message = request("edge", descriptor(("remote_address", f"caller-{caller}")))
        while not self._stop.is_set():
            started = time.monotonic()
            try:
                await stub.ShouldRateLimit(message, timeout=10)
                code = grpc.StatusCode.OK
            except grpc.aio.AioRpcError as error:
                code = error.code()
            self.outcomes.append((started, time.monotonic(), code))

    async def __aexit__(self, *exc: object) -> None:
        self._stop.set()
        await asyncio.gather(*self._tasks)
        await self._channel.close()

    def since(self, moment: float) -> list[tuple[float, float, grpc.StatusCode]]:
        return [outcome for outcome in self.outcomes if outcome[0] >= moment]

    async def until(self, predicate_code: grpc.StatusCode, *, within: float) -> float:
        """Waits until calls started from now on end with ``predicate_code``; returns when."""
        start = time.monotonic()
        deadline = start + within
        while time.monotonic() < deadline:
            await asyncio.sleep(0.05)
            recent = [o for o in self.since(start) if o[1] > time.monotonic() - 0.3]
            if recent and all(code == predicate_code for _, _, code in recent):
                return time.monotonic()
        raise AssertionError(f"calls did not turn {predicate_code.name} within {within} s")


def longest_call(outcomes: list[tuple[float, float, grpc.StatusCode]]) -> float:
    return max((end - start for start, end, _ in outcomes), default=0.0)


def health(process: Process) -> int:
    return httpx.get(f"http://127.0.0.1:{process.http}/healthcheck", timeout=5).status_code


async def wait_health(process: Process, status: int, within: float = 10.0) -> None:
    deadline = time.monotonic() + within
    while (await asyncio.to_thread(health, process)) != status:
        assert time.monotonic() < deadline, f"health did not turn {status}"
        await asyncio.sleep(0.05)


@pytest.fixture
def redis_server(tmp_path: Path) -> Iterator[RedisProcess]:
    server = RedisProcess(tmp_path / "redis").start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def service(tmp_path: Path, redis_server: RedisProcess) -> Iterator[Process]:
    rules = RULES.replace("requests_per_unit: 2", "requests_per_unit: 1000000000")
    process = Process(
        {
            **runtime(tmp_path, rules),
            "BACKEND_TYPE": "redis",
            "KVSTORE_SOCKET_TYPE": "tcp",
            "KVSTORE_URL": redis_server.address,
            "KVSTORE_TIMEOUT": f"{TIMEOUT_S}s",
            "KVSTORE_HEALTH_CHECK_ACTIVE_CONNECTION": "true",
            "WORKERS": "1",
        }
    )
    try:
        process.wait_healthy()
        yield process
        assert process.popen.poll() is None, "the service died"
        code, err = process.stop()
        assert code == 0, err
    finally:
        if process.popen.poll() is None:
            process.popen.kill()
        with contextlib.suppress(Exception):
            process.popen.communicate(timeout=10)


async def test_redis_crash_and_restart_under_load(
    service: Process, redis_server: RedisProcess
) -> None:
    async with Load(service.grpc) as load:
        await load.until(grpc.StatusCode.OK, within=10)
        crashed = time.monotonic()
        redis_server.signal(signal.SIGKILL)
        await load.until(grpc.StatusCode.UNKNOWN, within=5)
        await wait_health(service, 500)
        await asyncio.sleep(1.0)  # a second of calls against a dead cache
        restarted = time.monotonic()
        redis_server.start()  # same port
        recovered = await load.until(grpc.StatusCode.OK, within=15)
        await wait_health(service, 200)
    during = [o for o in load.outcomes if crashed <= o[0] < restarted]
    assert any(code == grpc.StatusCode.UNKNOWN for _, _, code in during)
    assert {code for _, _, code in during} <= {grpc.StatusCode.OK, grpc.StatusCode.UNKNOWN}
    assert longest_call(during) < TIMEOUT_S + SLACK_S
    assert recovered - restarted < 15


async def test_redis_that_stops_answering_times_out_then_recovers(
    service: Process, redis_server: RedisProcess
) -> None:
    async with Load(service.grpc) as load:
        await load.until(grpc.StatusCode.OK, within=10)
        paused = time.monotonic()
        redis_server.signal(signal.SIGSTOP)
        try:
            await load.until(grpc.StatusCode.UNKNOWN, within=5)
            await asyncio.sleep(1.5)
        finally:
            resumed = time.monotonic()
            redis_server.signal(signal.SIGCONT)
        await load.until(grpc.StatusCode.OK, within=15)
    during = [o for o in load.outcomes if paused <= o[0] < resumed]
    assert any(code == grpc.StatusCode.UNKNOWN for _, _, code in during)
    # a hung cache costs a call at most the configured timeout
    assert longest_call(during) < TIMEOUT_S + SLACK_S


async def test_connections_dropped_by_the_server_are_replaced(
    service: Process, redis_server: RedisProcess
) -> None:
    async with Load(service.grpc) as load:
        await load.until(grpc.StatusCode.OK, within=10)
        start = time.monotonic()
        with redis_server.client() as admin:
            for _ in range(5):
                admin.execute_command("CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes")
                await asyncio.sleep(0.2)
        await load.until(grpc.StatusCode.OK, within=10)
    during = load.since(start)
    assert {code for _, _, code in during} <= {grpc.StatusCode.OK, grpc.StatusCode.UNKNOWN}
    assert longest_call(during) < TIMEOUT_S + SLACK_S
    assert sum(code == grpc.StatusCode.OK for _, _, code in during) > len(during) / 2
