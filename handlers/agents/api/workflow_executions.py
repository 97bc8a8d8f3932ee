"""Workflow executions as the API shows them: the list per workflow, get, cancel.

* **List** (SQL, newest first, served by the ``(workflow_id, created_at)``,
  ``(workflow_id, status)`` and ``(workflow_id, example_id)`` indexes): ``status`` (any of),
  ``fromDate``/``toDate`` (inclusive bounds on ``createdAt``: ISO-8601 or ``now()-7d``),
  ``exampleId``, ``limit``, ``offset``. Block runs made by workflow steps (child executions)
  are listed under their block.
* **Get**: the summary form, or with ``includeSteps=true`` every step's record in definition
  order.
* **Cancel** (idempotent), by status: ``created``/``pending`` -> ``cancelled`` at once;
  ``running``/``waiting``/``finalizing`` -> ``cancellation-requested`` (``cancelRequestedAt``
  is recorded; the worker stops the run at the next step boundary and stops running steps, at
  once when it runs in this process, else at its next poll); terminal -> ``already-terminal``.
"""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import ColumnElement, func, select
from sqlalchemy.orm import Session

from generated.agents import models
from handlers.agents.api.dates import parse_date_bound
from handlers.agents.domain.keys import Principal
from handlers.agents.domain.workflow_store import (
    execution_summary,
    find_workflow,
    find_workflow_execution,
    read_step_records,
    status_response,
)
from handlers.agents.execution.engine import ExecutionEngine
from handlers.agents.execution.leases import cancel
from handlers.agents.storage.database import Database
from handlers.agents.storage.schema import WorkflowExecution

__all__ = ["WorkflowExecutionQueries"]


class WorkflowExecutionQueries:
    """List, get and cancel workflow executions for a key."""

    def __init__(self, database: Database, engine: ExecutionEngine) -> None:
        self.database = database
        self.engine = engine

    async def list(
        self,
        principal: Principal,
        ref: str,
        statuses: Sequence[str] | None,
        from_date: str | None,
        to_date: str | None,
        example_id: str | None,
        limit: int,
        offset: int,
    ) -> models.ListWorkflowExecutionsResponse:
        """One page of a workflow's executions, newest first."""
        conditions: list[ColumnElement[bool]] = []
        if statuses:
            conditions.append(WorkflowExecution.status.in_(sorted(set(statuses))))
        if from_date is not None:
            since = parse_date_bound(from_date, "fromDate")
            conditions.append(WorkflowExecution.created_at >= since)
        if to_date is not None:
            conditions.append(WorkflowExecution.created_at <= parse_date_bound(to_date, "toDate"))
        if example_id is not None:
            conditions.append(WorkflowExecution.example_id == example_id)

        def work(session: Session) -> models.ListWorkflowExecutionsResponse:
            workflow = find_workflow(session, principal, ref)
            where = [WorkflowExecution.workflow_id == workflow.id, *conditions]
            total = session.scalar(
                select(func.count()).select_from(WorkflowExecution).where(*where)
            )
            rows = session.scalars(
                select(WorkflowExecution)
                .where(*where)
                .order_by(WorkflowExecution.created_at.desc(), WorkflowExecution.id.desc())
                .limit(limit)
                .offset(offset)
            ).all()
            return models.ListWorkflowExecutionsResponse(
                data=[execution_summary(row, workflow) for row in rows],
                total=int(total or 0),
                limit=limit,
                offset=offset,
            )

        return await self.database.read(work)

    async def get(
        self, principal: Principal, execution_id: str, include_steps: bool
    ) -> models.GetWorkflowExecutionResponse:
        """The execution in summary form, or with its steps."""

        def work(session: Session) -> models.GetWorkflowExecutionResponse:
            execution, workflow = find_workflow_execution(session, principal, execution_id)
            if include_steps:
                steps = read_step_records(session, execution.id)
                return models.GetWorkflowExecutionResponse(status_response(execution, steps))
            return models.GetWorkflowExecutionResponse(execution_summary(execution, workflow))

        return await self.database.read(work)

    async def cancel(
        self, principal: Principal, execution_id: str
    ) -> models.CancelWorkflowExecutionResponse:
        """Cancel per the table in this module's docstring."""

        def work(session: Session) -> models.CancelWorkflowExecutionResponse:
            execution, _ = find_workflow_execution(session, principal, execution_id, lock=True)
            was = execution.status
            outcome = cancel(session, execution)
            return models.CancelWorkflowExecutionResponse(
                execution_id=execution.id,
                status=outcome,
                was_status=models.ExecutionStatus(was),
            )

        answer = await self.database.write(work)
        self.engine.cancelled(execution_id, answer.status)
        return answer
