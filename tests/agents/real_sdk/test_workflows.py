"""``sdk.workflows``: list, get, versions, runs (sync, async, files, pinned versions),
``executions.run_and_wait`` and the executions' list, get and cancel. The workflows themselves
are created with our own client: the SDK has no call for that."""

from __future__ import annotations

import re
from dataclasses import dataclass

import pytest
from eigenpal import EigenpalClient, EigenpalTimeoutError
from eigenpal._generated.models.cancel_workflow_execution_response import (
    CancelWorkflowExecutionResponse,
)
from eigenpal._generated.models.execution_summary import ExecutionSummary
from eigenpal._generated.models.list_workflows_response import ListWorkflowsResponse
from eigenpal._generated.models.run_workflow_response import RunWorkflowResponse
from eigenpal._generated.models.workflow_detail import WorkflowDetail
from eigenpal._generated.models.workflow_execution_status_response import (
    WorkflowExecutionStatusResponse,
)

from generated.agents.client import ServiceClient
from tests.agents.real_sdk.sdk_support import (
    PDF,
    Leftovers,
    absent,
    constant_yaml,
    create_workflow,
    file_reading_yaml,
    value_of,
    wait_for_workflow,
    waiting_yaml,
    workflow_execution_id,
)
from tests.agents.support import RunningServer


@dataclass(frozen=True)
class Released:
    """A workflow with two releases: ``1.0.0`` (result 1), then ``2`` (result 2, current)."""

    id: str
    slug: str
    title: str
    first_yaml: str
    second_yaml: str


@pytest.fixture
def released(admin: ServiceClient, unique: str) -> Released:
    slug, title = f"const-{unique}", f"Constant {unique}"
    first, second = constant_yaml(slug, 1, title=title), constant_yaml(slug, 2, title=title)
    workflow_id = create_workflow(admin, first, version="1.0.0")
    admin.workflows.release(slug, {"yamlContent": second})
    return Released(workflow_id, slug, title, first, second)


def _ids(listed: ListWorkflowsResponse) -> set[str]:
    return {workflow.id for workflow in listed.data}


def test_list_by_search_name_and_kind(
    sdk: EigenpalClient, admin: ServiceClient, unique: str
) -> None:
    alpha = create_workflow(admin, constant_yaml(f"alpha-{unique}", 1, title="Alpha"))
    beta = create_workflow(admin, constant_yaml(f"beta-{unique}", 2, title="Beta"))
    block = create_workflow(admin, constant_yaml(f"block-{unique}", 3, kind="block"))

    found = sdk.workflows.list(search=unique)

    assert _ids(found) == {alpha, beta, block} and found.total == 3
    assert _ids(sdk.workflows.list(search=unique, kind="block")) == {block}
    assert _ids(sdk.workflows.list(search=unique, kind="workflow")) == {alpha, beta}
    named = sdk.workflows.list(name=f"beta-{unique}")
    assert [(w.id, w.name, w.version) for w in named.data] == [(beta, "Beta", "1")]
    page = sdk.workflows.list(search=unique, limit=1, offset=1)
    assert (len(page.data), page.total, page.limit, page.offset) == (1, 3, 1, 1)


def test_get_shows_the_current_version(sdk: EigenpalClient, released: Released) -> None:
    by_id = sdk.workflows.get(released.id)
    by_slug = sdk.workflows.get(released.slug)

    assert isinstance(by_id, WorkflowDetail)
    assert (by_id.id, by_id.name, by_id.version) == (released.id, released.title, "2")
    assert by_id.yaml_content == released.second_yaml
    assert isinstance(by_id.created_at, str)
    assert by_slug.id == released.id


def test_versions_are_listed_newest_first(sdk: EigenpalClient, released: Released) -> None:
    versions = sdk.workflows.versions(released.id)

    assert [v.version for v in versions.data] == ["2", "1.0.0"]
    assert [v.is_current for v in versions.data] == [True, False]
    assert [v.yaml_content for v in versions.data] == [released.second_yaml, released.first_yaml]
    assert all(v.id.startswith("wfh_") and v.workflow_id == released.id for v in versions.data)
    assert versions.total == 2
    page = sdk.workflows.versions(released.id, limit=1, offset=1)
    assert [v.version for v in page.data] == ["1.0.0"]


def test_a_sync_run_answers_status_and_result(sdk: EigenpalClient, released: Released) -> None:
    answer = sdk.workflows.run(released.id, {}, wait_for_completion=30)

    assert isinstance(answer, RunWorkflowResponse)  # parsed: the server answered 201
    assert answer.execution_id.startswith("wfx_")
    assert value_of(answer.status) == "completed"
    assert answer.result == 2


def test_an_async_run_answers_only_the_execution_id(
    sdk: EigenpalClient, released: Released
) -> None:
    answer = sdk.workflows.run(released.slug)

    assert answer.execution_id.startswith("wfx_")
    assert absent(answer.status) and absent(answer.result) and absent(answer.error)
    done = wait_for_workflow(sdk, answer.execution_id)
    assert (done.status.value, done.result) == ("completed", 2)


def test_a_run_with_a_file_input_goes_as_multipart(
    sdk: EigenpalClient, admin: ServiceClient, worker_agent: str, unique: str
) -> None:
    workflow_id = create_workflow(admin, file_reading_yaml(f"files-{unique}", worker_agent))

    answer = sdk.workflows.run(
        workflow_id,
        {"label": "invoice", "doc": {"content": PDF, "filename": "invoice.pdf"}},
        wait_for_completion=30,
    )

    assert value_of(answer.status) == "completed", answer.error
    assert answer.result == {
        "echo": {"doc": {"$file": "input/invoice.pdf"}, "label": "invoice"},
        "files": {"invoice.pdf": len(PDF)},
    }


def test_a_run_pins_a_dotted_release_tag(sdk: EigenpalClient, released: Released) -> None:
    answer = sdk.workflows.run(released.id, version="1.0.0", wait_for_completion=30)

    assert (value_of(answer.status), answer.result) == ("completed", 1)


def test_a_run_pins_a_version_id(sdk: EigenpalClient, released: Released) -> None:
    first = sdk.workflows.versions(released.id).data[-1]
    assert first.version == "1.0.0" and first.id.startswith("wfh_")

    pinned = sdk.workflows.run(released.id, version=first.id, wait_for_completion=30)
    latest = sdk.workflows.run(released.id, version="latest", wait_for_completion=30)

    assert (value_of(pinned.status), pinned.result) == ("completed", 1)
    assert (value_of(latest.status), latest.result) == ("completed", 2)


def test_run_and_wait_returns_the_outcome(sdk: EigenpalClient, released: Released) -> None:
    outcome = sdk.workflows.executions.run_and_wait(
        released.id, {}, timeout_seconds=30, poll_interval_seconds=0.05
    )

    assert outcome["status"] == "completed" and outcome["result"] == 2
    assert outcome["error"] is None
    assert isinstance(outcome["executionId"], str) and outcome["executionId"].startswith("wfx_")


def test_run_and_wait_times_out_when_the_run_lasts_longer(
    sdk: EigenpalClient, admin: ServiceClient, unique: str, leftovers: Leftovers
) -> None:
    workflow_id = create_workflow(admin, waiting_yaml(f"long-{unique}", "30s"))
    leftovers.workflows.append(workflow_id)

    with pytest.raises(EigenpalTimeoutError) as timed_out:
        sdk.workflows.executions.run_and_wait(
            workflow_id, {}, timeout_seconds=1, poll_interval_seconds=0.05
        )

    assert timed_out.value.status == 0
    found = re.search(r"execution_id=(wfx_\w+)", str(timed_out.value))
    assert found is not None, str(timed_out.value)
    # the execution goes on: stop it
    cancelled = sdk.workflows.executions.cancel(found[1])
    assert value_of(cancelled.status) in ("cancellation-requested", "cancelled")


def test_the_executions_list_filters_by_status_and_dates(
    sdk: EigenpalClient, released: Released
) -> None:
    ids = [
        sdk.workflows.run(released.id, {}, wait_for_completion=30).execution_id for _ in range(2)
    ]
    executions = sdk.workflows.executions

    listed = executions.list(released.id)

    assert [e.id for e in listed.data] == ids[::-1] and listed.total == 2
    assert all(isinstance(e, ExecutionSummary) for e in listed.data)
    assert [(e.status.value, e.result, e.workflow_id) for e in listed.data] == [
        ("completed", 2, released.id)
    ] * 2
    assert executions.list(released.id, status="completed").total == 2
    assert executions.list(released.id, status=["failed", "cancelled"]).total == 0
    assert executions.list(released.id, from_date="now()-1h").total == 2
    assert executions.list(released.id, from_date="now()+1d").total == 0
    assert executions.list(released.id, to_date="2001-01-01T00:00:00Z").total == 0
    assert executions.list(released.id, to_date="now()").total == 2
    assert [e.id for e in executions.list(released.id, limit=1, offset=1).data] == [ids[0]]


def test_executions_get_with_and_without_steps(sdk: EigenpalClient, released: Released) -> None:
    run = sdk.workflows.run(released.id, {}, wait_for_completion=30)

    plain = sdk.workflows.executions.get(run.execution_id)
    with_steps = sdk.workflows.executions.get(run.execution_id, include_steps=True)

    for execution in (plain, with_steps):
        assert workflow_execution_id(execution) == run.execution_id
        assert (execution.status.value, execution.result) == ("completed", 2)
        assert isinstance(execution.created_at, str)
        assert isinstance(execution.completed_at, str)
    assert isinstance(with_steps, WorkflowExecutionStatusResponse)


def test_cancel_a_waiting_execution_then_an_ended_one(
    sdk: EigenpalClient, admin: ServiceClient, unique: str, leftovers: Leftovers
) -> None:
    workflow_id = create_workflow(admin, waiting_yaml(f"wait-{unique}", "30s"))
    leftovers.workflows.append(workflow_id)
    run = sdk.workflows.run(workflow_id)
    wait_for_workflow(sdk, run.execution_id, {"waiting"})

    first = sdk.workflows.executions.cancel(run.execution_id)

    assert isinstance(first, CancelWorkflowExecutionResponse)
    assert first.execution_id == run.execution_id
    assert (first.status.value, first.was_status.value) == ("cancellation-requested", "waiting")
    ended = wait_for_workflow(sdk, run.execution_id, timeout=15)
    assert ended.status.value == "cancelled"
    last = sdk.workflows.executions.cancel(run.execution_id)
    assert (last.status.value, last.was_status.value) == ("already-terminal", "cancelled")


def test_cancel_a_finished_execution_is_a_no_op(sdk: EigenpalClient, released: Released) -> None:
    run = sdk.workflows.run(released.id, {}, wait_for_completion=30)
    assert value_of(run.status) == "completed"

    answer = sdk.workflows.executions.cancel(run.execution_id)

    assert (answer.status.value, answer.was_status.value) == ("already-terminal", "completed")
    assert sdk.workflows.executions.get(run.execution_id).status.value == "completed"


def test_cancel_a_pending_execution_cancels_it_at_once(
    queued_server: RunningServer, queued_key: str, queued_sdk: EigenpalClient, unique: str
) -> None:
    with queued_server.client(queued_key) as admin:
        workflow_id = create_workflow(admin, constant_yaml(f"queued-{unique}", 1))
    run = queued_sdk.workflows.run(workflow_id)

    answer = queued_sdk.workflows.executions.cancel(run.execution_id)

    assert (answer.status.value, answer.was_status.value) == ("cancelled", "pending")
    assert queued_sdk.workflows.executions.get(run.execution_id).status.value == "cancelled"
    again = queued_sdk.workflows.executions.cancel(run.execution_id)
    assert (again.status.value, again.was_status.value) == ("already-terminal", "cancelled")
