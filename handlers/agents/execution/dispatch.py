"""Handing new executions to workers, and hearing when executions end.

* **Dispatchers.** :class:`QueueDispatcher` (the embedded engine): the ``executions`` table is
  the queue, so a new execution is ``pending`` at creation and dispatching only wakes the
  server's worker pool. :class:`JobDispatcher` (PostgreSQL): an execution is ``created`` at
  creation; dispatching defers a procrastinate job for it, then marks it ``pending``.
* **Completion notices.** :class:`CompletionNotices` holds an ``asyncio.Event`` per awaited
  execution; whatever ends an execution in this process sets it. On PostgreSQL, the
  transaction that ends an execution also sends ``NOTIFY agents_executions, '<id>'``, which
  :class:`PostgresListener` relays, so a request waiting on one server hears of an execution
  a worker on another host finished. :func:`wait_until_ended` waits on the event and checks
  the row only when woken (and, as a safety net, every ``recheck_seconds``), never in a tight
  loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Iterator, Sequence
from functools import partial
from typing import Protocol

import psycopg
from procrastinate.exceptions import ProcrastinateException
from sqlalchemy import select, update
from sqlalchemy.engine import URL
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.orm import Session

from handlers.agents.execution.leases import EVENTS_CHANNEL, TERMINAL, execution_table
from handlers.agents.execution.procrastinate_queue import ProcrastinateQueue, conninfo
from handlers.agents.storage.database import Database

__all__ = [
    "DISPATCH_ERRORS",
    "CompletionNotices",
    "Dispatcher",
    "JobDispatcher",
    "PostgresListener",
    "QueueDispatcher",
    "wait_until_ended",
]

log = logging.getLogger("agents.dispatch")

RECHECK_SECONDS = 2.0
LISTEN_RETRY_SECONDS = 1.0
DISPATCH_ERRORS = (SQLAlchemyError, psycopg.Error, ProcrastinateException)
"""What a failed dispatch raises (the database or the queue is down): the execution stays
``created`` and the reaper dispatches it again later."""


class Dispatcher(Protocol):
    """Hands executions to workers."""

    initial_status: str
    """The status of an execution when its creating transaction commits."""

    async def dispatch(self, execution_ids: Sequence[str]) -> None:
        """Make sure a worker will run each of these queued executions."""


class QueueDispatcher:
    """The embedded engine: new executions are ``pending`` rows; ``wake`` rouses the pool."""

    initial_status = "pending"

    def __init__(self, wake: Callable[[], None]) -> None:
        self._wake = wake

    async def dispatch(self, execution_ids: Sequence[str]) -> None:
        if execution_ids:
            self._wake()


def _mark_pending(session: Session, execution_ids: Sequence[str]) -> None:
    for table in {execution_table(execution_id) for execution_id in execution_ids}:
        session.execute(
            update(table)
            .where(table.id.in_(execution_ids), table.status == "created")
            .values(status="pending")
        )


class JobDispatcher:
    """PostgreSQL: one procrastinate job per execution, then ``created`` -> ``pending``."""

    initial_status = "created"

    def __init__(self, queue: ProcrastinateQueue, database: Database) -> None:
        self._queue = queue
        self._database = database

    async def dispatch(self, execution_ids: Sequence[str]) -> None:
        for execution_id in execution_ids:
            await self._queue.defer(execution_id)
        if execution_ids:
            await self._database.write(partial(_mark_pending, execution_ids=list(execution_ids)))


class CompletionNotices:
    """Events of the executions someone waits for, set when they end."""

    def __init__(self) -> None:
        self._events: dict[str, set[asyncio.Event]] = {}

    @contextlib.contextmanager
    def watch(self, execution_id: str) -> Iterator[asyncio.Event]:
        """An event set when ``execution_id`` ends, for the duration of the block."""
        event = asyncio.Event()
        self._events.setdefault(execution_id, set()).add(event)
        try:
            yield event
        finally:
            watchers = self._events.get(execution_id)
            if watchers is not None:
                watchers.discard(event)
                if not watchers:
                    del self._events[execution_id]

    def notify(self, execution_id: str) -> None:
        """``execution_id`` ended (or may have: waiters check the row)."""
        for event in self._events.get(execution_id, ()):
            event.set()


class PostgresListener:
    """Relays ``NOTIFY agents_executions`` to :class:`CompletionNotices` (reconnecting)."""

    def __init__(self, url: URL, notices: CompletionNotices) -> None:
        self._conninfo = conninfo(url)
        self._notices = notices

    async def listen(self) -> None:
        """Run until cancelled."""
        while True:
            try:
                async with await psycopg.AsyncConnection.connect(
                    self._conninfo, autocommit=True
                ) as connection:
                    await connection.execute(f"LISTEN {EVENTS_CHANNEL}")
                    async for notice in connection.notifies():
                        self._notices.notify(notice.payload)
            except psycopg.Error as error:
                log.warning("LISTEN %s failed, retrying: %s", EVENTS_CHANNEL, error)
                await asyncio.sleep(LISTEN_RETRY_SECONDS)


def _status(session: Session, execution_id: str) -> str | None:
    table = execution_table(execution_id)
    return session.scalar(select(table.status).where(table.id == execution_id))


async def wait_until_ended(
    database: Database,
    notices: CompletionNotices,
    execution_id: str,
    seconds: float,
    recheck_seconds: float = RECHECK_SECONDS,
) -> bool:
    """Whether ``execution_id`` reached a terminal status within ``seconds``."""
    deadline = time.monotonic() + seconds
    with notices.watch(execution_id) as ended:
        while True:
            ended.clear()
            status = await database.read(partial(_status, execution_id=execution_id))
            if status is None or status in TERMINAL:
                return status is not None
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return False
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(ended.wait(), timeout=min(remaining, recheck_seconds))
