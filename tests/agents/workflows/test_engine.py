"""The engine: order, parallelism, failures, retries, timeouts, waits, cancellation, resume and
the journal, with real transform, wait and http steps (against a real loopback server)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from handlers.agents.egress import EgressPolicy
from handlers.agents.runner import CancelSignal
from handlers.agents.workflows import (
    HttpStepRunner,
    MemoryJournal,
    StepContext,
    StepRecord,
    WorkflowEngine,
    WorkflowState,
    standard_runners,
)
from tests.agents.workflows.support import LocalServer, http_server, poll_until, workflow


@pytest.fixture
def server() -> Iterator[LocalServer]:
    with http_server() as running:
        yield running


@pytest.fixture
def engine() -> WorkflowEngine:
    loopback = HttpStepRunner(egress=EgressPolicy.parse(["127.0.0.1/32"]))  # the test server
    return WorkflowEngine(standard_runners(http=loopback), cancel_grace_seconds=2.0)


def overlap(first: StepRecord, second: StepRecord) -> bool:
    assert first.started_at and first.finished_at and second.started_at and second.finished_at
    return first.started_at < second.finished_at and second.started_at < first.finished_at


async def test_a_multi_step_workflow_passes_data_and_journals_every_transition(
    engine: WorkflowEngine, server: LocalServer
) -> None:
    definition = workflow(
        f"""\
        name: order
        inputs:
          items: array
          customer: {{type: string, default: guest}}
        steps:
          - id: total
            type: transform
            value:
              count: ${{{{ len(inputs.items) }}}}
              sum: ${{{{ sum(inputs.items) }}}}
          - id: post
            type: http
            method: POST
            url: {server.url}/echo
            query: {{who: "${{{{ upper(inputs.customer) }}}}"}}
            json: ${{{{ steps.total.output }}}}
          - id: summary
            type: transform
            value: "${{{{ inputs.customer }}}} ordered ${{{{ steps.post.output.body.json.count }}}}"
        result:
          text: ${{{{ steps.summary.output }}}}
          echoed: ${{{{ steps.post.output.body.query }}}}
        """
    )
    journal = MemoryJournal()
    outcome = await engine.run(definition, {"items": [2, 3]}, journal=journal, execution_id="x1")

    assert outcome.status == "completed", outcome.error
    assert outcome.result == {"text": "guest ordered 2", "echoed": {"who": "GUEST"}}
    assert outcome.steps["total"].output == {"count": 2, "sum": 5}
    post = outcome.steps["post"]
    assert post.input == {
        "url": f"{server.url}/echo",
        "query": {"who": "GUEST"},
        "json": {"count": 2, "sum": 5},
    }
    assert post.output["status"] == 200  # type: ignore[index]
    assert post.attempts == 1 and post.error is None
    assert post.started_at and post.finished_at and post.started_at <= post.finished_at
    # Dependency order, and every transition journaled.
    assert outcome.steps["total"].finished_at <= post.started_at  # type: ignore[operator]
    for step_id in ("total", "post", "summary"):
        assert journal.step_statuses(step_id) == ["pending", "running", "completed"]
    assert journal.workflow_statuses() == ["running", "completed"]
    assert journal.workflow == WorkflowState(
        "completed",
        outcome.started_at,
        outcome.finished_at,
        outcome.result,
        None,
    )
    api = journal.steps["post"].to_api()
    assert api["stepId"] == "post" and api["status"] == "completed"
    assert isinstance(api["durationMs"], int) and str(api["startedAt"]).endswith("Z")


async def test_independent_steps_run_in_parallel(
    engine: WorkflowEngine, server: LocalServer
) -> None:
    definition = workflow(
        f"""\
        name: fan-out
        steps:
          - id: left
            type: http
            url: {server.url}/slow?seconds=0.4
          - id: right
            type: http
            url: {server.url}/slow?seconds=0.4
          - id: join
            type: transform
            value: ${{{{ [steps.left.status, steps.right.status] }}}}
        """
    )
    started = time.monotonic()
    outcome = await engine.run(definition, {}, journal=MemoryJournal(), execution_id="x2")

    assert outcome.status == "completed"
    assert overlap(outcome.steps["left"], outcome.steps["right"])
    assert time.monotonic() - started < 0.75  # not 0.8 s one after the other
    assert outcome.steps["join"].output == ["completed", "completed"]


async def test_a_failed_step_fails_the_workflow_and_stops_the_others(
    engine: WorkflowEngine, server: LocalServer
) -> None:
    definition = workflow(
        f"""\
        name: failing
        steps:
          - id: broken
            type: http
            url: {server.url}/status/500
          - id: after
            type: transform
            value: ${{{{ steps.broken.output }}}}
          - id: slow
            type: wait
            duration: 30s
        """
    )
    journal = MemoryJournal()
    started = time.monotonic()
    outcome = await engine.run(definition, {}, journal=journal, execution_id="x3")

    assert time.monotonic() - started < 2
    assert outcome.status == "failed"
    assert outcome.error is not None
    assert outcome.error.startswith(
        f"step 'broken' failed: GET {server.url}/status/500 answered 500"
    )
    assert outcome.result is None
    assert outcome.steps["after"].status == "skipped"
    assert outcome.steps["after"].started_at is None
    assert outcome.steps["slow"].status == "cancelled"
    assert outcome.steps["slow"].error == "cancelled: step 'broken' failed"
    assert journal.workflow_statuses()[-1] == "failed"


async def test_allow_failure_lets_dependants_see_the_error(
    engine: WorkflowEngine, server: LocalServer
) -> None:
    definition = workflow(
        f"""\
        name: tolerant
        steps:
          - id: optional
            type: http
            url: {server.url}/status/404
            allow_failure: true
          - id: fallback
            type: transform
            value:
              status: ${{{{ steps.optional.status }}}}
              error: ${{{{ steps.optional.error }}}}
              value: ${{{{ default(steps.optional.output, 'fallback') }}}}
        result: ${{{{ steps.fallback.output.value }}}}
        """
    )
    outcome = await engine.run(definition, {}, journal=MemoryJournal(), execution_id="x4")

    assert outcome.status == "completed"
    assert outcome.result == "fallback"
    assert outcome.steps["optional"].status == "failed"
    seen = outcome.steps["fallback"].output
    assert isinstance(seen, dict)
    assert seen["status"] == "failed"
    assert "answered 404" in seen["error"]


async def test_retries_back_off_and_succeed(engine: WorkflowEngine, server: LocalServer) -> None:
    definition = workflow(
        f"""\
        name: flaky
        steps:
          - id: call
            type: http
            url: {server.url}/flaky/one?fail=2
            retries: {{count: 3, backoff: 100ms, factor: 2}}
        """
    )
    journal = MemoryJournal()
    started = time.monotonic()
    outcome = await engine.run(definition, {}, journal=journal, execution_id="x5")

    assert outcome.status == "completed"
    assert time.monotonic() - started >= 0.3  # 0.1 s then 0.2 s of backoff
    record = outcome.steps["call"]
    assert record.attempts == 3 and record.error is None
    assert record.output == {
        "status": 200,
        "headers": record.output["headers"],  # type: ignore[index]
        "body": {"hit": 3},
    }
    assert server.hits["/flaky/one"] == 3
    attempts = [
        (r.status, r.attempts, bool(r.error)) for r in journal.events if isinstance(r, StepRecord)
    ]
    assert attempts == [
        ("pending", 0, False),
        ("running", 1, False),
        ("running", 1, True),  # the first error, visible while backing off
        ("running", 2, True),
        ("running", 2, True),
        ("running", 3, True),
        ("completed", 3, False),
    ]


async def test_retries_run_out(engine: WorkflowEngine, server: LocalServer) -> None:
    definition = workflow(
        f"""\
        name: flaky
        steps:
          - id: call
            type: http
            url: {server.url}/flaky/two?fail=5
            retries: {{count: 1, backoff: 0}}
        """
    )
    outcome = await engine.run(definition, {}, journal=MemoryJournal(), execution_id="x6")

    assert outcome.status == "failed"
    assert outcome.steps["call"].attempts == 2
    assert "answered 503" in (outcome.steps["call"].error or "")
    assert server.hits["/flaky/two"] == 2


async def test_a_step_timeout_ends_each_attempt(
    engine: WorkflowEngine, server: LocalServer
) -> None:
    definition = workflow(
        f"""\
        name: slow
        steps:
          - id: call
            type: http
            url: {server.url}/slow?seconds=3
            timeout: 200ms
            allow_failure: true
          - id: nap
            type: wait
            duration: 10s
            timeout: 0.2
            retries: {{count: 1, backoff: 0}}
            allow_failure: true
        """
    )
    started = time.monotonic()
    outcome = await engine.run(definition, {}, journal=MemoryJournal(), execution_id="x7")

    assert time.monotonic() - started < 1.5
    assert outcome.status == "completed"
    assert "timed out after 0.2 s" in (outcome.steps["call"].error or "")
    assert outcome.steps["nap"].error == "timed out after 0.2 s"
    assert outcome.steps["nap"].attempts == 2


async def test_a_wait_step_makes_the_workflow_wait(engine: WorkflowEngine) -> None:
    definition = workflow(
        """\
        name: pause
        steps:
          - id: nap
            type: wait
            duration: 400ms
          - id: past
            type: wait
            until: 2001-01-01T00:00:00Z
            needs: nap
        """
    )
    journal = MemoryJournal()
    run = asyncio.create_task(engine.run(definition, {}, journal=journal, execution_id="x8"))
    await poll_until(lambda: journal.workflow is not None and journal.workflow.status == "waiting")
    assert journal.steps["nap"].status == "waiting"
    outcome = await run

    assert outcome.status == "completed"
    assert journal.workflow_statuses() == ["running", "waiting", "running", "completed"]
    assert journal.step_statuses("nap") == ["pending", "running", "waiting", "completed"]
    assert journal.step_statuses("past") == ["pending", "running", "completed"]  # never waited
    nap = outcome.steps["nap"]
    assert nap.finished_at and nap.started_at
    assert (nap.finished_at - nap.started_at).total_seconds() >= 0.39
    assert outcome.steps["past"].output == {"waited_until": "2001-01-01T00:00:00Z"}


async def test_cancelling_during_a_wait(engine: WorkflowEngine, server: LocalServer) -> None:
    definition = workflow(
        f"""\
        name: cancel-wait
        steps:
          - id: nap
            type: wait
            duration: 30s
          - id: slow
            type: http
            url: {server.url}/slow?seconds=5
          - id: later
            type: http
            url: {server.url}/echo
            needs: nap
        """
    )
    journal = MemoryJournal()
    cancel = CancelSignal()
    run = asyncio.create_task(
        engine.run(definition, {}, journal=journal, execution_id="x9", cancel=cancel)
    )
    await poll_until(lambda: "nap" in journal.steps and journal.steps["nap"].status == "waiting")
    await poll_until(lambda: server.hits["/slow"] == 1)
    started = time.monotonic()
    cancel.request()
    outcome = await run

    assert time.monotonic() - started < 1
    assert outcome.status == "cancelled" and outcome.error == "cancelled"
    assert outcome.steps["nap"].status == "cancelled"
    assert outcome.steps["slow"].status == "cancelled"  # the running request was abandoned
    assert outcome.steps["later"].status == "cancelled"
    assert outcome.steps["later"].error == "cancelled before it ran"
    assert server.hits["/echo"] == 0
    assert journal.workflow_statuses()[-1] == "cancelled"


async def test_cancelling_between_steps_starts_nothing_more(
    engine: WorkflowEngine, server: LocalServer
) -> None:
    definition = workflow(
        f"""\
        name: cancel-chain
        steps:
          - id: first
            type: http
            url: {server.url}/flaky/first
          - id: second
            type: http
            url: {server.url}/flaky/second
            needs: first
        """
    )
    cancel = CancelSignal()

    class CancellingJournal(MemoryJournal):
        """Cancellation arrives just as the first step is recorded completed."""

        async def record_step(self, record: StepRecord) -> None:
            await super().record_step(record)
            if record.step_id == "first" and record.status == "completed":
                cancel.request()

    journal = CancellingJournal()
    outcome = await engine.run(definition, {}, journal=journal, execution_id="x10", cancel=cancel)

    assert outcome.status == "cancelled"
    assert outcome.steps["first"].status == "completed"
    assert outcome.steps["second"].status == "cancelled"
    assert journal.step_statuses("second") == ["pending", "cancelled"]
    assert server.hits["/flaky/second"] == 0


async def test_a_polled_cancellation_is_seen_during_a_wait(engine: WorkflowEngine) -> None:
    definition = workflow(
        """\
        name: polled
        steps:
          - id: nap
            type: wait
            duration: 30s
        """
    )
    flag = asyncio.Event()  # stands for the execution's cancel_requested_at column

    async def poll() -> bool:
        return flag.is_set()

    cancel = CancelSignal(poll=poll, poll_interval=0.02)
    journal = MemoryJournal()
    run = asyncio.create_task(
        engine.run(definition, {}, journal=journal, execution_id="x16", cancel=cancel)
    )
    await poll_until(lambda: journal.workflow is not None and journal.workflow.status == "waiting")
    flag.set()
    outcome = await asyncio.wait_for(run, timeout=2)
    assert outcome.status == "cancelled"
    assert outcome.steps["nap"].status == "cancelled"


async def test_a_run_cancelled_before_it_starts_runs_nothing(
    engine: WorkflowEngine, server: LocalServer
) -> None:
    definition = workflow(
        f"""\
        name: cancelled
        steps:
          - id: call
            type: http
            url: {server.url}/echo
        """
    )
    cancel = CancelSignal()
    cancel.request()
    outcome = await engine.run(
        definition, {}, journal=MemoryJournal(), execution_id="x11", cancel=cancel
    )
    assert outcome.status == "cancelled"
    assert outcome.steps["call"].status == "cancelled"
    assert server.hits["/echo"] == 0


async def test_resume_keeps_completed_steps_and_runs_the_rest(
    engine: WorkflowEngine, server: LocalServer
) -> None:
    definition = workflow(
        f"""\
        name: resumable
        steps:
          - id: a
            type: http
            url: {server.url}/flaky/a
          - id: b
            type: http
            url: {server.url}/flaky/b
            needs: a
          - id: c
            type: http
            method: POST
            url: {server.url}/flaky/c
            json: ${{{{ [steps.a.output.body, steps.b.output.body] }}}}
        result: ${{{{ steps.c.output.body }}}}
        """
    )
    first = await engine.run(definition, {}, journal=MemoryJournal(), execution_id="x12")
    assert first.status == "completed"
    assert dict(server.hits) == {"/flaky/a": 1, "/flaky/b": 1, "/flaky/c": 1}
    # A worker died while c ran: a and b were completed, c was running.
    crashed = replace(first.steps["c"], status="running", output=None, finished_at=None)
    previous = [first.steps["a"], first.steps["b"], crashed]

    journal = MemoryJournal()
    resumed = await engine.run(
        definition, {}, journal=journal, execution_id="x12", previous=previous
    )

    assert resumed.status == "completed"
    assert dict(server.hits) == {"/flaky/a": 1, "/flaky/b": 1, "/flaky/c": 2}
    assert resumed.steps["a"] == first.steps["a"]  # kept as it was
    assert resumed.steps["c"].input == {
        "url": f"{server.url}/flaky/c",
        "json": [{"hit": 1}, {"hit": 1}],
    }
    assert resumed.result == {"hit": 2}
    journaled = {r.step_id for r in journal.events if isinstance(r, StepRecord)}
    assert journaled == {"c"}  # completed records are not written again


async def test_a_resumed_wait_counts_from_its_first_start(engine: WorkflowEngine) -> None:
    definition = workflow(
        """\
        name: long-wait
        steps:
          - id: nap
            type: wait
            duration: 10s
        """
    )
    long_ago = datetime.now(UTC) - timedelta(seconds=11)
    previous = [StepRecord("nap", "waiting", started_at=long_ago, attempts=1)]
    started = time.monotonic()
    outcome = await engine.run(
        definition, {}, journal=MemoryJournal(), execution_id="x13", previous=previous
    )
    assert outcome.status == "completed"
    assert time.monotonic() - started < 1
    expected_end = (long_ago + timedelta(seconds=10)).isoformat().replace("+00:00", "Z")
    assert outcome.steps["nap"].output == {"waited_until": expected_end}


async def test_overrides_replace_steps_without_running_them(
    engine: WorkflowEngine, server: LocalServer
) -> None:
    definition = workflow(
        f"""\
        name: overridden
        steps:
          - id: fetch
            type: http
            url: {server.url}/echo
          - id: use
            type: transform
            value: ${{{{ steps.fetch.output.answer }}}}
        result: ${{{{ steps.use.output }}}}
        """
    )
    outcome = await engine.run(
        definition,
        {},
        journal=MemoryJournal(),
        execution_id="x14",
        overrides={"fetch": {"answer": 42}},
    )
    assert outcome.status == "completed" and outcome.result == 42
    assert server.hits["/echo"] == 0


async def test_invalid_inputs_and_unknown_steps(engine: WorkflowEngine) -> None:
    definition = workflow(
        """\
        name: typed
        inputs:
          n: integer
        steps:
          - id: double
            type: transform
            value: ${{ inputs.n * 2 }}
        """
    )
    outcome = await engine.run(definition, {"n": "two"}, journal=MemoryJournal(), execution_id="x")
    assert outcome.status == "failed"
    assert outcome.error == "invalid input: n: expected an integer, got string"
    assert outcome.steps["double"].status == "skipped"

    with pytest.raises(ValueError, match="unknown steps"):
        await engine.run(
            definition, {"n": 1}, journal=MemoryJournal(), execution_id="x", overrides={"x": {}}
        )


async def test_a_failing_expression_fails_its_step(engine: WorkflowEngine) -> None:
    definition = workflow(
        """\
        name: bad-expression
        inputs:
          text: string
        steps:
          - id: broken
            type: transform
            value: ${{ inputs.text + 1 }}
            retries: 3
        """
    )
    outcome = await engine.run(definition, {"text": "a"}, journal=MemoryJournal(), execution_id="x")
    assert outcome.status == "failed"
    assert outcome.steps["broken"].error == (
        "cannot evaluate the step's parameters: ${{ inputs.text + 1 }}: "
        "cannot apply + to string and number"
    )
    assert outcome.steps["broken"].attempts == 0


async def test_a_journal_failure_aborts_the_run(
    engine: WorkflowEngine, server: LocalServer
) -> None:
    class BrokenJournal(MemoryJournal):
        async def record_step(self, record: StepRecord) -> None:
            if record.step_id == "second" and record.status == "running":
                raise ConnectionError("database gone")
            await super().record_step(record)

    definition = workflow(
        f"""\
        name: journal
        steps:
          - id: slow
            type: http
            url: {server.url}/slow?seconds=5
          - id: second
            type: wait
            duration: 10ms
        """
    )
    started = time.monotonic()
    with pytest.raises(ConnectionError, match="database gone"):
        await engine.run(definition, {}, journal=BrokenJournal(), execution_id="x15")
    assert time.monotonic() - started < 2  # the slow request was cancelled, not awaited


async def test_a_step_that_ignores_cancellation_is_forced_after_the_grace_period() -> None:
    class StubbornRunner:
        """A runner that never looks at its CancelSignal."""

        async def run(self, params: object, context: StepContext) -> object:
            await asyncio.sleep(30)
            return None

    definition = workflow(
        """\
        name: stubborn
        steps:
          - id: think
            type: agent
            agent: anything
        """
    )
    engine = WorkflowEngine({"agent": StubbornRunner()}, cancel_grace_seconds=0.2)
    cancel = CancelSignal()
    journal = MemoryJournal()
    run = asyncio.create_task(
        engine.run(definition, {}, journal=journal, execution_id="x17", cancel=cancel)
    )
    await poll_until(
        lambda: "think" in journal.steps and journal.steps["think"].status == "running"
    )
    cancel.request()
    outcome = await asyncio.wait_for(run, timeout=2)
    assert outcome.status == "cancelled"
    assert outcome.steps["think"].error == "cancelled (did not stop within the grace period)"
