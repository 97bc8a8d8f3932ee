"""Schedules through the real server (SQLite and PostgreSQL): the API (create, list, get,
change, delete; validation; scopes), runs with the fixed input, skipped ticks, and exactly one
run per tick with many schedulers racing, with two ``agents-server`` processes on one
PostgreSQL database, and across restarts (missed ticks run once, for the latest).

Waiting is polling with a deadline; the scheduler's clock is moved, never waited for, where a
test needs ticks that a per-second schedule would take long to reach."""

from __future__ import annotations

import asyncio
import contextlib
import textwrap
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session

from generated.agents import models
from generated.agents.client import (
    ServiceClient,
    ServiceConflictError,
    ServiceForbiddenError,
    ServiceNotFoundError,
    ServiceValidationError,
)
from handlers.agents.domain.keys import create_key, revoke_key
from handlers.agents.domain.schedule_firing import RUNS_RETENTION, prune_schedule_runs
from handlers.agents.execution.scheduler import Scheduler
from handlers.agents.storage.blobs import BlobStore
from handlers.agents.storage.database import Database
from handlers.agents.storage.schema import Execution, ScheduleRun, WorkflowExecution
from tests.agents.run_support import issues, new_agent, server_process, wait_for
from tests.agents.support import RunningServer, Storage, running

T = TypeVar("T")

EVERY_SECOND = "* * * * * *"
NEW_YEAR = "0 0 1 1 *"  # never due during a test on the real clock
INPUT = {"customer": "ACME", "lines": [1, 2]}


# -- helpers -------------------------------------------------------------------------------------


def until(condition: Callable[[], T], what: str, timeout: float = 30.0) -> T:
    """The first truthy value of ``condition()``, polled until ``timeout``."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def looked(scheduler: Scheduler, times: int = 2) -> None:
    """Wait until ``scheduler`` completed ``times`` more looks (the first may have begun
    before the caller's change; the next starts after it)."""
    start = scheduler.passes
    until(lambda: scheduler.passes >= start + times, f"{times} looks of the scheduler")


def frozen(moment: datetime) -> Callable[[], datetime]:
    """A scheduler clock standing at ``moment``."""
    return lambda: moment


def key_id(secret: str) -> str:
    return secret.split("_")[1]


def runs_of(database: Database, schedule_id: str) -> list[tuple[datetime, str | None, str | None]]:
    """``(tick, execution id, error)`` of every tick the schedule handled, by tick."""

    def read(session: Session) -> list[tuple[datetime, str | None, str | None]]:
        rows = session.execute(
            select(ScheduleRun.scheduled_for, ScheduleRun.execution_id, ScheduleRun.error)
            .where(ScheduleRun.schedule_id == schedule_id)
            .order_by(ScheduleRun.scheduled_for)
        ).all()
        return [(tick, execution_id, error) for tick, execution_id, error in rows]

    return database.read_sync(read)


def executions_of(database: Database, schedule_id: str) -> list[Execution]:
    """The agent executions the schedule started (their metadata names it), oldest first."""

    def read(session: Session) -> list[Execution]:
        rows = session.scalars(select(Execution).order_by(Execution.created_at)).all()
        return [
            row
            for row in rows
            if isinstance(row.run_metadata, dict)
            and row.run_metadata.get("scheduleId") == schedule_id
        ]

    return database.read_sync(read)


def ticks(executions: list[Execution]) -> list[str]:
    """The ``scheduledFor`` of each execution."""
    return [str((row.run_metadata or {})["scheduledFor"]) for row in executions]


def tick_text(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def assert_one_run_per_tick(database: Database, schedule_id: str) -> list[Execution]:
    """Every tick handled once, each with its own execution; the executions."""
    executions = executions_of(database, schedule_id)
    ran = [(tick, execution_id) for tick, execution_id, _ in runs_of(database, schedule_id)
           if execution_id is not None]  # fmt: skip
    assert len(set(ticks(executions))) == len(executions), ticks(executions)
    assert sorted(ticks(executions)) == [tick_text(tick) for tick, _ in ran]
    assert {row.id for row in executions} == {execution_id for _, execution_id in ran}
    return executions


def workflow_yaml(slug: str) -> str:
    return textwrap.dedent(
        f"""\
        name: {slug}
        inputs:
          customer: string
        steps:
          - id: greet
            type: transform
            value: "hello ${{{{ inputs.customer }}}}"
        result: ${{{{ steps.greet.output }}}}
        """
    )


class RecordedDispatch:
    """The engine's part the scheduler uses, recording what it dispatched."""

    initial_status = "pending"

    def __init__(self) -> None:
        self.dispatched: list[str] = []

    async def dispatch_or_leave(self, execution_id: str) -> bool:
        self.dispatched.append(execution_id)
        return True


@pytest.fixture
def made(admin: ServiceClient) -> Iterator[list[str]]:
    """Ids of schedules a test created; deleted at its end (a firing schedule would go on)."""
    ids: list[str] = []
    yield ids
    for schedule_id in ids:
        with contextlib.suppress(ServiceNotFoundError):
            admin.schedules.delete(schedule_id)


def schedule(client: ServiceClient, made: list[str], **body: Any) -> models.Schedule:
    created = client.schedules.create(body)
    made.append(created.id)
    return created


# -- the API -------------------------------------------------------------------------------------


def test_create_get_list_change_and_delete(
    admin: ServiceClient, admin_key: str, unique: str, made: list[str]
) -> None:
    agent = new_agent(admin, unique)
    agent_id = admin.agents.get(agent).agent.id
    created = schedule(admin, made, agentId=agent, cron=NEW_YEAR, input=INPUT, description="d")
    assert created.id.startswith("sch_")
    assert (created.agent_id, created.workflow_id, created.version) == (agent_id, None, None)
    assert (created.cron, created.timezone, created.input) == (NEW_YEAR, "UTC", INPUT)
    assert (created.description, created.enabled, created.key_id) == ("d", True, key_id(admin_key))
    assert created.next_run_at is not None and created.next_run_at > created.created_at
    assert (created.next_run_at.month, created.next_run_at.day, created.next_run_at.hour) == (
        1, 1, 0,
    )  # fmt: skip
    assert (created.last_run_at, created.last_execution_id, created.last_error) == (None,) * 3
    assert created.created_at == created.updated_at

    assert admin.schedules.get(created.id) == created
    listed = admin.schedules.list(agent_id=agent)
    assert (listed.total, [item.id for item in listed.data]) == (1, [created.id])
    assert created.id in [item.id for item in admin.schedules.list(limit=200).data]
    second = schedule(admin, made, agentId=agent_id, cron="@daily", enabled=False)
    assert second.next_run_at is None and second.cron == "@daily"
    page = admin.schedules.list(agent_id=agent_id, limit=1)
    assert (page.total, [item.id for item in page.data]) == (2, [second.id])  # newest first
    assert [item.id for item in admin.schedules.list(agent_id=agent, offset=1).data] == [created.id]

    retimed = admin.schedules.update(
        created.id, {"cron": "0 9 * * *", "timezone": "Asia/Tokyo", "description": None}
    )
    assert (retimed.cron, retimed.timezone, retimed.description) == (
        "0 9 * * *",
        "Asia/Tokyo",
        None,
    )
    assert retimed.next_run_at is not None
    assert (retimed.next_run_at.hour, retimed.next_run_at.minute) == (0, 0)  # 09:00 in Tokyo
    assert retimed.input == INPUT and retimed.updated_at > created.updated_at
    off = admin.schedules.update(created.id, {"enabled": False})
    assert (off.enabled, off.next_run_at) == (False, None)
    kept = admin.schedules.update(created.id, {"input": {"other": True}})
    assert (kept.input, kept.enabled, kept.next_run_at) == ({"other": True}, False, None)
    on = admin.schedules.update(created.id, {"enabled": True, "input": None})
    assert (on.enabled, on.next_run_at, on.input) == (True, retimed.next_run_at, {})

    admin.schedules.delete(created.id)
    with pytest.raises(ServiceNotFoundError):
        admin.schedules.get(created.id)
    with pytest.raises(ServiceNotFoundError):
        admin.schedules.delete(created.id)
    assert [item.id for item in admin.schedules.list(agent_id=agent).data] == [second.id]


def test_workflow_schedules_pin_a_version_or_follow_latest(
    admin: ServiceClient, unique: str, made: list[str]
) -> None:
    slug = f"sched-{unique}"
    workflow = admin.workflows.create({"yamlContent": workflow_yaml(slug), "version": "1.0.0"})
    latest = schedule(admin, made, workflowId=slug, cron=NEW_YEAR, input={"customer": "x"})
    assert (latest.workflow_id, latest.agent_id, latest.version) == (workflow.id, None, "latest")
    pinned = schedule(admin, made, workflowId=workflow.id, cron=NEW_YEAR, version="1.0.0",
                      input={"customer": "x"})  # fmt: skip
    assert pinned.version == "1.0.0"
    listed = admin.schedules.list(workflow_id=slug)
    assert {item.id for item in listed.data} == {latest.id, pinned.id}
    with pytest.raises(ServiceNotFoundError, match=r"has no version '9\.9\.9'"):
        admin.schedules.create({"workflowId": slug, "cron": NEW_YEAR, "version": "9.9.9"})
    with pytest.raises(ServiceValidationError) as caught:  # the version's declared inputs
        admin.schedules.create({"workflowId": slug, "cron": NEW_YEAR, "input": {}})
    assert [field for field, _ in issues(caught.value)] == ["body.input"]
    assert "customer" in issues(caught.value)[0][1]
    with pytest.raises(ServiceValidationError):
        admin.schedules.update(latest.id, {"input": {"customer": 5}})


@pytest.mark.parametrize(
    ("body", "field", "message"),
    [
        ({"cron": "61 * * * *"}, "body.cron", "out of range"),
        ({"cron": "* * * *"}, "body.cron", "expected 5 fields"),
        ({"cron": "0 0 31 2 *"}, "body.cron", "never fires"),
        ({"cron": "H * * * *"}, "body.cron", "hashed (H)"),
        ({"cron": NEW_YEAR, "timezone": "Mars/Olympus"}, "body.timezone", "Unknown time zone"),
        ({"cron": NEW_YEAR, "timezone": "localtime"}, "body.timezone", "Unknown time zone"),
        ({"cron": NEW_YEAR, "version": "1.0.0"}, "body.version", "workflow schedules only"),
    ],
)
def test_bad_schedules_are_400_naming_the_field(
    admin: ServiceClient, unique: str, body: dict[str, Any], field: str, message: str
) -> None:
    agent = new_agent(admin, unique, program=None)
    with pytest.raises(ServiceValidationError) as caught:
        admin.schedules.create({"agentId": agent, **body})
    assert [where for where, _ in issues(caught.value)] == [field]
    assert message in issues(caught.value)[0][1]
    assert admin.schedules.list(agent_id=agent).total == 0


def test_a_schedule_names_exactly_one_target_it_may_run(
    admin: ServiceClient, unique: str, made: list[str]
) -> None:
    agent = new_agent(admin, unique, program=None)
    slug = f"target-{unique}"
    admin.workflows.create({"yamlContent": workflow_yaml(slug)})
    for body in ({"cron": NEW_YEAR}, {"cron": NEW_YEAR, "agentId": agent, "workflowId": slug}):
        with pytest.raises(ServiceValidationError, match="exactly one of agentId and workflowId"):
            admin.schedules.create(body)
    with pytest.raises(ServiceNotFoundError, match="Agent 'no-such-agent' not found"):
        admin.schedules.create({"agentId": "no-such-agent", "cron": NEW_YEAR})

    strict = new_agent(admin, unique, program=None, config={"inputSchema": {
        "type": "object", "required": ["customer"],
        "properties": {"customer": {"type": "string"}},
    }})  # fmt: skip
    with pytest.raises(ServiceValidationError) as caught:
        admin.schedules.create({"agentId": strict, "cron": NEW_YEAR, "input": {}})
    assert [field for field, _ in issues(caught.value)] == ["body.input.customer"]
    ok = schedule(admin, made, agentId=strict, cron=NEW_YEAR, input={"customer": "a"})
    with pytest.raises(ServiceValidationError) as caught:
        admin.schedules.update(ok.id, {"input": {"customer": 1}})
    assert [field for field, _ in issues(caught.value)] == ["body.input.customer"]
    for change, field in (({"cron": "1 2 3"}, "body.cron"), ({"timezone": "X/Y"}, "body.timezone")):
        with pytest.raises(ServiceValidationError) as caught:
            admin.schedules.update(ok.id, change)
        assert [where for where, _ in issues(caught.value)] == [field]
    assert admin.schedules.get(ok.id) == ok  # nothing changed

    closed = new_agent(admin, unique, program=None,
                       config={"triggers": {"api": {"enabled": False}}})  # fmt: skip
    with pytest.raises(ServiceForbiddenError, match="API trigger"):
        admin.schedules.create({"agentId": closed, "cron": NEW_YEAR})
    admin.agents.archive(agent)
    with pytest.raises(ServiceConflictError, match="is archived"):
        admin.schedules.create({"agentId": agent, "cron": NEW_YEAR})
    admin.workflows.archive(slug)
    with pytest.raises(ServiceConflictError, match="is archived"):
        admin.schedules.create({"workflowId": slug, "cron": NEW_YEAR, "input": {"customer": "a"}})
    admin.agents.restore(agent)
    off = schedule(admin, made, agentId=agent, cron=NEW_YEAR, enabled=False)
    admin.agents.archive(agent)
    assert admin.schedules.update(off.id, {"description": "still editable"}).enabled is False
    with pytest.raises(ServiceConflictError, match="is archived"):  # enabling checks the target
        admin.schedules.update(off.id, {"enabled": True})


def test_a_key_sees_only_schedules_of_what_it_may_see(
    server: RunningServer, admin: ServiceClient, unique: str, made: list[str]
) -> None:
    mine, theirs = new_agent(admin, unique, program=None), new_agent(admin, unique, program=None)
    owner_key = server.key("owner", agents=(mine,))
    other_key = server.key("other", agents=(theirs,))
    with server.client(owner_key) as owner, server.client(other_key) as other:
        created = schedule(owner, made, agentId=mine, cron=NEW_YEAR)
        assert created.key_id == key_id(owner_key)
        assert owner.schedules.get(created.id) == created
        for call in (
            lambda: other.schedules.get(created.id),
            lambda: other.schedules.update(created.id, {"enabled": False}),
            lambda: other.schedules.delete(created.id),
            lambda: other.schedules.list(agent_id=mine),
            lambda: other.schedules.create({"agentId": mine, "cron": NEW_YEAR}),
        ):
            with pytest.raises(ServiceNotFoundError):
                call()
        assert created.id not in [item.id for item in other.schedules.list().data]
        assert [item.id for item in owner.schedules.list().data] == [created.id]
        # a key with scope * sees it, and a change keeps its owner
        changed = admin.schedules.update(created.id, {"description": "by admin"})
        assert changed.key_id == key_id(owner_key)


# -- firing --------------------------------------------------------------------------------------


def test_a_schedule_runs_its_agent_with_the_fixed_input_once_per_tick(
    server: RunningServer, admin: ServiceClient, admin_key: str, unique: str, made: list[str]
) -> None:
    agent = new_agent(admin, unique)
    created = schedule(admin, made, agentId=agent, cron=EVERY_SECOND, input=INPUT)
    database = server.server.database
    until(lambda: len(executions_of(database, created.id)) >= 3, "three scheduled runs")
    admin.schedules.update(created.id, {"enabled": False})
    executions = assert_one_run_per_tick(database, created.id)
    assert all(row.input == INPUT for row in executions)
    assert {row.created_by_key for row in executions} == {key_id(admin_key)}
    latest = max(executions, key=lambda row: ticks([row])[0])
    after = admin.schedules.get(created.id)
    assert after.last_execution_id == latest.id and after.last_error is None
    assert after.last_run_at is not None and tick_text(after.last_run_at) == ticks([latest])[0]

    looked(server.server.scheduler)  # disabled: no tick fires any more
    assert len(executions_of(database, created.id)) == len(executions)

    ended = wait_for(admin, latest.id)
    assert ended.status.value == "completed", ended.error
    assert isinstance(ended.output, dict) and ended.output["echo"] == INPUT
    assert ended.metadata == {"scheduleId": created.id, "scheduledFor": ticks([latest])[0]}


def test_a_disabled_schedule_does_not_fire(
    server: RunningServer, admin: ServiceClient, unique: str, made: list[str]
) -> None:
    agent = new_agent(admin, unique)
    created = schedule(admin, made, agentId=agent, cron=EVERY_SECOND, enabled=False)
    looked(server.server.scheduler, times=3)
    assert executions_of(server.server.database, created.id) == []
    assert admin.agents.executions.list(agent).total == 0
    assert admin.schedules.get(created.id).last_run_at is None


def test_a_workflow_schedule_runs_the_workflow_as_scheduled(
    server: RunningServer, admin: ServiceClient, unique: str, made: list[str]
) -> None:
    slug = f"sched-run-{unique}"
    admin.workflows.create({"yamlContent": workflow_yaml(slug)})
    created = schedule(admin, made, workflowId=slug, cron=EVERY_SECOND, input={"customer": "Bo"})
    first = until(lambda: admin.workflows.executions.list(slug).data, "a scheduled workflow run")
    admin.schedules.update(created.id, {"enabled": False})
    execution = first[-1]
    assert execution.model_dump(mode="json", by_alias=True)["triggerType"] == "scheduled"
    assert execution.trigger_input == {"customer": "Bo"}

    def ended() -> Any:
        answer: Any = admin.workflows.executions.get(execution.id)
        found = getattr(answer, "root", answer)
        return found if found.status.value in ("completed", "failed", "rejected") else None

    done = until(ended, "the scheduled workflow run to end")
    assert done.status.value == "completed" and done.result == "hello Bo"

    def recorded(session: Session) -> list[tuple[str, str | None]]:
        rows = session.execute(
            select(WorkflowExecution.id, WorkflowExecution.created_by_key).where(
                WorkflowExecution.workflow_id == created.workflow_id
            )
        ).all()
        return [(row[0], row[1]) for row in rows]

    handled = runs_of(server.server.database, created.id)
    assert sorted(execution_id for _, execution_id, _ in handled if execution_id) == sorted(
        execution_id for execution_id, _ in server.server.database.read_sync(recorded)
    )


def test_a_tick_the_key_may_not_run_is_recorded_and_skipped(
    server: RunningServer, admin: ServiceClient, unique: str, made: list[str]
) -> None:
    agent = new_agent(admin, unique)
    owner_key = server.key("skipped", agents=(agent,))
    database = server.server.database
    with server.client(owner_key) as owner:
        created = schedule(owner, made, agentId=agent, cron=EVERY_SECOND)

    def last_error_with(reason: str) -> str:
        error = admin.schedules.get(created.id).last_error or ""
        return error if reason in error else ""

    def skipped_for(reason: str) -> str:
        error = until(partial(last_error_with, reason), f"a tick skipped because {reason}")
        count = len(executions_of(database, created.id))
        looked(server.server.scheduler)
        assert len(executions_of(database, created.id)) == count  # skipped: no execution
        return error

    until(lambda: executions_of(database, created.id), "a first run")
    admin.agents.archive(agent)
    error = skipped_for(f"agent '{agent}' is archived")
    assert error.startswith("tick ") and " skipped: " in error
    assert any(row_error == error for _, _, row_error in runs_of(database, created.id))
    admin.agents.restore(agent)
    until(lambda: admin.schedules.get(created.id).last_error is None, "a run after restoring")

    admin.agents.update(agent, {"config": {"triggers": {"api": {"enabled": False}}}})
    skipped_for(f"the API trigger of agent '{agent}' is disabled")
    admin.agents.update(agent, {"config": {"triggers": {"api": {"enabled": True}}}})
    until(lambda: admin.schedules.get(created.id).last_error is None, "a run after enabling")

    database.write_sync(partial(revoke_key, key_id=key_id(owner_key)))
    skipped_for(f"the schedule's API key {key_id(owner_key)} is revoked")
    assert_one_run_per_tick(database, created.id)


async def test_schedulers_racing_for_the_same_ticks_start_one_run_each(
    server: RunningServer, admin: ServiceClient, unique: str, made: list[str]
) -> None:
    """Six schedulers, each with its own connections, look at the same due tick at the same
    moment (their clocks frozen past it), tick after tick; then past three missed ticks."""
    agent = new_agent(admin, unique)
    created = schedule(admin, made, agentId=agent, cron=NEW_YEAR, timezone="Europe/Berlin",
                       input=INPUT)  # fmt: skip
    first = created.next_run_at
    assert first is not None and (first.month, first.day, first.hour) == (12, 31, 23)
    databases = [Database(server.storage.database_url) for _ in range(6)]
    blobs = BlobStore(server.storage.settings().blob_dir)
    dispatch = RecordedDispatch()
    expected: list[datetime] = []
    try:
        for years in (0, 1, 2, 3, 7):  # 7: the ticks of years 4, 5 and 6 are missed
            moment = first.replace(year=first.year + years) + timedelta(hours=5)
            expected.append(first.replace(year=first.year + years))
            schedulers = [  # their clocks jump years: the records of old ticks are kept
                Scheduler(database, blobs, dispatch, clock=frozen(moment), prune_every_seconds=None)
                for database in databases
            ]
            await asyncio.gather(*(scheduler.run_once() for scheduler in schedulers))
    finally:
        for database in databases:
            database.dispose()
    executions = await asyncio.to_thread(assert_one_run_per_tick, server.server.database,
                                         created.id)  # fmt: skip
    assert sorted(ticks(executions)) == [tick_text(moment) for moment in expected]
    assert sorted(dispatch.dispatched) == sorted(row.id for row in executions)
    after = admin.schedules.get(created.id)
    assert after.next_run_at == first.replace(year=first.year + 8)
    assert after.last_run_at == expected[-1]


# -- several servers and restarts ----------------------------------------------------------------


LOGS = ("one.log", "two.log")


def started(log: Path, schedule_id: str) -> list[str]:
    """The lines of a server's log (at DEBUG) saying it started a run of the schedule."""
    return [
        line
        for line in log.read_text(errors="replace").splitlines()
        if f"schedule {schedule_id}: tick " in line and " started " in line
    ]


def test_two_server_processes_start_one_run_per_tick(
    postgres_storage: Storage, tmp_path: Path
) -> None:
    """Two ``agents-server`` processes on one PostgreSQL database, a schedule firing every
    second (both loops wake at each tick and race for it): each tick is one execution,
    whichever process claimed it, and both claim some."""
    env = {"LOG_LEVEL": "DEBUG"}
    with server_process(postgres_storage, tmp_path / LOGS[0], env) as one:
        database = Database(postgres_storage.database_url)  # migrated by the first server
        try:
            issued = database.write_sync(
                partial(create_key, name="two", scope_all=True, can_create_agents=True)
            )
            with server_process(postgres_storage, tmp_path / LOGS[1], env) as two:
                client_one, client_two = one.client(issued.secret), two.client(issued.secret)
                with client_one, client_two:
                    agent = new_agent(client_one, "two-servers")
                    created = client_two.schedules.create(
                        {"agentId": agent, "cron": EVERY_SECOND, "input": INPUT}
                    )

                    def both_started() -> bool:
                        counts = [len(started(tmp_path / log, created.id)) for log in LOGS]
                        return len(executions_of(database, created.id)) >= 6 and all(counts)

                    until(both_started, "six runs, each server starting some", 60)
                    # once this answers, no transaction can claim a tick of the schedule
                    client_one.schedules.update(created.id, {"enabled": False})
                    executions = assert_one_run_per_tick(database, created.id)
                    assert all(row.input == INPUT for row in executions)
                    assert client_two.schedules.get(created.id).last_execution_id in {
                        row.id for row in executions
                    }
        finally:
            database.dispose()
    starts = [line for log in LOGS for line in started(tmp_path / log, created.id)]
    assert len(starts) == len(executions)  # every run was started by one of the two


def test_a_restarted_server_runs_no_tick_twice_and_missed_ticks_once(
    new_storage: Callable[[], Storage],
) -> None:
    """The scheduler's clock stands for the time: the first server finds three ticks missed
    (one run, the latest); a second one started at the same time runs nothing again; a third
    one, three years later, runs the latest missed tick once."""
    storage = new_storage()
    with running(storage) as first_server:
        secret = first_server.key("restarts", scope_all=True, can_create_agents=True)
        with first_server.client(secret) as client:
            agent = new_agent(client, "restarts")
            created = client.schedules.create(
                {"agentId": agent, "cron": NEW_YEAR, "timezone": "America/New_York"}
            )
        first = created.next_run_at
        assert first is not None
        now = first.replace(year=first.year + 2) + timedelta(days=1)  # 3 ticks: years 0, 1, 2
        first_server.server.scheduler.clock = frozen(now)
        database = first_server.server.database
        until(lambda: executions_of(database, created.id), "the run of the latest missed tick")
        looked(first_server.server.scheduler)
        assert ticks(executions_of(database, created.id)) == [
            tick_text(first.replace(year=first.year + 2))
        ]

    with running(storage) as second_server:
        second_server.server.scheduler.clock = frozen(now)
        looked(second_server.server.scheduler, times=3)
        assert len(executions_of(second_server.server.database, created.id)) == 1

    later = now.replace(year=now.year + 3)
    with running(storage) as third_server:
        third_server.server.scheduler.clock = frozen(later)
        database = third_server.server.database
        until(lambda: len(executions_of(database, created.id)) == 2, "the run after restarting")
        looked(third_server.server.scheduler)
        executions = assert_one_run_per_tick(database, created.id)
        assert ticks(executions) == [
            tick_text(first.replace(year=first.year + 2)),
            tick_text(first.replace(year=first.year + 5)),
        ]
        with third_server.client(secret) as client:
            after = client.schedules.get(created.id)
        assert after.last_run_at == first.replace(year=first.year + 5)
        assert after.next_run_at == first.replace(year=first.year + 6)


def test_old_tick_records_are_pruned_and_recent_ones_kept(
    server: RunningServer, admin: ServiceClient, unique: str, made: list[str]
) -> None:
    agent = new_agent(admin, unique)
    created = schedule(admin, made, agentId=agent, cron="0 0 1 1 *", input=INPUT)
    database = server.server.database
    now = datetime.now(UTC)
    old = now - RUNS_RETENTION - timedelta(days=1)
    recent = now - RUNS_RETENTION + timedelta(days=1)
    for tick in (old, recent):
        database.write_sync(partial(_record_tick, created.id, tick))
    assert database.write_sync(partial(prune_schedule_runs, now=now)) >= 1
    assert [tick for tick, _, _ in runs_of(database, created.id)] == [recent]

    # the scheduler loop prunes on its first look, then not again within the hour
    scheduler = Scheduler(
        database, BlobStore(server.storage.settings().blob_dir), RecordedDispatch()
    )
    database.write_sync(partial(_record_tick, created.id, old))
    asyncio.run(scheduler.run_once())
    assert [tick for tick, _, _ in runs_of(database, created.id)] == [recent]
    database.write_sync(partial(_record_tick, created.id, old))
    asyncio.run(scheduler.run_once())
    assert len(runs_of(database, created.id)) == 2


def _record_tick(schedule_id: str, tick: datetime, session: Session) -> None:
    session.add(
        ScheduleRun(schedule_id=schedule_id, scheduled_for=tick, error="test", created_at=tick)
    )
