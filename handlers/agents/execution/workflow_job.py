"""Running one claimed workflow execution: the engine, its lease, and storing how it ended.

:class:`WorkflowJob` is what a worker runs once it holds the :class:`Lease` of a workflow
execution (the same queue, claims, leases and reaper as agent executions; see
:mod:`handlers.agents.execution.leases`):

1. the execution's version is parsed (once per version and process) and its stored step
   records are read: after a lost worker, completed steps (and failed ones allowed to fail)
   are kept and not run again (the engine's resume);
2. the engine runs with a :class:`DatabaseJournal` (every step transition is one transaction,
   guarded by the lease), agent and block steps inline in this worker
   (:mod:`handlers.agents.execution.invokers`), while the lease is renewed every
   ``heartbeat_seconds`` and the cancel flag polled every ``cancel_poll_seconds``: a
   cancellation is honoured at the next step boundary, and running steps (an agent's program,
   a wait) are stopped;
3. one transaction guarded by the lease writes the status, result, error and times, and
   waiters are told.

A lost lease discards the run; a job cancelled from outside (worker shutdown) gives the
execution back to the queue, and the next worker resumes it from its journal.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.orm import Session

from handlers.agents.domain.workflow_store import read_step_records
from handlers.agents.execution.agent_job import ExecutionJob, LeaseState, keep_lease
from handlers.agents.execution.invokers import (
    LocalAgentInvoker,
    LocalBlockInvoker,
    outcome_values,
)
from handlers.agents.execution.leases import (
    Lease,
    LeaseLost,
    cancel_is_requested,
    finish,
    release,
)
from handlers.agents.execution.workflow_journal import MAX_ERROR_CHARS, DatabaseJournal
from handlers.agents.runner import CancelSignal
from handlers.agents.settings import Settings
from handlers.agents.storage.blobs import BlobStore
from handlers.agents.storage.database import Database
from handlers.agents.storage.schema import WorkflowExecution, WorkflowVersion, utc_now
from handlers.agents.workflows.definition import WorkflowDefinition
from handlers.agents.workflows.engine import WorkflowEngine
from handlers.agents.workflows.http_step import HttpStepRunner
from handlers.agents.workflows.parse import parse_workflow
from handlers.agents.workflows.records import StepRecord
from handlers.agents.workflows.runners import standard_runners

__all__ = ["WorkflowJob"]

log = logging.getLogger("agents.workflows")


@dataclass(frozen=True)
class _Claimed:
    version_id: str
    yaml: str
    input: dict[str, Any] | None
    overrides: dict[str, object]
    previous: list[StepRecord]
    started_at: Any


def _read(session: Session, execution_id: str) -> _Claimed:
    execution = session.get(WorkflowExecution, execution_id)
    if execution is None:
        raise LookupError(f"workflow execution {execution_id} does not exist")
    version = session.get(WorkflowVersion, execution.version_id)
    if version is None:
        raise LookupError(f"version {execution.version_id} does not exist")
    steps = (execution.overrides or {}).get("steps") or {}
    return _Claimed(
        version.id,
        version.yaml_content,
        execution.input,
        dict(steps) if isinstance(steps, dict) else {},
        read_step_records(session, execution_id),
        execution.started_at,
    )


class WorkflowJob:
    """Runs claimed workflow executions; ``on_end(id)`` after each."""

    def __init__(
        self,
        database: Database,
        blobs: BlobStore,
        settings: Settings,
        agent_job: ExecutionJob,
        worker_id: str,
        on_end: Callable[[str], None],
    ) -> None:
        self.database = database
        self.blobs = blobs
        self.settings = settings
        self.agent_job = agent_job
        self.worker_id = worker_id
        self.on_end = on_end
        self._cancels: dict[str, CancelSignal] = {}
        self._definitions: dict[str, WorkflowDefinition] = {}

    def request_cancel(self, execution_id: str) -> None:
        """Stop ``execution_id`` now if this process runs it (the poll would see it later)."""
        signal = self._cancels.get(execution_id)
        if signal is not None:
            signal.request()

    def definition(self, version_id: str, yaml: str) -> WorkflowDefinition:
        """The parsed definition of a version (versions are immutable: parsed once)."""
        parsed = self._definitions.get(version_id)
        if parsed is None:
            parsed = self._definitions[version_id] = parse_workflow(yaml)
        return parsed

    async def run(self, lease: Lease) -> None:
        """Run the leased workflow execution to its end and store how it ended."""
        execution_id = lease.execution_id
        cancel = CancelSignal(
            partial(self._cancel_requested, execution_id),
            poll_interval=self.settings.cancel_poll_seconds,
        )
        state = LeaseState()
        self._cancels[execution_id] = cancel
        keeper = asyncio.create_task(
            keep_lease(self.database, self.settings.heartbeat_seconds, lease, cancel, state)
        )
        try:
            values = await self._execute(lease, cancel)
            if state.lost:
                log.warning("workflow execution %s: lease lost, result discarded", execution_id)
                return
            await self.database.write(partial(finish, lease=lease, values=values))
        except LeaseLost:
            log.warning("workflow execution %s: lease lost, result discarded", execution_id)
            return
        except asyncio.CancelledError:
            await asyncio.shield(self._give_back(lease))
            raise
        finally:
            keeper.cancel()
            self._cancels.pop(execution_id, None)
        log.info("workflow execution %s %s attempt=%d", execution_id, values["status"],
                 lease.attempt)  # fmt: skip
        self.on_end(execution_id)

    async def _execute(self, lease: Lease, cancel: CancelSignal) -> dict[str, Any]:
        try:
            claimed = await self.database.read(partial(_read, execution_id=lease.execution_id))
            # parse_workflow is CPU-bound (constant expressions included): off the event loop
            definition = await asyncio.to_thread(self.definition, claimed.version_id, claimed.yaml)
        except (LookupError, ValueError) as error:
            return _failed(f"cannot prepare the run: {error}")
        blocks = LocalBlockInvoker(self.database, lease, self.definition)
        agents = LocalAgentInvoker(
            self.database, self.blobs, self.settings, self.agent_job, self.worker_id
        )
        http = HttpStepRunner(egress=self.settings.egress)
        engine = WorkflowEngine(standard_runners(agents=agents, blocks=blocks, http=http))
        blocks.engine = engine
        positions = {step.id: index for index, step in enumerate(definition.steps)}
        journal = DatabaseJournal(self.database, lease.execution_id, lease, positions)
        overrides = {k: v for k, v in claimed.overrides.items() if k in positions}
        outcome = await engine.run(
            definition,
            claimed.input,
            journal=journal,
            execution_id=lease.execution_id,
            cancel=cancel,
            previous=claimed.previous,
            overrides=overrides,
        )
        values = outcome_values(outcome)
        if claimed.started_at is not None:  # the first start, also after a resume
            values["duration_ms"] = max(
                0, int((values["completed_at"] - claimed.started_at).total_seconds() * 1000)
            )
        return values

    async def _cancel_requested(self, execution_id: str) -> bool:
        return await self.database.read(partial(cancel_is_requested, execution_id=execution_id))

    async def _give_back(self, lease: Lease) -> None:
        try:
            if await self.database.write(partial(release, lease=lease)):
                log.info("workflow execution %s: worker stopping, back in the queue",
                         lease.execution_id)  # fmt: skip
        except SQLAlchemyError as error:
            log.warning("workflow execution %s: cannot give it back: %s", lease.execution_id,
                        error)  # fmt: skip


def _failed(error: str) -> dict[str, Any]:
    return {
        "status": "failed",
        "error": error[:MAX_ERROR_CHARS],
        "completed_at": utc_now(),
        "duration_ms": 0,
    }
