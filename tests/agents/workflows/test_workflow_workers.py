"""Workflow executions on the workers: a queued one cancelled, one left by a lost worker
resumed from its journal (completed steps not run again), and on PostgreSQL an
``agents-worker`` killed mid-workflow."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

from sqlalchemy.orm import Session

from generated.agents.client import ServiceClient
from handlers.agents.execution.leases import claim
from handlers.agents.storage.database import Database
from handlers.agents.storage.schema import WorkflowExecution
from tests.agents.run_support import holder, kill_holder, new_agent, tuned_server, worker_processes
from tests.agents.support import Storage
from tests.agents.workflows.api_support import (
    create,
    steps_of,
    summary_of,
    wait_for_status,
    wait_for_step,
)

FAST = {
    "heartbeat_seconds": 0.2,
    "stale_after_seconds": 1.0,
    "cancel_poll_seconds": 0.2,
    "max_attempts": 5,
}


def _two_phase(slug: str, agent: str, pause: str) -> str:
    """An agent step, then a wait, then a transform reading the agent's output."""
    return (
        f"name: {slug}\nsteps:\n  - id: ask\n    type: agent\n    agent: {agent}\n"
        "    input:\n      n: 5\n"
        f"  - id: pause\n    type: wait\n    needs: ask\n    duration: {pause}\n"
        "  - id: use\n    type: transform\n    needs: pause\n"
        "    value: ${{ steps.ask.output.echo.n * 10 }}\n"
        "result: ${{ steps.use.output }}\n"
    )


def _agent_runs(client: ServiceClient, agent: str) -> int:
    return client.agents.executions.list(agent).total


def test_a_queued_execution_is_cancelled_at_once(new_storage: Callable[[], Storage]) -> None:
    with tuned_server(new_storage(), worker_concurrency=1) as server:
        key = server.key("admin", scope_all=True, can_create_agents=True)
        with server.client(key) as client:
            create(client, "name: hold\nsteps:\n  - id: w\n    type: wait\n    duration: 60s\n")
            holding = client.workflows.run("hold")
            wait_for_status(client, holding.execution_id, {"waiting"})
            queued = client.workflows.run("hold")
            assert summary_of(client.workflows.executions.get(queued.execution_id)).status.value \
                == "pending"  # fmt: skip
            answer = client.workflows.executions.cancel(queued.execution_id)
            assert (answer.status.value, answer.was_status.value) == ("cancelled", "pending")
            ended = summary_of(client.workflows.executions.get(queued.execution_id))
            assert ended.status.value == "cancelled" and ended.completed_at is not None
            again = client.workflows.executions.cancel(queued.execution_id)
            assert again.status.value == "already-terminal"
            client.workflows.executions.cancel(holding.execution_id)
            assert wait_for_status(client, holding.execution_id).status.value == "cancelled"


def test_an_execution_left_by_a_lost_worker_resumes_from_its_journal(
    new_storage: Callable[[], Storage],
) -> None:
    storage = new_storage()
    with tuned_server(storage, **FAST) as first:
        key = first.key("admin", scope_all=True, can_create_agents=True)
        with first.client(key) as client:
            agent = new_agent(client, "resume")
            create(client, _two_phase("resumed", agent, "2s"))
            run = client.workflows.run("resumed")
            before = wait_for_step(client, run.execution_id, "pause", "waiting")
    # the server stopped mid-wait (its job gave the execution back); now a worker claims it
    # and dies without a trace: only the reaper can bring it back

    def crashed_mid_run(session: Session) -> None:
        assert claim(session, run.execution_id, "gone-host:1") is not None
        row = session.get(WorkflowExecution, run.execution_id)
        assert row is not None and row.heartbeat_at is not None
        row.heartbeat_at -= timedelta(seconds=60)

    database = Database(storage.database_url)
    try:
        database.write_sync(crashed_mid_run)
    finally:
        database.dispose()

    with tuned_server(storage, **FAST) as second, second.client(key) as client:
        ended = wait_for_status(client, run.execution_id, timeout=30)
        assert ended.status.value == "completed" and ended.result == 50
        assert _agent_runs(client, agent) == 1  # the agent step did not run again
        kept, now = steps_of(before)["ask"], steps_of(ended)["ask"]
        assert (now.started_at, now.completed_at) == (kept.started_at, kept.completed_at)
        row = second.server.database.read_sync(
            lambda session: session.get(WorkflowExecution, run.execution_id)
        )
        # the first server's attempt was handed back with the execution when it stopped (an
        # attempt that did not end costs none); the lost worker's claim was 1, the resume 2
        assert row is not None and row.attempt == 2


def test_a_killed_agents_worker_leaves_a_workflow_that_another_finishes(
    postgres_storage: Storage, tmp_path: Path
) -> None:
    storage = postgres_storage
    settings = {"embedded_worker": False, "heartbeat_seconds": 0.3, "stale_after_seconds": 1.5}
    with (
        tuned_server(storage, **settings) as server,
        worker_processes(storage, tmp_path, 2) as workers,
    ):
        key = server.key("admin", scope_all=True, can_create_agents=True)
        with server.client(key) as client:
            agent = new_agent(client, "killed")
            create(client, _two_phase("killed", agent, "3s"))
            run = client.workflows.run("killed")
            wait_for_step(client, run.execution_id, "pause", "waiting", timeout=30)
            worker_id = kill_holder(server, WorkflowExecution, run.execution_id, workers)

            ended = wait_for_status(client, run.execution_id, timeout=40)
            assert ended.status.value == "completed" and ended.result == 50
            assert _agent_runs(client, agent) == 1
            assert holder(server, WorkflowExecution, run.execution_id) != worker_id
