"""The server's error answers become the SDK's typed exceptions: 400, 401, 403, 404 and 429,
each with the envelope, its request id and (429) the Retry-After seconds."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from eigenpal import (
    EigenpalAuthError,
    EigenpalClient,
    EigenpalError,
    EigenpalForbiddenError,
    EigenpalNotFoundError,
    EigenpalRateLimitError,
    EigenpalValidationError,
)

from handlers.agents.settings import RequestRate
from tests.agents.run_support import tuned_server
from tests.agents.support import RunningServer, Storage


def _request_id(error: EigenpalError) -> str:
    assert isinstance(error.request_id, str) and error.request_id.startswith("req_")
    assert error.envelope is not None
    return error.request_id


def test_a_limit_of_zero_is_a_validation_error(sdk: EigenpalClient) -> None:
    with pytest.raises(EigenpalValidationError) as refused:
        sdk.agents.list(limit=0)

    error = refused.value
    assert error.status == 400
    assert [issue["field"] for issue in error.issues] == ["query.limit"]
    assert str(error).startswith("query.limit: ")
    _request_id(error)


def test_an_invalid_slug_is_a_validation_error(sdk: EigenpalClient, unique: str) -> None:
    with pytest.raises(EigenpalValidationError) as refused:
        sdk.agents.create(name="Bad slug", slug=f"Not A Slug {unique}!")

    error = refused.value
    assert [issue["field"] for issue in error.issues] == ["body.slug"]
    assert all(issue["severity"] == "error" for issue in error.issues)
    _request_id(error)
    assert sdk.agents.list(search=unique).total == 0


def test_an_unknown_key_is_an_auth_error(server: RunningServer) -> None:
    unknown = "sk_0000000000000000_" + "A" * 43
    with EigenpalClient(api_key=unknown, base_url=server.url) as stranger:
        with pytest.raises(EigenpalAuthError) as refused:
            stranger.agents.list()
        with pytest.raises(EigenpalAuthError):
            stranger.workflows.list()

    assert refused.value.status == 401
    _request_id(refused.value)


def test_a_key_that_may_not_create_agents_is_forbidden(server: RunningServer, unique: str) -> None:
    key = server.key("reader", scope_all=True)  # can_create_agents is False
    with EigenpalClient(api_key=key, base_url=server.url) as reader:
        with pytest.raises(EigenpalForbiddenError) as refused:
            reader.agents.create(name="Nope", slug=f"sdk-{unique}-forbidden")
        assert reader.agents.list(search=unique).total == 0  # reading is allowed

    assert refused.value.status == 403
    _request_id(refused.value)


def test_unknown_resources_are_not_found(sdk: EigenpalClient, unique: str) -> None:
    calls: list[Callable[[], object]] = [
        lambda: sdk.agents.get(f"missing-{unique}"),
        lambda: sdk.agents.run(f"missing-{unique}", {}),
        lambda: sdk.agents.executions.get(f"aex_missing{unique}"),
        lambda: sdk.workflows.get(f"missing-{unique}"),
        lambda: sdk.workflows.executions.get(f"wfx_missing{unique}"),
    ]
    for call in calls:
        with pytest.raises(EigenpalNotFoundError) as refused:
            call()
        assert refused.value.status == 404
        assert refused.value.envelope is not None
        assert refused.value.envelope["issues"][0]["code"] == "not_found"
        _request_id(refused.value)
    with pytest.raises(EigenpalNotFoundError) as agent_missing:
        sdk.agents.get(f"missing-{unique}")
    assert str(agent_missing.value) == f"Agent 'missing-{unique}' not found"


def test_a_key_over_its_rate_limit_gets_a_rate_limit_error_with_retry_after(
    new_storage: Callable[[], Storage],
) -> None:
    with tuned_server(new_storage(), rate_limit=RequestRate(2, "minute")) as limited:
        key = limited.key("busy", scope_all=True)
        with EigenpalClient(api_key=key, base_url=limited.url) as busy:
            busy.agents.list()
            busy.workflows.list()
            with pytest.raises(EigenpalRateLimitError) as refused:
                busy.agents.list()

    error = refused.value
    assert error.status == 429
    assert isinstance(error.retry_after, int) and 1 <= error.retry_after <= 60
    assert error.envelope is not None
    assert [issue["code"] for issue in error.envelope["issues"]] == ["rate_limited"]
    _request_id(error)
