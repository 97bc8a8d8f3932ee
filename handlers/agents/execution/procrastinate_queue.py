"""The PostgreSQL job queue: procrastinate (its ``PsycopgConnector``) carries execution ids.

A job (task ``agents.run_execution``, queue ``agents``) says "run this execution"; the
execution row stays the record of truth (a job whose execution is no longer queued does
nothing). Jobs are deferred with the execution id as *queueing lock*, so deferring twice while
one waits is a no-op: :func:`undispatched` finds queued executions without a waiting job (the
server stopped between its commit and the defer, a worker stopped before claiming) and the
reaper defers them again.

procrastinate's tables live in their own PostgreSQL schema, ``procrastinate`` (its
connections use that ``search_path``), so the service's Alembic-managed ``public`` schema holds
only the service's tables. :func:`ensure_schema` applies procrastinate's schema once,
idempotently, under an advisory lock (servers and workers starting together).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Awaitable, Callable
from datetime import timedelta

import psycopg
from procrastinate import App, PsycopgConnector
from procrastinate.exceptions import AlreadyEnqueued
from procrastinate.schema import SchemaManager
from psycopg import sql
from sqlalchemy import bindparam, text
from sqlalchemy.engine import URL
from sqlalchemy.orm import Session

from handlers.agents.execution.leases import QUEUED
from handlers.agents.storage.schema import utc_now

__all__ = ["QUEUE", "SCHEMA", "TASK", "ProcrastinateQueue", "ensure_schema", "undispatched"]

log = logging.getLogger("agents.queue")

SCHEMA = "procrastinate"
TASK = "agents.run_execution"
QUEUE = "agents"
SCHEMA_LOCK_ID = 7_202_405_002
_SEARCH_PATH = {"options": f"-c search_path={SCHEMA}"}


def conninfo(url: URL) -> str:
    """A libpq connection string for the SQLAlchemy URL ``url``."""
    return url.set(drivername="postgresql").render_as_string(hide_password=False)


def ensure_schema(url: URL) -> None:
    """Create procrastinate's schema unless it exists (safe to call from many processes)."""
    with psycopg.connect(conninfo(url)) as connection:
        connection.execute("SELECT pg_advisory_xact_lock(%s)", (SCHEMA_LOCK_ID,))
        connection.execute(sql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(sql.Identifier(SCHEMA)))
        present = connection.execute(
            "SELECT to_regclass(%s)", (f"{SCHEMA}.procrastinate_jobs",)
        ).fetchone()
        if present is None or present[0] is None:
            connection.execute(
                sql.SQL("SET LOCAL search_path TO {}").format(sql.Identifier(SCHEMA))
            )
            connection.execute(sql.SQL(SchemaManager.get_schema()))
            log.info("procrastinate schema created in schema %s", SCHEMA)


def undispatched(session: Session, older_than: float, limit: int = 100) -> list[str]:
    """Queued executions (agent and workflow executions) older than ``older_than`` seconds
    that have no waiting job."""
    cutoff = utc_now() - timedelta(seconds=older_than)
    found: list[str] = []
    for table in ("executions", "workflow_executions"):
        statement = text(
            f"SELECT e.id FROM {table} e WHERE e.status IN :queued AND e.created_at < :cutoff "
            f"AND NOT EXISTS (SELECT 1 FROM {SCHEMA}.procrastinate_jobs j "
            "WHERE j.queueing_lock = e.id AND j.status = 'todo') "
            "ORDER BY e.created_at LIMIT :limit"
        ).bindparams(bindparam("queued", expanding=True))
        params = {"queued": list(QUEUED), "cutoff": cutoff, "limit": limit}
        found.extend(row[0] for row in session.execute(statement, params))
    return found


class ProcrastinateQueue:
    """A procrastinate app over the service's database; with ``run``, it can also work jobs."""

    def __init__(
        self,
        url: URL,
        run: Callable[[str], Awaitable[None]] | None = None,
        *,
        pool_size: int = 4,
    ) -> None:
        connector = PsycopgConnector(
            conninfo=conninfo(url), kwargs=_SEARCH_PATH, min_size=1, max_size=pool_size
        )
        self.app = App(connector=connector)
        if run is not None:

            async def run_execution(execution_id: str) -> None:
                await run(execution_id)

            self.app.task(name=TASK, queue=QUEUE)(run_execution)

    async def open(self) -> None:
        """Open the connection pool."""
        await self.app.open_async()

    async def close(self) -> None:
        """Close the connection pool."""
        await self.app.close_async()

    async def defer(self, execution_id: str) -> None:
        """Queue a job for ``execution_id`` (a no-op when one is already waiting)."""
        job = self.app.configure_task(TASK, queue=QUEUE, queueing_lock=execution_id)
        with contextlib.suppress(AlreadyEnqueued):
            await job.defer_async(execution_id=execution_id)

    async def work(self, *, concurrency: int, name: str, install_signal_handlers: bool) -> None:
        """Run jobs until cancelled (or, with signal handlers, until SIGTERM/SIGINT)."""
        await self.app.run_worker_async(
            queues=[QUEUE],
            concurrency=concurrency,
            name=name,
            install_signal_handlers=install_signal_handlers,
            delete_jobs="successful",
            shutdown_graceful_timeout=0.5,
        )
