"""Agent executions through the real server: get with include, cancel in every state, the
list's filters, sorts and pages, downloads and errors, on SQLite and PostgreSQL."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from functools import partial
from typing import Any

import pytest
from pydantic import MISSING
from sqlalchemy import update
from sqlalchemy.orm import Session

from generated.agents import models
from generated.agents.client import ServiceClient, ServiceNotFoundError, ServiceValidationError
from handlers.agents.domain.promotion import promote
from handlers.agents.storage.schema import Execution
from tests.agents.run_support import download, new_agent, tuned_server, wait_for
from tests.agents.support import RunningServer, Storage


@pytest.fixture(scope="module")
def queued_server(new_storage: Callable[[], Storage]) -> Iterator[RunningServer]:
    """A server that runs nothing itself: its executions stay queued."""
    with tuned_server(new_storage(), embedded_worker=False) as server:
        yield server


@pytest.fixture
def queued_admin(queued_server: RunningServer) -> Iterator[ServiceClient]:
    key = queued_server.key("queued", scope_all=True, can_create_agents=True)
    with queued_server.client(key) as client:
        yield client


def test_get_shows_the_parts_include_asks_for(admin: ServiceClient, unique: str) -> None:
    slug = new_agent(admin, unique)
    run = admin.agents.run(slug, {"input": {"n": 1}}, files={"doc": ("doc.txt", b"abc")},
                           wait_for_completion=30)  # fmt: skip
    executions = admin.agents.executions
    executions.update_feedback(run.execution_id, {"body": "fine", "rating": "pass",
                                                  "expected": {"n": 1}})  # fmt: skip
    executions.copy_output_to_expected(run.execution_id, {"outputFileName": "tables/lines.csv"})

    bare = executions.get(run.execution_id).execution
    full = executions.get(run.execution_id, include=["feedback", "expected", "files"]).execution

    # parts not asked for are absent from the wire, not null (the eigenpal SDK refuses
    # "expectedFiles": null)
    assert (bare.feedback, bare.expected, bare.expected_files, bare.files) == (MISSING,) * 4
    raw = admin._http.get(f"/api/v1/agents/executions/{run.execution_id}").json()["execution"]
    assert not {"feedback", "expected", "expectedFiles", "files"} & set(raw)
    assert isinstance(full.feedback, models.AgentExecutionFeedback)
    assert full.feedback.body == "fine"
    assert full.expected == {"n": 1}
    assert isinstance(full.expected_files, list)
    assert [f.name for f in full.expected_files] == ["tables/lines.csv"]
    assert isinstance(full.files, models.ExecutionFiles)
    assert [f.name for f in full.files.input] == ["doc.txt"]
    assert [f.name for f in full.files.output] == ["tables/lines.csv"]
    assert full.model_dump(exclude={"feedback", "expected", "expected_files", "files"}) == (
        bare.model_dump(exclude={"feedback", "expected", "expected_files", "files"})
    )


def test_cancelling_a_queued_execution_cancels_it_at_once(
    queued_admin: ServiceClient, queued_server: RunningServer, unique: str
) -> None:
    slug = new_agent(queued_admin, unique)
    pending = queued_admin.agents.run(slug, {"input": {}})
    created = queued_admin.agents.run(slug, {"input": {}})
    assert pending.status.value == "pending"

    def back_to_created(session: Session) -> None:
        session.execute(
            update(Execution).where(Execution.id == created.execution_id).values(status="created")
        )

    queued_server.server.database.write_sync(back_to_created)

    for run, was in ((pending, "pending"), (created, "created")):
        answer = queued_admin.agents.executions.cancel(run.execution_id)
        assert (answer.status.value, answer.was_status.value) == ("cancelled", was)
        assert answer.execution.status.value == "cancelled"
        assert answer.execution.error == "Cancelled before it started"
        assert answer.execution.completed_at is not None
        again = queued_admin.agents.executions.cancel(run.execution_id)
        assert (again.status.value, again.was_status.value) == ("already-terminal", "cancelled")
        assert again.execution == answer.execution


def test_cancelling_a_running_execution_asks_the_worker_to_stop_it(
    admin: ServiceClient, unique: str
) -> None:
    slug = new_agent(admin, unique)
    run = admin.agents.run(slug, {"input": {"sleep": 60}})
    wait_for(admin, run.execution_id, {"running"})

    answer = admin.agents.executions.cancel(run.execution_id)

    assert (answer.status.value, answer.was_status.value) == ("cancellation-requested", "running")
    assert answer.execution.cancel_requested_at is not None
    assert answer.execution.status.value in ("running", "finalizing", "cancelled")
    ended = wait_for(admin, run.execution_id, timeout=10)
    assert (ended.status.value, ended.error) == ("cancelled", "cancelled")
    again = admin.agents.executions.cancel(run.execution_id)
    assert (again.status.value, again.was_status.value) == ("already-terminal", "cancelled")


def _ids(client: ServiceClient, slug: str, **filters: Any) -> list[str]:
    return [e.id for e in client.agents.executions.list(slug, **filters).executions]


@pytest.fixture
def history(admin: ServiceClient, server: RunningServer, unique: str) -> tuple[str, list[Any]]:
    """An agent with six ended executions of varied batches, examples, feedback, expected."""
    slug = new_agent(admin, unique)
    plans: list[dict[str, Any]] = [
        {"batchId": "b1", "exampleName": "acme-jan"},
        {"batchId": "b1", "exampleName": "acme-feb"},
        {"batchId": "b2", "exampleName": "globex-mar"},
        {"batchId": "b2"},
        {"exampleName": "acme-apr"},
        {},
    ]
    runs = []
    for index, metadata in enumerate(plans):
        body = {"input": {"fail": "no"} if index == 2 else {}, "metadata": metadata}
        answer = admin.agents.run(slug, body, wait_for_completion=30)
        runs.append(admin.agents.executions.get(answer.execution_id).execution)
    feedback = admin.agents.executions.update_feedback
    feedback(runs[1].id, {"body": "Total misses the SHIPPING line", "rating": "fail"})
    feedback(runs[2].id, {"body": "fixed", "rating": "pass", "status": "resolved"})
    feedback(runs[3].id, {"body": "meh", "status": "ignored", "expected": {"total": 1}})
    admin.agents.executions.upload_expected(runs[4].id, ("want.csv", b"a,b\n"))
    feedback(runs[5].id, {"body": "promote me", "rating": "pass", "status": "ignored"})
    server.server.database.write_sync(partial(promote, execution_id=runs[5].id, name="golden"))
    return slug, runs


def test_the_list_filters_by_every_parameter(
    admin: ServiceClient, history: tuple[str, list[Any]]
) -> None:
    slug, runs = history
    e = [run.id for run in runs]
    newest_first = list(reversed(e))
    listed = partial(_ids, admin, slug)

    assert listed() == newest_first
    assert admin.agents.executions.list(slug).total == 6
    assert listed(status=["failed"]) == [e[2]]
    assert listed(status=["completed", "failed"]) == newest_first
    assert listed(batch_id="b1") == [e[1], e[0]]
    assert listed(example_name="acme-feb") == [e[1]]
    assert listed(example_name_contains="ACME") == [e[4], e[1], e[0]]
    assert listed(created_after=runs[2].created_at, created_before=runs[4].created_at) == [
        e[4], e[3], e[2],
    ]  # fmt: skip
    assert listed(completed_after=runs[3].completed_at) == [e[5], e[4], e[3]]
    assert listed(completed_before=runs[0].completed_at) == [e[0]]
    assert listed(feedback_status="open") == [e[1]]
    assert listed(feedback_status="ignored") == [e[5], e[3]]
    assert listed(feedback_rating="none") == [e[3]]
    assert listed(feedback_rating="pass") == [e[5], e[2]]
    assert listed(has_feedback=True) == [e[5], e[3], e[2], e[1]]
    assert listed(has_feedback=False) == listed(no_feedback=True) == [e[4], e[0]]
    assert listed(has_feedback=True, no_feedback=True) == []
    assert listed(has_expected_json=True) == [e[3]]
    assert listed(has_expected_files=True) == [e[4]]
    assert listed(has_expected=True) == [e[4], e[3]]
    assert listed(has_expected=False) == [e[5], e[2], e[1], e[0]]
    assert listed(feedback_body_contains="shipping") == [e[1]]
    long_ago = datetime.now(UTC) - timedelta(days=1)
    assert listed(feedback_resolved_after=long_ago) == [e[2]]
    assert listed(feedback_created_after=long_ago) == [e[5], e[3], e[2], e[1]]
    assert listed(feedback_updated_before=long_ago) == []
    assert listed(feedback_created_before=long_ago + timedelta(days=2), feedback_rating="fail") == [
        e[1]
    ]
    assert listed(promoted_to_example=True) == listed(promoted_example_name="golden") == [e[5]]
    assert listed(promoted_to_example=False) == [e[4], e[3], e[2], e[1], e[0]]
    since = admin.agents.executions.list(slug, since_last_resolved=True)
    assert [x.id for x in since.executions] == [e[5], e[4], e[3]]
    assert since.no_resolved_anchor is False
    assert admin.agents.executions.list(slug).no_resolved_anchor is None


def test_the_list_sorts_pages_bounds_its_scan_and_includes_parts(
    admin: ServiceClient, history: tuple[str, list[Any]]
) -> None:
    slug, runs = history
    e = [run.id for run in runs]
    listed = partial(_ids, admin, slug)

    assert listed(order="asc") == e
    assert listed(sort="exampleName", order="asc") == [e[4], e[1], e[0], e[2], e[3], e[5]]
    assert listed(sort="status", order="asc") == [e[0], e[1], e[3], e[4], e[5], e[2]]
    assert listed(sort="completedAt") == list(reversed(e))
    page = admin.agents.executions.list(slug, limit=2, offset=2)
    assert ([x.id for x in page.executions], page.total, page.limit, page.offset) == (
        [e[3], e[2]], 6, 2, 2,
    )  # fmt: skip
    scanned = admin.agents.executions.list(slug, has_feedback=True, scan_limit=2)
    assert ([x.id for x in scanned.executions], scanned.total, scanned.scan_limited) == (
        [e[5]], 1, True,
    )  # fmt: skip
    assert admin.agents.executions.list(slug, has_feedback=True).scan_limited is False
    included = admin.agents.executions.list(slug, include=["feedback", "expected"]).executions
    by_id = {x.id: x for x in included}
    assert by_id[e[3]].expected == {"total": 1}
    expected_files = by_id[e[4]].expected_files
    assert isinstance(expected_files, list) and [f.name for f in expected_files] == ["want.csv"]
    feedback = by_id[e[1]].feedback
    assert isinstance(feedback, models.AgentExecutionFeedback)
    assert feedback.body == "Total misses the SHIPPING line"
    assert by_id[e[0]].feedback is None and by_id[e[0]].files is MISSING


def test_an_agent_without_resolved_feedback_has_no_anchor(
    admin: ServiceClient, unique: str
) -> None:
    slug = new_agent(admin, unique)
    run = admin.agents.run(slug, {"input": {}}, wait_for_completion=30)

    page = admin.agents.executions.list(slug, since_last_resolved=True)

    assert ([x.id for x in page.executions], page.no_resolved_anchor) == ([run.execution_id], True)


def test_bad_list_parameters_are_400_naming_the_parameter(
    admin: ServiceClient, unique: str
) -> None:
    slug = new_agent(admin, unique)
    for name, value in (("createdAfter", "yesterday"), ("feedbackResolvedBefore", "2026-13-01"),
                        ("sort", "name"), ("scanLimit", "0")):  # fmt: skip
        response = admin._http.get(f"/api/v1/agents/{slug}/executions", params={name: value})
        assert response.status_code == 400
        assert response.json()["issues"][0]["field"] == f"query.{name}"
    with pytest.raises(ServiceNotFoundError):
        admin.agents.executions.list(f"missing-{unique}")


def test_files_and_executions_outside_the_key_are_not_found(
    admin: ServiceClient, server: RunningServer, unique: str
) -> None:
    slug = new_agent(admin, unique)
    run = admin.agents.run(slug, {"input": {}}, wait_for_completion=30)
    executions = admin.agents.executions
    assert download(admin, run.execution_id, "output", "tables/lines.csv").startswith(b"item")
    for kind, name in (("output", "absent.txt"), ("issues", "other.md"), ("input", "x.txt")):
        with pytest.raises(ServiceNotFoundError):
            download(admin, run.execution_id, kind, name)
    with pytest.raises(ServiceValidationError):
        download(admin, run.execution_id, "logs", "stdout.txt")
    with server.client(server.key("outsider")) as outsider:
        for call in (
            lambda: outsider.agents.executions.get(run.execution_id),
            lambda: outsider.agents.executions.cancel(run.execution_id),
            lambda: outsider.agents.executions.rerun(run.execution_id),
            lambda: download(outsider, run.execution_id, "output", "tables/lines.csv"),
            lambda: outsider.agents.executions.list(slug),
            lambda: outsider.agents.run(slug, {"input": {}}),
        ):
            with pytest.raises(ServiceNotFoundError):
                call()
    assert executions.list(slug).total == 1
