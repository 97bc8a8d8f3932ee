"""How a worker runs a workflow's agent and block steps (the engine's AgentInvoker and
BlockInvoker), inline, in the worker that holds the workflow execution.

* **Agent step**: one transaction creates an agent execution of the named agent (by slug or
  id; the run was authorized for the workflow, so the key's agent scope does not apply) with
  the usual snapshot (``runs.create_execution_row``), already ``running`` under this worker's
  name, and ``metadata`` naming the workflow execution and step. File inputs of the workflow
  (``{name, size, contentType, sha256}``) found in the step's input become the agent's input
  files (``{"$file": "input/<name>"}``, same blobs). Then :class:`ExecutionJob` runs it as it
  runs any execution (heartbeat, output files, result). The step's cancel signal stops it. It
  is written with its last attempt used up, so if this worker dies the reaper ends it instead
  of queueing it on its own: the resumed workflow runs the step again.
* **Block step**: the block's version (``version``: id or tag; default latest) runs as a
  *child* workflow execution (``parent_execution_id``/``parent_step_id``) with the same engine,
  journal and lease. A child left unfinished by a lost worker is resumed from its own step
  records when the parent runs the step again, so its completed steps do not run twice.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

from sqlalchemy import or_, select, update
from sqlalchemy.orm import Session

from handlers.agents.domain.execution_records import (
    add_execution_file,
    create_execution_row,
    input_problems,
)
from handlers.agents.domain.snapshots import INPUT
from handlers.agents.domain.workflow_store import (
    new_workflow_execution_id,
    read_step_records,
    resolve_version,
)
from handlers.agents.execution.agent_job import ExecutionJob
from handlers.agents.execution.leases import ACTIVE, QUEUED, Lease, announce
from handlers.agents.execution.workflow_journal import MAX_ERROR_CHARS, DatabaseJournal
from handlers.agents.runner import CancelSignal
from handlers.agents.settings import Settings
from handlers.agents.storage.blobs import BlobStore
from handlers.agents.storage.database import Database
from handlers.agents.storage.schema import (
    Agent,
    Execution,
    Workflow,
    WorkflowExecution,
    utc_now,
)
from handlers.agents.workflows.definition import WorkflowDefinition
from handlers.agents.workflows.engine import WorkflowEngine, WorkflowOutcome
from handlers.agents.workflows.records import StepRecord
from handlers.agents.workflows.steps import AgentRequest, AgentResult, BlockRequest, BlockResult
from webrest import HttpError

__all__ = ["LocalAgentInvoker", "LocalBlockInvoker", "outcome_values"]

log = logging.getLogger("agents.workflows")

AGENT_STOP_GRACE_SECONDS = 15.0
FILE_KEYS = frozenset({"name", "size", "contentType", "sha256"})


def outcome_values(outcome: WorkflowOutcome) -> dict[str, Any]:
    """The columns a finished workflow execution is written with."""
    return {
        "status": outcome.status,
        "result": outcome.result if outcome.status == "completed" else None,
        "error": outcome.error[:MAX_ERROR_CHARS] if outcome.error else None,
        "completed_at": utc_now(),
        "duration_ms": max(
            0, int((outcome.finished_at - outcome.started_at).total_seconds() * 1000)
        ),
    }


@dataclass(frozen=True)
class _InputFile:
    name: str
    digest: str
    size: int
    content_type: str | None


def _attach_files(value: object, files: dict[str, _InputFile]) -> object:
    """``value`` with each workflow file object replaced by the agent's file reference."""
    if isinstance(value, dict):
        if value.keys() >= FILE_KEYS and isinstance(value.get("sha256"), str):
            name = str(value["name"])
            files.setdefault(
                name,
                _InputFile(
                    name, str(value["sha256"]), int(value["size"]), value.get("contentType")
                ),
            )
            return {"$file": f"input/{name}"}
        return {key: _attach_files(item, files) for key, item in value.items()}
    if isinstance(value, list):
        return [_attach_files(item, files) for item in value]
    return value


class LocalAgentInvoker:
    """Runs agent steps as agent executions in this worker (see the module docstring)."""

    def __init__(
        self,
        database: Database,
        blobs: BlobStore,
        settings: Settings,
        agent_job: ExecutionJob,
        worker_id: str,
    ) -> None:
        self.database = database
        self.blobs = blobs
        self.settings = settings
        self.agent_job = agent_job
        self.worker_id = worker_id

    async def run_agent(self, request: AgentRequest, cancel: CancelSignal) -> AgentResult:
        try:
            execution_id = await self.database.write(partial(self._create, request=request))
        except _Refused as refused:
            return AgentResult("failed", error=str(refused))
        lease = Lease(execution_id, self.worker_id, self.settings.max_attempts)
        watcher = asyncio.create_task(self._relay_cancel(cancel, execution_id))
        job = asyncio.create_task(self.agent_job.run(lease))
        try:
            await asyncio.shield(job)
        except asyncio.CancelledError:  # the step timed out or the workflow is stopping
            self.agent_job.request_cancel(execution_id)
            try:
                await asyncio.wait_for(job, AGENT_STOP_GRACE_SECONDS)
            except (TimeoutError, asyncio.CancelledError):
                await asyncio.shield(
                    self.database.write(partial(_abandon, execution_id=execution_id))
                )
            raise
        finally:
            watcher.cancel()
        row = await self.database.read(lambda session: session.get(Execution, execution_id))
        if row is None:
            return AgentResult("failed", error="the agent execution disappeared")
        status = row.status if row.status in ("completed", "cancelled") else "failed"
        error = row.error or (None if status == "completed" else f"agent ended {row.status}")
        return AgentResult(status, row.output, error, execution_id)  # type: ignore[arg-type]

    async def _relay_cancel(self, cancel: CancelSignal, execution_id: str) -> None:
        await cancel.wait()
        self.agent_job.request_cancel(execution_id)

    def _create(self, session: Session, request: AgentRequest) -> str:
        agent = session.scalars(
            select(Agent).where(or_(Agent.slug == request.agent, Agent.id == request.agent))
        ).first()
        if agent is None:
            raise _Refused(f"agent '{request.agent}' not found")
        given = {} if request.input is None else request.input
        if not isinstance(given, dict):
            raise _Refused("an agent step's input must be an object (or null)")
        files: dict[str, _InputFile] = {}
        input_json = _attach_files(given, files)
        assert isinstance(input_json, dict)
        schema = (agent.config or {}).get("inputSchema")
        problems = input_problems(input_json, schema) if isinstance(schema, dict) else []
        if problems:
            reasons = "; ".join(message for _, message in problems)
            raise _Refused(f"input does not match agent '{agent.slug}''s inputSchema: {reasons}")
        parent = session.get(WorkflowExecution, request.execution_id)
        created_by = parent.created_by_key if parent is not None else None
        execution = create_execution_row(
            session, self.blobs, agent, input_json, "running", created_by
        )
        now = utc_now()
        execution.run_metadata = {
            "workflowExecutionId": request.execution_id,
            "stepId": request.step_id,
            "stepAttempt": request.attempt,
        }
        execution.worker_id = self.worker_id
        execution.heartbeat_at = now
        execution.started_at = now
        execution.attempt = self.settings.max_attempts
        for file in files.values():
            add_execution_file(session, execution.id, INPUT, file.name, file.digest, file.size,
                               file.content_type)  # fmt: skip
        return execution.id


class _Refused(Exception):
    """The step cannot start (unknown agent, bad input): the step fails with this reason."""


def _abandon(session: Session, execution_id: str) -> None:
    session.execute(
        update(Execution)
        .where(Execution.id == execution_id, Execution.status.in_((*QUEUED, *ACTIVE)))
        .values(
            status="cancelled",
            error="cancelled: the workflow step stopped",
            completed_at=utc_now(),
            worker_id=None,
            heartbeat_at=None,
        )
    )


@dataclass(frozen=True)
class _Child:
    execution_id: str
    version_id: str
    yaml: str
    input: dict[str, Any] | None
    previous: list[StepRecord]


class LocalBlockInvoker:
    """Runs block steps as child executions with ``engine`` (set once the engine exists)."""

    def __init__(
        self,
        database: Database,
        lease: Lease,
        definitions: Callable[[str, str], WorkflowDefinition],
    ) -> None:
        self.database = database
        self.lease = lease
        self.definitions = definitions
        """``(version_id, yaml) -> definition`` (parsed once per version)."""
        self.engine: WorkflowEngine | None = None

    async def run_block(self, request: BlockRequest, cancel: CancelSignal) -> BlockResult:
        assert self.engine is not None, "the block invoker's engine is not set"
        try:
            child = await self.database.write(partial(self._child, request=request))
        except _Refused as refused:
            return BlockResult("failed", error=str(refused))
        # parsing is CPU-bound (constant expressions included): off the event loop
        definition = await asyncio.to_thread(self.definitions, child.version_id, child.yaml)
        positions = {step.id: index for index, step in enumerate(definition.steps)}
        journal = DatabaseJournal(self.database, child.execution_id, self.lease, positions)
        try:
            outcome = await self.engine.run(
                definition,
                child.input,
                journal=journal,
                execution_id=child.execution_id,
                cancel=cancel,
                previous=child.previous,
                call_path=(*request.call_path, request.block),
            )
        except asyncio.CancelledError:
            with contextlib.suppress(Exception):
                await asyncio.shield(
                    self.database.write(
                        partial(_end_child, execution_id=child.execution_id, values=_cancelled())
                    )
                )
            raise
        await self.database.write(
            partial(_end_child, execution_id=child.execution_id, values=outcome_values(outcome))
        )
        return BlockResult(outcome.status, outcome.result, outcome.error)

    def _child(self, session: Session, request: BlockRequest) -> _Child:
        block = session.scalars(
            select(Workflow).where(
                or_(Workflow.slug == request.block, Workflow.id == request.block)
            )
        ).first()
        if block is None:
            raise _Refused(f"block '{request.block}' not found")
        if block.kind != "block":
            raise _Refused(f"'{request.block}' is a workflow, not a block")
        given = {} if request.input is None else request.input
        if not isinstance(given, dict):
            raise _Refused("a block step's input must be an object (or null)")
        try:
            version = resolve_version(session, block, request.version)
        except HttpError as error:
            raise _Refused(error.message) from None
        unfinished = session.scalars(
            select(WorkflowExecution)
            .where(
                WorkflowExecution.parent_execution_id == request.execution_id,
                WorkflowExecution.parent_step_id == request.step_id,
                WorkflowExecution.version_id == version.id,
                WorkflowExecution.status.in_(ACTIVE),
            )
            .order_by(WorkflowExecution.created_at.desc())
        ).first()
        if unfinished is not None:  # left by a lost worker: resume it
            previous = read_step_records(session, unfinished.id)
            return _Child(unfinished.id, version.id, version.yaml_content, unfinished.input,
                          previous)  # fmt: skip
        parent = session.get(WorkflowExecution, request.execution_id)
        now = utc_now()
        child = WorkflowExecution(
            id=new_workflow_execution_id(),
            workflow_id=block.id,
            version_id=version.id,
            status="running",
            trigger_type=None,
            input=given,
            parent_execution_id=request.execution_id,
            parent_step_id=request.step_id,
            created_at=now,
            started_at=now,
            created_by_key=parent.created_by_key if parent is not None else None,
            attempt=1,
        )
        session.add(child)
        return _Child(child.id, version.id, version.yaml_content, given, [])


def _cancelled() -> dict[str, Any]:
    return {"status": "cancelled", "error": "cancelled", "completed_at": utc_now()}


def _end_child(session: Session, execution_id: str, values: dict[str, Any]) -> None:
    """End a block's child execution, announced (its waiters woken, its webhook events
    recorded) as any execution that ends."""
    result = session.execute(
        update(WorkflowExecution)
        .where(WorkflowExecution.id == execution_id, WorkflowExecution.status.in_(ACTIVE))
        .values(**values)
    )
    if getattr(result, "rowcount", 0) == 1:
        announce(session, execution_id)
