"""The service under test, as real processes: ``agents-server`` (``python -m
handlers.agents.server``) on a free loopback port, ``agents-worker`` processes (which can be
paused and released together), keys issued by ``agents-admin``, and a temporary PostgreSQL
database (``bench_agents_<random>``) dropped at the end."""

from __future__ import annotations

import os
import re
import secrets
import signal
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
from handlers.agents.settings import Settings

__all__ = [
    "POSTGRES",
    "AgentsService",
    "BenchError",
    "ServerProcess",
    "pause",
    "postgres_unreachable_reason",
    "psycopg_url",
    "resume",
    "running_service",
    "running_workers",
    "server_processes_variable",
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


def psycopg_url(database_url: str) -> str:
    """The libpq URL of a ``postgresql+psycopg://`` SQLAlchemy URL."""
    return re.sub(r"^postgresql\+psycopg://", "postgresql://", database_url)


SERVER_PROCESSES = re.compile(
    r"^AGENTS_((SERVER|HTTP|API|UVICORN)_)?(PROCESSES|WORKERS)$|^AGENTS_WEB_CONCURRENCY$"
)
"""The names a setting of how many processes ``agents-server`` serves with would have
(``AGENTS_WORKER_CONCURRENCY``, executions per worker, is not one)."""


def server_processes_variable() -> str | None:
    """The variable of ``handlers/agents/settings.py`` (as this run imported it) that sets how
    many processes ``agents-server`` serves with, or ``None`` when it has none."""
    for name, field in Settings.model_fields.items():
        alias = field.validation_alias
        if isinstance(alias, str):
            names = [alias]
        elif alias is None:
            names = [f"AGENTS_{name.upper()}"]
        else:
            names = [choice for choice in getattr(alias, "choices", []) if isinstance(choice, str)]
        for variable in names:
            if SERVER_PROCESSES.match(variable):
                return variable
    return None


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
                try:
                    client.agents.list(limit=1)  # authenticated, database open
                except Exception as error:
                    raise BenchError(
                        f"agents-server does not answer GET /agents: {error!r}\n"
                        f"    its output:\n{server.output()}"
                    ) from error
            try:
                yield service
            except BenchError:
                raise
            except Exception as error:  # a 500 and the like: the server's traceback says why
                raise BenchError(
                    f"{error!r}\n    agents-server's output (the end):\n{server.output()[-4000:]}"
                ) from error
        finally:
            server.stop()


@contextmanager
def running_workers(
    env: Mapping[str, str], count: int, log_dir: Path
) -> Iterator[list[ServerProcess]]:
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
        yield workers


def pause(processes: list[ServerProcess]) -> None:
    """Stop ``processes`` (SIGSTOP): they run nothing until :func:`resume`."""
    for process in processes:
        if process.pid is not None:
            os.kill(process.pid, signal.SIGSTOP)


def resume(processes: list[ServerProcess]) -> None:
    """Let paused ``processes`` go on (SIGCONT), all at once."""
    for process in processes:
        if process.pid is not None:
            os.kill(process.pid, signal.SIGCONT)


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
