"""What a worker runs for a claimed execution: an agent execution or a workflow execution.

:class:`ExecutionJobs` is the job of every queue pool (the server's and each ``agents-worker``
process's): it hands a lease to
:class:`~handlers.agents.execution.agent_job.ExecutionJob` or, for a workflow execution (``wfx_…``),
to :class:`~handlers.agents.execution.workflow_job.WorkflowJob`, whose agent steps run through the
former.
"""

from __future__ import annotations

from collections.abc import Callable

from handlers.agents.execution.agent_job import ExecutionJob
from handlers.agents.execution.leases import Lease, execution_table
from handlers.agents.execution.workflow_job import WorkflowJob
from handlers.agents.runner import Sandbox
from handlers.agents.settings import Settings
from handlers.agents.storage.blobs import BlobStore
from handlers.agents.storage.database import Database
from handlers.agents.storage.schema import WorkflowExecution

__all__ = ["ExecutionJobs"]


class ExecutionJobs:
    """Runs claimed executions of either kind; ``on_end(id)`` after each."""

    def __init__(
        self,
        database: Database,
        blobs: BlobStore,
        settings: Settings,
        on_end: Callable[[str], None],
        worker_id: str,
        sandbox: Sandbox,
    ) -> None:
        self.on_end = on_end
        self.worker_id = worker_id
        self.agents = ExecutionJob(database, blobs, settings, on_end, sandbox)
        self.workflows = WorkflowJob(database, blobs, settings, self.agents, worker_id, on_end)

    async def run(self, lease: Lease) -> None:
        """Run the leased execution to its end and store the result."""
        if execution_table(lease.execution_id) is WorkflowExecution:
            await self.workflows.run(lease)
        else:
            await self.agents.run(lease)

    def request_cancel(self, execution_id: str) -> None:
        """Stop ``execution_id`` now if this process runs it."""
        if execution_table(execution_id) is WorkflowExecution:
            self.workflows.request_cancel(execution_id)
        else:
            self.agents.request_cancel(execution_id)
