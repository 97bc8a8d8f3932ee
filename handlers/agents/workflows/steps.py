"""Step runners: one per step type, behind the StepRunner protocol.

``transform`` and ``wait`` are implemented here (``http`` in ``http_step``); ``agent`` and
``block`` steps call the AgentInvoker and BlockInvoker protocols, which the integration
implements (creating agent executions and nested workflow executions).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Protocol, TypeVar

from handlers.agents.runner import CancelSignal
from handlers.agents.workflows.definition import AgentCall, BlockCall, StepDefinition
from handlers.agents.workflows.durations import (
    MAX_WAIT_SECONDS,
    DurationError,
    parse_duration,
    parse_timestamp,
)
from handlers.agents.workflows.records import FinalStatus

T = TypeVar("T")

MAX_BLOCK_DEPTH = 8
"""Nested block calls allowed below the top workflow."""


class StepFailed(Exception):
    """The attempt failed; the message becomes the step's error. A non-retryable failure
    (an input the step can never accept) ends the step without further attempts."""

    def __init__(self, message: str, *, retryable: bool = True, timed_out: bool = False) -> None:
        super().__init__(message)
        self.retryable = retryable
        self.timed_out = timed_out
        """The attempt ran past the step's ``timeout`` (retried only when ``on`` says so)."""


class StepCancelled(Exception):
    """The step stopped because cancellation was requested."""


@dataclass(frozen=True)
class StepContext:
    """What a runner knows of the step it runs."""

    execution_id: str
    step: StepDefinition
    attempt: int
    """1 for the first attempt."""
    cancel: CancelSignal
    """Requested when the workflow is cancelled or fails elsewhere: stop soon."""
    call_path: tuple[str, ...]
    """The workflows calling this one through block steps, outermost first, this one last."""
    first_started_at: datetime
    """When the step first started, also before a resume (a wait's duration counts from it)."""
    mark_waiting: Callable[[], Awaitable[None]]
    """Record the step (and, when nothing else runs, the workflow) as waiting."""


class StepRunner(Protocol):
    """Runs one attempt of a step: returns its output or raises StepFailed/StepCancelled."""

    async def run(self, params: object, context: StepContext) -> object: ...


async def until_cancelled(awaitable: Awaitable[T], cancel: CancelSignal) -> T:
    """Await ``awaitable``, or cancel it and raise StepCancelled once ``cancel`` is requested."""
    work = asyncio.ensure_future(awaitable)
    watcher = asyncio.ensure_future(cancel.wait())
    try:
        await asyncio.wait({work, watcher}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in (work, watcher):
            if not task.done():
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
    if work.done() and not work.cancelled():
        return work.result()
    raise StepCancelled("cancelled")


class TransformStepRunner:
    """A transform's output is its evaluated ``value``."""

    async def run(self, params: object, context: StepContext) -> object:
        return params


class WaitStepRunner:
    """Waits for ``duration`` (from the step's first start) or ``until`` a timestamp, as
    ``waiting``; cancellation ends the wait at once. Output: ``{"waited_until": <ISO time>}``."""

    async def run(self, params: object, context: StepContext) -> object:
        deadline = _deadline(params, context.first_started_at)
        remaining = (deadline - datetime.now(UTC)).total_seconds()
        if remaining > 0:
            await context.mark_waiting()
            await until_cancelled(asyncio.sleep(remaining), context.cancel)
        return {"waited_until": deadline.isoformat().replace("+00:00", "Z")}


def _deadline(params: object, started_at: datetime) -> datetime:
    try:
        if isinstance(params, dict) and "duration" in params:
            seconds = parse_duration(params["duration"], maximum=MAX_WAIT_SECONDS, allow_zero=True)
            return started_at + timedelta(seconds=seconds)
        if isinstance(params, dict) and "until" in params:
            return parse_timestamp(params["until"])
    except DurationError as exc:
        raise StepFailed(str(exc), retryable=False) from None
    raise StepFailed("a wait step needs duration or until", retryable=False)


# -- agents --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class AgentRequest:
    agent: str
    """The agent's slug."""
    input: object
    execution_id: str
    """The workflow execution the step belongs to."""
    step_id: str
    attempt: int
    timeout_seconds: float | None


@dataclass(frozen=True)
class AgentResult:
    status: FinalStatus
    output: object = None
    """The agent's output JSON: the step's output."""
    error: str | None = None
    agent_execution_id: str | None = None


class AgentInvoker(Protocol):
    """Runs an agent for a step (the integration creates and stores an agent execution and
    calls ``handlers.agents.runner.run``); must honour ``cancel`` and return ``cancelled``."""

    async def run_agent(self, request: AgentRequest, cancel: CancelSignal) -> AgentResult: ...


class AgentStepRunner:
    def __init__(self, invoker: AgentInvoker) -> None:
        self.invoker = invoker

    async def run(self, params: object, context: StepContext) -> object:
        assert isinstance(context.step.config, AgentCall)
        request = AgentRequest(
            agent=context.step.config.agent,
            input=params,
            execution_id=context.execution_id,
            step_id=context.step.id,
            attempt=context.attempt,
            timeout_seconds=context.step.timeout_seconds,
        )
        result = await self.invoker.run_agent(request, context.cancel)
        return _outcome(result.status, result.output, result.error, f"agent {request.agent!r}")


def _outcome(status: FinalStatus, value: object, error: str | None, what: str) -> object:
    if status == "completed":
        return value
    if status == "cancelled":
        raise StepCancelled(error or "cancelled")
    raise StepFailed(error or f"{what} failed")


# -- blocks --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class BlockRequest:
    block: str
    """The block workflow's slug."""
    version: str | None
    """A version id or tag; None: the latest."""
    input: object
    execution_id: str
    step_id: str
    attempt: int
    call_path: tuple[str, ...]
    """The calling workflows, outermost first; pass it (plus the block) to the nested run."""


@dataclass(frozen=True)
class BlockResult:
    status: FinalStatus
    result: object = None
    """The block's result: the step's output."""
    error: str | None = None


class BlockInvoker(Protocol):
    """Runs a block workflow for a step, typically with the same WorkflowEngine, passing
    ``call_path + (block,)`` as the nested run's call path and ``cancel`` as its signal."""

    async def run_block(self, request: BlockRequest, cancel: CancelSignal) -> BlockResult: ...


class BlockStepRunner:
    """Refuses recursion (a block already on the call path) and nesting beyond
    MAX_BLOCK_DEPTH, then calls the invoker."""

    def __init__(self, invoker: BlockInvoker) -> None:
        self.invoker = invoker

    async def run(self, params: object, context: StepContext) -> object:
        config = context.step.config
        assert isinstance(config, BlockCall)
        if config.block in context.call_path:
            chain = " -> ".join((*context.call_path, config.block))
            raise StepFailed(f"block recursion: {chain}", retryable=False)
        if len(context.call_path) > MAX_BLOCK_DEPTH:
            raise StepFailed(f"blocks nested deeper than {MAX_BLOCK_DEPTH}", retryable=False)
        request = BlockRequest(
            block=config.block,
            version=config.version,
            input=params,
            execution_id=context.execution_id,
            step_id=context.step.id,
            attempt=context.attempt,
            call_path=context.call_path,
        )
        result = await self.invoker.run_block(request, context.cancel)
        return _outcome(result.status, result.result, result.error, f"block {config.block!r}")
