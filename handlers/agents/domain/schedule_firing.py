"""Firing schedules: the due ones, and one tick of one schedule in one transaction.

**Exactly one run per tick.** :func:`fire_tick` runs in one write transaction: it moves the
schedule's ``next_run_at`` from the due tick to the following one with a compare-and-set
(``UPDATE schedules SET next_run_at = :following WHERE id = :id AND next_run_at = :due AND
cron = … AND timezone = …``), and only when that changed the row (this transaction owns the
tick) records the execution of the tick, a ``schedule_runs`` row (primary key: schedule and
tick) and the schedule's ``last_*`` columns. Any number of processes may look at the same due
tick: PostgreSQL makes a second ``UPDATE`` of the row wait for the first transaction and then
re-evaluates its condition on the committed row, which no longer matches; SQLite runs write
transactions one at a time (``BEGIN IMMEDIATE``). A transaction that fails after the
``UPDATE`` rolls back with it: the tick stays due and is tried again, never lost, never
doubled. The caller dispatches the execution after the commit.

**Missed ticks.** A tick found due long after its time (every process was down) starts one
run, for the *latest* tick at or before now; the ticks between are not run. The next tick is
the first one after now.

**History kept.** ``schedule_runs`` rows older than :data:`RUNS_RETENTION` are deleted
(:func:`prune_schedule_runs`, by the scheduler loop now and then): ``next_run_at`` only moves
forward, so a tick that old can never be due again, and its row guards nothing.

**What a run obeys.** The run is made as the key that owns the schedule, with what an API run
of that key would be refused for: a revoked key, an agent or workflow it may no longer see,
an archived one, an agent whose API trigger is disabled or whose ``inputSchema`` refuses the
input, a workflow version that no longer resolves. Such a tick is recorded and skipped: no
execution, the reason in ``last_error`` (and in its ``schedule_runs`` row). A workflow input
its version refuses gives a ``rejected`` execution, as an API run does.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import delete, func, select, update
from sqlalchemy.orm import Session

from handlers.agents.domain.agents import visible
from handlers.agents.domain.execution_records import create_execution_row, input_problems
from handlers.agents.domain.keys import Principal, key_principal
from handlers.agents.domain.manifest import api_trigger_enabled
from handlers.agents.domain.run_policy import concurrency_group
from handlers.agents.domain.schedule_ticks import Cron, ScheduleSpecError, parse_cron, time_zone
from handlers.agents.domain.workflow_execution_records import (
    MAX_ERROR_CHARS,
    create_workflow_execution_row,
    workflow_run_refusal,
)
from handlers.agents.domain.workflow_store import resolve_version, visible_workflows
from handlers.agents.storage.blobs import BlobStore
from handlers.agents.storage.schema import Agent, Schedule, ScheduleRun, Workflow, utc_now
from webrest import BadRequest, HttpError

__all__ = [
    "RUNS_RETENTION",
    "FiredTick",
    "due_schedules",
    "fire_tick",
    "next_due_at",
    "prune_schedule_runs",
    "skip_tick",
    "tick_text",
]

RUNS_RETENTION = timedelta(days=30)
"""How long the record of a handled tick (``schedule_runs``) is kept."""

SCHEDULED_TRIGGER = "scheduled"
"""The ``triggerType`` of a workflow execution a schedule started."""


@dataclass(frozen=True)
class FiredTick:
    """A tick this transaction owned."""

    schedule_id: str
    scheduled_for: datetime
    execution_id: str | None
    """The execution it started; ``None`` when the tick was skipped (``error`` says why)."""
    queued: bool
    """Whether the execution waits for a worker (dispatch it after the commit)."""
    error: str | None


@dataclass(frozen=True)
class _Claim:
    schedule: Any  # the schedule's columns as read before the compare-and-set
    tick: datetime


def tick_text(moment: datetime) -> str:
    """A tick as the executions' metadata records it: ``2026-06-01T05:00:00Z``."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def due_schedules(session: Session, now: datetime, limit: int) -> list[tuple[str, datetime]]:
    """``(schedule id, due tick)`` of the schedules whose next tick is at or before ``now``,
    the most overdue first."""
    rows = session.execute(
        select(Schedule.id, Schedule.next_run_at)
        .where(Schedule.next_run_at <= now)
        .order_by(Schedule.next_run_at, Schedule.id)
        .limit(limit)
    ).all()
    return [(schedule_id, due) for schedule_id, due in rows if due is not None]


def next_due_at(session: Session) -> datetime | None:
    """The earliest next tick of any enabled schedule."""
    return session.scalar(select(func.min(Schedule.next_run_at)))


def _cron(row: Any) -> Cron | None:
    try:
        return parse_cron(row.cron, time_zone(row.timezone), row.next_run_at)
    except ScheduleSpecError:  # stored before a rule changed: never fires again
        return None


def _claim(session: Session, schedule_id: str, due: datetime, now: datetime) -> _Claim | None:
    """Move ``next_run_at`` of the schedule from ``due`` past ``now``; the claimed tick (the
    latest at or before ``now``), or ``None`` when another transaction had moved it."""
    row = session.execute(
        select(
            Schedule.id, Schedule.agent_id, Schedule.workflow_id, Schedule.version,
            Schedule.cron, Schedule.timezone, Schedule.input, Schedule.created_by_key,
            Schedule.next_run_at,
        ).where(Schedule.id == schedule_id)
    ).first()  # fmt: skip
    if row is None or row.next_run_at != due:
        return None
    cron = _cron(row)
    latest = cron.latest_at(now) if cron is not None else None
    tick = latest if latest is not None and latest > due else due
    following = cron.next_after(max(now, tick)) if cron is not None else None
    claimed = session.execute(
        update(Schedule)
        .where(
            Schedule.id == schedule_id,
            Schedule.next_run_at == due,
            Schedule.cron == row.cron,
            Schedule.timezone == row.timezone,
        )
        .values(next_run_at=following)
        .execution_options(synchronize_session=False)
    )
    if claimed.rowcount != 1:  # type: ignore[attr-defined]
        return None
    return _Claim(row, tick)


def _record(session: Session, claim: _Claim, execution_id: str | None, error: str | None) -> None:
    """The tick's ``schedule_runs`` row and the schedule's ``last_*`` columns."""
    now = utc_now()
    session.add(
        ScheduleRun(
            schedule_id=claim.schedule.id,
            scheduled_for=claim.tick,
            execution_id=execution_id,
            error=error,
            created_at=now,
        )
    )
    values: dict[str, Any] = {"last_error": error}
    if execution_id is not None:
        values.update(last_run_at=claim.tick, last_execution_id=execution_id)
    session.execute(
        update(Schedule)
        .where(Schedule.id == claim.schedule.id)
        .values(**values)
        .execution_options(synchronize_session=False)
    )
    session.flush()


def _agent_run(
    session: Session, blobs: BlobStore, claim: _Claim, principal: Principal, status: str
) -> tuple[str | None, bool, str | None]:
    schedule = claim.schedule
    agent = session.scalars(
        select(Agent).where(Agent.id == schedule.agent_id, visible(principal))
    ).first()
    if agent is None:
        return None, False, f"the schedule's API key may not see agent '{schedule.agent_id}'"
    if agent.archived_at is not None:
        return None, False, f"agent '{agent.slug}' is archived"
    if not api_trigger_enabled(agent.config):
        return None, False, f"the API trigger of agent '{agent.slug}' is disabled"
    schema = (agent.config or {}).get("inputSchema")
    try:
        problems = input_problems(schedule.input, schema) if isinstance(schema, dict) else []
    except HttpError as error:  # an unusable schema
        return None, False, error.message
    if problems:
        reasons = "; ".join(message for _, message in problems)
        return None, False, f"the input does not match the agent's inputSchema: {reasons}"
    try:  # the manifest's concurrency group (a bounded expression over the fixed input)
        group = concurrency_group(agent.id, agent.config, dict(schedule.input), ("body",))
    except BadRequest as error:
        return None, False, error.message
    execution = create_execution_row(
        session, blobs, agent, dict(schedule.input), status, schedule.created_by_key
    )
    if group is not None:
        execution.concurrency_key, execution.concurrency_limit = group
    execution.run_metadata = {"scheduleId": schedule.id, "scheduledFor": tick_text(claim.tick)}
    return execution.id, True, None


def _workflow_run(
    session: Session, claim: _Claim, principal: Principal, status: str
) -> tuple[str | None, bool, str | None]:
    schedule = claim.schedule
    workflow = session.scalars(
        select(Workflow).where(Workflow.id == schedule.workflow_id, visible_workflows(principal))
    ).first()
    if workflow is None:
        return None, False, f"the schedule's API key may not see workflow '{schedule.workflow_id}'"
    if workflow.archived_at is not None:
        return None, False, f"workflow '{workflow.slug}' is archived"
    try:
        version = resolve_version(session, workflow, schedule.version)
    except HttpError as error:
        return None, False, error.message
    inputs = dict(schedule.input)
    refusal = workflow_run_refusal(version.yaml_content, inputs, None)
    execution = create_workflow_execution_row(
        session,
        workflow_id=workflow.id,
        version_id=version.id,
        inputs=inputs,
        status=status,
        refusal=refusal,
        trigger=SCHEDULED_TRIGGER,
        created_by_key=schedule.created_by_key,
    )
    session.flush()
    return execution.id, refusal is None, None


def fire_tick(
    session: Session,
    blobs: BlobStore,
    schedule_id: str,
    due: datetime,
    now: datetime,
    status: str,
) -> FiredTick | None:
    """Claim the due tick ``due`` of the schedule and start its run (an execution queued with
    ``status``), or record why it starts none; ``None`` when another transaction owned the
    tick. Runs in the caller's write transaction (see the module docstring)."""
    claim = _claim(session, schedule_id, due, now)
    if claim is None:
        return None
    principal = key_principal(session, claim.schedule.created_by_key)
    if principal is None:
        execution_id, queued = None, False
        error: str | None = f"the schedule's API key {claim.schedule.created_by_key} is revoked"
    elif claim.schedule.agent_id is not None:
        execution_id, queued, error = _agent_run(session, blobs, claim, principal, status)
    else:
        execution_id, queued, error = _workflow_run(session, claim, principal, status)
    if error is not None:
        error = f"tick {tick_text(claim.tick)} skipped: {error}"[:MAX_ERROR_CHARS]
    _record(session, claim, execution_id, error)
    return FiredTick(schedule_id, claim.tick, execution_id, queued, error)


def skip_tick(
    session: Session, schedule_id: str, due: datetime, now: datetime, reason: str
) -> FiredTick | None:
    """Claim the due tick and record it as skipped for ``reason`` (firing it failed in a way
    that trying again would repeat); ``None`` when another transaction owned it."""
    claim = _claim(session, schedule_id, due, now)
    if claim is None:
        return None
    error = f"tick {tick_text(claim.tick)} skipped: {reason}"[:MAX_ERROR_CHARS]
    _record(session, claim, None, error)
    return FiredTick(schedule_id, claim.tick, None, False, error)


def prune_schedule_runs(session: Session, now: datetime) -> int:
    """Delete the ``schedule_runs`` rows of ticks older than :data:`RUNS_RETENTION`; how many."""
    result = session.execute(
        delete(ScheduleRun)
        .where(ScheduleRun.scheduled_for < now - RUNS_RETENTION)
        .execution_options(synchronize_session=False)
    )
    return int(getattr(result, "rowcount", 0) or 0)
