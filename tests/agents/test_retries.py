"""Retries declared in the manifest (``config.retries``), on SQLite and PostgreSQL with real agent
programs: the declared attempts with at least the declared backoff between them (``jitter:
none``), each attempt kept (``include=attempts``), ``retryOn`` choosing the outcomes, a cancel
stopping further attempts; and a lost worker's execution retried after its backoff."""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta
from functools import partial

import pytest
from sqlalchemy.orm import Session

from generated.agents import models
from generated.agents.client import ServiceClient, ServiceValidationError
from handlers.agents.execution.leases import claim, claim_next, reap_stale
from handlers.agents.storage.database import Database
from handlers.agents.storage.migrate import upgrade
from handlers.agents.storage.schema import Agent, Execution, ExecutionAttempt, utc_now
from tests.agents.queue_support import (
    attempts_of,
    config,
    execution,
    no_jitter_retries,
    poll,
    status_of,
)
from tests.agents.run_support import TERMINAL, new_agent, wait_for
from tests.agents.support import Storage

RETRYING = "retrying: attempt "


def _retry_time(reason: str | None) -> datetime:
    """The time in a pendingReason "retrying: attempt N starts after <time>"."""
    assert reason is not None and reason.startswith(RETRYING), reason
    return datetime.fromisoformat(reason.split(" starts after ", 1)[1])


def _follow(
    client: ServiceClient, execution_id: str, timeout: float = 30.0
) -> tuple[models.AgentExecutionSummary, list[models.AgentExecutionSummary]]:
    """The ended execution (with its attempts) and every state it was seen in meanwhile."""
    seen: list[models.AgentExecutionSummary] = []
    deadline = time.monotonic() + timeout
    while True:
        current = execution(client, execution_id)
        seen.append(current)
        if status_of(current) in TERMINAL:
            return execution(client, execution_id, attempts=True), seen
        assert time.monotonic() < deadline, f"{execution_id} stayed {current.status}"
        time.sleep(0.02)


def _gap(before: models.ExecutionAttempt, after: models.ExecutionAttempt) -> float:
    assert isinstance(before.ended_at, datetime) and isinstance(after.started_at, datetime)
    return (after.started_at - before.ended_at).total_seconds()


def test_a_failing_program_is_retried_after_the_declared_backoff(
    admin: ServiceClient, unique: str
) -> None:
    retries = no_jitter_retries(3, 0.5, factor=2, max_seconds=5)
    slug = new_agent(admin, unique, config=config(retries=retries))

    run = admin.agents.run(slug, {"input": {"fail": "x"}})
    ended, seen = _follow(admin, run.execution_id)

    assert status_of(ended) == "failed"
    assert ended.attempt == 3
    assert ended.error == "exit code 3: the agent gave up: x"
    attempts = attempts_of(ended)
    assert [attempt.number for attempt in attempts] == [1, 2, 3]
    assert [attempt.outcome.value for attempt in attempts] == ["failed"] * 3
    assert [attempt.error for attempt in attempts] == ["exit code 3: the agent gave up: x"] * 3
    for attempt in attempts:
        assert isinstance(attempt.worker_id, str) and attempt.worker_id
        assert isinstance(attempt.started_at, datetime)
        assert attempt.started_at <= attempt.ended_at
    # attempt n + 1 starts no earlier than initialSeconds * factor ** (n - 1) after attempt n
    assert _gap(attempts[0], attempts[1]) >= 0.5
    assert _gap(attempts[1], attempts[2]) >= 1.0

    # while it waits, it is pending and says until when
    waiting = [state for state in seen if state.pending_reason is not None]
    reasons = {state.pending_reason for state in waiting}
    assert {status_of(state) for state in waiting} == {"pending"}
    assert all(reason.startswith(RETRYING) for reason in reasons if reason), reasons
    for number, delay in ((2, 0.5), (3, 1.0)):
        said = [r for r in reasons if r and r.startswith(f"{RETRYING}{number} starts after ")]
        assert said, f"no pendingReason seen for attempt {number}: {reasons}"
        not_before = _retry_time(said[0])
        assert not_before >= attempts[number - 2].ended_at + timedelta(seconds=delay)
        assert attempts[number - 1].started_at is not None
        assert attempts[number - 1].started_at >= not_before


def test_retry_on_chooses_the_outcomes_that_are_retried(admin: ServiceClient, unique: str) -> None:
    only_timeouts = no_jitter_retries(3, 0.2, retry_on=["timeout"])
    only_failures = no_jitter_retries(3, 0.2, retry_on=["failed"])
    fails = new_agent(admin, unique, config=config(retries=only_timeouts))
    slow = new_agent(admin, unique, config=config(retries=no_jitter_retries(
        2, 0.3, retry_on=["failed", "timeout"]), timeoutSeconds=1))  # fmt: skip
    slow_unretried = new_agent(
        admin, unique, config=config(retries=only_failures, timeoutSeconds=1)
    )

    failed = admin.agents.run(fails, {"input": {"fail": "plain"}})
    timed_out = admin.agents.run(slow, {"input": {"sleep": 5}})
    timed_out_once = admin.agents.run(slow_unretried, {"input": {"sleep": 5}})

    # a plain failure is not a timeout: one attempt
    ended = wait_for(admin, failed.execution_id, include=["attempts"])
    assert (status_of(ended), ended.attempt) == ("failed", 1)
    assert [a.outcome.value for a in attempts_of(ended)] == ["failed"]
    # a timeout is retried when retryOn has it
    ended = wait_for(admin, timed_out.execution_id, timeout=60, include=["attempts"])
    assert (status_of(ended), ended.attempt) == ("failed", 2)
    attempts = attempts_of(ended)
    assert [(a.number, a.outcome.value) for a in attempts] == [(1, "timeout"), (2, "timeout")]
    assert all("timed out" in (a.error or "") for a in attempts)
    assert _gap(attempts[0], attempts[1]) >= 0.3
    # and not when it has only failed
    ended = wait_for(admin, timed_out_once.execution_id, timeout=60, include=["attempts"])
    assert (status_of(ended), ended.attempt) == ("failed", 1)
    assert [a.outcome.value for a in attempts_of(ended)] == ["timeout"]


def test_a_cancel_during_the_backoff_ends_the_execution_and_its_retries(
    admin: ServiceClient, unique: str
) -> None:
    slug = new_agent(admin, unique, config=config(retries=no_jitter_retries(5, 1.0)))
    run = admin.agents.run(slug, {"input": {"fail": "again"}})
    waiting = poll(
        lambda: execution(admin, run.execution_id),
        lambda state: (state.pending_reason or "").startswith(RETRYING),
        timeout=30,
        what="waiting for a retry",
        every=0.02,
    )
    not_before = _retry_time(waiting.pending_reason)

    cancelled = admin.agents.executions.cancel(run.execution_id)

    assert cancelled.status.value == "cancelled"  # at once: no attempt is running
    assert cancelled.was_status.value == "pending"
    assert status_of(cancelled.execution) == "cancelled"
    assert cancelled.execution.pending_reason is None
    # once the backoff has passed, a run submitted later (behind it in the queue) completes,
    # and the cancelled execution has not been attempted again
    poll(utc_now, lambda now: now > not_before, timeout=10, what="the backoff's end")
    probe = admin.agents.run(slug, {"input": {}})
    assert status_of(wait_for(admin, probe.execution_id)) == "completed"
    ended = execution(admin, run.execution_id, attempts=True)
    assert (status_of(ended), ended.attempt) == ("cancelled", 1)
    assert [a.outcome.value for a in attempts_of(ended)] == ["failed"]


def test_a_cancel_during_an_attempt_stops_the_retries(admin: ServiceClient, unique: str) -> None:
    slug = new_agent(admin, unique, config=config(retries=no_jitter_retries(3, 0.1)))
    run = admin.agents.run(slug, {"input": {"sleep": 30, "fail": "late"}})
    wait_for(admin, run.execution_id, {"running"})

    answer = admin.agents.executions.cancel(run.execution_id)

    assert answer.status.value == "cancellation-requested"
    ended = wait_for(admin, run.execution_id, include=["attempts"])
    assert (status_of(ended), ended.attempt) == ("cancelled", 1)
    assert [a.number for a in attempts_of(ended)] == [1]


@pytest.mark.parametrize(
    "retries",
    [
        {"maxAttempts": 0},
        {"maxAttempts": 21},
        {"maxAttempts": 2, "retryOn": ["exploded"]},
        {"maxAttempts": 2, "retryOn": []},
        {"maxAttempts": 2, "backoff": {"jitter": "some"}},
        {"maxAttempts": 2, "backoff": {"factor": 0.5}},
        {"backoff": {"initialSeconds": 1}},
    ],
)
def test_invalid_retries_are_refused(
    admin: ServiceClient, unique: str, retries: dict[str, object]
) -> None:
    slug = f"retries-{unique}"
    with pytest.raises(ServiceValidationError) as refused:
        admin.agents.create({"name": slug, "slug": slug, "config": config(retries=retries)})
    fields = [issue["field"] for issue in refused.value.envelope["issues"]]
    assert fields and all(f.startswith("body.config.retries") for f in fields), fields


# -- a lost worker -----------------------------------------------------------------------------


@pytest.fixture
def database(new_storage: Callable[[], Storage]) -> Iterator[Database]:
    database = Database(new_storage().database_url)
    upgrade(database)
    yield database
    database.dispose()


def _queued(session: Session, retries: dict[str, object]) -> str:
    now = utc_now()
    agent_id = "agt_" + secrets.token_hex(6)
    manifest = config(retries=retries)
    session.add(Agent(id=agent_id, slug=agent_id, name="a", config=manifest, created_at=now,
                      updated_at=now))  # fmt: skip
    execution_id = "aex_" + secrets.token_hex(6)
    session.add(Execution(id=execution_id, agent_id=agent_id, status="pending", input={},
                          created_at=now, attempt=0, config_snapshot=manifest))  # fmt: skip
    return execution_id


def _lose(session: Session, execution_id: str) -> None:
    row = session.get(Execution, execution_id)
    assert row is not None and row.heartbeat_at is not None
    row.heartbeat_at -= timedelta(seconds=60)


def test_a_lost_workers_execution_is_retried_after_its_backoff(database: Database) -> None:
    retries = no_jitter_retries(3, 30.0, max_seconds=60, retry_on=["worker_lost"])
    execution_id = database.write_sync(partial(_queued, retries=retries))
    assert database.write_sync(partial(claim, execution_id=execution_id, worker_id="gone:1"))
    database.write_sync(partial(_lose, execution_id=execution_id))

    before = utc_now()
    reaped = database.write_sync(partial(reap_stale, stale_after=30, max_attempts=1))

    assert reaped.retried == [execution_id]
    row = database.read_sync(lambda session: session.get(Execution, execution_id))
    assert row is not None and (row.status, row.attempt, row.worker_id) == ("pending", 1, None)
    assert row.not_before is not None and row.not_before >= before + timedelta(seconds=30)
    attempts = database.read_sync(
        lambda session: [(a.number, a.outcome, a.worker_id) for a in session.query(ExecutionAttempt)
                         .filter(ExecutionAttempt.execution_id == execution_id)]
    )  # fmt: skip
    assert attempts == [(1, "worker_lost", "gone:1")]
    # not before the backoff's end
    assert database.write_sync(partial(claim_next, worker_id="w2")) is None
