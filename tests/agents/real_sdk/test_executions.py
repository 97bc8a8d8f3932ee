"""``sdk.agents.executions``: list with its filters, get with and without ``include``, cancel in
every state, rerun, and downloading an execution's files of each kind."""

from __future__ import annotations

import json
from dataclasses import dataclass

import pytest
from eigenpal import EigenpalClient
from eigenpal._generated.models.agent_execution_response import AgentExecutionResponse
from eigenpal._generated.models.agent_execution_summary_feedback_type_0 import (
    AgentExecutionSummaryFeedbackType0,
)
from eigenpal._generated.models.list_agent_executions_response import (
    ListAgentExecutionsResponse,
)
from eigenpal._generated.models.rerun_agent_execution_response import (
    RerunAgentExecutionResponse,
)

from tests.agents.real_sdk.sdk_support import (
    PDF,
    Leftovers,
    absent,
    new_agent,
    value_of,
    wait_for_execution,
)


@dataclass(frozen=True)
class History:
    """An agent with three completed executions (oldest first): the first has failing open
    feedback, the second passing resolved feedback with expected JSON, the third none."""

    slug: str
    ids: list[str]


@pytest.fixture
def history(sdk: EigenpalClient, unique: str) -> History:
    slug = new_agent(sdk, unique)
    ids = [sdk.agents.run(slug, {"n": n}, wait_for_completion=30).execution_id for n in range(3)]
    executions = sdk.agents.executions
    executions.update_feedback(ids[0], body="Total misses shipping", rating="fail")
    executions.update_feedback(
        ids[1], body="Right", rating="pass", status="resolved", expected={"total": 2}
    )
    return History(slug, ids)


def _ids(listed: ListAgentExecutionsResponse) -> list[str]:
    return [execution.id for execution in listed.executions]


def test_list_without_include_parses_and_leaves_review_fields_out(
    sdk: EigenpalClient, history: History
) -> None:
    listed = sdk.agents.executions.list(history.slug)

    assert isinstance(listed, ListAgentExecutionsResponse)
    assert _ids(listed) == history.ids[::-1]  # newest first
    assert (listed.total, listed.limit, listed.offset) == (3, 50, 0)
    for execution in listed.executions:
        assert execution.status.value == "completed"
        assert absent(execution.feedback)
        assert absent(execution.expected)
        assert absent(execution.expected_files)


def test_list_filters_by_status_and_feedback(sdk: EigenpalClient, history: History) -> None:
    executions = sdk.agents.executions
    first, second, third = history.ids

    assert executions.list(history.slug, status="completed").total == 3
    assert executions.list(history.slug, status="failed").total == 0
    assert _ids(executions.list(history.slug, has_feedback=True)) == [second, first]
    assert _ids(executions.list(history.slug, no_feedback=True)) == [third]
    assert _ids(executions.list(history.slug, feedback_rating="fail")) == [first]
    assert _ids(executions.list(history.slug, feedback_status="resolved")) == [second]
    assert _ids(executions.list(history.slug, feedback_status="open")) == [first]
    assert _ids(executions.list(history.slug, has_expected=True)) == [second]


def test_list_includes_feedback_and_expected_when_asked(
    sdk: EigenpalClient, history: History
) -> None:
    listed = sdk.agents.executions.list(
        history.slug, has_feedback=True, include="feedback,expected"
    )

    second, first = listed.executions
    assert isinstance(first.feedback, AgentExecutionSummaryFeedbackType0)
    assert isinstance(second.feedback, AgentExecutionSummaryFeedbackType0)
    assert (first.feedback.body, value_of(first.feedback.rating)) == (
        "Total misses shipping", "fail",
    )  # fmt: skip
    assert value_of(first.feedback.status) == "open"
    assert (value_of(second.feedback.rating), value_of(second.feedback.status)) == (
        "pass", "resolved",
    )  # fmt: skip
    assert (first.expected, second.expected) == (None, {"total": 2})
    assert first.expected_files == [] and second.expected_files == []


def test_list_sorts_and_pages(sdk: EigenpalClient, history: History) -> None:
    executions = sdk.agents.executions

    oldest_first = executions.list(history.slug, sort="createdAt", order="asc")
    page = executions.list(history.slug, sort="createdAt", order="asc", limit=1, offset=1)

    assert _ids(oldest_first) == history.ids
    assert _ids(page) == [history.ids[1]]
    assert (page.total, page.limit, page.offset) == (3, 1, 1)
    newest_completed = executions.list(history.slug, sort="completedAt", order="desc", limit=2)
    assert _ids(newest_completed) == history.ids[:0:-1]


def test_get_without_include_parses_and_leaves_review_fields_out(
    sdk: EigenpalClient, history: History
) -> None:
    answer = sdk.agents.executions.get(history.ids[1])

    assert isinstance(answer, AgentExecutionResponse)
    execution = answer.execution
    assert execution.id == history.ids[1] and execution.status.value == "completed"
    assert execution.output == {"echo": {"n": 1}, "files": {}}
    assert isinstance(execution.created_at, str) and isinstance(execution.completed_at, str)
    assert absent(execution.feedback)
    assert absent(execution.expected)
    assert absent(execution.expected_files)


def test_get_with_include_shows_feedback_and_expected(
    sdk: EigenpalClient, history: History
) -> None:
    sdk.agents.executions.upload_expected(history.ids[1], file=b"a,b\n", filename="want.csv")

    execution = sdk.agents.executions.get(history.ids[1], include="feedback,expected").execution

    assert isinstance(execution.feedback, AgentExecutionSummaryFeedbackType0)
    assert execution.feedback.body == "Right"
    assert execution.expected == {"total": 2}
    assert isinstance(execution.expected_files, list)
    assert [item.name for item in execution.expected_files] == ["want.csv"]


def test_cancelling_a_pending_execution_cancels_it(queued_sdk: EigenpalClient, unique: str) -> None:
    slug = new_agent(queued_sdk, unique)
    run = queued_sdk.agents.run(slug, {"n": 1})
    assert value_of(run.status) == "pending"

    cancelled = queued_sdk.agents.executions.cancel(run.execution_id).execution

    assert (cancelled.id, cancelled.status.value) == (run.execution_id, "cancelled")
    assert isinstance(cancelled.completed_at, str)
    again = queued_sdk.agents.executions.cancel(run.execution_id).execution
    assert (again.status.value, again.completed_at) == ("cancelled", cancelled.completed_at)


def test_cancelling_a_running_execution_requests_its_cancellation(
    sdk: EigenpalClient, worker_agent: str, leftovers: Leftovers
) -> None:
    run = sdk.agents.run(worker_agent, {"sleep": 60})
    leftovers.agent_executions.append(run.execution_id)
    wait_for_execution(sdk, run.execution_id, {"running"})

    answer = sdk.agents.executions.cancel(run.execution_id).execution

    assert answer.status.value in ("running", "finalizing", "cancelled")
    assert answer.additional_properties["cancelRequestedAt"] is not None
    ended = wait_for_execution(sdk, run.execution_id, timeout=15)
    assert ended.status.value == "cancelled"


def test_cancelling_a_finished_execution_changes_nothing(
    sdk: EigenpalClient, worker_agent: str
) -> None:
    run = sdk.agents.run(worker_agent, {"n": 5}, wait_for_completion=30)
    assert value_of(run.status) == "completed"

    answer = sdk.agents.executions.cancel(run.execution_id).execution

    assert answer.status.value == "completed"
    assert answer.output == run.output
    assert answer.additional_properties["cancelRequestedAt"] is None


def test_a_rerun_runs_the_stored_input_again(sdk: EigenpalClient, worker_agent: str) -> None:
    source = sdk.agents.run(worker_agent, {"n": 7, "customer": "ACME"}, wait_for_completion=30)
    assert value_of(source.status) == "completed"

    rerun = sdk.agents.executions.rerun(source.execution_id)

    assert isinstance(rerun, RerunAgentExecutionResponse)  # parsed: the server answered 202
    assert rerun.source_execution_id == source.execution_id
    assert rerun.execution_id != source.execution_id
    assert rerun.status.value in ("created", "pending")
    again = wait_for_execution(sdk, rerun.execution_id)
    assert again.status.value == "completed"
    assert again.output == source.output


def test_download_file_of_each_kind(sdk: EigenpalClient, worker_agent: str) -> None:
    run = sdk.agents.run(
        worker_agent,
        {"invoice": {"content": PDF, "filename": "invoice.pdf"}},
        wait_for_completion=30,
    )
    download = sdk.agents.executions.download_file

    assert download(run.execution_id, "input", "invoice.pdf") == PDF
    assert download(run.execution_id, "output", "tables/lines.csv") == (
        b"item,amount\nwidget,1200\n"
    )
    assert download(run.execution_id, "issues", "issues.md") == b"# Issues\n- none\n"
    trace = download(run.execution_id, "trace", "trace.jsonl")
    assert [json.loads(line) for line in trace.splitlines()] == [{"step": "done"}]
