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
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, cast

from sqlalchemy import CursorResult, Update, select, text, update
from sqlalchemy.orm import Session

from handlers.agents.schema import Execution, utc_now

__all__ = [
    "ACTIVE",
    "EVENTS_CHANNEL",
    "QUEUED",
    "TERMINAL",
    "Lease",
    "LeaseLost",
    "Reaped",
    "announce",
    "cancel_is_requested",
    "claim",
    "claim_next",
    "finish",
    "mark_finalizing",
    "release",
    "renew",
    "reap_stale",
]

QUEUED = ("created", "pending")
ACTIVE = ("running", "waiting", "finalizing")
TERMINAL = ("completed", "failed", "cancelled", "rejected")

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


def _count(session: Session, statement: Update) -> int:
    result = cast("CursorResult[Any]", session.execute(statement))
    return result.rowcount


def _held(lease: Lease) -> Update:
    return update(Execution).where(
        Execution.id == lease.execution_id,
        Execution.worker_id == lease.worker_id,
        Execution.attempt == lease.attempt,
        Execution.status.in_(ACTIVE),
    )


def announce(session: Session, execution_id: str) -> None:
    """Tell other processes (on commit) that ``execution_id`` reached a terminal status."""
    if session.get_bind().dialect.name == "postgresql":
        session.execute(
            text("SELECT pg_notify(:channel, :id)"), {"channel": EVENTS_CHANNEL, "id": execution_id}
        )


def claim(session: Session, execution_id: str, worker_id: str) -> Lease | None:
    """Start ``execution_id`` for ``worker_id`` if it is still queued; ``None`` otherwise."""
    now = utc_now()
    claimed = _count(
        session,
        update(Execution)
        .where(Execution.id == execution_id, Execution.status.in_(QUEUED))
        .values(
            status="running",
            worker_id=worker_id,
            heartbeat_at=now,
            started_at=now,
            attempt=Execution.attempt + 1,
        ),
    )
    if not claimed:
        return None
    attempt = session.scalar(select(Execution.attempt).where(Execution.id == execution_id))
    return Lease(execution_id, worker_id, int(attempt or 1))


def claim_next(session: Session, worker_id: str) -> Lease | None:
    """Claim the oldest queued execution, if any (skipping rows other workers are claiming)."""
    execution_id = session.scalar(
        select(Execution.id)
        .where(Execution.status.in_(QUEUED))
        .order_by(Execution.created_at, Execution.id)
        .limit(1)
        .with_for_update(skip_locked=True)
    )
    return None if execution_id is None else claim(session, execution_id, worker_id)


def renew(session: Session, lease: Lease) -> bool:
    """Refresh the lease's heartbeat; False when the lease is lost."""
    return _count(session, _held(lease).values(heartbeat_at=utc_now())) == 1


def cancel_is_requested(session: Session, execution_id: str) -> bool:
    """Whether someone asked for the execution to stop (or it no longer exists)."""
    row = session.execute(
        select(Execution.cancel_requested_at).where(Execution.id == execution_id)
    ).first()
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
    rows = session.scalars(
        select(Execution)
        .where(Execution.status.in_(ACTIVE), Execution.heartbeat_at < cutoff)
        .order_by(Execution.heartbeat_at)
        .limit(100)
        .with_for_update(skip_locked=True)
    ).all()
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
        announce(session, execution.id)
        reaped.ended.append(execution.id)
    return reaped
