"""Several worker processes: worker 0 owns the debug and pull ports and reports the sum of
every worker's statistics."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.ratelimit.redis_servers import free_port
from tests.ratelimit.test_server import RULES, Process, runtime

BODY = {"domain": "edge", "descriptors": [{"entries": [{"key": "remote_address", "value": "x"}]}]}


@pytest.fixture
def started() -> Iterator[list[Process]]:
    running: list[Process] = []
    yield running
    for process in running:
        if process.popen.poll() is None:
            process.popen.kill()
            process.popen.communicate()


def test_worker_zero_reports_every_worker(tmp_path: Path, started: list[Process]) -> None:
    debug, pull = free_port(), free_port()
    process = Process(
        {
            **runtime(tmp_path, RULES.replace("requests_per_unit: 2", "requests_per_unit: 1000")),
            "BACKEND_TYPE": "redis",
            "KVSTORE_SOCKET_TYPE": "tcp",
            "KVSTORE_URL": "127.0.0.1:6379",
            "CACHE_KEY_PREFIX": f"stats-workers-{os.getpid()}-{time.time_ns()}:",
            "WORKERS": "2",
            "DEBUG_HOST": "127.0.0.1",
            "DEBUG_PORT": str(debug),
            "USE_PULLMETRICS": "true",
            "PULLMETRICS_ADDR": f"127.0.0.1:{pull}",
        }
    )
    started.append(process)
    process.wait_healthy()
    for _ in range(40):  # new connections, spread over the workers by the kernel
        with httpx.Client() as client:
            client.post(f"http://127.0.0.1:{process.http}/json", json=BODY)
    stat = "ratelimit.service.rate_limit.edge.remote_address.total_hits: 40"
    metric = 'ratelimit_service_rate_limit_total_hits{domain="edge",key1="remote_address"} 40.0'
    deadline = time.monotonic() + 15
    while True:
        stats = httpx.get(f"http://127.0.0.1:{debug}/stats").text.splitlines()
        metrics = httpx.get(f"http://127.0.0.1:{pull}/metrics").text.splitlines()
        if stat in stats and metric in metrics:
            break
        assert time.monotonic() < deadline, (stats, metrics)
        time.sleep(0.1)
    assert "ratelimit.service.config_load_success: 2" in stats  # one load per worker
    code, err = process.stop()
    assert code == 0, err
    assert err.count("Listening for debug on '127.0.0.1:") == 1
