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

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, cast

from sqlalchemy import (
    ColumnElement,
    String,
    Table,
    Update,
    bindparam,
    exists,
    func,
    insert,
    literal_column,
    select,
    text,
    update,
)
from sqlalchemy.orm import Session

from generated.agents.models import CancelOutcome
from handlers.agents.domain.execution_records import QUEUE_CHANNEL, notify_queued
from handlers.agents.domain.run_policy import retry_delay
from handlers.agents.domain.snapshots import (
    SNAPSHOT_COLUMNS,
    RunSnapshot,
    read_run_snapshot,
    run_snapshot,
)
from handlers.agents.domain.webhooks import record_events
from handlers.agents.storage.precompiled import Precompiled
from handlers.agents.storage.schema import (
    Execution,
    ExecutionAttempt,
    ExecutionFile,
    LeasedRun,
    UtcDateTime,
    WebhookSubscription,
    WorkflowExecution,
    utc_now,
)

__all__ = [
    "ACTIVE",
    "EVENTS_CHANNEL",
    "QUEUED",
    "QUEUE_CHANNEL",
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
    "notify_queued",
    "record_attempt",
    "retry_later",
    "mark_finalizing",
    "record_files",
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
    """A worker's hold on one running execution; ``snapshot``, what the run starts from,
    read in the claiming transaction (agent executions claimed from the queue)."""

    execution_id: str
    worker_id: str
    attempt: int
    snapshot: RunSnapshot | None = field(default=None, compare=False, repr=False)


@dataclass
class Reaped:
    """What :func:`reap_stale` did: executions queued again, and executions it ended."""

    retried: list[str] = field(default_factory=list)
    ended: list[str] = field(default_factory=list)


ExecutionTable = type[Execution] | type[WorkflowExecution]

# The statements of a worker's every execution (claim, lease writes, end) are built once, on
# the tables themselves (Core): building an ORM statement and its cache key, and the ORM's
# bulk-update bookkeeping, cost a worker several milliseconds of CPU per execution.
_AGENT_TABLE = cast(Table, Execution.__table__)
_WORKFLOW_TABLE = cast(Table, WorkflowExecution.__table__)
_ATTEMPTS_TABLE = cast(Table, ExecutionAttempt.__table__)
_FILES_TABLE = cast(Table, ExecutionFile.__table__)


def execution_table(execution_id: str) -> ExecutionTable:
    """The table of ``execution_id``: workflow executions' ids start with ``wfx_``."""
    if execution_id.startswith(WORKFLOW_EXECUTION_PREFIX):
        return WorkflowExecution
    return Execution


def _core_table(execution_id: str) -> Table:
    return _WORKFLOW_TABLE if execution_id.startswith(WORKFLOW_EXECUTION_PREFIX) else _AGENT_TABLE


def _one_of(column: ColumnElement[Any], values: Iterable[str]) -> ColumnElement[bool]:
    """``column IN ('a', 'b')`` with the constants written into the SQL (no expanding bind
    parameter to render per execution); ``values`` are this module's status names."""
    return column.in_([literal_column(f"'{value}'") for value in values])


_HELD_UPDATES: dict[tuple[str, tuple[str, ...]], Precompiled] = {}


def _held_update(session: Session, lease: Lease, values: dict[str, Any]) -> int:
    """``UPDATE … SET values`` of the lease's row while the lease is held: rows changed (0 or
    1). One statement per table and set of columns, built on first use."""
    table = _core_table(lease.execution_id)
    names = tuple(sorted(values))
    statement = _HELD_UPDATES.get((table.name, names))
    if statement is None:
        c = table.c
        statement = Precompiled(
            update(table)
            .where(
                c.id == bindparam("lease_id", type_=c.id.type),
                c.worker_id == bindparam("lease_worker", type_=c.worker_id.type),
                c.attempt == bindparam("lease_attempt", type_=c.attempt.type),
                _one_of(c.status, ACTIVE),
            )
            .values({name: bindparam(f"set_{name}", type_=c[name].type) for name in names})
        )
        _HELD_UPDATES[(table.name, names)] = statement
    parameters = {f"set_{name}": value for name, value in values.items()}
    parameters.update(
        lease_id=lease.execution_id, lease_worker=lease.worker_id, lease_attempt=lease.attempt
    )
    return statement.count(session, parameters)


_SUBSCRIBED = Precompiled(select(exists().select_from(cast(Table, WebhookSubscription.__table__))))
_SUBSCRIBED_AND_NOTIFY = Precompiled(
    select(
        exists().select_from(cast(Table, WebhookSubscription.__table__)),
        func.pg_notify(bindparam("channel", type_=String()), bindparam("payload", type_=String())),
    )
)


def announce(session: Session, execution_id: str) -> None:
    """Tell other processes (on commit) that ``execution_id`` reached a terminal status, and
    record its webhook deliveries in the same transaction. One statement when nothing
    subscribes to webhooks (whether anything does, and the NOTIFY, together)."""
    if session.get_bind().dialect.name == "postgresql":
        parameters = {"channel": EVENTS_CHANNEL, "payload": execution_id}
        [(subscribed, _)] = _SUBSCRIBED_AND_NOTIFY.rows(session, parameters)
    else:
        [(subscribed,)] = _SUBSCRIBED.rows(session, {})
    if subscribed:
        record_events(session, execution_id)


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


def _claim_statement(table: Table, *, skip_locked: bool, snapshot: bool) -> Update:
    c = table.c
    target: Any = bindparam("claim_id", type_=c.id.type)
    if skip_locked:
        target = (
            select(c.id)
            .where(c.id == target, _one_of(c.status, QUEUED))
            .with_for_update(skip_locked=True)
            .scalar_subquery()
        )
    now = bindparam("claim_now", type_=c.started_at.type)
    returning: list[ColumnElement[Any]] = [c.attempt]
    if snapshot:
        returning += SNAPSHOT_COLUMNS
    return (
        update(table)
        .where(c.id == target, _one_of(c.status, QUEUED))
        .values(
            status="running",
            worker_id=bindparam("claim_worker", type_=c.worker_id.type),
            heartbeat_at=now,
            started_at=now,
            attempt=c.attempt + 1,
        )
        .returning(*returning)
    )


_CLAIMS = {
    (table.name, skip_locked, snapshot): Precompiled(
        _claim_statement(table, skip_locked=skip_locked, snapshot=snapshot)
    )
    for table in (_AGENT_TABLE, _WORKFLOW_TABLE)
    for skip_locked in (False, True)
    for snapshot in ((False, True) if table is _AGENT_TABLE else (False,))
}
"""The claims, built once. On PostgreSQL an agent execution's claim returns its snapshot too
(:data:`~handlers.agents.domain.snapshots.SNAPSHOT_COLUMNS`: correlated subqueries in
``RETURNING``, which SQLite writes with unqualified column names); on SQLite it is read after."""


def claim(
    session: Session, execution_id: str, worker_id: str, *, skip_locked: bool = False
) -> Lease | None:
    """Start ``execution_id`` for ``worker_id`` if it is still queued; ``None`` otherwise. With
    ``skip_locked``, also ``None`` (at once, without waiting) when another worker holds its row
    (PostgreSQL): one statement locks, checks and claims it. An agent execution's lease
    carries its snapshot, read in the same transaction."""
    table = _core_table(execution_id)
    connection = session.connection()
    agent = table is _AGENT_TABLE
    returned = agent and connection.dialect.name == "postgresql"
    rows = _CLAIMS[(table.name, skip_locked, returned)].rows(
        session, {"claim_id": execution_id, "claim_worker": worker_id, "claim_now": utc_now()}
    )
    if not rows:
        return None
    row = rows[0]
    snapshot = None
    if agent:
        try:
            if returned:
                snapshot = run_snapshot(session, execution_id, row[1:])
            else:
                snapshot = read_run_snapshot(session, execution_id)
        except LookupError:  # the job reads it again and fails the run, saying why
            snapshot = None
    return Lease(execution_id, worker_id, int(row[0]), snapshot)


CANDIDATES = 16
"""Queued rows a claim looks at (of both tables together) before taking one."""


CANDIDATES_SQL = text(
    f"""
SELECT rank, id, group_key, group_limit FROM (
  SELECT * FROM (
    SELECT e.queue_rank AS rank, e.id AS id, e.concurrency_key AS group_key,
           e.concurrency_limit AS group_limit
    FROM executions e
    WHERE e.status IN ('created', 'pending')
      AND (e.not_before IS NULL OR e.not_before <= :now)
      AND (e.concurrency_key IS NULL OR e.concurrency_limit > (
        SELECT count(*) FROM executions r
        WHERE r.concurrency_key = e.concurrency_key
          AND r.status IN ('running', 'waiting', 'finalizing')))
    ORDER BY e.queue_rank, e.id LIMIT {CANDIDATES}) agent_rows
  UNION ALL
  SELECT * FROM (
    SELECT w.queue_rank AS rank, w.id AS id, CAST(NULL AS VARCHAR(300)) AS group_key,
           CAST(NULL AS INTEGER) AS group_limit
    FROM workflow_executions w
    WHERE w.status IN ('created', 'pending')
      AND (w.not_before IS NULL OR w.not_before <= :now)
    ORDER BY w.queue_rank, w.id LIMIT {CANDIDATES}) workflow_rows
) queued
ORDER BY rank, id LIMIT {CANDIDATES}
"""
).bindparams(bindparam("now", type_=UtcDateTime()))
"""The candidates of a claim. Plain SQL on purpose: it runs before every execution a worker
takes, and building the equivalent SQLAlchemy statement (and its cache key) each time cost
several milliseconds of the worker's CPU. Its statuses are ``QUEUED`` and ``ACTIVE``."""


_CANDIDATES = Precompiled(CANDIDATES_SQL)


def _candidates(session: Session, now: datetime) -> list[tuple[int, str, str | None, int | None]]:
    """The first queued rows of both tables by rank that may start now (not waiting for a
    retry's backoff, not over their concurrency limit as last committed), in one statement:
    (rank, id, concurrency group, limit). Not locked: :func:`claim_next` locks them one at a
    time, so a claim holds only the row it takes and workers claiming together take
    consecutive rows (the queue's order holds)."""
    rows = _CANDIDATES.rows(session, {"now": now})
    return [(int(rank), str(id_), key, limit) for rank, id_, key, limit in rows]


def _lock_queued(session: Session, execution_id: str) -> bool:
    """Lock the row of ``execution_id`` if it is still queued and no other worker holds it."""
    table = execution_table(execution_id)
    return (
        session.execute(
            select(table.id)
            .where(table.id == execution_id, table.status.in_(QUEUED))
            .with_for_update(skip_locked=True)
        ).first()
        is not None
    )


def _within_limit(session: Session, key: str, limit: int) -> bool:
    """Whether one more execution of concurrency group ``key`` may start, checked under a
    per-group lock (PostgreSQL: a transaction advisory lock, so two workers never both take the
    last slot; SQLite write transactions are exclusive already)."""
    if session.get_bind().dialect.name == "postgresql":
        session.execute(text("SELECT pg_advisory_xact_lock(hashtext(:key))"), {"key": key})
    running = session.scalar(
        select(func.count())
        .select_from(Execution)
        .where(Execution.concurrency_key == key, Execution.status.in_(ACTIVE))
    )
    return int(running or 0) < limit


def claim_next(session: Session, worker_id: str) -> Lease | None:
    """Claim the queued execution, agent or workflow, of the smallest rank (priority and
    submission order, see :func:`~handlers.agents.storage.schema.queue_rank`) that may start
    now, if any. A row without a concurrency group is locked and claimed in one statement;
    one with a group is locked, its group checked, then claimed. The claim's commit does not
    wait for the disk (:func:`commit_without_waiting_for_disk`)."""
    commit_without_waiting_for_disk(session)
    for _, execution_id, key, limit in _candidates(session, utc_now()):
        if key is None or limit is None:
            lease = claim(session, execution_id, worker_id, skip_locked=True)
        elif _lock_queued(session, execution_id) and _within_limit(session, key, limit):
            lease = claim(session, execution_id, worker_id)
        else:
            continue
        if lease is not None:
            return lease
    return None


def renew(session: Session, lease: Lease) -> bool:
    """Refresh the lease's heartbeat; False when the lease is lost. The commit does not wait
    for the disk (:func:`commit_without_waiting_for_disk`)."""
    commit_without_waiting_for_disk(session)
    return _held_update(session, lease, {"heartbeat_at": utc_now()}) == 1


_NO_WAIT_FOR_DISK = text("SET LOCAL synchronous_commit TO OFF")


def commit_without_waiting_for_disk(session: Session) -> None:
    """On PostgreSQL, this transaction's commit returns before its WAL is on disk (flushed
    within ``wal_writer_delay``, 200 ms by default, or by the next synchronous commit, which
    flushes everything before it). For the worker's claims and heartbeats only: losing one in a
    database crash is what losing its worker already is (the execution is pending again, or its
    heartbeat older, and it is run again: at least once), while the fsync it saves is a wait of
    milliseconds per execution on the worker's slot (4 ms on this project's test disk). The
    submission (a 201 is durable) and the end of an execution (its result) still wait."""
    if session.get_bind().dialect.name == "postgresql":
        session.execute(_NO_WAIT_FOR_DISK)


def cancel_is_requested(session: Session, execution_id: str) -> bool:
    """Whether someone asked for the execution to stop (or it no longer exists)."""
    table = execution_table(execution_id)
    row = session.execute(select(table.cancel_requested_at).where(table.id == execution_id)).first()
    return row is None or row[0] is not None


def mark_finalizing(session: Session, lease: Lease) -> None:
    """The program ended; its results are being stored. Raises LeaseLost."""
    if _held_update(session, lease, {"status": "finalizing", "heartbeat_at": utc_now()}) != 1:
        raise LeaseLost(lease.execution_id)


def release(session: Session, lease: Lease) -> bool:
    """Give the execution back to the queue (the worker is stopping); False if lost already.
    The attempt did not end: its number is handed back too (the next claim reuses it), so a
    stopping worker costs the execution none of its manifest's retries."""
    values = {"status": "pending", "worker_id": None, "heartbeat_at": None}
    released = _held_update(session, lease, {**values, "attempt": lease.attempt - 1})
    if released:
        notify_queued(session)
    return released == 1


def record_attempt(
    session: Session,
    lease: Lease,
    outcome: str,
    error: str | None,
    started_at: datetime | None,
    ended_at: datetime,
) -> None:
    """Keep the finished attempt ``lease.attempt`` of an agent execution (``include=attempts``;
    workflow executions keep none). Call it after the write that proves the lease is held
    (a lost worker's late record would collide with the reaper's)."""
    if execution_table(lease.execution_id) is not Execution:
        return
    _INSERT_ATTEMPT.rows(
        session,
        {
            "execution_id": lease.execution_id,
            "number": lease.attempt,
            "worker_id": lease.worker_id,
            "started_at": started_at,
            "ended_at": ended_at,
            "outcome": outcome,
            "error": error,
        },
    )


_INSERT_ATTEMPT = Precompiled(insert(_ATTEMPTS_TABLE))
_INSERT_FILE = Precompiled(insert(_FILES_TABLE))


def record_files(session: Session, rows: Sequence[dict[str, Any]]) -> None:
    """Insert ``execution_files`` rows (each a dict of its columns), in one statement."""
    _INSERT_FILE.many(session, rows)


def retry_later(session: Session, lease: Lease, not_before: datetime, error: str | None) -> None:
    """Put the execution back in the queue until ``not_before`` (a retry's backoff), its last
    error kept. Raises LeaseLost."""
    values = {"status": "pending", "worker_id": None, "heartbeat_at": None}
    if _held_update(session, lease, {"not_before": not_before, "error": error, **values}) != 1:
        raise LeaseLost(lease.execution_id)


def finish(session: Session, lease: Lease, values: dict[str, Any]) -> None:
    """Write the execution's end (``values``: status, output, error, …). Raises LeaseLost."""
    if _held_update(session, lease, {"heartbeat_at": None, **values}) != 1:
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
        allowed, delay = max_attempts, None
        if isinstance(execution, Execution):  # the manifest may retry more, after a backoff
            lease = Lease(execution.id, execution.worker_id or "", execution.attempt)
            record_attempt(session, lease, "worker_lost", lost, execution.started_at, now)
            delay = retry_delay(execution.config_snapshot or {}, "worker_lost", execution.attempt)
            if delay is not None:
                allowed = max(allowed, execution.attempt + 1)
        if execution.cancel_requested_at is None and execution.attempt < allowed:
            execution.status = "pending"
            execution.worker_id = None
            execution.heartbeat_at = None
            if delay is not None:
                execution.not_before = now + timedelta(seconds=delay)
            reaped.retried.append(execution.id)
            continue
        cancelled = execution.cancel_requested_at is not None
        execution.status = "cancelled" if cancelled else "failed"
        execution.error = (
            f"cancelled ({lost})"
            if cancelled
            else f"{lost} (attempt {execution.attempt} of {allowed})"
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
