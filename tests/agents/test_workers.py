"""Workers: settings, leases and the stale-lease reaper, and real ``agents-worker`` processes on
PostgreSQL, one of them killed mid-execution."""

from __future__ import annotations

import asyncio
import contextlib
import os
import secrets
import subprocess
import sys
from collections.abc import Callable, Iterator
from datetime import timedelta
from functools import partial
from pathlib import Path

import pytest
from sqlalchemy.orm import Session

from handlers.agents.execution.leases import Lease, LeaseLost, claim, finish, reap_stale, renew
from handlers.agents.settings import Settings, SettingsError
from handlers.agents.storage.database import Database
from handlers.agents.storage.migrate import upgrade
from handlers.agents.storage.schema import Agent, Execution, utc_now
from handlers.agents.worker import _close_when_stopped
from tests.agents.run_support import (
    ROOT,
    kill_holder,
    new_agent,
    tuned_server,
    wait_for,
    worker_processes,
)
from tests.agents.support import Storage


def test_worker_settings_come_from_the_environment() -> None:
    settings = Settings.from_env(
        {
            "AGENTS_WORKER_CONCURRENCY": "4",
            "AGENTS_EMBEDDED_WORKER": "false",
            "AGENTS_HEARTBEAT_SECONDS": "0.5",
            "AGENTS_STALE_AFTER_SECONDS": "3",
            "AGENTS_MAX_ATTEMPTS": "5",
            "AGENTS_CANCEL_POLL_SECONDS": "0.2",
            "AGENTS_RUN_PATH": "/opt/bin:/usr/bin",
        }
    )
    assert (settings.worker_concurrency, settings.embedded_worker, settings.max_attempts) == (
        4, False, 5,
    )  # fmt: skip
    assert (settings.heartbeat_seconds, settings.stale_after_seconds) == (0.5, 3.0)
    assert (settings.cancel_poll_seconds, settings.run_path) == (0.2, "/opt/bin:/usr/bin")
    defaults = Settings.from_env({})
    assert (defaults.worker_concurrency, defaults.embedded_worker, defaults.max_attempts) == (
        2, True, 2,
    )  # fmt: skip
    assert defaults.effective_run_path == "/usr/local/bin:/usr/bin:/bin"  # in the sandbox
    unsandboxed = Settings.from_env({"AGENTS_SANDBOX": "none"})
    assert unsandboxed.effective_run_path.startswith(str(Path(sys.executable).parent) + ":")
    for name, value in (
        ("AGENTS_WORKER_CONCURRENCY", "0"),
        ("AGENTS_EMBEDDED_WORKER", "maybe"),
        ("AGENTS_HEARTBEAT_SECONDS", "soon"),
        ("AGENTS_STALE_AFTER_SECONDS", "2"),  # not longer than the 5 s heartbeat
        ("AGENTS_MAX_ATTEMPTS", "-1"),
    ):
        with pytest.raises(SettingsError, match=name):
            Settings.from_env({name: value})


def test_agents_worker_needs_postgresql(tmp_path: Path) -> None:
    env = {**os.environ, "AGENTS_DATA_DIR": str(tmp_path)}
    env.pop("AGENTS_DATABASE_URL", None)
    done = subprocess.run(
        [sys.executable, "-m", "handlers.agents.worker"],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert "AGENTS_DATABASE_URL=postgresql" in done.stderr


@pytest.fixture
def database(new_storage: Callable[[], Storage]) -> Iterator[Database]:
    database = Database(new_storage().database_url)
    upgrade(database)
    yield database
    database.dispose()


def _execution(session: Session, status: str = "pending") -> str:
    now = utc_now()
    agent_id = "agt_" + secrets.token_hex(6)
    session.add(Agent(id=agent_id, slug=agent_id, name="a", config={}, created_at=now,
                      updated_at=now))  # fmt: skip
    execution_id = "aex_" + secrets.token_hex(6)
    session.add(Execution(id=execution_id, agent_id=agent_id, status=status, input={},
                          created_at=now, attempt=0))  # fmt: skip
    return execution_id


def _age(session: Session, execution_id: str, seconds: float) -> None:
    execution = session.get(Execution, execution_id)
    assert execution is not None and execution.heartbeat_at is not None
    execution.heartbeat_at -= timedelta(seconds=seconds)


def test_a_lease_guards_every_write_of_its_worker(database: Database) -> None:
    execution_id = database.write_sync(_execution)
    lease = database.write_sync(partial(claim, execution_id=execution_id, worker_id="w1"))
    assert lease == Lease(execution_id, "w1", 1)
    assert database.write_sync(partial(claim, execution_id=execution_id, worker_id="w2")) is None
    assert database.write_sync(partial(renew, lease=lease))

    database.write_sync(partial(_age, execution_id=execution_id, seconds=60))
    reaped = database.write_sync(partial(reap_stale, stale_after=30, max_attempts=2))

    assert (reaped.retried, reaped.ended) == ([execution_id], [])
    assert not database.write_sync(partial(renew, lease=lease))
    with pytest.raises(LeaseLost):
        database.write_sync(partial(finish, lease=lease, values={"status": "completed"}))
    second = database.write_sync(partial(claim, execution_id=execution_id, worker_id="w2"))
    assert second == Lease(execution_id, "w2", 2)


def test_a_lost_worker_without_attempts_left_fails_the_execution(database: Database) -> None:
    lost = database.write_sync(_execution)
    cancelled = database.write_sync(_execution)
    fresh = database.write_sync(_execution)
    for execution_id in (lost, cancelled, fresh):
        database.write_sync(partial(claim, execution_id=execution_id, worker_id="host:42"))

    def stale(session: Session) -> None:
        _age(session, lost, 60)
        _age(session, cancelled, 60)
        row = session.get(Execution, cancelled)
        assert row is not None
        row.cancel_requested_at = utc_now()

    database.write_sync(stale)
    reaped = database.write_sync(partial(reap_stale, stale_after=30, max_attempts=1))

    assert (reaped.retried, sorted(reaped.ended)) == ([], sorted([lost, cancelled]))
    rows = database.read_sync(
        lambda session: {e.id: (e.status, e.error) for e in session.query(Execution)}
    )
    assert rows[lost] == (
        "failed", "worker lost: host:42 sent no heartbeat for 30 s (attempt 1 of 1)",
    )  # fmt: skip
    assert rows[cancelled][0] == "cancelled"
    assert rows[fresh] == ("running", None)


def test_an_execution_of_a_killed_worker_is_retried_by_another(
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
            slug = new_agent(client, "kill")
            run = client.agents.run(slug, {"input": {"sleep": 1.5}})
            wait_for(client, run.execution_id, {"running"}, timeout=30)
            worker_id = kill_holder(server, Execution, run.execution_id, workers)

            ended = wait_for(client, run.execution_id, timeout=30)

            assert ended.status.value == "completed"
            assert ended.output == {"echo": {"sleep": 1.5}, "files": {}}
            row = server.server.database.read_sync(
                lambda session: session.get(Execution, run.execution_id)
            )
            assert row is not None and row.attempt == 2 and row.worker_id != worker_id


def test_a_restarted_server_recovers_the_execution_its_predecessor_left_running(
    new_storage: Callable[[], Storage],
) -> None:
    storage = new_storage()
    with tuned_server(storage, embedded_worker=False) as first:
        key = first.key("admin", scope_all=True, can_create_agents=True)
        with first.client(key) as client:
            slug = new_agent(client, "restart")
            run = client.agents.run(slug, {"input": {"n": 3}})

        def crashed_mid_run(session: Session) -> None:
            claim(session, run.execution_id, "gone-host:1")
            _age(session, run.execution_id, 60)

        first.server.database.write_sync(crashed_mid_run)

    # the predecessor's lease is 60 s old; the new worker's own must not look stale when the
    # machine is loaded (a 1 s bound failed its run as "worker lost" under a full test run)
    with tuned_server(storage, heartbeat_seconds=0.2, stale_after_seconds=5.0) as second:
        with second.client(key) as client:
            ended = wait_for(client, run.execution_id, timeout=30)
        assert (ended.status.value, ended.output) == ("completed", {"echo": {"n": 3}, "files": {}})
        row = second.server.database.read_sync(
            lambda session: session.get(Execution, run.execution_id)
        )
        assert row is not None and row.attempt == 2


def test_a_server_runs_at_most_its_concurrency_and_queues_the_rest(
    new_storage: Callable[[], Storage],
) -> None:
    with tuned_server(new_storage(), worker_concurrency=1) as server:
        key = server.key("admin", scope_all=True, can_create_agents=True)
        with server.client(key) as client:
            slug = new_agent(client, "one")
            first = client.agents.run(slug, {"input": {"sleep": 60}})
            wait_for(client, first.execution_id, {"running"})
            second = client.agents.run(slug, {"input": {}})
            third = client.agents.run(slug, {"input": {}})

            queued = client.agents.executions.get(second.execution_id).execution.status.value
            cancelled = client.agents.executions.cancel(second.execution_id)
            client.agents.executions.cancel(first.execution_id)

            assert queued == "pending"
            assert (cancelled.was_status.value, cancelled.status.value) == ("pending", "cancelled")
            assert wait_for(client, first.execution_id).status.value == "cancelled"
            assert wait_for(client, third.execution_id).status.value == "completed"


def test_the_worker_closes_its_queue_notifier_when_it_stops() -> None:
    closed: list[bool] = []

    class Notifier:
        async def close(self) -> None:
            closed.append(True)

    async def stop_after_start() -> None:
        task = asyncio.create_task(_close_when_stopped(Notifier()))  # type: ignore[arg-type]
        await asyncio.sleep(0.01)
        assert not closed
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task

    asyncio.run(stop_after_start())
    assert closed == [True]
