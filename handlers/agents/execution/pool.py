"""The queue pool: slots in a process's event loop that claim and run executions.

The ``executions`` (and ``workflow_executions``) tables are the queue, with SQLite and with
PostgreSQL alike: ``concurrency`` slots each claim the next queued execution
(:func:`~handlers.agents.execution.leases.claim_next`) and run it. A new execution wakes them at
once (in this process directly, in others through ``NOTIFY agents_queue``), and they also look
every ``QUEUE_POLL_SECONDS``. The server runs one pool (unless ``AGENTS_EMBEDDED_WORKER=false``),
every ``agents-worker`` process another.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
from functools import partial

from sqlalchemy.exc import SQLAlchemyError

from handlers.agents.execution.jobs import ExecutionJobs
from handlers.agents.execution.leases import claim_next
from handlers.agents.storage.database import Database

__all__ = ["QUEUE_POLL_SECONDS", "QueuePool", "worker_name"]

log = logging.getLogger("agents.worker")

QUEUE_POLL_SECONDS = 1.0


def worker_name() -> str:
    """This process's worker id: ``<host>:<pid>``."""
    return f"{socket.gethostname()}:{os.getpid()}"


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
