"""Per-service installs: ``pip install '.[ratelimit]'`` into a fresh virtual environment brings
the rate limit service and nothing of the others, and it answers a decision; the other
services' console scripts there name the extra they miss."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from tests.ratelimit.redis_servers import free_port

ROOT = Path(__file__).resolve().parents[2]
INSTALL_TIMEOUT_SECONDS = 900

NOT_FOR_RATELIMIT = (
    "torch", "transformers", "onnx", "onnxruntime", "lancedb", "pyarrow", "numpy",
    "weaviate-client", "sqlalchemy", "alembic", "croniter", "psycopg", "jsonschema",
)  # fmt: skip
"""Distributions of the other services (ML, vector stores, databases) that must not come."""

RULES = """\
domain: edge
descriptors:
  - key: remote_address
    rate_limit: {unit: minute, requests_per_unit: 1}
"""


@pytest.fixture(scope="module")
def ratelimit_only(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh virtual environment with ``contract-platform[ratelimit]`` installed (not
    editable: the wheel built from this tree)."""
    venv = tmp_path_factory.mktemp("ratelimit-only") / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    done = subprocess.run(
        [str(venv / "bin" / "python"), "-m", "pip", "install", "-q", f"{ROOT}[ratelimit]"],
        capture_output=True,
        text=True,
        timeout=INSTALL_TIMEOUT_SECONDS,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    return venv


def _installed(venv: Path) -> set[str]:
    listed = subprocess.run(
        [str(venv / "bin" / "python"), "-m", "pip", "list", "--format=json"],
        capture_output=True, text=True, check=True, timeout=120,
    )  # fmt: skip
    return {entry["name"].lower() for entry in json.loads(listed.stdout)}


def test_the_ratelimit_extra_brings_no_ml_or_database_library(ratelimit_only: Path) -> None:
    installed = _installed(ratelimit_only)

    assert {"contract-platform", "grpcio", "redis", "pydantic-settings"} <= installed
    assert sorted(installed & set(NOT_FOR_RATELIMIT)) == []


def test_the_installed_ratelimit_answers_a_decision(ratelimit_only: Path, tmp_path: Path) -> None:
    config = tmp_path / "runtime" / "config"
    config.mkdir(parents=True)
    (config / "edge.yaml").write_text(RULES)
    http, grpc_port = free_port(), free_port()
    env = {
        "PATH": f"{ratelimit_only / 'bin'}:/usr/bin:/bin",
        "HOST": "127.0.0.1",
        "PORT": str(http),
        "GRPC_HOST": "127.0.0.1",
        "GRPC_PORT": str(grpc_port),
        "DEBUG_PORT": str(free_port()),
        "BACKEND_TYPE": "memory",
        "USE_STATSD": "false",
        "RUNTIME_ROOT": str(tmp_path / "runtime"),
        "RUNTIME_APPDIRECTORY": "config",
        "RUNTIME_WATCH_ROOT": "false",
    }
    process = subprocess.Popen(
        [str(ratelimit_only / "bin" / "ratelimit")], env=env, cwd=tmp_path,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 30
        while True:
            assert process.poll() is None, process.communicate()[1][-3000:]
            try:
                if httpx.get(f"http://127.0.0.1:{http}/healthcheck").status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert time.monotonic() < deadline, "ratelimit did not become healthy"
            time.sleep(0.05)
        body = {
            "domain": "edge",
            "descriptors": [{"entries": [{"key": "remote_address", "value": "10.0.0.1"}]}],
        }
        first = httpx.post(f"http://127.0.0.1:{http}/json", json=body)
        second = httpx.post(f"http://127.0.0.1:{http}/json", json=body)
    finally:
        process.send_signal(signal.SIGTERM)
        process.communicate(timeout=30)

    assert (first.status_code, first.json()["overallCode"]) == (200, "OK")
    assert (second.status_code, second.json()["overallCode"]) == (429, "OVER_LIMIT")


@pytest.mark.parametrize(
    ("script", "extra"),
    [("agents-server", "agents"), ("agents-worker", "agents"), ("rag-server", "rag")],
)
def test_another_services_script_names_the_extra_it_misses(
    ratelimit_only: Path, script: str, extra: str
) -> None:
    done = subprocess.run(
        [str(ratelimit_only / "bin" / script)],
        env={"PATH": "/usr/bin:/bin", "HOME": os.environ.get("HOME", "/tmp")},
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip

    assert done.returncode == 2
    assert done.stderr.startswith(f"{script}: the '{extra}' extra is not installed (missing: ")
    assert done.stderr.rstrip().endswith(
        f"install it with: pip install 'contract-platform[{extra}]'"
    )
