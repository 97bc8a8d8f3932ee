"""The transactions of an execution's life in the queue: claim, lease renewal, end, reaping.

A worker *claims* a queued execution (``created`` or ``pending`` -> ``running``): it writes its
``worker_id``, a fresh ``heartbeat_at`` and ``attempt + 1``. That triple is the *lease*: every
later write of the worker (renewal, ``finalizing``, the final result) is guarded by it, so a
worker that lost its execution (declared lost, then retried elsewhere) can change nothing.

A lease not renewed for ``stale_after`` seconds means the worker is gone (killed, host down):
:func:`reap_stale` puts the execution back in the queue (``pending``) when it has attempts
left, and otherwise ends it ``failed`` with the reason ``worker lost`` (``cancelled`` when a
cancellation had been requested). Every function takes the session of the caller's
transaction.

Agent executions (``executions``) and workflow executions (``workflow_executions``, ids
``wfx_…``) share this life: :func:`execution_table` tells them apart by id, the queue and the
reaper look at both tables.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, cast

from sqlalchemy import CursorResult, Update, select, text, update
from sqlalchemy.orm import Session

from generated.agents.models import CancelOutcome
from handlers.agents.storage.schema import Execution, LeasedRun, WorkflowExecution, utc_now

__all__ = [
    "ACTIVE",
    "EVENTS_CHANNEL",
    "QUEUED",
    "TERMINAL",
    "Lease",
    "LeaseLost",
    "Reaped",
    "announce",
    "cancel",
    "cancel_is_requested",
    "claim",
    "claim_next",
    "execution_table",
    "finish",
    "mark_finalizing",
    "release",
    "renew",
    "reap_stale",
]

QUEUED = ("created", "pending")
ACTIVE = ("running", "waiting", "finalizing")
TERMINAL = ("completed", "failed", "cancelled", "rejected")

WORKFLOW_EXECUTION_PREFIX = "wfx_"

EVENTS_CHANNEL = "agents_executions"
"""PostgreSQL NOTIFY channel: the payload is the id of an execution that reached a terminal
status (servers wake the requests waiting for it)."""


class LeaseLost(RuntimeError):
    """The execution is no longer this worker's (declared lost and retried, or ended)."""


@dataclass(frozen=True)
class Lease:
    """A worker's hold on one running execution."""

    execution_id: str
    worker_id: str
    attempt: int


@dataclass
class Reaped:
    """What :func:`reap_stale` did: executions queued again, and executions it ended."""

    retried: list[str] = field(default_factory=list)
    ended: list[str] = field(default_factory=list)


ExecutionTable = type[Execution] | type[WorkflowExecution]


def execution_table(execution_id: str) -> ExecutionTable:
    """The table of ``execution_id``: workflow executions' ids start with ``wfx_``."""
    if execution_id.startswith(WORKFLOW_EXECUTION_PREFIX):
        return WorkflowExecution
    return Execution


def _count(session: Session, statement: Update) -> int:
    result = cast("CursorResult[Any]", session.execute(statement))
    return result.rowcount


def _held(lease: Lease) -> Update:
    table = execution_table(lease.execution_id)
    return update(table).where(
        table.id == lease.execution_id,
        table.worker_id == lease.worker_id,
        table.attempt == lease.attempt,
        table.status.in_(ACTIVE),
    )


def announce(session: Session, execution_id: str) -> None:
    """Tell other processes (on commit) that ``execution_id`` reached a terminal status."""
    if session.get_bind().dialect.name == "postgresql":
        session.execute(
            text("SELECT pg_notify(:channel, :id)"), {"channel": EVENTS_CHANNEL, "id": execution_id}
        )


def cancel(session: Session, execution: LeasedRun) -> CancelOutcome:
    """The seed's cancel table on a locked execution row: queued → cancelled at once (and
    announced); running, waiting or finalizing → a cancellation request, recorded once, that
    its worker honours; terminal → nothing."""
    if execution.status in QUEUED:
        execution.status = "cancelled"
        execution.completed_at = utc_now()
        execution.error = "Cancelled before it started"
        announce(session, execution.id)
        return CancelOutcome.cancelled
    if execution.status in ACTIVE:
        if execution.cancel_requested_at is None:
            execution.cancel_requested_at = utc_now()
        return CancelOutcome.cancellation_requested
    return CancelOutcome.already_terminal


def claim(session: Session, execution_id: str, worker_id: str) -> Lease | None:
    """Start ``execution_id`` for ``worker_id`` if it is still queued; ``None`` otherwise."""
    now = utc_now()
    table = execution_table(execution_id)
    claimed = _count(
        session,
        update(table)
        .where(table.id == execution_id, table.status.in_(QUEUED))
        .values(
            status="running",
            worker_id=worker_id,
            heartbeat_at=now,
            started_at=now,
            attempt=table.attempt + 1,
        ),
    )
    if not claimed:
        return None
    attempt = session.scalar(select(table.attempt).where(table.id == execution_id))
    return Lease(execution_id, worker_id, int(attempt or 1))


def claim_next(session: Session, worker_id: str) -> Lease | None:
    """Claim the oldest queued execution, agent or workflow, if any (skipping rows other
    workers are claiming)."""
    oldest: list[tuple[datetime, str]] = []
    for table in (Execution, WorkflowExecution):
        row = session.execute(
            select(table.created_at, table.id)
            .where(table.status.in_(QUEUED))
            .order_by(table.created_at, table.id)
            .limit(1)
            .with_for_update(skip_locked=True)
        ).first()
        if row is not None:
            oldest.append((row[0], row[1]))
    return None if not oldest else claim(session, min(oldest)[1], worker_id)


def renew(session: Session, lease: Lease) -> bool:
    """Refresh the lease's heartbeat; False when the lease is lost."""
    return _count(session, _held(lease).values(heartbeat_at=utc_now())) == 1


def cancel_is_requested(session: Session, execution_id: str) -> bool:
    """Whether someone asked for the execution to stop (or it no longer exists)."""
    table = execution_table(execution_id)
    row = session.execute(select(table.cancel_requested_at).where(table.id == execution_id)).first()
    return row is None or row[0] is not None


def mark_finalizing(session: Session, lease: Lease) -> None:
    """The program ended; its results are being stored. Raises LeaseLost."""
    if _count(session, _held(lease).values(status="finalizing", heartbeat_at=utc_now())) != 1:
        raise LeaseLost(lease.execution_id)


def release(session: Session, lease: Lease) -> bool:
    """Give the execution back to the queue (the worker is stopping); False if lost already."""
    return (
        _count(session, _held(lease).values(status="pending", worker_id=None, heartbeat_at=None))
        == 1
    )


def finish(session: Session, lease: Lease, values: dict[str, Any]) -> None:
    """Write the execution's end (``values``: status, output, error, …). Raises LeaseLost."""
    if _count(session, _held(lease).values(heartbeat_at=None, **values)) != 1:
        raise LeaseLost(lease.execution_id)
    announce(session, lease.execution_id)


def reap_stale(
    session: Session, stale_after: float, max_attempts: int, now: datetime | None = None
) -> Reaped:
    """Retry or end the active executions whose lease was not renewed for ``stale_after`` s."""
    now = now or utc_now()
    cutoff = now - timedelta(seconds=stale_after)
    rows: list[LeasedRun] = []
    tables: tuple[ExecutionTable, ...] = (Execution, WorkflowExecution)
    for table in tables:
        stale = (
            select(table)
            .where(table.status.in_(ACTIVE), table.heartbeat_at < cutoff)
            .order_by(table.heartbeat_at)
            .limit(100)
            .with_for_update(skip_locked=True)
        )
        rows.extend(cast("Sequence[LeasedRun]", session.scalars(stale).all()))
    reaped = Reaped()
    for execution in rows:
        lost = f"worker lost: {execution.worker_id} sent no heartbeat for {stale_after:g} s"
        if execution.cancel_requested_at is None and execution.attempt < max_attempts:
            execution.status = "pending"
            execution.worker_id = None
            execution.heartbeat_at = None
            reaped.retried.append(execution.id)
            continue
        cancelled = execution.cancel_requested_at is not None
        execution.status = "cancelled" if cancelled else "failed"
        execution.error = (
            f"cancelled ({lost})"
            if cancelled
            else f"{lost} (attempt {execution.attempt} of {max_attempts})"
        )
        execution.completed_at = now
        execution.heartbeat_at = None
        if execution.started_at is not None:
            execution.duration_ms = max(0, int((now - execution.started_at).total_seconds() * 1000))
        if isinstance(execution, WorkflowExecution):
            _end_children(session, execution.id, execution.status, execution.error, now)
        announce(session, execution.id)
        reaped.ended.append(execution.id)
    return reaped


def _end_children(
    session: Session, parent_id: str, status: str, error: str | None, now: datetime
) -> None:
    """End the unfinished block runs (child executions, run inline by the parent's worker,
    without a lease of their own) of a workflow execution that ended without its worker."""
    children = session.scalars(
        select(WorkflowExecution.id).where(
            WorkflowExecution.parent_execution_id == parent_id,
            WorkflowExecution.status.in_(ACTIVE),
        )
    ).all()
    for child_id in children:
        _end_children(session, child_id, status, error, now)
    if children:
        session.execute(
            update(WorkflowExecution)
            .where(WorkflowExecution.id.in_(children))
            .values(status=status, error=error, completed_at=now)
        )
