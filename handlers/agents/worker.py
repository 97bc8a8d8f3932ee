"""Workers: the embedded queue pool, the stale-lease reaper, and ``agents-worker``.

* :class:`QueuePool` (the embedded engine, SQLite): ``concurrency`` slots in the server's
  event loop claim the oldest queued execution (``executions`` is the queue) and run it; a new
  execution wakes them at once, and they also look every ``QUEUE_POLL_SECONDS``.
* :class:`StaleReaper`: every ``heartbeat_seconds``, retries or fails the executions whose
  worker stopped renewing its lease (:func:`~handlers.agents.execution_lease.reap_stale`) and,
  on PostgreSQL, defers again the queued executions that have no waiting job. The server and
  every worker run one; they never step on each other (``SKIP LOCKED``, lease guards).
* ``agents-worker`` (PostgreSQL only): a procrastinate worker running ``concurrency`` jobs at
  once, plus a reaper, until SIGTERM or SIGINT. Start any number, on any hosts that share the
  database and the data directory (blobs).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import sys
from collections.abc import Callable
from functools import partial

import psycopg
from sqlalchemy.exc import SQLAlchemyError

from handlers.agents.blobs import BlobStore
from handlers.agents.database import Database
from handlers.agents.dispatch import Dispatcher, JobDispatcher
from handlers.agents.execution_job import SandboxUnavailable, sandbox_for
from handlers.agents.execution_lease import claim, claim_next, reap_stale
from handlers.agents.jobs import ExecutionJobs
from handlers.agents.migrate import open_database
from handlers.agents.procrastinate_queue import ProcrastinateQueue, ensure_schema, undispatched
from handlers.agents.settings import Settings, SettingsError

__all__ = ["QUEUE_POLL_SECONDS", "QueuePool", "StaleReaper", "main", "run_leased", "worker_name"]

log = logging.getLogger("agents.worker")

QUEUE_POLL_SECONDS = 1.0


def worker_name() -> str:
    """This process's worker id: ``<host>:<pid>``."""
    return f"{socket.gethostname()}:{os.getpid()}"


async def run_leased(database: Database, job: ExecutionJobs, execution_id: str, name: str) -> None:
    """Claim ``execution_id`` for worker ``name`` and run it (nothing if no longer queued)."""
    lease = await database.write(partial(claim, execution_id=execution_id, worker_id=name))
    if lease is None:
        log.info("execution %s is no longer queued: nothing to do", execution_id)
        return
    await job.run(lease)


class QueuePool:
    """Slots that claim queued executions from the database and run them."""

    def __init__(self, database: Database, job: ExecutionJobs, concurrency: int, name: str) -> None:
        self.database = database
        self.job = job
        self.concurrency = concurrency
        self.name = name
        self._changed = asyncio.Event()

    def wake(self) -> None:
        """New executions are queued."""
        self._changed.set()
        self._changed = asyncio.Event()

    async def run(self) -> None:
        """Run until cancelled."""
        async with asyncio.TaskGroup() as group:
            for _ in range(self.concurrency):
                group.create_task(self._slot())

    async def _slot(self) -> None:
        while True:
            changed = self._changed  # taken before looking: a wake from now on is not missed
            try:
                lease = await self.database.write(partial(claim_next, worker_id=self.name))
            except SQLAlchemyError as error:
                log.warning("cannot claim an execution: %s", error)
                lease = None
            if lease is None:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(changed.wait(), QUEUE_POLL_SECONDS)
                continue
            try:
                await self.job.run(lease)
            except Exception:  # the slot lives on; the stale lease gets the execution retried
                log.exception("execution %s: the worker failed", lease.execution_id)


class StaleReaper:
    """Finds executions whose worker is gone, and (PostgreSQL) queued ones without a job."""

    def __init__(
        self,
        database: Database,
        settings: Settings,
        dispatcher: Dispatcher,
        on_end: Callable[[str], None],
    ) -> None:
        self.database = database
        self.settings = settings
        self.dispatcher = dispatcher
        self.on_end = on_end

    async def sweep(self) -> None:
        """One pass."""
        reaped = await self.database.write(
            partial(
                reap_stale,
                stale_after=self.settings.stale_after_seconds,
                max_attempts=self.settings.max_attempts,
            )
        )
        for execution_id in reaped.retried:
            log.warning("execution %s: worker lost, queued again", execution_id)
        for execution_id in reaped.ended:
            log.warning("execution %s: worker lost, no attempt left: ended", execution_id)
            self.on_end(execution_id)
        again = list(reaped.retried)
        if self.database.dialect == "postgresql":
            again += await self.database.read(
                partial(undispatched, older_than=self.settings.stale_after_seconds)
            )
        await self.dispatcher.dispatch(sorted(set(again)))

    async def run(self) -> None:
        """Sweep every ``heartbeat_seconds`` until cancelled."""
        while True:
            try:
                await self.sweep()
            except Exception as error:  # database or queue down: log, try again next time
                log.warning("stale execution sweep failed: %s: %s", type(error).__name__, error)
            await asyncio.sleep(self.settings.heartbeat_seconds)


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
    from handlers.agents.server import configure_logging  # the server imports this module

    try:
        settings = Settings.from_env()
    except SettingsError as error:
        print(f"agents-worker: {error}", file=sys.stderr)
        return 2
    if settings.database_url is None or not settings.database_url.startswith("postgresql"):
        print(
            "agents-worker: set AGENTS_DATABASE_URL=postgresql://…; with the embedded SQLite "
            "database, agents-server runs the executions itself",
            file=sys.stderr,
        )
        return 2
    configure_logging(settings.log_level)
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
