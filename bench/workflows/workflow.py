"""The workflow under test: three ``transform`` steps in a chain (``a`` -> ``b`` -> ``c``),
which need no network and no agent process, so that what is measured is the engine and the
service around it; its creation through the API, the check of a run's result, the steps' own
run times, and the engine run directly in this process (the baseline)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from bench.agents.services import BenchError
from generated.agents import models
from generated.agents.client import ServiceClient
from handlers.agents.workflows import MemoryJournal, WorkflowEngine, parse_workflow

__all__ = [
    "STEP_IDS",
    "TERMINAL",
    "EngineDirect",
    "check_result",
    "create_workflow",
    "expected_result",
    "seconds_between",
    "step_seconds",
    "workflow_yaml",
]

STEP_IDS = ("a", "b", "c")
TERMINAL = {"completed", "failed", "cancelled", "rejected"}


def workflow_yaml(slug: str) -> str:
    """The definition: ``n`` -> ``n + 1`` -> ``* 2`` -> ``- 1``, the last step's output as
    the result."""
    return (
        f"name: {slug}\n"
        f"title: Bench chain {slug}\n"
        "description: Three trivial transform steps in a chain.\n"
        "inputs:\n"
        "  n: integer\n"
        "steps:\n"
        "  - id: a\n"
        "    type: transform\n"
        "    value: ${{ inputs.n + 1 }}\n"
        "  - id: b\n"
        "    type: transform\n"
        "    value: ${{ steps.a.output * 2 }}\n"
        "  - id: c\n"
        "    type: transform\n"
        "    value: ${{ steps.b.output - 1 }}\n"
        "result: ${{ steps.c.output }}\n"
    )


def expected_result(n: int) -> int:
    """What a run with input ``n`` must give."""
    return (n + 1) * 2 - 1


def check_result(n: int, status: str | None, result: Any, error: Any = None) -> None:
    """Raise ``BenchError`` unless the run of ``n`` completed with the expected result."""
    if status != "completed" or result != expected_result(n):
        raise BenchError(f"run {n} ended {status} with result {result!r} (error {error!r})")


def create_workflow(client: ServiceClient, slug: str) -> str:
    """Create the workflow ``slug`` through the API; its slug."""
    created = client.workflows.create({"yamlContent": workflow_yaml(slug)})
    return created.slug


def seconds_between(start: object, end: object) -> float:
    """``end - start`` in seconds; ``BenchError`` when either is not a recorded time."""
    if not isinstance(start, datetime) or not isinstance(end, datetime):
        raise BenchError(f"missing start or end time ({start!r}, {end!r})")
    return (end - start).total_seconds()


def step_seconds(steps: Sequence[models.WorkflowStepResult]) -> list[float]:
    """Each of the three steps' own run time (``completedAt - startedAt``), in ``STEP_IDS``
    order; ``BenchError`` when a step is missing or did not complete."""
    by_id = {step.step_id: step for step in steps}
    times = []
    for step_id in STEP_IDS:
        step = by_id.get(step_id)
        if step is None or step.status.value != "completed":
            raise BenchError(f"step {step_id} is {step and step.status.value}, not completed")
        times.append(seconds_between(step.started_at, step.completed_at))
    return times


class EngineDirect:
    """The baseline: the same definition run by ``WorkflowEngine`` in this process, with
    the built-in transform runner and an in-memory journal (no HTTP, no database, no
    queue). Use it as a context manager (it holds an event loop)."""

    def __init__(self) -> None:
        self.definition = parse_workflow(workflow_yaml("bench-direct"))
        self.engine = WorkflowEngine({})
        self.runner = asyncio.Runner()
        self.count = 0

    def __enter__(self) -> EngineDirect:
        return self

    def __exit__(self, *exc: object) -> None:
        self.runner.close()

    def run_seconds(self, n: int) -> tuple[float, float]:
        """One run of input ``n``: (wall seconds, sum of its steps' own run times)."""
        self.count += 1
        started = time.perf_counter()
        outcome = self.runner.run(
            self.engine.run(
                self.definition,
                {"n": n},
                journal=MemoryJournal(),
                execution_id=f"direct-{self.count}",
            )
        )
        elapsed = time.perf_counter() - started
        check_result(n, outcome.status, outcome.result, outcome.error)
        steps = sum(
            seconds_between(record.started_at, record.finished_at)
            for record in outcome.steps.values()
        )
        return elapsed, steps

    def runs_per_second(self, count: int) -> float:
        """``count`` runs one after the other: runs/s."""
        started = time.perf_counter()
        for n in range(count):
            self.run_seconds(n)
        return count / (time.perf_counter() - started)
