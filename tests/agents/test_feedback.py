"""Feedback on agent executions over HTTP: get, create/change, clear, errors, key scopes."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from typing import Any

import pytest

from generated.agents.client import (
    ServiceAuthError,
    ServiceClient,
    ServiceError,
    ServiceNotFoundError,
    ServiceValidationError,
)
from tests.agents.feedback_support import (
    StoredExecution,
    insert_execution,
    issues,
    key_id,
    new_agent,
    raw_client,
)
from tests.agents.support import RunningServer


@pytest.fixture
def execution(server: RunningServer, admin: ServiceClient, unique: str) -> StoredExecution:
    return insert_execution(server, new_agent(admin, unique))


def _wire(detail: Any) -> dict[str, Any]:
    return dict(detail.model_dump(mode="json", by_alias=True))


def _time(text: str) -> datetime:
    return datetime.fromisoformat(text)


def test_no_feedback_yet(admin: ServiceClient, execution: StoredExecution) -> None:
    detail = admin.agents.executions.get_feedback(execution.id)
    assert (detail.feedback, detail.expected, detail.expected_files) == (None, None, [])


def test_patch_creates_feedback_with_attribution(
    admin: ServiceClient, admin_key: str, execution: StoredExecution
) -> None:
    detail = admin.agents.executions.update_feedback(
        execution.id,
        {
            "body": "Total misses the shipping line.",
            "rating": "fail",
            "expected": {"total": 1264.5, "currency": "EUR"},
        },
    )
    feedback = _wire(detail)["feedback"]
    assert feedback["body"] == "Total misses the shipping line."
    assert (feedback["rating"], feedback["status"]) == ("fail", "open")  # new feedback: open
    assert feedback["createdAt"] == feedback["updatedAt"]
    assert feedback["createdBy"] == key_id(admin_key)
    assert feedback["resolvedAt"] is None and feedback["resolvedBy"] is None
    assert feedback["promotedExampleName"] is None
    assert detail.expected == {"total": 1264.5, "currency": "EUR"}
    assert _wire(admin.agents.executions.get_feedback(execution.id)) == _wire(detail)


def test_patch_keeps_omitted_fields_and_clears_nulls(
    admin: ServiceClient, execution: StoredExecution
) -> None:
    update = admin.agents.executions.update_feedback
    first = _wire(update(execution.id, {"body": "b", "rating": "partial", "expected": [1, 2]}))
    second = _wire(update(execution.id, {"status": "ignored"}))
    assert second["feedback"]["body"] == "b"
    assert second["feedback"]["rating"] == "partial"
    assert second["feedback"]["status"] == "ignored"
    assert second["expected"] == [1, 2]
    assert second["feedback"]["createdAt"] == first["feedback"]["createdAt"]
    assert _time(second["feedback"]["updatedAt"]) > _time(first["feedback"]["updatedAt"])

    admin.agents.executions.upload_expected(execution.id, ("kept.txt", b"kept"))
    third = _wire(update(execution.id, {"rating": None, "body": None, "expected": None}))
    assert third["feedback"]["rating"] is None
    assert third["feedback"]["body"] == ""
    assert third["feedback"]["status"] == "ignored"
    assert third["expected"] is None
    assert [item["name"] for item in third["expectedFiles"]] == ["kept.txt"]  # files are kept


def test_the_sdk_alias_fields_set_body_rating_and_status(
    admin: ServiceClient, execution: StoredExecution
) -> None:
    update = admin.agents.executions.update_feedback
    aliased = _wire(
        update(
            execution.id,
            {"feedback": "Wrong total", "feedbackRating": "fail", "feedbackStatus": "resolved"},
        )
    )["feedback"]
    assert (aliased["body"], aliased["rating"], aliased["status"]) == (
        "Wrong total", "fail", "resolved",
    )  # fmt: skip
    assert aliased["resolvedAt"] is not None
    # an alias's null clears, as its field's does
    cleared = _wire(update(execution.id, {"feedback": None, "feedbackRating": None}))
    assert (cleared["feedback"]["body"], cleared["feedback"]["rating"]) == ("", None)


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"body": "a", "feedback": "b"}, "body.feedback"),
        ({"body": "same", "feedback": "same"}, "body.feedback"),
        ({"rating": "pass", "feedbackRating": "fail"}, "body.feedbackRating"),
        ({"status": "open", "feedbackStatus": None}, "body.feedbackStatus"),
    ],
)
def test_a_field_and_its_alias_together_are_a_400(
    admin: ServiceClient, execution: StoredExecution, body: dict[str, Any], field: str
) -> None:
    with pytest.raises(ServiceValidationError) as caught:
        admin.agents.executions.update_feedback(execution.id, body)
    assert [issue["field"] for issue in caught.value.envelope["issues"]] == [field]
    assert admin.agents.executions.get_feedback(execution.id).feedback is None


@pytest.mark.parametrize(
    "expected", ["a string", 42, 0, False, [1, {"x": None}], {"nested": {"list": [1.5, "y"]}}]
)
def test_any_json_value_is_expected_json(
    admin: ServiceClient, execution: StoredExecution, expected: object
) -> None:
    admin.agents.executions.update_feedback(execution.id, {"expected": expected})
    assert admin.agents.executions.get_feedback(execution.id).expected == expected
    assert admin.agents.executions.list_expected(execution.id).expected == expected


def test_resolution_is_stamped_kept_and_cleared(
    server: RunningServer, admin: ServiceClient, admin_key: str, execution: StoredExecution
) -> None:
    reviewer_key = server.key("reviewer", agents=(execution.agent_slug,))
    update = admin.agents.executions.update_feedback
    update(execution.id, {"body": "wrong total"})
    with server.client(reviewer_key) as reviewer:
        resolved = _wire(
            reviewer.agents.executions.update_feedback(execution.id, {"status": "resolved"})
        )["feedback"]
    assert resolved["status"] == "resolved"
    assert resolved["resolvedAt"] == resolved["updatedAt"]
    assert resolved["resolvedBy"] == key_id(reviewer_key)
    assert resolved["createdBy"] == key_id(admin_key)

    again = _wire(update(execution.id, {"status": "resolved", "body": "fixed in v2"}))["feedback"]
    assert (again["resolvedAt"], again["resolvedBy"]) == (
        resolved["resolvedAt"],
        resolved["resolvedBy"],
    )  # it did not become resolved again
    assert _time(again["updatedAt"]) > _time(resolved["updatedAt"])

    reopened = _wire(update(execution.id, {"status": "open"}))["feedback"]
    assert (reopened["status"], reopened["resolvedAt"], reopened["resolvedBy"]) == (
        "open",
        None,
        None,
    )
    cleared = _wire(update(execution.id, {"status": None}))["feedback"]
    assert cleared["status"] is None


def test_new_feedback_may_start_resolved(
    admin: ServiceClient, admin_key: str, execution: StoredExecution
) -> None:
    feedback = _wire(
        admin.agents.executions.update_feedback(
            execution.id, {"status": "resolved", "rating": "pass"}
        )
    )["feedback"]
    assert (feedback["status"], feedback["rating"]) == ("resolved", "pass")
    assert feedback["resolvedAt"] == feedback["createdAt"]
    assert feedback["resolvedBy"] == key_id(admin_key)


def test_empty_patch_creates_open_feedback(
    admin: ServiceClient, execution: StoredExecution
) -> None:
    feedback = _wire(admin.agents.executions.update_feedback(execution.id, {}))["feedback"]
    assert (feedback["body"], feedback["rating"], feedback["status"]) == ("", None, "open")


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"rating": "great"}, "body.rating"),
        ({"status": "done"}, "body.status"),
        ({"body": "x" * 20001}, "body.body"),
        ({"body": 5}, "body.body"),
        ({"feedbackRating": "great"}, "body.feedbackRating"),
    ],
)
def test_invalid_patch_is_a_400_naming_the_field(
    server: RunningServer, admin_key: str, execution: StoredExecution, body: object, field: str
) -> None:
    with raw_client(server, admin_key) as http:
        response = http.patch(f"/api/v1/agents/executions/{execution.id}/feedback", json=body)
    assert response.status_code == 400
    assert any(issue["field"].startswith(field) for issue in issues(response)), response.text
    with raw_client(server, admin_key) as http:
        assert (
            http.get(f"/api/v1/agents/executions/{execution.id}/feedback").json()["feedback"]
            is None
        )


def test_patch_needs_a_json_object_body(
    server: RunningServer, admin_key: str, execution: StoredExecution
) -> None:
    with raw_client(server, admin_key) as http:
        url = f"/api/v1/agents/executions/{execution.id}/feedback"
        as_text = http.patch(url, content=b"body=x", headers={"content-type": "text/plain"})
        not_object = http.patch(url, json=["body"])
    assert as_text.status_code in (400, 415)
    assert not_object.status_code == 400


def test_clear_removes_feedback_expected_json_and_files(
    admin: ServiceClient, execution: StoredExecution
) -> None:
    executions = admin.agents.executions
    executions.update_feedback(execution.id, {"body": "b", "rating": "fail", "expected": {"a": 1}})
    executions.upload_expected(execution.id, ("one.json", b"{}"))
    executions.copy_output_to_expected(execution.id, {"outputFileName": "tables/lines.csv"})

    cleared = executions.clear_feedback(execution.id)
    assert (cleared.feedback, cleared.expected, cleared.expected_files) == (None, None, [])
    after = executions.get_feedback(execution.id)
    assert (after.feedback, after.expected, after.expected_files) == (None, None, [])
    listed = executions.list_expected(execution.id)
    assert (listed.expected, listed.files) == (None, [])
    with pytest.raises(ServiceNotFoundError):
        b"".join(executions.download_expected(execution.id, "one.json"))
    # the output files are the execution's own: still there to copy again
    assert executions.copy_output_to_expected(execution.id, {"outputFileName": "raw.bin"}).name == (
        "raw.bin"
    )
    executions.clear_feedback(execution.id)
    again = executions.clear_feedback(execution.id)  # idempotent
    assert (again.feedback, again.expected, again.expected_files) == (None, None, [])


def test_clear_without_feedback_succeeds(admin: ServiceClient, execution: StoredExecution) -> None:
    cleared = admin.agents.executions.clear_feedback(execution.id)
    assert (cleared.feedback, cleared.expected, cleared.expected_files) == (None, None, [])


def _feedback_calls(client: ServiceClient, execution_id: str) -> list[Callable[[], object]]:
    executions = client.agents.executions
    return [
        lambda: executions.get_feedback(execution_id),
        lambda: executions.update_feedback(execution_id, {"body": "intruder"}),
        lambda: executions.clear_feedback(execution_id),
    ]


def test_unknown_execution_is_a_404(admin: ServiceClient) -> None:
    for call in _feedback_calls(admin, "aex_doesnotexist"):
        with pytest.raises(ServiceNotFoundError) as caught:
            call()
        assert caught.value.envelope["issues"][0]["code"] == "not_found"


def test_other_keys_see_nothing_and_change_nothing(
    server: RunningServer, admin: ServiceClient, unique: str, execution: StoredExecution
) -> None:
    admin.agents.executions.update_feedback(execution.id, {"body": "mine", "expected": [1]})
    other_agent = new_agent(admin, unique, "other")
    outsider_key = server.key("outsider", agents=(other_agent,))
    insider_key = server.key("insider", agents=(execution.agent_slug,))
    with server.client(outsider_key) as outsider:
        for call in _feedback_calls(outsider, execution.id):
            with pytest.raises(ServiceNotFoundError) as caught:
                call()
            assert "not found" in str(caught.value)
    with server.client(insider_key) as insider:
        detail = insider.agents.executions.get_feedback(execution.id)
    assert detail.feedback is not None and detail.feedback.body == "mine"
    assert detail.expected == [1]


def test_requests_without_a_key_are_refused(
    server: RunningServer, execution: StoredExecution
) -> None:
    unknown_key = "sk_0000000000000000_" + "A" * 43
    with (
        ServiceClient(api_key=unknown_key, base_url=server.url) as bad,
        pytest.raises(ServiceAuthError),
    ):
        bad.agents.executions.get_feedback(execution.id)
    with raw_client(server, None) as http:
        assert http.get(f"/api/v1/agents/executions/{execution.id}/feedback").status_code == 401


def test_feedback_on_a_running_execution(
    server: RunningServer, admin: ServiceClient, execution: StoredExecution
) -> None:
    running = insert_execution(server, execution.agent_slug, status="running", outputs={})
    detail = admin.agents.executions.update_feedback(running.id, {"body": "slow"})
    assert detail.feedback is not None and detail.feedback.body == "slow"


def test_validation_error_type(admin: ServiceClient, execution: StoredExecution) -> None:
    with pytest.raises(ServiceValidationError) as caught:
        admin.agents.executions.update_feedback(execution.id, {"rating": "excellent"})
    assert isinstance(caught.value, ServiceError) and caught.value.status == 400


def test_concurrent_first_patches_make_one_feedback(
    server: RunningServer, admin_key: str, admin: ServiceClient, execution: StoredExecution
) -> None:
    def patch(index: int) -> None:
        with server.client(admin_key) as client:
            client.agents.executions.update_feedback(
                execution.id, {"body": f"writer {index}", "expected": {"writer": index}}
            )

    with ThreadPoolExecutor(max_workers=6) as pool:
        list(pool.map(patch, range(6)))
    detail = admin.agents.executions.get_feedback(execution.id)
    assert detail.feedback is not None
    assert isinstance(detail.expected, dict)
    writer = detail.expected["writer"]
    assert detail.feedback.body == f"writer {writer}"  # one writer's whole change, last
