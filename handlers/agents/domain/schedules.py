"""Schedules through the API: creating, listing, reading, changing and deleting them.

A schedule runs one agent or one workflow with a fixed input at every tick of a cron
expression read in a time zone (:mod:`handlers.agents.domain.schedule_ticks`); the scheduler
loop fires the ticks (:mod:`handlers.agents.domain.schedule_firing`,
:mod:`handlers.agents.execution.scheduler`). Rules (README.md, "Schedules"):

* A key sees the schedules of the agents and workflows it may see, whichever key created
  them; any other schedule is a 404, like one that does not exist. A schedule belongs to the
  key that created it and runs as that key (``keyId``, its executions' ``createdByKey``),
  whoever changes it later.
* Creating one needs the key to be able to run the target now: an agent whose API trigger is
  disabled is a 403, an archived agent or workflow a 409; the input must be one the target
  accepts (the agent's ``inputSchema``, the workflow version's declared inputs), else a 400
  naming ``body.input``. Enabling a disabled schedule checks the target the same way, and a
  new input is checked against it.
* ``next_run_at`` is the first tick after the write that set it: creating, enabling, or a new
  cron or time zone computes it from now; disabling clears it (ticks passing while disabled
  are never run).
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import anyio
from sqlalchemy import ColumnElement, and_, delete, false, func, or_, select, true
from sqlalchemy.orm import Session

from generated.agents import models
from handlers.agents.domain.agents import find_agent, visible
from handlers.agents.domain.execution_records import input_problems
from handlers.agents.domain.keys import Principal
from handlers.agents.domain.manifest import api_trigger_enabled
from handlers.agents.domain.schedule_ticks import (
    DEFAULT_TIMEZONE,
    Cron,
    ScheduleSpecError,
    parse_cron,
    time_zone,
)
from handlers.agents.domain.workflow_execution_records import workflow_run_refusal
from handlers.agents.domain.workflow_store import (
    LATEST,
    find_workflow,
    resolve_version,
    visible_workflows,
)
from handlers.agents.storage.database import Database
from handlers.agents.storage.schema import Agent, Schedule, Workflow, utc_now
from webrest import BadRequest, ErrorDetail, HttpError

__all__ = ["ScheduleStore", "new_schedule_id", "schedule_entry", "schedule_not_found"]

Field = tuple[str | int, ...]


def new_schedule_id() -> str:
    """A fresh schedule id (``sch_`` and 24 hex digits)."""
    return "sch_" + secrets.token_hex(12)


def schedule_not_found(schedule_id: str) -> HttpError:
    """The 404 of a schedule that does not exist or that the key may not see."""
    return HttpError(404, f"Schedule '{schedule_id}' not found")


def _invalid(field: Field, message: str, value: object = None) -> BadRequest:
    return BadRequest(message, [ErrorDetail(field, message, "value_error", value)])


def _visible(principal: Principal) -> ColumnElement[bool]:
    """SQL condition: the schedule's agent or workflow is in the key's scope."""
    if principal.scope_all:
        return true()
    conditions = []
    if principal.agents:
        conditions.append(Schedule.agent_id.in_(select(Agent.id).where(visible(principal))))
    if principal.workflows:
        conditions.append(
            Schedule.workflow_id.in_(select(Workflow.id).where(visible_workflows(principal)))
        )
    return or_(*conditions) if conditions else false()


def _find(
    session: Session, principal: Principal, schedule_id: str, *, lock: bool = False
) -> Schedule:
    query = select(Schedule).where(Schedule.id == schedule_id, _visible(principal))
    if lock:
        query = query.with_for_update()
    row = session.scalars(query).first()
    if row is None:
        raise schedule_not_found(schedule_id)
    return row


def schedule_entry(row: Schedule) -> models.Schedule:
    """A schedule row as the API shows it."""
    return models.Schedule(
        id=row.id,
        agent_id=row.agent_id,
        workflow_id=row.workflow_id,
        version=row.version,
        cron=row.cron,
        timezone=row.timezone,
        input=row.input,
        description=row.description,
        enabled=row.enabled,
        key_id=row.created_by_key,
        next_run_at=row.next_run_at,
        last_run_at=row.last_run_at,
        last_execution_id=row.last_execution_id,
        last_error=row.last_error,
        created_at=row.created_at,
        updated_at=row.updated_at,
    )


@dataclass(frozen=True)
class _Target:
    """What a schedule runs, as the caller may see it."""

    agent: Agent | None
    workflow: Workflow | None
    yaml: str | None
    """The workflow version's definition (to check an input against)."""

    @property
    def field(self) -> Field:
        return ("body", "agentId") if self.agent is not None else ("body", "workflowId")


def _target(
    session: Session,
    principal: Principal,
    agent_ref: str | None,
    workflow_ref: str | None,
    version: str | None,
    *,
    definition: bool = True,
) -> _Target:
    """The agent or workflow (404 when the key may not see it); with ``definition``, a
    workflow's version too (404 when it has no such version)."""
    if agent_ref is not None:
        return _Target(find_agent(session, principal, agent_ref), None, None)
    assert workflow_ref is not None
    workflow = find_workflow(session, principal, workflow_ref)
    yaml = resolve_version(session, workflow, version).yaml_content if definition else None
    return _Target(None, workflow, yaml)


def _check_runnable(target: _Target) -> None:
    """403 when the agent's API trigger is disabled, 409 when the target is archived."""
    if target.agent is not None:
        agent = target.agent
        if not api_trigger_enabled(agent.config):
            raise HttpError(403, f"The API trigger of agent '{agent.slug}' is disabled")
        if agent.archived_at is not None:
            message = f"Agent '{agent.slug}' is archived: restore it to schedule it"
            raise HttpError(409, message, [ErrorDetail(target.field, message, "conflict")])
    elif target.workflow is not None and target.workflow.archived_at is not None:
        message = f"Workflow '{target.workflow.slug}' is archived: restore it to schedule it"
        raise HttpError(409, message, [ErrorDetail(target.field, message, "conflict")])


def _check_agent_input(target: _Target, data: dict[str, Any]) -> None:
    schema = (target.agent.config or {}).get("inputSchema") if target.agent else None
    if not isinstance(schema, dict):
        return
    problems = input_problems(data, schema)
    if problems:
        details = [
            ErrorDetail(("body", "input", *path), message, "value_error")
            for path, message in problems
        ]
        summary = f"The input does not match the agent's inputSchema ({len(problems)} problem"
        raise BadRequest(summary + ("s)" if len(problems) > 1 else ")"), details)


async def _check_workflow_input(target: _Target, data: dict[str, Any]) -> None:
    if target.yaml is None:
        return
    refusal = await anyio.to_thread.run_sync(workflow_run_refusal, target.yaml, data, None)
    if refusal is not None:
        raise _invalid(("body", "input"), f"The workflow would reject this input: {refusal}")


def _zone_and_cron(cron: str, zone_name: str, now: datetime) -> Cron:
    try:
        zone = time_zone(zone_name)
    except ScheduleSpecError as error:
        raise _invalid(("body", "timezone"), str(error), zone_name) from None
    try:
        return parse_cron(cron, zone, now)
    except ScheduleSpecError as error:
        raise _invalid(("body", "cron"), str(error), cron) from None


def _text(value: object) -> str | None:
    return value if isinstance(value, str) else None


class ScheduleStore:
    """The schedule operations of the API, each one transaction (a workflow input is checked
    against the version's definition between a read and the write: parsing is CPU-bound)."""

    def __init__(self, database: Database) -> None:
        self.database = database

    async def create(
        self, principal: Principal, body: models.CreateScheduleBody
    ) -> models.Schedule:
        """A new schedule owned by the caller's key."""
        agent_ref, workflow_ref = _text(body.agent_id), _text(body.workflow_id)
        if (agent_ref is None) == (workflow_ref is None):
            message = "Give exactly one of agentId and workflowId"
            field: Field = ("body", "workflowId") if agent_ref else ("body", "agentId")
            raise _invalid(field, message)
        version = _text(body.version)
        if agent_ref is not None and version is not None:
            raise _invalid(("body", "version"), "version is for workflow schedules only", version)
        if workflow_ref is not None and version is None:
            version = LATEST
        zone_name = _text(body.timezone) or DEFAULT_TIMEZONE
        cron = _zone_and_cron(body.cron, zone_name, utc_now())
        data = dict(body.input) if isinstance(body.input, dict) else {}
        description = _text(body.description)
        enabled = body.enabled if isinstance(body.enabled, bool) else True

        def check(session: Session) -> _Target:
            target = _target(session, principal, agent_ref, workflow_ref, version)
            _check_runnable(target)
            _check_agent_input(target, data)
            return target

        await _check_workflow_input(await self.database.read(check), data)

        def work(session: Session) -> models.Schedule:
            target = check(session)  # again: it may have changed since
            now = utc_now()
            row = Schedule(
                id=new_schedule_id(),
                agent_id=target.agent.id if target.agent else None,
                workflow_id=target.workflow.id if target.workflow else None,
                version=version,
                cron=cron.expression,
                timezone=zone_name,
                input=data,
                description=description,
                enabled=enabled,
                created_by_key=principal.key_id,
                next_run_at=cron.next_after(now) if enabled else None,
                last_run_at=None,
                last_execution_id=None,
                last_error=None,
                created_at=now,
                updated_at=now,
            )
            session.add(row)
            session.flush()
            return schedule_entry(row)

        return await self.database.write(work)

    async def list(
        self,
        principal: Principal,
        agent_ref: str | None,
        workflow_ref: str | None,
        limit: int,
        offset: int,
    ) -> models.ListSchedulesResponse:
        """One page of the schedules the key sees, newest first, optionally of one agent or
        workflow (404 when the key may not see it)."""

        def work(session: Session) -> models.ListSchedulesResponse:
            condition = _visible(principal)
            if agent_ref is not None:
                agent = find_agent(session, principal, agent_ref)
                condition = and_(condition, Schedule.agent_id == agent.id)
            if workflow_ref is not None:
                workflow = find_workflow(session, principal, workflow_ref)
                condition = and_(condition, Schedule.workflow_id == workflow.id)
            total = session.scalar(select(func.count()).select_from(Schedule).where(condition))
            rows = session.scalars(
                select(Schedule)
                .where(condition)
                .order_by(Schedule.created_at.desc(), Schedule.id.desc())
                .limit(limit)
                .offset(offset)
            ).all()
            return models.ListSchedulesResponse(
                data=[schedule_entry(row) for row in rows],
                total=total or 0,
                limit=limit,
                offset=offset,
            )

        return await self.database.read(work)

    async def get(self, principal: Principal, schedule_id: str) -> models.Schedule:
        """The schedule ``schedule_id``."""
        return await self.database.read(
            lambda session: schedule_entry(_find(session, principal, schedule_id))
        )

    async def update(
        self, principal: Principal, schedule_id: str, body: models.UpdateScheduleBody
    ) -> models.Schedule:
        """Change the given fields; the schedule keeps its owner."""
        given = body.model_fields_set
        data: dict[str, Any] | None = None
        if "input" in given:
            data = dict(body.input) if isinstance(body.input, dict) else {}

        def check(session: Session, *, lock: bool = False) -> tuple[Schedule, _Target]:
            row = _find(session, principal, schedule_id, lock=lock)
            target = _target(session, principal, row.agent_id, row.workflow_id, row.version,
                             definition=data is not None)  # fmt: skip
            if data is not None:
                _check_agent_input(target, data)
            return row, target

        if data is not None:
            _, target = await self.database.read(check)
            await _check_workflow_input(target, data)

        def work(session: Session) -> models.Schedule:
            row, target = check(session, lock=True)
            now = utc_now()
            cron_text = body.cron if isinstance(body.cron, str) and "cron" in given else row.cron
            zone_name = (
                body.timezone
                if isinstance(body.timezone, str) and "timezone" in given
                else row.timezone
            )
            cron = _zone_and_cron(cron_text, zone_name, now)
            enabled = body.enabled if isinstance(body.enabled, bool) else row.enabled
            if enabled and not row.enabled:
                _check_runnable(target)
            retimed = cron.expression != row.cron or zone_name != row.timezone
            if not enabled:
                row.next_run_at = None
            elif retimed or not row.enabled:
                row.next_run_at = cron.next_after(now)
            row.cron, row.timezone, row.enabled = cron.expression, zone_name, enabled
            if data is not None:
                row.input = data
            if "description" in given:
                row.description = _text(body.description)
            row.updated_at = now
            session.flush()
            return schedule_entry(row)

        return await self.database.write(work)

    async def delete(self, principal: Principal, schedule_id: str) -> None:
        """Delete the schedule (its executions stay)."""

        def work(session: Session) -> None:
            row = _find(session, principal, schedule_id, lock=True)
            session.execute(delete(Schedule).where(Schedule.id == row.id))

        await self.database.write(work)
