"""The request body limit (``AGENTS_MAX_REQUEST_BODY``): a larger body is a 413 envelope."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from generated.agents.client import ServiceError, ServicePayloadTooLargeError
from generated.agents.models import ApiErrorEnvelope
from handlers.agents.domain.expected import MAX_EXPECTED_FILE_BYTES
from handlers.agents.settings import DEFAULT_MAX_REQUEST_BYTES, Settings, SettingsError
from tests.agents.run_support import new_agent, tuned_server
from tests.agents.support import Storage

LIMIT = 64 * 1024


def test_the_limit_setting() -> None:
    assert Settings.from_env({}).max_request_bytes == DEFAULT_MAX_REQUEST_BYTES
    # the spec's largest upload (an expected file, 50 MiB) fits, with its multipart framing
    assert DEFAULT_MAX_REQUEST_BYTES == MAX_EXPECTED_FILE_BYTES + 1024 * 1024
    for text, value in (("2097152", 2097152), ("2MiB", 2097152), ("512 KiB", 524288)):
        assert Settings.from_env({"AGENTS_MAX_REQUEST_BODY": text}).max_request_bytes == value
    for text in ("lots", "1", "2TB", "-5MiB"):
        with pytest.raises(SettingsError, match="AGENTS_MAX_REQUEST_BODY"):
            Settings.from_env({"AGENTS_MAX_REQUEST_BODY": text})


def assert_too_large(response: httpx.Response) -> None:
    assert response.status_code == 413, response.text
    envelope = ApiErrorEnvelope.model_validate(response.json())
    assert envelope.request_id == response.headers["x-request-id"]
    assert [(i.field, i.code) for i in envelope.issues] == [("<root>", "too_large")]
    assert str(LIMIT) in envelope.issues[0].message


def test_a_body_over_the_limit_is_413_and_changes_nothing(tmp_path: Path) -> None:
    storage = Storage(tmp_path, f"sqlite:///{tmp_path / 'agents.db'}")
    with tuned_server(storage, max_request_bytes=LIMIT) as server:
        key = server.key("big", scope_all=True, can_create_agents=True)
        with server.client(key) as client:
            slug = new_agent(client, "size", program=None)
            before = client.agents.list_files(slug, path="main.py")
            under = "x" * (LIMIT - 1024)
            client.agents.put_file(slug, {"content": under}, path="notes.txt")
            with pytest.raises(ServiceError) as raised:
                client.agents.put_file(slug, {"content": "y" * LIMIT}, path="main.py")
            assert isinstance(raised.value, ServicePayloadTooLargeError)
            assert raised.value.status == 413 and raised.value.requestId
            assert client.agents.list_files(slug, path="main.py") == before

        headers = {"authorization": f"Bearer {key}"}
        with httpx.Client(base_url=server.url, headers=headers) as http:
            too_big = b"z" * (LIMIT + 1)
            # a declared length over the limit, and a chunked body that turns out larger
            assert_too_large(http.post(f"/api/v1/agents/{slug}/run", files={"doc": too_big}))
            chunked = http.post(
                f"/api/v1/agents/{slug}/run",
                content=iter([b'{"input": {"text": "', too_big, b'"}}']),
                headers={"content-type": "application/json"},
            )
            assert_too_large(chunked)
            listed = http.get(f"/api/v1/agents/{slug}/executions").json()
            assert listed["total"] == 0


def test_the_default_admits_a_50_mib_expected_file(tmp_path: Path) -> None:
    """The default body limit lets the spec's largest file through: the file's own rule
    (at most 50 MiB) decides, then the execution lookup."""
    storage = Storage(tmp_path, f"sqlite:///{tmp_path / 'agents.db'}")
    with tuned_server(storage) as server:
        key = server.key("files", scope_all=True)
        url = "/api/v1/agents/executions/aex_missing/expected"
        headers = {"authorization": f"Bearer {key}"}
        with httpx.Client(base_url=server.url, headers=headers, timeout=60) as http:
            exact = http.post(url, files={"file": ("big.bin", b"\0" * MAX_EXPECTED_FILE_BYTES)})
            assert exact.status_code == 404, exact.text
            over = http.post(
                url, files={"file": ("big.bin", b"\0" * (MAX_EXPECTED_FILE_BYTES + 1))}
            )
            assert over.status_code == 413
            assert "An expected file has at most" in over.json()["issues"][0]["message"]
