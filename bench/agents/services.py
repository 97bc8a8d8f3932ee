"""The service under test, as real processes: ``agents-server`` (``python -m
handlers.agents.server``) on a free loopback port, ``agents-worker`` processes, keys issued by
``agents-admin``, and a temporary PostgreSQL database (``bench_agents_<random>``) dropped at
the end."""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path

import psycopg
from psycopg import sql

from bench.ratelimit.servers import REPO_ROOT, BenchError, Endpoints, ServerProcess, free_port
from generated.agents.client import ServiceClient

__all__ = [
    "POSTGRES",
    "AgentsService",
    "BenchError",
    "postgres_unreachable_reason",
    "running_service",
    "running_workers",
    "service_env",
    "temporary_database",
    "worker_fleet",
]

POSTGRES = "host=127.0.0.1 port=5432 user=postgres dbname=postgres connect_timeout=3"
WORKER_READY_DEADLINE_S = 60.0
CLIENT_TIMEOUT_S = 120.0


def postgres_unreachable_reason() -> str | None:
    """Why PostgreSQL on 127.0.0.1:5432 (user postgres) cannot be used, or ``None``."""
    try:
        with psycopg.connect(POSTGRES):
            return None
    except psycopg.Error as error:
        return (
            f"PostgreSQL is not reachable on 127.0.0.1:5432 as postgres ({error}); `make services`"
        )


@contextmanager
def temporary_database() -> Iterator[str]:
    """A new empty database ``bench_agents_<random>``, its SQLAlchemy URL; dropped afterwards."""
    name = f"bench_agents_{secrets.token_hex(6)}"
    with psycopg.connect(POSTGRES, autocommit=True) as connection:
        connection.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    try:
        yield f"postgresql+psycopg://postgres@127.0.0.1:5432/{name}"
    finally:
        with psycopg.connect(POSTGRES, autocommit=True) as connection:
            connection.execute(
                sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
            )


def service_env(data_dir: Path, database_url: str | None, **settings: str) -> dict[str, str]:
    """The environment of the service's processes: this one's, with the service's own
    ``AGENTS_*`` variables replaced by the data directory, the database (``None``: the embedded
    SQLite default) and ``settings`` (``{"AGENTS_EMBEDDED_WORKER": "false"}`` …)."""
    env = {name: value for name, value in os.environ.items() if not name.startswith("AGENTS_")}
    env.update(
        {"AGENTS_HOST": "127.0.0.1", "AGENTS_DATA_DIR": str(data_dir), "LOG_LEVEL": "WARNING"}
    )
    if database_url is not None:
        env["AGENTS_DATABASE_URL"] = database_url
    env.update(settings)
    return env


def issue_key(env: Mapping[str, str]) -> str:
    """A new key with every scope and the create right, issued by ``agents-admin``."""
    command = [
        sys.executable,
        "-m",
        "handlers.agents.admin",
        "create-key",
        "--name",
        "bench",
        "--scope",
        "*",
        "--can-create",
    ]
    done = subprocess.run(
        command, cwd=REPO_ROOT, env=dict(env), capture_output=True, text=True, timeout=120
    )
    for line in done.stdout.splitlines():
        if line.startswith("secret: "):
            return line.removeprefix("secret: ")
    raise BenchError(f"agents-admin create-key failed ({done.returncode}): {done.stderr}")


@dataclass
class AgentsService:
    """A running ``agents-server`` and a key that sees everything."""

    server: ServerProcess
    api_key: str
    env: dict[str, str]

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.endpoints.port('http')}"

    def client(self) -> ServiceClient:
        """A generated client on the server (close it, or use it as a context manager)."""
        return ServiceClient(
            api_key=self.api_key, base_url=self.url, timeout_seconds=CLIENT_TIMEOUT_S
        )


@contextmanager
def running_service(env: Mapping[str, str], log_dir: Path) -> Iterator[AgentsService]:
    """``agents-server`` with ``env`` (a fresh port), ready to answer; stopped afterwards."""
    port = free_port()
    server_env = {**env, "AGENTS_PORT": str(port)}
    api_key = issue_key(server_env)
    command = [sys.executable, "-m", "handlers.agents.server"]
    with tempfile.TemporaryFile(dir=log_dir) as log:
        server = ServerProcess(
            "agents-server", command, Endpoints(None, port), log=log, env=server_env
        )
        try:
            server.start()
            service = AgentsService(server, api_key, server_env)
            with service.client() as client:
                client.agents.list(limit=1)  # authenticated, database open
            yield service
        finally:
            server.stop()


@contextmanager
def running_workers(env: Mapping[str, str], count: int, log_dir: Path) -> Iterator[None]:
    """``count`` ``agents-worker`` processes, each ready (its startup line logged)."""
    worker_env = {**env, "LOG_LEVEL": "INFO"}
    command = [sys.executable, "-m", "handlers.agents.worker"]
    with ExitStack() as stack:
        workers = []
        for n in range(1, count + 1):
            log = stack.enter_context(tempfile.TemporaryFile(dir=log_dir))
            worker = ServerProcess(
                f"agents-worker {n}", command, Endpoints(None, None), log=log, env=worker_env
            )
            stack.callback(worker.stop)
            worker.start()
            workers.append(worker)
        deadline = time.monotonic() + WORKER_READY_DEADLINE_S
        for worker in workers:
            while "running up to" not in worker.output():
                if not worker.alive() or time.monotonic() > deadline:
                    raise BenchError(f"{worker.name} did not start:\n{worker.output()}")
                time.sleep(0.1)
        yield


@contextmanager
def worker_fleet(workers: int, concurrency: int, tmp: Path) -> Iterator[ServiceClient]:
    """A client of ``agents-server`` without its own worker and ``workers`` ``agents-worker``
    processes (``concurrency`` executions each) on a temporary PostgreSQL database."""
    with temporary_database() as url:
        env = service_env(
            tmp / "workers",
            url,
            AGENTS_EMBEDDED_WORKER="false",
            AGENTS_WORKER_CONCURRENCY=str(concurrency),
        )
        with (
            running_service(env, tmp) as service,
            running_workers(service.env, workers, tmp),
            service.client() as client,
        ):
            yield client
