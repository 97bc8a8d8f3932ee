"""What an execution records: one StepRecord per step, the WorkflowState, and the journal
the engine writes every transition through (the storage layer persists them)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Literal, Protocol

StepStatus = Literal["pending", "running", "waiting", "completed", "failed", "skipped", "cancelled"]
WorkflowStatus = Literal["running", "waiting", "completed", "failed", "cancelled"]
FinalStatus = Literal["completed", "failed", "cancelled"]
TERMINAL_STEP_STATUSES: tuple[StepStatus, ...] = ("completed", "failed", "skipped", "cancelled")


@dataclass(frozen=True)
class StepRecord:
    """One step of one execution, as it stands after a transition."""

    step_id: str
    status: StepStatus = "pending"
    input: object = None
    """The step's evaluated parameters (what it received)."""
    output: object = None
    error: str | None = None
    """Why it failed, was skipped or cancelled; while retrying, the last attempt's error."""
    attempts: int = 0
    started_at: datetime | None = None
    finished_at: datetime | None = None

    @property
    def duration_ms(self) -> int | None:
        if self.started_at is None or self.finished_at is None:
            return None
        return max(int((self.finished_at - self.started_at).total_seconds() * 1000), 0)

    def to_api(self) -> dict[str, object]:
        """The API's ``WorkflowStepResult``."""
        return {
            "stepId": self.step_id,
            "status": self.status,
            "input": self.input,
            "output": self.output,
            "error": self.error,
            "startedAt": _iso(self.started_at),
            "completedAt": _iso(self.finished_at),
            "durationMs": self.duration_ms,
        }


@dataclass(frozen=True)
class WorkflowState:
    """The execution as a whole; ``result`` is set when completed, ``error`` otherwise."""

    status: WorkflowStatus
    started_at: datetime
    finished_at: datetime | None = None
    result: object = None
    error: str | None = None


def _iso(moment: datetime | None) -> str | None:
    return moment.isoformat().replace("+00:00", "Z") if moment is not None else None


class ExecutionJournal(Protocol):
    """Where the engine writes every transition, one call at a time, in order. A call that
    raises aborts the run (running steps are cancelled); resume it later from the records
    already written."""

    async def record_step(self, record: StepRecord) -> None: ...

    async def record_workflow(self, state: WorkflowState) -> None: ...


@dataclass
class MemoryJournal:
    """An ExecutionJournal kept in memory: every event in order and the latest of each."""

    events: list[StepRecord | WorkflowState] = field(default_factory=list)
    steps: dict[str, StepRecord] = field(default_factory=dict)
    workflow: WorkflowState | None = None

    async def record_step(self, record: StepRecord) -> None:
        self.events.append(record)
        self.steps[record.step_id] = record

    async def record_workflow(self, state: WorkflowState) -> None:
        self.events.append(state)
        self.workflow = state

    def step_statuses(self, step_id: str) -> list[StepStatus]:
        """The statuses ``step_id`` went through, repeats of a status folded."""
        statuses: list[StepStatus] = []
        for event in self.events:
            if (
                isinstance(event, StepRecord)
                and event.step_id == step_id
                and (not statuses or statuses[-1] != event.status)
            ):
                statuses.append(event.status)
        return statuses

    def workflow_statuses(self) -> list[WorkflowStatus]:
        statuses: list[WorkflowStatus] = []
        for event in self.events:
            if isinstance(event, WorkflowState) and (not statuses or statuses[-1] != event.status):
                statuses.append(event.status)
        return statuses
