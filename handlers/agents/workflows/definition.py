"""A parsed workflow definition (see README.md for the YAML format ``parse`` reads)."""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Literal

from handlers.agents.workflows.templates import Template

WorkflowKind = Literal["workflow", "block"]
InputType = Literal["string", "number", "integer", "boolean", "object", "array", "file"]
StepType = Literal["agent", "block", "http", "transform", "wait"]

INPUT_TYPES: tuple[InputType, ...] = (
    "string",
    "number",
    "integer",
    "boolean",
    "object",
    "array",
    "file",
)
STEP_TYPES: tuple[StepType, ...] = ("agent", "block", "http", "transform", "wait")
HTTP_METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS")


@dataclass(frozen=True)
class Position:
    """1-based line and column in the YAML source."""

    line: int
    column: int


@dataclass(frozen=True)
class InputDefinition:
    name: str
    type: InputType
    required: bool
    default: object = None
    """Used when the input is not given (and not required); None: no default."""
    description: str | None = None


@dataclass(frozen=True)
class RetryPolicy:
    """``count`` more attempts after a failure of a kind in ``on`` (the YAML's ``retry_on``:
    ``failed``, ``timeout``);
    the n-th retry waits ``min(backoff_seconds * factor ** (n - 1), max_backoff_seconds)``,
    all of it (``jitter`` ``none``) or a uniformly random part of it (``full``)."""

    count: int = 0
    backoff_seconds: float = 1.0
    factor: float = 2.0
    max_backoff_seconds: float = 300.0
    jitter: str = "none"
    on: frozenset[str] = frozenset({"failed", "timeout"})

    def retries(self, *, timed_out: bool) -> bool:
        """Whether a failed attempt of this kind is retried at all."""
        return ("timeout" if timed_out else "failed") in self.on

    def delay(self, retry: int) -> float:
        """Seconds to wait before retry number ``retry`` (1-based)."""
        nominal = min(self.backoff_seconds * self.factor ** (retry - 1), self.max_backoff_seconds)
        return random.uniform(0.0, nominal) if self.jitter == "full" else nominal


@dataclass(frozen=True)
class AgentCall:
    agent: str
    """The agent's slug."""


@dataclass(frozen=True)
class BlockCall:
    block: str
    """The block workflow's slug."""
    version: str | None = None
    """A version id or release tag; None: the latest."""


@dataclass(frozen=True)
class HttpRequest:
    method: str
    expect_status: tuple[int, ...] = ()
    """Statuses that count as success; empty: any 2xx."""


StepConfig = AgentCall | BlockCall | HttpRequest | None


@dataclass(frozen=True)
class StepDefinition:
    """One step. ``params`` is the template evaluated into the step's input: the agent's or
    block's input, ``{url, headers, query, json}`` for http, the value of a transform,
    ``{duration}`` or ``{until}`` for wait."""

    id: str
    type: StepType
    params: Template
    config: StepConfig = None
    needs: tuple[str, ...] = ()
    """Every step this one waits for: ``needs`` plus the steps its expressions reference."""
    timeout_seconds: float | None = None
    """Per attempt; None: no limit."""
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    allow_failure: bool = False
    description: str | None = None
    position: Position = Position(1, 1)


@dataclass(frozen=True)
class WorkflowDefinition:
    """A validated workflow: steps in file order, dependencies without cycles, every
    reference resolved."""

    name: str
    """The slug."""
    kind: WorkflowKind
    steps: tuple[StepDefinition, ...]
    inputs: tuple[InputDefinition, ...] = ()
    result: Template | None = None
    """None: the result is null."""
    title: str | None = None
    description: str | None = None
    document: dict[str, object] = field(default_factory=dict)
    """The YAML as JSON (the API's ``definition``)."""

    def step(self, step_id: str) -> StepDefinition:
        return next(step for step in self.steps if step.id == step_id)
