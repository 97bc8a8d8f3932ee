"""Priorities: the queue's rank (submission time less 10 s per priority level) with synthetic
times, then the order in which queued runs start with one worker slot: on SQLite and
PostgreSQL behind a running execution that holds the server's only slot (runs aged through the
database show that a priority overtakes only within its window), and on PostgreSQL with a real
``agents-worker`` process taking a queue that a server without a worker filled."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy.orm import Session

from generated.agents import models
from generated.agents.client import ServiceClient, ServiceValidationError
from handlers.agents.execution.leases import ACTIVE, CANDIDATES_SQL, QUEUED
from handlers.agents.storage.schema import PRIORITY_STEP_SECONDS, Execution, queue_rank
from tests.agents.queue_support import execution, poll, status_of
from tests.agents.run_support import TERMINAL, new_agent, tuned_server, wait_for, worker_processes
from tests.agents.support import RunningServer, Storage

PRIORITIES = {"a": 0, "b": 10, "c": -5, "d": 10, "e": 0}
"""Runs in submission order (label: priority)."""
EXPECTED_START_ORDER = ["b", "d", "a", "e", "c"]


# -- the rank ----------------------------------------------------------------------------------


def test_the_rank_is_the_submission_time_less_ten_seconds_per_priority_level() -> None:
    t0 = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)

    def later(seconds: float) -> datetime:
        return t0 + timedelta(seconds=seconds)

    assert PRIORITY_STEP_SECONDS == 10
    assert queue_rank(t0, 0) == int(t0.timestamp() * 1000)
    assert queue_rank(t0, 3) == queue_rank(t0, 0) - 30_000
    assert queue_rank(t0, -3) == queue_rank(t0, 0) + 30_000
    # equal priorities: submission order, to the millisecond
    assert queue_rank(t0, 7) < queue_rank(later(0.001), 7)
    # a higher priority goes ahead of lower ones submitted up to 10 s per level earlier...
    assert queue_rank(later(99.999), 10) < queue_rank(t0, 0)
    assert queue_rank(later(49.0), 0) < queue_rank(t0, -5)
    # ...and no further: a priority-0 run waits behind priority-10 runs for 100 s at most
    assert queue_rank(later(100.001), 10) > queue_rank(t0, 0)
    assert queue_rank(later(2000.001), 100) > queue_rank(t0, -100)  # the widest window
    assert queue_rank(later(1999.999), 100) < queue_rank(t0, -100)


def test_the_priority_is_bounded(admin: ServiceClient, unique: str) -> None:
    slug = new_agent(admin, unique)
    for priority in (-101, 101):
        with pytest.raises(ServiceValidationError) as refused:
            admin.agents.run(slug, {"input": {}}, priority=priority)
        assert [issue["field"] for issue in refused.value.envelope["issues"]] == ["query.priority"]
    low = admin.agents.run(slug, {"input": {}}, priority=-100)
    high = admin.agents.run(slug, {"input": {}}, priority=100)
    rerun = admin.agents.executions.rerun(low.execution_id, priority=42)
    shown = {e.id: (e.priority, e.attempt) for e in admin.agents.executions.list(slug).executions}
    assert shown[low.execution_id][0] == -100 and shown[high.execution_id][0] == 100
    assert shown[rerun.execution_id][0] == 42
    for execution_id in (low.execution_id, high.execution_id, rerun.execution_id):
        ended = wait_for(admin, execution_id)
        assert (status_of(ended), ended.attempt) == ("completed", 1)


# -- behind the only slot ----------------------------------------------------------------------


@pytest.fixture(scope="module")
def one_slot(new_storage: Callable[[], Storage]) -> Iterator[RunningServer]:
    """A server (either backend) whose embedded worker runs one execution at a time."""
    with tuned_server(new_storage(), worker_concurrency=1, cancel_poll_seconds=0.2) as server:
        yield server


@pytest.fixture
def one_slot_client(one_slot: RunningServer) -> Iterator[ServiceClient]:
    key = one_slot.key("admin", scope_all=True, can_create_agents=True)
    with one_slot.client(key) as client:
        yield client


def _occupy(client: ServiceClient, slug: str) -> str:
    """A long run holding the only slot (running); its id."""
    blocker = client.agents.run(slug, {"input": {"sleep": 60, "label": "blocker"}})
    wait_for(client, blocker.execution_id, {"running"})
    return blocker.execution_id


def _start_order(client: ServiceClient, execution_ids: list[str]) -> list[str]:
    """The labels of the executions (all ended ``completed``) by the time they started."""
    ended = [wait_for(client, execution_id, timeout=60) for execution_id in execution_ids]
    assert [status_of(e) for e in ended] == ["completed"] * len(ended), [e.error for e in ended]
    started: list[tuple[datetime, str]] = []
    for summary in ended:
        assert isinstance(summary.started_at, datetime) and isinstance(summary.input, dict)
        started.append((summary.started_at, str(summary.input["label"])))
    return [label for _, label in sorted(started)]


def test_higher_priorities_start_first_and_equal_ones_in_submission_order(
    one_slot_client: ServiceClient, unique: str
) -> None:
    client = one_slot_client
    slug = new_agent(client, unique)
    blocker = _occupy(client, slug)

    queued: dict[str, models.RunAgentResponse] = {}
    for label, priority in PRIORITIES.items():
        queued[label] = client.agents.run(slug, {"input": {"label": label}}, priority=priority)
    shown = {label: client.agents.executions.get(run.execution_id).execution
             for label, run in queued.items()}  # fmt: skip
    client.agents.executions.cancel(blocker)

    assert {label: (status_of(e), e.priority, e.attempt) for label, e in shown.items()} == {
        label: ("pending", priority, 0) for label, priority in PRIORITIES.items()
    }
    ids = [run.execution_id for run in queued.values()]
    assert _start_order(client, ids) == EXPECTED_START_ORDER
    assert status_of(wait_for(client, blocker)) == "cancelled"


def _submitted_earlier(session: Session, execution_id: str, seconds: float) -> None:
    """Make the queued execution look submitted ``seconds`` earlier (its rank follows)."""
    row = session.get(Execution, execution_id)
    assert row is not None and row.status == "pending"
    row.created_at -= timedelta(seconds=seconds)
    row.queue_rank = queue_rank(row.created_at, row.priority)


def test_a_higher_priority_overtakes_only_runs_submitted_within_its_window(
    one_slot: RunningServer, one_slot_client: ServiceClient, unique: str
) -> None:
    client = one_slot_client
    slug = new_agent(client, unique)
    blocker = _occupy(client, slug)

    old = client.agents.run(slug, {"input": {"label": "p0, 150 s ago"}})
    recent = client.agents.run(slug, {"input": {"label": "p0, 50 s ago"}})
    for run, seconds in ((old, 150), (recent, 50)):
        one_slot.server.database.write_sync(
            lambda session, run=run, seconds=seconds: _submitted_earlier(
                session, run.execution_id, seconds
            )
        )
    urgent = client.agents.run(slug, {"input": {"label": "p10, now"}}, priority=10)
    client.agents.executions.cancel(blocker)

    # the priority-10 run is worth 100 s: it goes ahead of the run submitted 50 s before it,
    # not of the one submitted 150 s before it
    order = _start_order(client, [old.execution_id, recent.execution_id, urgent.execution_id])
    assert order == ["p0, 150 s ago", "p10, now", "p0, 50 s ago"]


# -- a worker process on PostgreSQL ------------------------------------------------------------


def test_a_worker_process_takes_the_queue_by_priority(
    postgres_storage: Storage, tmp_path: Path
) -> None:
    storage = postgres_storage
    with (
        tuned_server(storage, embedded_worker=False) as server,
        server.client(server.key("admin", scope_all=True, can_create_agents=True)) as client,
    ):
        slug = new_agent(client, "prio")
        flow = f"prio-flow-{slug}"
        client.workflows.create({"yamlContent": f"name: {flow}\nsteps:\n  - id: only\n"
                                 "    type: transform\n    value: 1\n"})  # fmt: skip
        ids = [
            client.agents.run(slug, {"input": {"label": label}}, priority=priority).execution_id
            for label, priority in PRIORITIES.items()
        ]
        # workflow executions share the queue: priority 20 goes ahead of all of them
        urgent_flow = client.workflows.run(flow, priority=20)
        assert [status_of(execution(client, i)) for i in ids] == ["pending"] * len(ids)

        with worker_processes(storage, tmp_path, 1, {"AGENTS_WORKER_CONCURRENCY": "1"}):
            order = _start_order(client, ids)
            flow_run = poll(
                lambda: _workflow_execution(client, urgent_flow.execution_id),
                lambda run: run.status.value in TERMINAL,
                timeout=30,
                what="the workflow run",
            )
        agent_starts = [execution(client, i).started_at for i in ids]

    assert order == EXPECTED_START_ORDER
    assert flow_run.status.value == "completed"
    assert isinstance(flow_run.started_at, datetime)
    assert all(isinstance(t, datetime) and flow_run.started_at < t for t in agent_starts)


def _workflow_execution(client: ServiceClient, execution_id: str) -> Any:
    answer = client.workflows.executions.get(execution_id)
    return getattr(answer, "root", answer)


def test_the_claim_query_names_the_queued_and_active_statuses_of_the_code() -> None:
    # the claim's candidates are plain SQL (built once): its status lists must be the code's
    sql = str(CANDIDATES_SQL)
    queued = ", ".join(f"'{status}'" for status in QUEUED)
    active = ", ".join(f"'{status}'" for status in ACTIVE)
    assert sql.count(f"status IN ({queued})") == 2
    assert f"status IN ({active})" in sql
