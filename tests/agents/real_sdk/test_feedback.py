"""Feedback and expected results through the SDK: get, update (the SDK's alias fields and the
plain ones), expected JSON, clear, and the expected files (copy an output, upload, list,
download, rename, delete)."""

from __future__ import annotations

import pytest
from eigenpal import EigenpalClient, EigenpalNotFoundError
from eigenpal._generated.models.agent_execution_feedback import AgentExecutionFeedback
from eigenpal._generated.models.agent_execution_feedback_detail import (
    AgentExecutionFeedbackDetail,
)

from tests.agents.real_sdk.sdk_support import BINARY, value_of


@pytest.fixture
def execution_id(sdk: EigenpalClient, worker_agent: str) -> str:
    """A completed execution of the worker agent (its output file: ``tables/lines.csv``)."""
    return sdk.agents.run(worker_agent, {"invoice": "acme-2026-04"},
                          wait_for_completion=30).execution_id  # fmt: skip


def _feedback(detail: AgentExecutionFeedbackDetail) -> AgentExecutionFeedback:
    assert isinstance(detail.feedback, AgentExecutionFeedback)
    return detail.feedback


def _expected_names(sdk: EigenpalClient, execution_id: str) -> list[str]:
    return [item.name for item in sdk.agents.executions.list_expected(execution_id).files]


def test_an_execution_without_feedback(sdk: EigenpalClient, execution_id: str) -> None:
    detail = sdk.agents.executions.get_feedback(execution_id)

    assert isinstance(detail, AgentExecutionFeedbackDetail)
    assert (detail.feedback, detail.expected, detail.expected_files) == (None, None, [])


def test_update_feedback_with_the_alias_fields(sdk: EigenpalClient, execution_id: str) -> None:
    detail = sdk.agents.executions.update_feedback(
        execution_id,
        feedback="Total misses the shipping line.",
        feedback_rating="fail",
        feedback_status="open",
    )

    feedback = _feedback(detail)
    assert feedback.body == "Total misses the shipping line."
    assert (value_of(feedback.rating), value_of(feedback.status)) == ("fail", "open")
    assert isinstance(feedback.created_at, str) and isinstance(feedback.created_by, str)
    assert feedback.resolved_at is None and feedback.resolved_by is None
    resolved = _feedback(
        sdk.agents.executions.update_feedback(execution_id, feedback_status="resolved")
    )
    assert value_of(resolved.status) == "resolved" and resolved.resolved_at is not None
    assert resolved.body == "Total misses the shipping line."  # what is not sent stays
    assert sdk.agents.executions.get_feedback(execution_id).feedback == resolved


def test_update_feedback_with_the_plain_fields_and_expected_json(
    sdk: EigenpalClient, execution_id: str
) -> None:
    detail = sdk.agents.executions.update_feedback(
        execution_id,
        body="Close, the currency is wrong.",
        rating="partial",
        status="ignored",
        expected={"total": 1264.5, "currency": "EUR"},
    )

    feedback = _feedback(detail)
    assert feedback.body == "Close, the currency is wrong."
    assert (value_of(feedback.rating), value_of(feedback.status)) == ("partial", "ignored")
    assert detail.expected == {"total": 1264.5, "currency": "EUR"}
    again = sdk.agents.executions.get_feedback(execution_id)
    assert (again.feedback, again.expected) == (feedback, detail.expected)
    replaced = sdk.agents.executions.update_feedback(execution_id, expected=[1, "two", None])
    assert replaced.expected == [1, "two", None]
    cleared = sdk.agents.executions.update_feedback(execution_id, expected=None)
    assert cleared.expected is None
    assert _feedback(cleared).body == "Close, the currency is wrong."


def test_clear_feedback_removes_feedback_expected_json_and_files(
    sdk: EigenpalClient, execution_id: str
) -> None:
    executions = sdk.agents.executions
    executions.update_feedback(execution_id, body="b", rating="fail", expected={"a": 1})
    executions.upload_expected(execution_id, file=b"{}", filename="one.json")

    cleared = executions.clear_feedback(execution_id)

    assert (cleared.feedback, cleared.expected, cleared.expected_files) == (None, None, [])
    after = executions.get_feedback(execution_id)
    assert (after.feedback, after.expected, after.expected_files) == (None, None, [])
    assert _expected_names(sdk, execution_id) == []
    again = executions.clear_feedback(execution_id)  # nothing left to clear: still fine
    assert (again.feedback, again.expected, again.expected_files) == (None, None, [])


def test_copy_an_output_file_to_expected(sdk: EigenpalClient, execution_id: str) -> None:
    executions = sdk.agents.executions

    same = executions.copy_output_to_expected(execution_id, output_file_name="tables/lines.csv")
    renamed = executions.copy_output_to_expected(
        execution_id, output_file_name="tables/lines.csv", expected_name="want/lines.csv"
    )

    assert (same.name, renamed.name) == ("tables/lines.csv", "want/lines.csv")
    output = b"item,amount\nwidget,1200\n"
    assert executions.download_expected(execution_id, "tables/lines.csv") == output
    assert executions.download_expected(execution_id, "want/lines.csv") == output
    with pytest.raises(EigenpalNotFoundError):
        executions.copy_output_to_expected(execution_id, output_file_name="missing.json")


def test_upload_list_and_download_expected_files(sdk: EigenpalClient, execution_id: str) -> None:
    executions = sdk.agents.executions
    executions.update_feedback(execution_id, expected={"total": 1})

    by_filename = executions.upload_expected(execution_id, file=b'{"total": 1}',
                                             filename="totals.json")  # fmt: skip
    by_name = executions.upload_expected(
        execution_id, file=BINARY, filename="whatever.bin", name="tables/blob.bin"
    )

    assert by_filename == {"name": "totals.json"}
    assert by_name == {"name": "tables/blob.bin"}
    listed = executions.list_expected(execution_id)
    assert listed.expected == {"total": 1}
    assert [item.name for item in listed.files] == ["tables/blob.bin", "totals.json"]
    assert executions.download_expected(execution_id, "tables/blob.bin") == BINARY
    assert executions.download_expected(execution_id, "totals.json") == b'{"total": 1}'
    detail = executions.get_feedback(execution_id)
    assert [item.name for item in detail.expected_files] == ["tables/blob.bin", "totals.json"]


def test_rename_and_delete_expected_files(sdk: EigenpalClient, execution_id: str) -> None:
    executions = sdk.agents.executions
    executions.upload_expected(execution_id, file=b"first draft", filename="draft.txt")

    renamed = executions.rename_expected(execution_id, "draft.txt", name="final/answer.txt")

    assert renamed.name == "final/answer.txt"
    assert _expected_names(sdk, execution_id) == ["final/answer.txt"]
    assert executions.download_expected(execution_id, "final/answer.txt") == b"first draft"
    executions.delete_expected(execution_id, "final/answer.txt")
    assert _expected_names(sdk, execution_id) == []
    with pytest.raises(EigenpalNotFoundError):
        executions.download_expected(execution_id, "final/answer.txt")
    with pytest.raises(EigenpalNotFoundError):
        executions.delete_expected(execution_id, "final/answer.txt")
