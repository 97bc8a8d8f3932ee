"""Workflow rows: ids, lookups within a key's scope, and rows as the API shows them.

Every lookup takes the session of the caller's transaction. A workflow outside the key's scope
answers 404 exactly like one that does not exist (README.md, "API keys and scopes"); so does
an execution of such a workflow.
"""

from __future__ import annotations

import secrets
from collections.abc import Sequence
from typing import Any

from sqlalchemy import ColumnElement, case, false, or_, select, true
from sqlalchemy.orm import Session

from generated.agents import models
from handlers.agents.domain.keys import Principal
from handlers.agents.storage.schema import (
    Workflow,
    WorkflowExecution,
    WorkflowStepRecord,
    WorkflowVersion,
)
from handlers.agents.workflows.records import StepRecord
from webrest import HttpError

__all__ = [
    "LATEST",
    "execution_not_found",
    "execution_summary",
    "find_workflow",
    "find_workflow_execution",
    "new_version_id",
    "new_workflow_execution_id",
    "new_workflow_id",
    "read_step_records",
    "resolve_version",
    "status_response",
    "version_entry",
    "visible_workflows",
    "workflow_not_found",
    "workflow_summary",
]

LATEST = "latest"


def new_workflow_id() -> str:
    """A fresh workflow id (``wf_`` and 24 hex digits)."""
    return "wf_" + secrets.token_hex(12)


def new_version_id() -> str:
    """A fresh workflow version id (``wfh_`` and 24 hex digits)."""
    return "wfh_" + secrets.token_hex(12)


def new_workflow_execution_id() -> str:
    """A fresh workflow execution id (``wfx_`` and 24 hex digits; the lease code tells
    workflow executions from agent executions by this prefix)."""
    return "wfx_" + secrets.token_hex(12)


def workflow_not_found(ref: str) -> HttpError:
    """The 404 of a workflow that does not exist or that the key may not see."""
    return HttpError(404, f"Workflow '{ref}' not found")


def execution_not_found(execution_id: str) -> HttpError:
    """The 404 of a workflow execution that does not exist or that the key may not see."""
    return HttpError(404, f"Execution '{execution_id}' not found")


def visible_workflows(principal: Principal) -> ColumnElement[bool]:
    """SQL condition: the workflow is in the key's scope."""
    if principal.scope_all:
        return true()
    if not principal.workflows:
        return false()
    refs = sorted(principal.workflows)
    return or_(Workflow.id.in_(refs), Workflow.slug.in_(refs))


def find_workflow(
    session: Session, principal: Principal, ref: str, *, lock: bool = False
) -> Workflow:
    """The workflow with id or slug ``ref`` that the key may see; 404 otherwise."""
    query = select(Workflow).where(
        or_(Workflow.id == ref, Workflow.slug == ref), visible_workflows(principal)
    )
    if lock:
        query = query.with_for_update()
    workflow = session.scalars(query).first()
    if workflow is None:
        raise workflow_not_found(ref)
    return workflow


def find_workflow_execution(
    session: Session, principal: Principal, execution_id: str, *, lock: bool = False
) -> tuple[WorkflowExecution, Workflow]:
    """The execution ``execution_id`` of a workflow the key may see, and that workflow."""
    query = (
        select(WorkflowExecution, Workflow)
        .join(Workflow, Workflow.id == WorkflowExecution.workflow_id)
        .where(WorkflowExecution.id == execution_id, visible_workflows(principal))
    )
    if lock:
        query = query.with_for_update(of=WorkflowExecution)
    row = session.execute(query).first()
    if row is None:
        raise execution_not_found(execution_id)
    return row[0], row[1]


def resolve_version(session: Session, workflow: Workflow, ref: str | None) -> WorkflowVersion:
    """The version ``ref`` of ``workflow``: ``latest`` (or None), a version id or a release
    tag; 404 when there is none."""
    if ref in (None, LATEST):
        version = (
            session.get(WorkflowVersion, workflow.current_version_id)
            if workflow.current_version_id
            else None
        )
    else:  # an id before a tag: a tag spelled like another version's id never shadows it
        version = session.scalars(
            select(WorkflowVersion)
            .where(
                WorkflowVersion.workflow_id == workflow.id,
                or_(WorkflowVersion.id == ref, WorkflowVersion.tag == ref),
            )
            .order_by(case((WorkflowVersion.id == ref, 0), else_=1))
            .limit(1)
        ).first()
    if version is None:
        what = "has no released version" if ref in (None, LATEST) else f"has no version '{ref}'"
        raise HttpError(404, f"Workflow '{workflow.slug}' {what}")
    return version


def workflow_summary(workflow: Workflow, version: WorkflowVersion | None) -> models.WorkflowSummary:
    """A workflow with its current version, as the API shows it."""
    return models.WorkflowSummary(
        id=workflow.id,
        slug=workflow.slug,
        name=workflow.name,
        description=workflow.description,
        kind=models.WorkflowKind(workflow.kind),
        version_id=version.id if version else None,
        version=version.tag if version else None,
        definition=version.definition if version else None,
        yaml_content=version.yaml_content if version else None,
        archived_at=workflow.archived_at,
        created_at=workflow.created_at,
        updated_at=workflow.updated_at,
    )


def version_entry(version: WorkflowVersion, current_id: str | None) -> models.WorkflowVersion:
    """A released version as the API shows it."""
    return models.WorkflowVersion(
        id=version.id,
        workflow_id=version.workflow_id,
        version=version.tag,
        definition=version.definition,
        yaml_content=version.yaml_content,
        is_current=version.id == current_id,
        created_at=version.created_at,
    )


def execution_summary(
    execution: WorkflowExecution, workflow: Workflow | None
) -> models.ExecutionSummary:
    """An execution in summary form (no steps)."""
    reference = None if workflow is None else models.WorkflowRef(id=workflow.id, name=workflow.name)
    return models.ExecutionSummary.model_validate(
        {
            "id": execution.id,
            "workflowId": execution.workflow_id,
            "versionId": execution.version_id,
            "status": execution.status,
            "triggerType": execution.trigger_type,
            "triggerInput": execution.input,
            "exampleId": execution.example_id,
            "result": execution.result,
            "error": execution.error,
            "createdAt": execution.created_at,
            "startedAt": execution.started_at,
            "completedAt": execution.completed_at,
            "durationMs": execution.duration_ms,
            "workflow": reference,
        }
    )


def read_step_records(session: Session, execution_id: str) -> list[StepRecord]:
    """The stored step records of an execution, in definition order."""
    rows = session.scalars(
        select(WorkflowStepRecord)
        .where(WorkflowStepRecord.execution_id == execution_id)
        .order_by(WorkflowStepRecord.position, WorkflowStepRecord.step_id)
    ).all()
    return [_record(row) for row in rows]


def _record(row: WorkflowStepRecord) -> StepRecord:
    return StepRecord(
        step_id=row.step_id,
        status=row.status,  # type: ignore[arg-type]  # written from a StepStatus
        input=row.input,
        output=row.output,
        error=row.error,
        attempts=row.attempts,
        started_at=row.started_at,
        finished_at=row.finished_at,
    )


def status_response(
    execution: WorkflowExecution, steps: Sequence[StepRecord]
) -> models.WorkflowExecutionStatusResponse:
    """An execution with every step's payload (``includeSteps=true``)."""
    document: dict[str, Any] = {
        "executionId": execution.id,
        "workflowId": execution.workflow_id,
        "versionId": execution.version_id,
        "status": execution.status,
        "createdAt": execution.created_at,
        "startedAt": execution.started_at,
        "completedAt": execution.completed_at,
        "cancelRequestedAt": execution.cancel_requested_at,
        "result": execution.result,
        "error": execution.error,
        "steps": [step.to_api() for step in steps],
    }
    return models.WorkflowExecutionStatusResponse.model_validate(document)
