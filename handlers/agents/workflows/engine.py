"""The workflow engine: runs a definition's steps in dependency order, in parallel where
independent, journaling every transition (see README.md, "Execution").
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any

from handlers.agents.runner import CancelSignal
from handlers.agents.workflows.definition import StepDefinition, StepType, WorkflowDefinition
from handlers.agents.workflows.inputs import InputError, bind_inputs
from handlers.agents.workflows.limits import (
    MAX_STEP_DATA_BYTES,
    Sizer,
    ValueTooDeep,
    ValueTooLarge,
)
from handlers.agents.workflows.records import (
    ExecutionJournal,
    FinalStatus,
    StepRecord,
    StepStatus,
    WorkflowState,
    WorkflowStatus,
)
from handlers.agents.workflows.steps import (
    StepCancelled,
    StepContext,
    StepFailed,
    StepRunner,
    TransformStepRunner,
    WaitStepRunner,
)
from handlers.agents.workflows.templates import RenderError, Template, render

logger = logging.getLogger(__name__)

DEFAULT_CANCEL_GRACE_SECONDS = 10.0
"""How long running steps get to stop after a cancellation request before their tasks are
cancelled outright."""


@dataclass(frozen=True)
class WorkflowOutcome:
    status: FinalStatus
    result: object
    error: str | None
    started_at: datetime
    finished_at: datetime
    steps: dict[str, StepRecord]
    """Every step's last record, in definition order."""


def now() -> datetime:
    return datetime.now(UTC)


class WorkflowEngine:
    """Runs workflow definitions with the given step runners (see ``runners.standard_runners``);
    transform and wait runners are built in unless replaced."""

    def __init__(
        self,
        runners: Mapping[StepType, StepRunner],
        *,
        cancel_grace_seconds: float = DEFAULT_CANCEL_GRACE_SECONDS,
    ) -> None:
        builtin: dict[StepType, StepRunner] = {
            "transform": TransformStepRunner(),
            "wait": WaitStepRunner(),
        }
        self.runners: dict[StepType, StepRunner] = {**builtin, **runners}
        self.cancel_grace_seconds = cancel_grace_seconds

    async def run(
        self,
        definition: WorkflowDefinition,
        inputs: Mapping[str, object] | None,
        *,
        journal: ExecutionJournal,
        execution_id: str,
        cancel: CancelSignal | None = None,
        previous: Iterable[StepRecord] = (),
        overrides: Mapping[str, object] | None = None,
        call_path: tuple[str, ...] | None = None,
    ) -> WorkflowOutcome:
        """Run ``definition`` to its end and return how it ended.

        ``previous``: the records a killed worker left; completed steps (and failed ones that
        allow failure) are kept as they are and not run again. ``overrides``: step id -> the
        output the step returns without running. ``call_path``: the calling workflows (block
        steps), this one last; default ``(definition.name,)``. Raises ValueError for previous
        records or overrides naming unknown steps, and whatever the journal raises.
        """
        execution = _Execution(
            self,
            definition,
            journal,
            execution_id,
            cancel or CancelSignal(),
            call_path or (definition.name,),
        )
        return await execution.run(inputs, previous, overrides or {})


class _Execution:
    """One run of one definition."""

    def __init__(
        self,
        engine: WorkflowEngine,
        definition: WorkflowDefinition,
        journal: ExecutionJournal,
        execution_id: str,
        cancel: CancelSignal,
        call_path: tuple[str, ...],
    ) -> None:
        self.engine = engine
        self.definition = definition
        self.journal = journal
        self.journal_lock = asyncio.Lock()
        self.execution_id = execution_id
        self.cancel = cancel
        self.call_path = call_path
        self.records: dict[str, StepRecord] = {}
        self.first_started: dict[str, datetime] = {}
        self.overrides: Mapping[str, object] = {}
        self.inputs: dict[str, object] = {}
        self.state = WorkflowState("running", now())
        self.tasks: dict[asyncio.Task[None], str] = {}
        self.step_signals: dict[str, CancelSignal] = {}
        self.stopping: FinalStatus | None = None
        """Set once the run must end early: "failed" or "cancelled"."""
        self.failure: str | None = None
        self.stop_reason: str | None = None
        """Why running steps are being cancelled (their error)."""
        self.grace_deadline: float | None = None

    # -- the run -------------------------------------------------------------------------------

    async def run(
        self,
        inputs: Mapping[str, object] | None,
        previous: Iterable[StepRecord],
        overrides: Mapping[str, object],
    ) -> WorkflowOutcome:
        known = {step.id for step in self.definition.steps}
        unknown = sorted({record.step_id for record in previous} - known | set(overrides) - known)
        if unknown:
            raise ValueError(f"unknown steps in previous records or overrides: {unknown}")
        self.overrides = overrides
        self.restore(previous)
        await self.write_workflow()
        for record in self.records.values():
            if record.status == "pending":
                await self.write_step(record)
        try:
            self.inputs = bind_inputs(self.definition, inputs)
        except InputError as exc:
            self.stopping, self.failure = "failed", f"invalid input: {exc}"
            return await self.finish()
        logger.info("workflow %s execution %s started", self.definition.name, self.execution_id)
        watcher = asyncio.ensure_future(self.cancel.wait())
        try:
            await self.loop(watcher)
        finally:
            watcher.cancel()
            await self.stop_tasks()
        return await self.finish()

    def restore(self, previous: Iterable[StepRecord]) -> None:
        earlier = {record.step_id: record for record in previous}
        for step in self.definition.steps:
            record = earlier.get(step.id)
            if record is not None and _is_final(record, step):
                self.records[step.id] = record
                continue
            if record is not None and record.started_at is not None:
                self.first_started[step.id] = record.started_at
            self.records[step.id] = StepRecord(step.id)

    async def loop(self, watcher: asyncio.Future[None]) -> None:
        while True:
            if self.stopping is None:
                await self.start_ready_steps()
            if not self.tasks:
                return
            waitables: set[asyncio.Future[Any]] = set(self.tasks)
            if not watcher.done():
                waitables.add(watcher)
            timeout = None
            if self.grace_deadline is not None:
                timeout = max(self.grace_deadline - asyncio.get_running_loop().time(), 0)
            done, _ = await asyncio.wait(
                waitables, timeout=timeout, return_when=asyncio.FIRST_COMPLETED
            )
            for task in [task for task in done if task in self.tasks]:
                await self.step_ended(task)
            if watcher in done and self.stopping is None:
                self.stop("cancelled", "cancelled")
            if not done and self.grace_deadline is not None:  # grace over: force them
                self.grace_deadline = None
                for task in self.tasks:
                    task.cancel()

    async def step_ended(self, task: asyncio.Task[None]) -> None:
        step_id = self.tasks.pop(task)
        if task.cancelled():  # forced after the grace period
            await self.update(
                step_id,
                status="cancelled",
                error="cancelled (did not stop within the grace period)",
                finished_at=now(),
            )
            return
        task.result()  # a journal failure propagates
        record = self.records[step_id]
        step = self.definition.step(step_id)
        if record.status == "failed" and not step.allow_failure and self.stopping is None:
            self.failure = f"step {step_id!r} failed: {record.error}"
            self.stop("failed", f"cancelled: step {step_id!r} failed")

    def stop(self, how: FinalStatus, reason: str) -> None:
        """Start nothing more and ask the running steps to stop."""
        self.stopping, self.stop_reason = how, reason
        logger.info("workflow execution %s stopping: %s", self.execution_id, reason)
        for signal in self.step_signals.values():
            signal.request()
        if self.tasks:
            loop_time = asyncio.get_running_loop().time()
            self.grace_deadline = loop_time + self.engine.cancel_grace_seconds

    async def stop_tasks(self) -> None:
        """On the way out (normally none is left; after an error, cancel them)."""
        for task in self.tasks:
            task.cancel()
        for task in list(self.tasks):
            with contextlib.suppress(BaseException):
                await task
        self.tasks.clear()

    async def start_ready_steps(self) -> None:
        progress = True
        while progress and self.stopping is None:  # overrides complete at once: go again
            progress = False
            for step in self.definition.steps:
                if self.records[step.id].status != "pending" or step.id in self.step_signals:
                    continue
                if not all(self.dependency_done(needed) for needed in step.needs):
                    continue
                if self.cancel.requested:
                    self.stop("cancelled", "cancelled")
                    return
                if step.id in self.overrides:
                    await self.apply_override(step)
                    if self.stopping is not None:
                        return
                    progress = True
                    continue
                self.step_signals[step.id] = CancelSignal()
                self.tasks[asyncio.create_task(self.run_step(step))] = step.id

    def dependency_done(self, step_id: str) -> bool:
        return _is_final(self.records[step_id], self.definition.step(step_id))

    async def apply_override(self, step: StepDefinition) -> None:
        moment = now()
        output = self.overrides[step.id]
        problem = await asyncio.to_thread(data_problem, output, "output")
        if problem is not None:
            await self.update(
                step.id, status="failed", error=problem, started_at=moment, finished_at=now()
            )
            if not step.allow_failure and self.stopping is None:
                self.failure = f"step {step.id!r} failed: {problem}"
                self.stop("failed", f"cancelled: step {step.id!r} failed")
            return
        await self.update(
            step.id, status="completed", output=output, started_at=moment, finished_at=moment
        )

    # -- one step ------------------------------------------------------------------------------

    async def run_step(self, step: StepDefinition) -> None:
        signal = self.step_signals[step.id]
        started = now()
        first_started = self.first_started.setdefault(step.id, started)
        try:  # CPU-bound (bounded by the expression limits): off the event loop
            params = await asyncio.to_thread(_render_data, step.params, self.scope(), "input")
        except (RenderError, _DataRefused) as exc:
            error = f"cannot evaluate the step's parameters: {exc}"
            await self.update(
                step.id, status="failed", error=error, started_at=started, finished_at=now()
            )
            return
        runner = self.engine.runners.get(step.type)
        await self.update(step.id, status="running", input=params, started_at=started, attempts=1)
        if runner is None:
            await self.end_step(step, "failed", error=f"no runner for {step.type} steps")
            return

        async def mark_waiting() -> None:
            await self.update(step.id, status="waiting")

        attempt = 1
        while True:
            context = StepContext(
                execution_id=self.execution_id,
                step=step,
                attempt=attempt,
                cancel=signal,
                call_path=self.call_path,
                first_started_at=first_started,
                mark_waiting=mark_waiting,
            )
            try:
                output = await self.attempt(runner, params, context)
            except StepCancelled as exc:
                await self.end_step(step, "cancelled", error=self.stop_reason or str(exc))
                return
            except StepFailed as exc:
                error = str(exc)
                retryable = exc.retryable and step.retry.retries(timed_out=exc.timed_out)
            else:
                problem = None
                if output is not params:  # a transform's output is its checked input
                    problem = await asyncio.to_thread(data_problem, output, "output")
                if problem is None:
                    await self.end_step(step, "completed", output=output)
                else:
                    await self.end_step(step, "failed", error=problem)
                return
            if signal.requested:
                await self.end_step(step, "cancelled", error=f"cancelled ({error})")
                return
            if not retryable or attempt > step.retry.count:
                await self.end_step(step, "failed", error=error)
                return
            delay = step.retry.delay(attempt)
            logger.info(
                "workflow execution %s step %s attempt %d failed, retry in %.3gs: %s",
                self.execution_id,
                step.id,
                attempt,
                delay,
                error,
            )
            await self.update(step.id, status="running", error=error)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(signal.wait(), timeout=delay)
            if signal.requested:
                await self.end_step(step, "cancelled", error=f"cancelled ({error})")
                return
            attempt += 1
            await self.update(step.id, attempts=attempt)

    async def attempt(self, runner: StepRunner, params: object, context: StepContext) -> object:
        seconds = context.step.timeout_seconds
        try:
            async with asyncio.timeout(seconds) as deadline:
                return await runner.run(params, context)
        except TimeoutError:
            if deadline.expired():
                raise StepFailed(f"timed out after {seconds:g} s", timed_out=True) from None
            raise StepFailed("TimeoutError") from None
        except (StepFailed, StepCancelled):
            raise
        except Exception as exc:  # a runner's bug fails the attempt, not the engine
            logger.exception("step runner %s raised", context.step.type)
            raise StepFailed(f"{type(exc).__name__}: {exc}") from None

    async def end_step(
        self,
        step: StepDefinition,
        status: StepStatus,
        *,
        output: object = None,
        error: str | None = None,
    ) -> None:
        record = await self.update(
            step.id, status=status, output=output, error=error, finished_at=now()
        )
        logger.info(
            "workflow execution %s step %s %s attempts=%d duration_ms=%s%s",
            self.execution_id,
            step.id,
            status,
            record.attempts,
            record.duration_ms,
            f" error={error.splitlines()[0]}" if error else "",
        )

    def scope(self) -> dict[str, object]:
        """What expressions see: the inputs and every finished step."""
        steps = {
            step_id: {
                "output": record.output,
                "status": record.status,
                "error": record.error,
                "attempts": record.attempts,
            }
            for step_id, record in self.records.items()
            if record.status in ("completed", "failed")
        }
        return {"inputs": self.inputs, "steps": steps}

    # -- records -------------------------------------------------------------------------------

    async def update(self, step_id: str, **changes: Any) -> StepRecord:
        record = replace(self.records[step_id], **changes)
        self.records[step_id] = record
        await self.write_step(record)
        await self.refresh_status()
        return record

    async def refresh_status(self) -> None:
        """``waiting`` while some step waits and none runs, else ``running``."""
        if self.state.finished_at is not None:
            return
        statuses = {record.status for record in self.records.values()}
        waiting = "waiting" in statuses and "running" not in statuses
        status: WorkflowStatus = "waiting" if waiting else "running"
        if status != self.state.status:
            self.state = replace(self.state, status=status)
            await self.write_workflow()

    async def finish(self) -> WorkflowOutcome:
        for step_id, record in self.records.items():
            if record.status == "pending":
                if self.stopping == "cancelled":
                    await self.update(step_id, status="cancelled", error="cancelled before it ran")
                else:
                    await self.update(step_id, status="skipped", error=f"not run: {self.failure}")
        status: FinalStatus = self.stopping or "completed"
        result, error = None, self.failure if status == "failed" else None
        if status == "cancelled":
            error = "cancelled"
        if status == "completed" and self.definition.result is not None:
            try:
                result = await asyncio.to_thread(
                    _render_data, self.definition.result, self.scope(), "result"
                )
            except RenderError as exc:
                status, error = "failed", f"cannot evaluate the result: {exc}"
            except _DataRefused as exc:
                status, error = "failed", str(exc)
        self.state = replace(
            self.state, status=status, finished_at=now(), result=result, error=error
        )
        await self.write_workflow()
        logger.info(
            "workflow %s execution %s %s%s",
            self.definition.name,
            self.execution_id,
            status,
            f" error={error.splitlines()[0]}" if error else "",
        )
        return WorkflowOutcome(
            status=status,
            result=result,
            error=error,
            started_at=self.state.started_at,
            finished_at=self.state.finished_at or now(),
            steps=dict(self.records),
        )

    async def write_step(self, record: StepRecord) -> None:
        async with self.journal_lock:
            await self.journal.record_step(record)

    async def write_workflow(self) -> None:
        async with self.journal_lock:
            await self.journal.record_workflow(self.state)


class _DataRefused(ValueError):
    """A rendered value is too large or too deep to be recorded."""


def data_problem(value: object, what: str, sizer: Sizer | None = None) -> str | None:
    """Why ``value`` cannot be recorded as a step's ``what`` (input, output) or as the
    workflow's result: larger than MAX_STEP_DATA_BYTES as compact JSON, or nested deeper than
    MAX_JSON_DEPTH; None when it can. Walks the value (up to the limit): call it from a worker
    thread."""
    try:
        (sizer or Sizer()).measure(value, MAX_STEP_DATA_BYTES)
    except (ValueTooLarge, ValueTooDeep) as exc:
        return str(exc.naming(what))
    return None


def _render_data(template: Template, scope: Mapping[str, object], what: str) -> object:
    """The template's value, checked as step data (in a worker thread); raises RenderError or
    _DataRefused."""
    sizer = Sizer()
    value = render(template, scope, sizer=sizer)
    problem = data_problem(value, what, sizer)
    if problem is not None:
        raise _DataRefused(problem)
    return value


def _is_final(record: StepRecord, step: StepDefinition) -> bool:
    """Done for good: completed, or failed where failure is allowed (dependants then run)."""
    return record.status == "completed" or (record.status == "failed" and step.allow_failure)
