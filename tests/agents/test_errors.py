"""Every non-2xx answer is an ApiErrorEnvelope whose requestId is the x-request-id header."""

from __future__ import annotations

import httpx
import pytest

from generated.agents.models import ApiErrorEnvelope
from tests.agents.support import RunningServer

# (method, path, json body): requests that fail for different reasons, and the status.
FAILING = [
    ("GET", "/api/v1/agents?limit=0", None, 400),
    ("POST", "/api/v1/agents", {"name": "x"}, 400),
    ("POST", "/api/v1/agents", {"name": "x", "slug": "executions"}, 400),
    ("GET", "/api/v1/agents/no-such-agent", None, 404),
    ("GET", "/api/v1/agents/bad%20id", None, 404),
    ("PATCH", "/api/v1/agents/no-such-agent", {"name": "x"}, 404),
    ("DELETE", "/api/v1/agents", None, 405),
    ("POST", "/api/v1/agents/no-such-agent/run", {}, 404),
    ("GET", "/api/v1/agents/no-such-agent/executions", None, 404),
    ("GET", "/api/v1/agents/executions/aex_unknown", None, 404),
    ("POST", "/api/v1/agents/executions/aex_unknown/cancel", None, 404),
    ("POST", "/api/v1/agents/executions/aex_unknown/rerun", None, 404),
    ("GET", "/api/v1/agents/executions/aex_unknown/feedback", None, 404),
    ("PATCH", "/api/v1/agents/executions/aex_unknown/feedback", {"body": "x"}, 404),
    ("DELETE", "/api/v1/agents/executions/aex_unknown/feedback", None, 404),
    ("GET", "/api/v1/agents/executions/aex_unknown/expected", None, 404),
    ("GET", "/api/v1/agents/executions/aex_unknown/expected/a.json", None, 404),
    ("DELETE", "/api/v1/agents/executions/aex_unknown/expected/a.json", None, 404),
    ("GET", "/api/v1/agents/executions/aex_unknown/files/output/a.json", None, 404),
    ("GET", "/api/v1/workflows/demo", None, 404),
    ("POST", "/api/v1/workflows/demo/run", {}, 404),
    ("GET", "/api/v1/workflows/demo/versions", None, 404),
    ("GET", "/api/v1/workflows/demo/executions", None, 404),
    ("GET", "/api/v1/workflows/executions/wfx_unknown", None, 404),
    ("POST", "/api/v1/workflows/executions/wfx_unknown/cancel", None, 404),
    ("GET", "/api/v1/nothing-here", None, 404),
]


@pytest.mark.parametrize(("method", "path", "body", "status"), FAILING)
def test_errors_are_envelopes_with_the_request_id(
    server: RunningServer,
    admin_key: str,
    method: str,
    path: str,
    body: object,
    status: int,
) -> None:
    with httpx.Client(base_url=server.url, headers={"authorization": f"Bearer {admin_key}"}) as h:
        response = h.request(method, path, json=body)
    assert response.status_code == status, response.text
    envelope = ApiErrorEnvelope.model_validate(response.json())
    assert envelope.request_id == response.headers["x-request-id"]
    assert envelope.request_id.startswith("req_")
    assert all(issue.message for issue in envelope.issues)


def test_the_clients_request_id_is_echoed(server: RunningServer, admin_key: str) -> None:
    headers = {"authorization": f"Bearer {admin_key}", "x-request-id": "trace-42"}
    with httpx.Client(base_url=server.url, headers=headers) as http:
        failed = http.get("/api/v1/agents/no-such-agent")
        succeeded = http.get("/api/v1/agents")
    assert failed.json()["requestId"] == failed.headers["x-request-id"] == "trace-42"
    assert succeeded.headers["x-request-id"] == "trace-42"


def test_unauthenticated_errors_carry_the_request_id_too(server: RunningServer) -> None:
    with httpx.Client(base_url=server.url) as http:
        response = http.get("/api/v1/agents/executions/aex_x", headers={"x-request-id": "r1"})
    assert response.status_code == 401
    assert response.json()["requestId"] == response.headers["x-request-id"] == "r1"


def test_running_an_existing_agent_answers_202_with_the_execution_id(
    server: RunningServer, admin_key: str, unique: str
) -> None:
    headers = {"authorization": f"Bearer {admin_key}"}
    with httpx.Client(base_url=server.url, headers=headers) as http:
        http.post("/api/v1/agents", json={"name": "r", "slug": f"run-{unique}"}).raise_for_status()
        response = http.post(f"/api/v1/agents/run-{unique}/run", json={"input": {}})
        listing = http.get(f"/api/v1/agents/run-{unique}/executions")
    assert response.status_code == 202
    assert response.json()["status"] in ("created", "pending")
    assert listing.status_code == 200
    assert [e["id"] for e in listing.json()["executions"]] == [response.json()["executionId"]]
