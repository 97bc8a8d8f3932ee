"""The scheduler loop: fires the due ticks of schedules, in every process that runs it.

``agents-server`` registers it as the background task ``schedules``
(``engine.background.add("schedules", …)``); ``agents-worker`` may run it too
(:func:`schedule_task`). Any number of loops may run on one database: each due tick is
claimed by exactly one transaction (:mod:`handlers.agents.domain.schedule_firing`), and the
execution it created is dispatched after the commit (a failed dispatch leaves it queued; the
workers find it later). The loop looks again at the earliest next tick, and at least every
``poll_seconds`` (schedules created or changed by other processes), so a tick starts its run
within about that long.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from datetime import datetime
from functools import partial
from typing import Protocol

import psycopg
from sqlalchemy.exc import IntegrityError, SQLAlchemyError

from handlers.agents.domain.schedule_firing import (
    FiredTick,
    due_schedules,
    fire_tick,
    next_due_at,
    prune_schedule_runs,
    skip_tick,
    tick_text,
)
from handlers.agents.execution.background import BackgroundWork
from handlers.agents.execution.dispatch import DISPATCH_ERRORS, Dispatcher
from handlers.agents.storage.blobs import BlobStore
from handlers.agents.storage.database import Database
from handlers.agents.storage.schema import utc_now

__all__ = ["RunDispatch", "Scheduler", "dispatching", "schedule_task"]

log = logging.getLogger("agents.schedules")

POLL_SECONDS = 1.0
BATCH_SIZE = 100
PRUNE_EVERY_SECONDS = 3600.0
"""How often a loop deletes the records of old ticks (``prune_schedule_runs``)."""
DATABASE_ERRORS = (SQLAlchemyError, psycopg.Error)

Clock = Callable[[], datetime]


class RunDispatch(Protocol):
    """What the loop needs of the execution engine (``ExecutionEngine`` is one)."""

    @property
    def initial_status(self) -> str:
        """The status a new execution is created with."""

    async def dispatch_or_leave(self, execution_id: str) -> bool:
        """Hand a committed execution to the workers; ``False`` when that failed (it stays
        queued)."""


class _DispatcherRuns:
    def __init__(self, dispatcher: Dispatcher) -> None:
        self._dispatcher = dispatcher

    @property
    def initial_status(self) -> str:
        return self._dispatcher.initial_status

    async def dispatch_or_leave(self, execution_id: str) -> bool:
        try:
            await self._dispatcher.dispatch([execution_id])
        except DISPATCH_ERRORS as error:
            log.warning("execution %s: dispatch failed, it stays queued: %s", execution_id, error)
            return False
        return True


def dispatching(dispatcher: Dispatcher) -> RunDispatch:
    """A process without an ``ExecutionEngine`` (``agents-worker``): dispatch through its
    ``dispatcher``."""
    return _DispatcherRuns(dispatcher)


class Scheduler:
    """Fires due ticks until cancelled (:meth:`run`); :meth:`run_once` is one look."""

    def __init__(
        self,
        database: Database,
        blobs: BlobStore,
        runs: RunDispatch,
        *,
        clock: Clock = utc_now,
        poll_seconds: float = POLL_SECONDS,
        batch_size: int = BATCH_SIZE,
        prune_every_seconds: float | None = PRUNE_EVERY_SECONDS,
    ) -> None:
        self.database = database
        self.blobs = blobs
        self.runs = runs
        self.clock = clock
        """The time the loop fires ticks by (tests move it)."""
        self.poll_seconds = poll_seconds
        self.batch_size = batch_size
        self.prune_every_seconds = prune_every_seconds
        """How often old tick records are deleted (``None``: never, for tests whose clock
        jumps years)."""
        self.passes = 0
        """Looks completed so far (tests wait on it)."""
        self._failing = False
        self._pruned_at: float | None = None

    async def run(self) -> None:
        """Look for due ticks, fire them, sleep until the next one (at most ``poll_seconds``);
        until cancelled. A database that fails is logged once and tried again."""
        while True:
            delay = self.poll_seconds
            try:
                delay = await self.run_once()
                if self._failing:
                    log.info("schedules: the database answers again")
                    self._failing = False
            except DATABASE_ERRORS as error:
                if not self._failing:
                    log.warning("schedules: cannot fire due ticks, retrying: %s", error)
                    self._failing = True
            self.passes += 1
            await asyncio.sleep(delay)

    async def run_once(self) -> float:
        """Fire every tick due now (and, once an hour, delete the records of old ticks); the
        seconds until the next look."""
        now = self.clock()
        await self._prune_now_and_then(now)
        due = await self.database.read(partial(due_schedules, now=now, limit=self.batch_size))
        for schedule_id, tick in due:
            await self._fire(schedule_id, tick, now)
        if len(due) >= self.batch_size:
            return 0.0
        upcoming = await self.database.read(next_due_at)
        if upcoming is None:
            return self.poll_seconds
        wait = (upcoming - self.clock()).total_seconds()
        return min(self.poll_seconds, max(0.0, wait) + 0.001)

    async def _prune_now_and_then(self, now: datetime) -> None:
        moment = time.monotonic()
        if self.prune_every_seconds is None or (
            self._pruned_at is not None and moment - self._pruned_at < self.prune_every_seconds
        ):
            return
        self._pruned_at = moment
        pruned = await self.database.write(partial(prune_schedule_runs, now=now))
        if pruned:
            log.info("schedules: deleted the records of %d old ticks", pruned)

    async def _fire(self, schedule_id: str, due: datetime, now: datetime) -> None:
        try:
            fired = await self.database.write(
                partial(fire_tick, blobs=self.blobs, schedule_id=schedule_id, due=due, now=now,
                        status=self.runs.initial_status)
            )  # fmt: skip
        except IntegrityError as error:  # the tick's run is recorded already (cannot happen)
            log.warning("schedule %s: tick %s already fired: %s", schedule_id, due, error)
            return
        except DATABASE_ERRORS:
            raise
        except Exception as error:  # a bug, the blob store: trying again would fail again
            log.exception("schedule %s: tick %s failed", schedule_id, tick_text(due))
            fired = await self.database.write(
                partial(skip_tick, schedule_id=schedule_id, due=due, now=now,
                        reason=f"internal error: {error}")
            )  # fmt: skip
        if fired is not None:
            await self._started(fired)

    async def _started(self, fired: FiredTick) -> None:
        when = tick_text(fired.scheduled_for)
        if fired.execution_id is None:
            log.info("schedule %s: %s", fired.schedule_id, fired.error)
            return
        log.debug("schedule %s: tick %s started %s", fired.schedule_id, when, fired.execution_id)
        if fired.queued:
            await self.runs.dispatch_or_leave(fired.execution_id)


def schedule_task(
    database: Database, blobs: BlobStore, runs: RunDispatch, poll_seconds: float = POLL_SECONDS
) -> BackgroundWork:
    """The background work of a process that fires schedules: ``tasks.add("schedules",
    schedule_task(database, blobs, engine))`` (``dispatching(dispatcher)`` as ``runs`` in a
    process without an engine)."""
    return Scheduler(database, blobs, runs, poll_seconds=poll_seconds).run
