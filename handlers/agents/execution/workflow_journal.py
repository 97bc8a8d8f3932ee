"""The engine's ExecutionJournal over ``workflow_step_records`` and ``workflow_executions``.

Each call is one transaction guarded by the worker's lease (the root execution's, for a
block's child execution): a worker that lost its execution raises ``LeaseLost``, which aborts
its run, and writes nothing. A step's row holds its latest record (what a resumed run starts
from, and what ``includeSteps=true`` shows). The workflow's own ``running``/``waiting`` moves
are written here; its final status, result and error are written by whoever ran it (the job,
or the block invoker for a child), together with its times.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import partial

from sqlalchemy import update
from sqlalchemy.orm import Session

from handlers.agents.execution.leases import ACTIVE, Lease, LeaseLost, renew
from handlers.agents.storage.database import Database
from handlers.agents.storage.schema import WorkflowExecution, WorkflowStepRecord
from handlers.agents.workflows.records import StepRecord, WorkflowState

__all__ = ["MAX_ERROR_CHARS", "DatabaseJournal"]

MAX_ERROR_CHARS = 10000


class DatabaseJournal:
    """Journal of execution ``execution_id``; ``positions`` orders its steps."""

    def __init__(
        self,
        database: Database,
        execution_id: str,
        lease: Lease,
        positions: Mapping[str, int],
    ) -> None:
        self.database = database
        self.execution_id = execution_id
        self.lease = lease
        self.positions = positions

    def _guard(self, session: Session) -> None:
        if not renew(session, self.lease):
            raise LeaseLost(self.lease.execution_id)

    async def record_step(self, record: StepRecord) -> None:
        await self.database.write(partial(self._write_step, record=record))

    def _write_step(self, session: Session, record: StepRecord) -> None:
        self._guard(session)
        error = record.error[:MAX_ERROR_CHARS] if record.error else record.error
        row = session.get(WorkflowStepRecord, (self.execution_id, record.step_id))
        if row is None:
            row = WorkflowStepRecord(
                execution_id=self.execution_id,
                step_id=record.step_id,
                position=self.positions.get(record.step_id, 0),
            )
            session.add(row)
        row.status = record.status
        row.input = record.input
        row.output = record.output
        row.error = error
        row.attempts = record.attempts
        row.started_at = record.started_at
        row.finished_at = record.finished_at

    async def record_workflow(self, state: WorkflowState) -> None:
        if state.status not in ("running", "waiting"):
            return  # the final state is stored with the result, by whoever ran it
        await self.database.write(partial(self._write_status, status=state.status))

    def _write_status(self, session: Session, status: str) -> None:
        self._guard(session)
        session.execute(
            update(WorkflowExecution)
            .where(WorkflowExecution.id == self.execution_id, WorkflowExecution.status.in_(ACTIVE))
            .values(status=status)
        )
