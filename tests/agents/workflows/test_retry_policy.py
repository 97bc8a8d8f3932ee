"""Workflow step retries: which failures are retried (``on``) and the backoff's jitter."""

from __future__ import annotations

import pytest

from handlers.agents.workflows import MemoryJournal, StepContext, WorkflowEngine
from handlers.agents.workflows.definition import RetryPolicy
from handlers.agents.workflows.parse import WorkflowValidationError
from handlers.agents.workflows.steps import StepFailed
from tests.agents.workflows.support import workflow


def test_retries_parse_jitter_and_the_kinds_retried() -> None:
    definition = workflow(
        """\
        name: r
        steps:
          - id: a
            type: transform
            value: 1
            retries: {count: 2, backoff: 1s, jitter: full, retry_on: [timeout]}
          - id: b
            type: transform
            value: 1
            retries: 3
        """
    )
    first, second = definition.steps
    assert (first.retry.jitter, first.retry.on) == ("full", frozenset({"timeout"}))
    assert (second.retry.jitter, second.retry.on) == ("none", frozenset({"failed", "timeout"}))


@pytest.mark.parametrize(
    ("field", "message"),
    [
        ("jitter: some", "jitter must be 'none' or 'full'"),
        ("retry_on: [crash]", "retry_on must be a non-empty list of 'failed' and 'timeout'"),
        ("retry_on: []", "retry_on must be a non-empty list of 'failed' and 'timeout'"),
    ],
)
def test_bad_retry_fields_are_reported(field: str, message: str) -> None:
    text = (
        "name: r\nsteps:\n  - id: a\n    type: transform\n    value: 1\n"
        f"    retries: {{count: 1, {field}}}\n"
    )
    with pytest.raises(WorkflowValidationError) as caught:
        workflow(text)
    assert message in str(caught.value)


def test_full_jitter_waits_a_random_part_of_the_nominal_delay() -> None:
    fixed = RetryPolicy(count=3, backoff_seconds=2.0, factor=2.0, max_backoff_seconds=5.0)
    jittered = RetryPolicy(3, 2.0, 2.0, 5.0, jitter="full")
    assert [fixed.delay(n) for n in (1, 2, 3)] == [2.0, 4.0, 5.0]
    delays = [jittered.delay(2) for _ in range(200)]
    assert all(0.0 <= delay <= 4.0 for delay in delays)
    assert len({round(delay, 6) for delay in delays}) > 100  # spread, not one value


async def test_a_step_retries_only_the_failures_retry_on_lists() -> None:
    attempts: list[int] = []

    class Failing:
        async def run(self, params: object, context: StepContext) -> object:
            attempts.append(context.attempt)
            raise StepFailed("the service answered 503")

    definition = workflow(
        """\
        name: only-timeouts
        steps:
          - id: call
            type: agent
            agent: flaky
            retries: {count: 3, backoff: 0s, retry_on: [timeout]}
        """
    )
    outcome = await WorkflowEngine({"agent": Failing()}).run(
        definition, {}, journal=MemoryJournal(), execution_id="x1"
    )
    assert outcome.status == "failed"
    assert attempts == [1]  # a plain failure is not in `retry_on`: no retry
