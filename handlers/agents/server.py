"""``agents-server``: migrates the database, then serves the agents API with uvicorn.

Startup: settings from the environment (an invalid one stops with a message naming it), the
agent sandbox (checked by running a test program; when it cannot work the server refuses to
start, saying what is missing, unless ``AGENTS_SANDBOX=none``), the data directory, ``alembic
upgrade head`` on the database, then the HTTP listener, announced in one log line with its
URL. SIGTERM or SIGINT stops it gracefully.

A request goes through: the request id, API key authentication, the key's rate limit (when
one is configured, :mod:`handlers.agents.api.rate_limits`), then the generated routes, which refuse
a body over ``AGENTS_MAX_REQUEST_BODY`` with 413.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import socket
import sys
from pathlib import Path

import uvicorn
from sqlalchemy.exc import SQLAlchemyError

from generated.agents.routes import create_app
from handlers.agents.api.auth import ApiKeyAuth
from handlers.agents.api.handlers import AgentsHttpHandlers
from handlers.agents.api.rate_limits import (
    RateLimitFilter,
    RequestRateLimiter,
    rate_limiter_from_settings,
)
from handlers.agents.domain.agents import AgentStore
from handlers.agents.domain.files import AgentFiles
from handlers.agents.execution.agent_job import SandboxUnavailable, sandbox_for
from handlers.agents.execution.engine import ExecutionEngine
from handlers.agents.execution.scheduler import Scheduler
from handlers.agents.execution.webhook_delivery import webhook_delivery
from handlers.agents.runner import Sandbox, Unsandboxed, prefer_pidfd_child_watcher
from handlers.agents.settings import DEFAULT_MAX_REQUEST_BYTES, Settings
from handlers.agents.storage.blobs import BlobStore
from handlers.agents.storage.database import Database
from handlers.agents.storage.migrate import open_database
from handlers.common.entry import run_service
from handlers.startup_heap import freeze_startup_heap
from webrest import Application

__all__ = ["AgentsServer", "create_service_app", "main"]

log = logging.getLogger("agents.server")

SHUTDOWN_GRACE_SECONDS = 10


def create_service_app(
    database: Database,
    blob_dir: Path,
    engine: ExecutionEngine,
    *,
    rate_limiter: RequestRateLimiter | None = None,
    max_body_size: int = DEFAULT_MAX_REQUEST_BYTES,
    docs: bool = True,
) -> Application:
    """The agents API over ``database`` and the blobs in ``blob_dir``, behind API key auth
    and, when given, ``rate_limiter`` per key; ``engine`` runs the executions; request bodies
    over ``max_body_size`` bytes are refused (413); ``docs``: Swagger UI at ``/docs``."""
    blobs = BlobStore(blob_dir)
    handlers = AgentsHttpHandlers(AgentStore(database, blobs), AgentFiles(database, blobs), engine)
    app = create_app(
        handlers, max_body_size=max_body_size, docs_path="/docs" if docs else None
    ).install(ApiKeyAuth(database))
    if rate_limiter is not None:
        app.install(RateLimitFilter(rate_limiter))
    return app


def _sandbox(settings: Settings) -> Sandbox:
    """The sandbox of the executions this server runs: checked at start when it runs any
    (SQLite, or PostgreSQL with the embedded worker), else never used."""
    runs_executions = settings.embedded_worker or not settings.effective_database_url.startswith(
        "postgresql"
    )
    if runs_executions:
        return sandbox_for(settings)
    return Unsandboxed(egress=settings.egress)  # never runs a program: agents-worker does


def _listening_socket(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
        sock.listen(2048)
    except OSError:
        sock.close()
        raise
    sock.setblocking(False)
    return sock


class AgentsServer:
    """The API on a listening socket: :meth:`serve` until :meth:`stop` (or a signal)."""

    def __init__(self, settings: Settings, listening: socket.socket | None = None) -> None:
        """``listening``: a bound socket to serve on (a process of several); by default the
        server binds ``AGENTS_HOST``:``AGENTS_PORT`` itself."""
        self.settings = settings
        sandbox = _sandbox(settings)
        self.database = open_database(settings)
        blobs = BlobStore(settings.blob_dir)
        self.engine = ExecutionEngine(settings, self.database, blobs, sandbox)
        self.scheduler = Scheduler(self.database, blobs, self.engine)
        self.engine.background.add("schedules", self.scheduler.run)
        self.engine.background.add("webhooks", webhook_delivery(settings, self.database))
        self.rate_limiter = rate_limiter_from_settings(settings)
        self.app = create_service_app(
            self.database,
            settings.blob_dir,
            self.engine,
            rate_limiter=self.rate_limiter,
            max_body_size=settings.max_request_bytes,
            docs=settings.docs_enabled,
        )
        try:
            self.socket = listening or _listening_socket(settings.host, settings.port)
        except OSError:
            self.database.dispose()
            raise
        self.port: int = self.socket.getsockname()[1]
        config = uvicorn.Config(
            self.app,
            lifespan="off",
            access_log=False,
            log_config=None,
            timeout_graceful_shutdown=SHUTDOWN_GRACE_SECONDS,
        )
        self._server = uvicorn.Server(config)

    @property
    def url(self) -> str:
        """The base URL clients use."""
        host = f"[{self.settings.host}]" if ":" in self.settings.host else self.settings.host
        return f"http://{host}:{self.port}"

    @property
    def started(self) -> bool:
        """Whether the server accepts requests."""
        return bool(self._server.started)

    async def serve(self) -> None:
        """Serve until stopped; closes the database at the end."""
        log.info(
            "agents-server listening on %s (database %s, data %s, rate limit %s)",
            self.url,
            self.database.display_url(),
            self.settings.data_dir,
            self._rate_limit_description(),
        )
        try:
            async with self.engine.running():
                await self._server.serve(sockets=[self.socket])
        finally:
            if self.rate_limiter is not None:
                await self.rate_limiter.close()
            self.socket.close()
            self.database.dispose()
            log.info("agents-server stopped")

    def _rate_limit_description(self) -> str:
        settings = self.settings
        if settings.ratelimit_grpc is not None:
            return f"by the ratelimit service {settings.ratelimit_grpc}"
        if settings.rate_limit is not None:
            return f"{settings.rate_limit} per key"
        return "off"

    def stop(self) -> None:
        """Ask :meth:`serve` to finish (from any thread)."""
        self._server.should_exit = True


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``agents-server``: settings come from the environment."""
    del argv
    return run_service(Settings, _serve, program="agents-server")


def _serve(settings: Settings, listening: socket.socket | None = None) -> int:
    if settings.server_processes > 1 and listening is None:
        return _serve_processes(settings)
    try:
        server = AgentsServer(settings, listening)
    except SandboxUnavailable as error:
        log.error("%s", error)
        return 2
    except SQLAlchemyError as error:
        log.error("cannot open the database: %s", str(error).splitlines()[0])
        return 1
    except OSError as error:
        log.error("cannot listen on %s:%d: %s", settings.host, settings.port, error)
        return 1
    freeze_startup_heap(log)  # entry point only: a server run inside a test keeps its heap
    with contextlib.suppress(KeyboardInterrupt):
        prefer_pidfd_child_watcher()
        asyncio.run(server.serve())
    return 0


def _serve_processes(settings: Settings) -> int:
    """``AGENTS_SERVER_PROCESSES`` > 1: bind the port once, then fork that many servers onto it
    (the kernel spreads connections among them). The parent only supervises: it passes
    SIGTERM/SIGINT on, and when one server exits on its own it stops the others and exits with
    that status (so a supervisor above restarts the whole)."""
    try:
        listening = _listening_socket(settings.host, settings.port)
    except OSError as error:
        log.error("cannot listen on %s:%d: %s", settings.host, settings.port, error)
        return 1
    children: list[int] = []
    for _ in range(settings.server_processes):
        pid = os.fork()
        if pid == 0:  # a server process
            status = 1
            try:
                signal.signal(signal.SIGTERM, signal.SIG_DFL)
                signal.signal(signal.SIGINT, signal.SIG_DFL)
                status = _serve(settings, listening)
            finally:
                os._exit(status)
        children.append(pid)
    listening.close()
    stopping = False

    def stop(signum: int, _frame: object) -> None:
        nonlocal stopping
        stopping = True
        for child in children:
            with contextlib.suppress(ProcessLookupError):
                os.kill(child, signum)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    log.info("agents-server: %d processes (pids %s)", len(children),
             ", ".join(map(str, children)))  # fmt: skip
    status = 0
    while children:
        pid, wait_status = os.wait()
        children.remove(pid)
        code = os.waitstatus_to_exitcode(wait_status)
        if not stopping:
            log.error("agents-server process %d exited (%d): stopping the others", pid, code)
            status = code if code > 0 else 1
            stop(signal.SIGTERM, None)
    return status


if __name__ == "__main__":
    sys.exit(main())
