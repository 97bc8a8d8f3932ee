"""``agents-worker`` (PostgreSQL only): a queue pool running ``concurrency`` executions at once,
plus a stale-lease reaper, the schedules and the webhook deliveries, until SIGTERM or SIGINT.
Start any number, on any hosts that share the database and the data directory (blobs).

Workers claim queued rows of ``executions`` and ``workflow_executions`` themselves
(:mod:`handlers.agents.execution.pool`), woken by ``NOTIFY agents_queue``. On SIGTERM or SIGINT
a worker stops claiming and gives the executions it runs back to the queue (another worker
takes them up); a worker killed without a chance to do so loses its leases, and the reaper of
another process queues those executions again after ``AGENTS_STALE_AFTER_SECONDS``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import sys
from functools import partial

import psycopg
from sqlalchemy.exc import SQLAlchemyError

from handlers.agents.execution.agent_job import SandboxUnavailable, sandbox_for
from handlers.agents.execution.background import BackgroundTasks
from handlers.agents.execution.dispatch import (
    CompletionNotices,
    PostgresListener,
    QueueDispatcher,
    QueueNotifier,
)
from handlers.agents.execution.jobs import ExecutionJobs
from handlers.agents.execution.pool import QueuePool, worker_name
from handlers.agents.execution.reaper import StaleReaper
from handlers.agents.execution.scheduler import dispatching, schedule_task
from handlers.agents.execution.webhook_delivery import webhook_delivery
from handlers.agents.runner import prefer_pidfd_child_watcher
from handlers.agents.settings import Settings
from handlers.agents.storage.blobs import BlobStore
from handlers.agents.storage.database import Database
from handlers.agents.storage.migrate import open_database
from handlers.common.entry import run_service

__all__ = ["main", "serve_worker", "worker_tasks"]

log = logging.getLogger("agents.worker")


def worker_tasks(
    settings: Settings, database: Database, blobs: BlobStore, job: ExecutionJobs
) -> BackgroundTasks:
    """What an ``agents-worker`` process runs: its pool, the listener that wakes it, the
    reaper, and the loops every process runs (schedules, webhook deliveries)."""
    pool = QueuePool(database, job, settings.worker_concurrency, job.worker_id)
    notifier = QueueNotifier(database.url)  # wakes the other processes for scheduled runs
    dispatcher = QueueDispatcher(pool.wake, notifier)
    tasks = BackgroundTasks()
    tasks.add("pool", pool.run)
    tasks.add("listener", PostgresListener(database.url, CompletionNotices(), pool.wake).listen)
    tasks.add("reaper", StaleReaper(database, settings, dispatcher, job.on_end).run)
    tasks.add("schedules", schedule_task(database, blobs, dispatching(dispatcher)))
    tasks.add("webhooks", webhook_delivery(settings, database))
    tasks.add("notifier", partial(_close_when_stopped, notifier))
    return tasks


async def _close_when_stopped(notifier: QueueNotifier) -> None:
    """Hold ``notifier`` open until the worker stops, then send what is pending and close its
    connection."""
    try:
        await asyncio.Event().wait()
    finally:
        await notifier.close()


async def serve_worker(settings: Settings) -> None:
    """``agents-worker``: run queued executions until SIGTERM/SIGINT."""
    sandbox = await asyncio.to_thread(sandbox_for, settings)
    database = open_database(settings)
    name = worker_name()
    blobs = BlobStore(settings.blob_dir)
    job = ExecutionJobs(
        database,
        blobs,
        settings,
        on_end=lambda _: None,
        worker_id=name,
        sandbox=sandbox,
    )
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    log.info(
        "agents-worker %s running up to %d executions (database %s)",
        name,
        settings.worker_concurrency,
        database.display_url(),
    )
    try:
        async with worker_tasks(settings, database, blobs, job).running():
            await stop.wait()
    finally:
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
        with contextlib.suppress(KeyboardInterrupt):
            prefer_pidfd_child_watcher()
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
