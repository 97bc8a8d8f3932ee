"""The execution engine of ``agents-server``: what runs executions.

The ``executions`` and ``workflow_executions`` tables are the queue with either database. The
server's :class:`~handlers.agents.execution.pool.QueuePool` runs ``AGENTS_WORKER_CONCURRENCY``
executions at once (unless ``AGENTS_EMBEDDED_WORKER=false``); on PostgreSQL any number of
``agents-worker`` processes run pools of their own on the same tables, woken by ``NOTIFY
agents_queue`` (:class:`~handlers.agents.execution.dispatch.PostgresListener`).

The server also runs a :class:`~handlers.agents.execution.reaper.StaleReaper` and answers
``wait_for_completion`` from :class:`~handlers.agents.execution.dispatch.CompletionNotices` (fed by
LISTEN/NOTIFY on PostgreSQL).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Coroutine, Sequence
from typing import Any

from generated.agents.models import CancelOutcome
from handlers.agents.execution.background import BackgroundTasks
from handlers.agents.execution.dispatch import (
    DISPATCH_ERRORS,
    CompletionNotices,
    Dispatcher,
    PostgresListener,
    QueueDispatcher,
    QueueNotifier,
    wait_until_ended,
)
from handlers.agents.execution.jobs import ExecutionJobs
from handlers.agents.execution.pool import QueuePool, worker_name
from handlers.agents.execution.reaper import StaleReaper
from handlers.agents.runner import Sandbox
from handlers.agents.settings import Settings
from handlers.agents.storage.blobs import BlobStore
from handlers.agents.storage.database import Database

__all__ = ["ExecutionEngine"]

log = logging.getLogger("agents.engine")


class ExecutionEngine:
    """Dispatching, running (when embedded), reaping, and waiting for executions."""

    def __init__(
        self, settings: Settings, database: Database, blobs: BlobStore, sandbox: Sandbox
    ) -> None:
        self.settings = settings
        self.database = database
        self.notices = CompletionNotices()
        self.name = worker_name()
        self.job = ExecutionJobs(
            database,
            blobs,
            settings,
            on_end=self.notices.notify,
            worker_id=self.name,
            sandbox=sandbox,
        )
        self._pool = QueuePool(database, self.job, settings.worker_concurrency, self.name)
        self._notifier = QueueNotifier(database.url) if database.dialect == "postgresql" else None
        self.dispatcher: Dispatcher = QueueDispatcher(self._pool.wake, self._notifier)
        self.reaper = StaleReaper(database, settings, self.dispatcher, self.notices.notify)
        self.background = BackgroundTasks()
        """Further loops of this process (webhook delivery, schedules): registered by
        ``server.py`` before :meth:`running`, run and stopped with the engine's own."""

    @property
    def initial_status(self) -> str:
        """The status of a new execution (``pending``: the row is the queue)."""
        return self.dispatcher.initial_status

    async def dispatch(self, execution_ids: Sequence[str]) -> None:
        """Hand new executions to the workers."""
        await self.dispatcher.dispatch(execution_ids)

    async def dispatch_or_leave(self, execution_id: str) -> bool:
        """Wake the workers for ``execution_id``; ``False`` (logged) when the database is down:
        the execution stays queued and the workers find it when they next look."""
        try:
            await self.dispatch([execution_id])
        except DISPATCH_ERRORS as error:
            log.warning("execution %s: cannot wake the workers, they will find it: %s",
                        execution_id, error)  # fmt: skip
            return False
        return True

    async def wait(self, execution_id: str, seconds: float) -> bool:
        """Whether ``execution_id`` ended within ``seconds``."""
        return await wait_until_ended(self.database, self.notices, execution_id, seconds)

    def cancel_requested(self, execution_id: str) -> None:
        """A cancellation was recorded: stop the execution now if this process runs it."""
        self.job.request_cancel(execution_id)

    def cancelled(self, execution_id: str, outcome: CancelOutcome) -> None:
        """A cancel request was answered with ``outcome``: wake the waiters of an execution
        cancelled while queued, or stop one this process runs."""
        if outcome == CancelOutcome.cancelled:
            self.ended(execution_id)
        elif outcome == CancelOutcome.cancellation_requested:
            self.cancel_requested(execution_id)

    def ended(self, execution_id: str) -> None:
        """An execution ended outside a worker (cancelled while queued)."""
        self.notices.notify(execution_id)

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        """Run the engine's background work for the duration of the block."""
        tasks: list[asyncio.Task[None]] = []

        def start(work: Coroutine[Any, Any, None], name: str) -> None:
            task = asyncio.create_task(work, name=name)
            task.add_done_callback(_report_crash)
            tasks.append(task)

        embedded = self.settings.embedded_worker
        if self.database.dialect == "postgresql":
            wake = self._pool.wake if embedded else None
            start(PostgresListener(self.database.url, self.notices, wake).listen(), "listener")
        if embedded:
            start(self._pool.run(), "worker")
        elif self.database.dialect != "postgresql":
            log.warning("AGENTS_EMBEDDED_WORKER=false with SQLite: executions stay queued")
        start(self.reaper.run(), "reaper")
        try:
            async with self.background.running():
                yield
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            if self._notifier is not None:
                await self._notifier.close()


def _report_crash(task: asyncio.Task[None]) -> None:
    if not task.cancelled() and task.exception() is not None:
        log.error("engine task %s stopped: %r", task.get_name(), task.exception())
