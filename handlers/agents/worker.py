"""``agents-worker`` (PostgreSQL only): a procrastinate worker running ``concurrency`` jobs at
once, plus a stale-lease reaper, until SIGTERM or SIGINT. Start any number, on any hosts that
share the database and the data directory (blobs).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sys
from functools import partial

import psycopg
from sqlalchemy.exc import SQLAlchemyError

from handlers.agents.execution.agent_job import SandboxUnavailable, sandbox_for
from handlers.agents.execution.dispatch import JobDispatcher
from handlers.agents.execution.jobs import ExecutionJobs
from handlers.agents.execution.pool import run_leased, worker_name
from handlers.agents.execution.procrastinate_queue import ProcrastinateQueue, ensure_schema
from handlers.agents.execution.reaper import StaleReaper
from handlers.agents.settings import Settings
from handlers.agents.storage.blobs import BlobStore
from handlers.agents.storage.migrate import open_database
from handlers.common.entry import run_service

__all__ = ["main", "serve_worker"]

log = logging.getLogger("agents.worker")


async def serve_worker(settings: Settings) -> None:
    """``agents-worker``: run jobs from the PostgreSQL queue until SIGTERM/SIGINT."""
    sandbox = await asyncio.to_thread(sandbox_for, settings)
    database = open_database(settings)
    await asyncio.to_thread(ensure_schema, database.url)
    name = worker_name()
    job = ExecutionJobs(
        database,
        BlobStore(settings.blob_dir),
        settings,
        on_end=lambda _: None,
        worker_id=name,
        sandbox=sandbox,
    )
    queue = ProcrastinateQueue(
        database.url,
        partial(run_leased, database, job, name=name),
        pool_size=settings.worker_concurrency + 2,
    )
    await queue.open()
    dispatcher = JobDispatcher(queue, database)
    reaper = asyncio.create_task(StaleReaper(database, settings, dispatcher, job.on_end).run())
    log.info(
        "agents-worker %s running up to %d executions (database %s)",
        name,
        settings.worker_concurrency,
        database.display_url(),
    )
    try:
        await queue.work(
            concurrency=settings.worker_concurrency, name=name, install_signal_handlers=True
        )
    finally:
        reaper.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await reaper
        await queue.close()
        database.dispose()
        log.info("agents-worker %s stopped", name)


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``agents-worker``: settings come from the environment."""
    del argv
    return run_service(Settings, _serve, program="agents-worker")


def _serve(settings: Settings) -> int:
    if settings.database_url is None or not settings.database_url.startswith("postgresql"):
        print(
            "agents-worker: set AGENTS_DATABASE_URL=postgresql://…; with the embedded SQLite "
            "database, agents-server runs the executions itself",
            file=sys.stderr,
        )
        return 2
    try:
        asyncio.run(serve_worker(settings))
    except SandboxUnavailable as error:
        log.error("%s", error)
        return 2
    except (SQLAlchemyError, psycopg.Error) as error:
        log.error("cannot use the database: %s", str(error).splitlines()[0])
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
