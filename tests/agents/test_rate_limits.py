"""Per-key request rate limits: the in-process engine and the ratelimit service over gRPC, on a
real server over loopback with the generated client."""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from generated.agents.client import ServiceClient, ServiceRateLimitError
from generated.agents.models import ApiErrorEnvelope
from handlers.agents.settings import RequestRate, Settings, SettingsError
from tests.agents.run_support import tuned_server
from tests.agents.support import RunningServer, Storage
from tests.ratelimit.redis_servers import free_port

ROOT = Path(__file__).resolve().parents[2]
HOUR = 3600

# the limits of the ratelimit service for the agents' domain: 2 requests per key per hour
SERVICE_RULES = """\
domain: agents
descriptors:
  - key: api_key
    rate_limit: {unit: hour, requests_per_unit: 2}
"""


def sqlite_storage(directory: Path) -> Storage:
    return Storage(directory, f"sqlite:///{directory / 'agents.db'}")


def seconds_left_in_hour() -> int:
    return HOUR - int(time.time()) % HOUR


def assert_limited(client: ServiceClient) -> ServiceRateLimitError:
    """The client's next request is refused with the typed 429 error; the error."""
    with pytest.raises(ServiceRateLimitError) as raised:
        client.agents.list(max_retries=0)  # the client waits out a Retry-After under 60 s
    error = raised.value
    assert error.status == 429
    assert error.retryAfter is not None and error.retryAfter == error.retry_after
    envelope = ApiErrorEnvelope.model_validate(error.envelope)
    assert envelope.request_id == error.requestId and error.requestId.startswith("req_")
    assert [(i.field, i.code) for i in envelope.issues] == [("<root>", "rate_limited")]
    return error


def test_rate_limit_settings_come_from_the_environment() -> None:
    settings = Settings.from_env(
        {
            "AGENTS_RATE_LIMIT": "600/minute",
            "AGENTS_RATELIMIT_GRPC": "ratelimit.internal:8081",
            "AGENTS_RATELIMIT_DOMAIN": "agents_eu",
        }
    )
    assert settings.rate_limit == RequestRate(600, "minute")
    assert (settings.ratelimit_grpc, settings.ratelimit_domain) == (
        "ratelimit.internal:8081",
        "agents_eu",
    )
    defaults = Settings.from_env({})
    assert (defaults.rate_limit, defaults.ratelimit_grpc, defaults.ratelimit_domain) == (
        None, None, "agents",
    )  # fmt: skip
    assert Settings.from_env({"AGENTS_RATE_LIMIT": "off"}).rate_limit is None
    assert Settings.from_env({"AGENTS_RATE_LIMIT": "5/seconds"}).rate_limit == RequestRate(
        5, "second"
    )
    for name, value in (
        ("AGENTS_RATE_LIMIT", "600"),
        ("AGENTS_RATE_LIMIT", "600/fortnight"),
        ("AGENTS_RATE_LIMIT", "-1/minute"),
        ("AGENTS_RATELIMIT_GRPC", "no-port"),
        ("AGENTS_RATELIMIT_GRPC", "host:99999"),
    ):
        with pytest.raises(SettingsError, match=name):
            Settings.from_env({name: value})


def test_a_key_over_its_limit_gets_429_and_other_keys_go_on(tmp_path: Path) -> None:
    with tuned_server(sqlite_storage(tmp_path), rate_limit=RequestRate(3, "hour")) as server:
        busy = server.key("busy", scope_all=True, can_create_agents=True)
        other = server.key("other", scope_all=True)
        with server.client(busy) as client:
            for _ in range(3):
                client.agents.list()
            error = assert_limited(client)
            assert 1 <= error.retryAfter <= seconds_left_in_hour() + 1  # type: ignore[operator]
            # refused before the handler: the agent is not created
            with pytest.raises(ServiceRateLimitError):
                client.agents.create({"name": "late", "slug": "late-agent"}, max_retries=0)
        with server.client(other) as client:
            for _ in range(3):
                assert all(agent.slug != "late-agent" for agent in client.agents.list().data)
            assert_limited(client)

        # the raw answer: Retry-After and x-request-id headers, the envelope as body
        with httpx.Client(base_url=server.url) as http:
            response = http.get("/api/v1/agents", headers={"authorization": f"Bearer {busy}"})
            assert response.status_code == 429
            assert response.headers["content-type"].startswith("application/json")
            assert int(response.headers["retry-after"]) >= 1
            assert response.json()["requestId"] == response.headers["x-request-id"]
            # authentication comes first: a bad key is a 401, whatever the limits
            bad = http.get("/api/v1/agents", headers={"authorization": "Bearer sk_x_y"})
            assert bad.status_code == 401


def test_without_a_configured_limit_nothing_is_limited(tmp_path: Path) -> None:
    with tuned_server(sqlite_storage(tmp_path)) as server:
        assert server.server.rate_limiter is None
        with server.client(server.key(scope_all=True)) as client:
            for _ in range(30):
                client.agents.list()


class RateLimitProcess:
    """A real ``ratelimit`` service (memory backend) with the agents' rules."""

    def __init__(self, directory: Path) -> None:
        config = directory / "runtime" / "config"
        config.mkdir(parents=True)
        (config / "agents.yaml").write_text(SERVICE_RULES)
        self.http, self.grpc, debug = free_port(), free_port(), free_port()
        env = {
            **os.environ,
            "RUNTIME_ROOT": str(directory / "runtime"),
            "RUNTIME_WATCH_ROOT": "false",
            "RUNTIME_APPDIRECTORY": "config",
            "BACKEND_TYPE": "memory",
            "HOST": "127.0.0.1",
            "PORT": str(self.http),
            "GRPC_HOST": "127.0.0.1",
            "GRPC_PORT": str(self.grpc),
            "DEBUG_HOST": "127.0.0.1",
            "DEBUG_PORT": str(debug),
            "LOG_LEVEL": "warning",
        }
        self.log = (directory / "ratelimit.log").open("wb")
        self.popen = subprocess.Popen(
            [sys.executable, "-m", "handlers.ratelimit.server"],
            env=env, cwd=ROOT, stdout=self.log, stderr=self.log,
        )  # fmt: skip
        deadline = time.monotonic() + 30
        while True:
            assert self.popen.poll() is None, (directory / "ratelimit.log").read_text()
            try:
                if httpx.get(f"http://127.0.0.1:{self.http}/healthcheck").text == "OK":
                    break
            except httpx.TransportError:
                pass
            assert time.monotonic() < deadline, "the ratelimit service did not become healthy"
            time.sleep(0.05)

    def stop(self) -> None:
        if self.popen.poll() is None:
            self.popen.send_signal(signal.SIGTERM)
            try:
                self.popen.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.popen.kill()
                self.popen.wait()
        self.log.close()


@pytest.fixture
def ratelimit_service(tmp_path: Path) -> Iterator[RateLimitProcess]:
    process = RateLimitProcess(tmp_path / "ratelimit")
    try:
        yield process
    finally:
        process.stop()


@pytest.fixture
def limited_by_service(
    tmp_path: Path, ratelimit_service: RateLimitProcess
) -> Iterator[RunningServer]:
    address = f"127.0.0.1:{ratelimit_service.grpc}"
    # the in-process limit is ignored when a service decides
    overrides = {"ratelimit_grpc": address, "rate_limit": RequestRate(1000, "second")}
    with tuned_server(sqlite_storage(tmp_path / "agents"), **overrides) as server:
        yield server


def test_the_ratelimit_service_decides_over_grpc(limited_by_service: RunningServer) -> None:
    server = limited_by_service
    first, second = server.key("first", scope_all=True), server.key("second", scope_all=True)
    with server.client(first) as client:
        client.agents.list()
        client.agents.list()
        error = assert_limited(client)
    # Retry-After is the service's durationUntilReset (the hour window), rounded up
    assert error.retryAfter is not None
    assert abs(error.retryAfter - seconds_left_in_hour()) <= 2
    with server.client(second) as client:
        client.agents.list()
        client.agents.list()
        assert_limited(client)


def test_requests_go_on_when_the_ratelimit_service_is_down(
    limited_by_service: RunningServer,
    ratelimit_service: RateLimitProcess,
    caplog: pytest.LogCaptureFixture,
) -> None:
    server = limited_by_service
    with server.client(server.key("ops", scope_all=True)) as client:
        client.agents.list()
        client.agents.list()
        assert_limited(client)
        ratelimit_service.stop()
        with caplog.at_level(logging.WARNING, logger="agents.rate_limits"):
            for _ in range(3):  # fail open, as Envoy's rate limit filter does by default
                client.agents.list()
    warnings = [r for r in caplog.records if r.name == "agents.rate_limits"]
    assert len(warnings) == 1  # one line per outage, not one per request
    assert f"ratelimit service 127.0.0.1:{ratelimit_service.grpc} did not decide" in (
        warnings[0].getMessage()
    )
