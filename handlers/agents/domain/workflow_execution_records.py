"""Workflow execution rows: why a run is rejected before it starts, and creating the row.

Used by workflow runs through the API (``api/workflow_runs.py``) and by schedules
(:mod:`handlers.agents.domain.schedule_firing`), so that a run is recorded the same way
whoever starts it.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy.orm import Session

from handlers.agents.domain.webhooks import record_events
from handlers.agents.domain.workflow_store import new_workflow_execution_id
from handlers.agents.storage.schema import WorkflowExecution, utc_now
from handlers.agents.workflows.inputs import InputError, bind_inputs
from handlers.agents.workflows.parse import WorkflowValidationError, parse_workflow

__all__ = ["MAX_ERROR_CHARS", "create_workflow_execution_row", "workflow_run_refusal"]

MAX_ERROR_CHARS = 10000
"""The longest error stored on an execution."""


def workflow_run_refusal(
    yaml: str, inputs: dict[str, Any], overrides: dict[str, Any] | None
) -> str | None:
    """Why a run of the version whose definition is ``yaml`` is rejected before it starts
    (inputs that do not fit its declared inputs, overrides naming steps it does not have, a
    definition stored before a newer limit), or ``None``. CPU-bound: it parses the YAML, so
    call it outside transactions where that matters."""
    try:
        definition = parse_workflow(yaml)
    except WorkflowValidationError as error:
        return f"the version's definition is invalid: {error}"[:MAX_ERROR_CHARS]
    try:
        bind_inputs(definition, inputs)
    except InputError as error:
        return f"invalid input: {error}"[:MAX_ERROR_CHARS]
    steps = {step.id for step in definition.steps}
    unknown = sorted(set((overrides or {}).get("steps", {})) - steps)
    if unknown:
        message = f"overrides name steps the workflow does not have: {', '.join(unknown)}"
        return message[:MAX_ERROR_CHARS]
    return None


def create_workflow_execution_row(
    session: Session,
    *,
    workflow_id: str,
    version_id: str,
    inputs: dict[str, Any],
    status: str,
    refusal: str | None,
    trigger: str,
    created_by_key: str | None,
    overrides: dict[str, Any] | None = None,
    example_id: str | None = None,
) -> WorkflowExecution:
    """A new execution row of the workflow's version ``version_id``: queued with ``status``
    (the caller dispatches it after the commit, which wakes the workers), or ``rejected``
    (ended at once, ``refusal`` its error, its webhook events recorded) when ``refusal`` is
    given."""
    now = utc_now()
    execution = WorkflowExecution(
        id=new_workflow_execution_id(),
        workflow_id=workflow_id,
        version_id=version_id,
        status=status if refusal is None else "rejected",
        error=refusal,
        completed_at=None if refusal is None else now,
        trigger_type=trigger,
        input=inputs,
        overrides=overrides,
        example_id=example_id,
        created_at=now,
        created_by_key=created_by_key,
        attempt=0,
    )
    session.add(execution)
    if refusal is not None:  # ended at once: its webhook events, in this transaction
        session.flush()
        record_events(session, execution.id)
    return execution
