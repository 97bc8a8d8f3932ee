"""Handing new executions to workers, and hearing when executions end.

* **The queue is the tables.** With either database a queued execution is a ``pending`` row of
  ``executions`` or ``workflow_executions``; workers claim rows
  (:func:`~handlers.agents.execution.leases.claim_next`: ``FOR UPDATE SKIP LOCKED`` on
  PostgreSQL, so any number of processes claim without stepping on each other). There is no
  second queue to keep in step with the rows: what a committed transaction queued is durable,
  and nothing queued can lose its "job".
* **Dispatching only wakes workers.** :class:`QueueDispatcher` wakes this process's pool at
  once and, on PostgreSQL, the pools of every other process through ``NOTIFY agents_queue``,
  which every process's :class:`PostgresListener` relays. The notices of a busy server are
  coalesced (:class:`QueueNotifier`: at most one per ``NOTIFY_COALESCE_SECONDS``, sent outside
  the submitting transactions, which PostgreSQL would otherwise serialize on its notification
  queue's lock at commit). The reaper dispatches its retries the same way; the one queueing
  transaction without a dispatcher at hand (a stopping worker giving an execution back)
  notifies in the transaction. A
  lost notice costs at most ``QUEUE_POLL_SECONDS``: pools also look on their own.
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
from typing import Any, Protocol

import psycopg
from sqlalchemy import select
from sqlalchemy.engine import URL
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.orm import Session

from handlers.agents.execution.leases import (
    EVENTS_CHANNEL,
    QUEUE_CHANNEL,
    TERMINAL,
    execution_table,
)
from handlers.agents.storage.database import Database

__all__ = [
    "DISPATCH_ERRORS",
    "CompletionNotices",
    "Dispatcher",
    "PostgresListener",
    "QueueDispatcher",
    "QueueNotifier",
    "conninfo",
    "wait_until_ended",
]

log = logging.getLogger("agents.dispatch")

RECHECK_SECONDS = 2.0
LISTEN_RETRY_SECONDS = 1.0
NOTIFY_COALESCE_SECONDS = 0.002
"""Dispatches within this window share one ``NOTIFY agents_queue``."""
DISPATCH_ERRORS = (SQLAlchemyError, psycopg.Error)
"""What a failed dispatch raises (the database is down): the execution stays queued and the
workers find it when they next look."""


def conninfo(url: URL) -> str:
    """A libpq connection string for the SQLAlchemy URL ``url``."""
    return url.set(drivername="postgresql").render_as_string(hide_password=False)


class Dispatcher(Protocol):
    """Hands executions to workers."""

    initial_status: str
    """The status of an execution when its creating transaction commits."""

    async def dispatch(self, execution_ids: Sequence[str]) -> None:
        """Make sure a worker will look for these queued executions."""


class QueueNotifier:
    """Sends ``NOTIFY agents_queue`` on a connection of its own (autocommit), at most one per
    ``NOTIFY_COALESCE_SECONDS`` however many executions were queued meanwhile."""

    def __init__(self, url: URL) -> None:
        self._conninfo = conninfo(url)
        self._connection: psycopg.AsyncConnection[Any] | None = None
        self._scheduled: asyncio.Task[None] | None = None

    def poke(self) -> None:
        """Executions were queued (and committed): notify soon."""
        if self._scheduled is None or self._scheduled.done():
            self._scheduled = asyncio.create_task(self._notify(), name="queue-notify")

    async def _notify(self) -> None:
        await asyncio.sleep(NOTIFY_COALESCE_SECONDS)
        try:
            if self._connection is None or self._connection.closed:
                self._connection = await psycopg.AsyncConnection.connect(
                    self._conninfo, autocommit=True
                )
            await self._connection.execute(f"NOTIFY {QUEUE_CHANNEL}")
        except psycopg.Error as error:  # the pools look on their own too
            log.warning("NOTIFY %s failed: %s", QUEUE_CHANNEL, error)
            self._connection = None

    async def close(self) -> None:
        """Send what is pending, then close the connection."""
        if self._scheduled is not None:
            with contextlib.suppress(asyncio.CancelledError):
                await self._scheduled
        if self._connection is not None:
            await self._connection.close()
            self._connection = None


class QueueDispatcher:
    """New executions are ``pending`` rows: dispatching wakes this process's pool at once and,
    with a :class:`QueueNotifier` (PostgreSQL), every other process's."""

    initial_status = "pending"

    def __init__(self, wake: Callable[[], None], notifier: QueueNotifier | None = None) -> None:
        self._wake = wake
        self._notifier = notifier

    async def dispatch(self, execution_ids: Sequence[str]) -> None:
        if execution_ids:
            self._wake()
            if self._notifier is not None:
                self._notifier.poke()


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
    """Relays ``NOTIFY agents_executions`` to :class:`CompletionNotices` and ``NOTIFY
    agents_queue`` to ``wake`` (this process's pool), reconnecting when the connection drops
    (and waking the pool then: notices sent meanwhile are lost)."""

    def __init__(
        self, url: URL, notices: CompletionNotices, wake: Callable[[], None] | None = None
    ) -> None:
        self._conninfo = conninfo(url)
        self._notices = notices
        self._wake = wake

    async def listen(self) -> None:
        """Run until cancelled."""
        while True:
            try:
                async with await psycopg.AsyncConnection.connect(
                    self._conninfo, autocommit=True
                ) as connection:
                    await connection.execute(f"LISTEN {EVENTS_CHANNEL}")
                    if self._wake is not None:
                        await connection.execute(f"LISTEN {QUEUE_CHANNEL}")
                        self._wake()
                    async for notice in connection.notifies():
                        if notice.channel == QUEUE_CHANNEL:
                            if self._wake is not None:
                                self._wake()
                        else:
                            self._notices.notify(notice.payload)
            except psycopg.Error as error:
                log.warning("LISTEN failed, retrying: %s", error)
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
