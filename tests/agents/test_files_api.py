"""An agent's live files over HTTP: put, upload several, list, read one, path safety."""

from __future__ import annotations

import base64
from typing import Any

import httpx
import pytest
from pydantic import MISSING

from generated.agents.client import (
    ServiceClient,
    ServiceError,
    ServiceNotFoundError,
    ServiceValidationError,
)
from tests.agents.support import RunningServer, file_bytes, workspace_file, workspace_listing


def _agent(client: ServiceClient, unique: str, name: str = "files") -> str:
    slug = f"{name}-{unique}"
    client.agents.create({"name": slug, "slug": slug})
    return slug


def _raw(server: RunningServer, key: str) -> httpx.Client:
    return httpx.Client(base_url=server.url, headers={"authorization": f"Bearer {key}"})


def _download(server: RunningServer, key: str, agent: str, **params: str) -> httpx.Response:
    with _raw(server, key) as http:
        return http.get(f"/api/v1/agents/{agent}/files", params=params)


def _file(client: ServiceClient, agent: str, path: str, prefix: str | None = None) -> bytes:
    return file_bytes(workspace_file(client, agent, path, prefix))


def _issues(response: httpx.Response) -> list[dict[str, Any]]:
    body = response.json()
    assert body["requestId"] == response.headers["x-request-id"]
    return list(body["issues"])


def test_put_then_download_and_list(
    server: RunningServer, admin: ServiceClient, admin_key: str, unique: str
) -> None:
    agent = _agent(admin, unique)

    put = admin.agents.put_file(
        agent, {"content": "You extract totals.\n"}, path="system.md", prefix="prompts/"
    )
    assert (put.ok, put.path) == (True, "prompts/system.md")
    download = _download(server, admin_key, agent, path="prompts/system.md")
    assert download.headers["content-type"] == "application/json"
    answer = download.json()
    assert answer.pop("updatedAt")
    assert answer == {
        "path": "prompts/system.md",
        "content": "You extract totals.\n",
        "contentType": "text/markdown",
        "sizeBytes": len(b"You extract totals.\n"),
    }
    assert _file(admin, agent, "system.md", prefix="prompts") == b"You extract totals.\n"
    # the generated client parses the one file's answer
    file = workspace_file(admin, agent, "prompts/system.md")
    assert (file.path, file.content) == ("prompts/system.md", "You extract totals.\n")
    listed = workspace_listing(admin, agent)
    assert [entry.path for entry in listed] == ["agent.json", "main.py", "prompts/system.md"]
    entry = listed[-1]
    assert entry.size_bytes == len(b"You extract totals.\n")
    assert entry.content_type == "text/markdown"
    under = workspace_listing(admin, agent, prefix="prompts/")
    assert [entry.path for entry in under] == ["prompts/system.md"]


def test_put_replaces_and_accepts_base64_and_content_type(
    server: RunningServer, admin: ServiceClient, admin_key: str, unique: str
) -> None:
    agent = _agent(admin, unique)
    blob = bytes(range(256))
    encoded = base64.b64encode(blob).decode()

    admin.agents.put_file(agent, {"content": "old"}, path="data/x.bin")
    admin.agents.put_file(
        agent, {"contentBase64": encoded, "contentType": "image/png"}, path="data/x.bin"
    )
    file = workspace_file(admin, agent, "data/x.bin")
    assert file.content is MISSING and file_bytes(file) == blob  # not UTF-8: base64
    (entry,) = workspace_listing(admin, agent, prefix="data")
    assert (entry.size_bytes, entry.content_type) == (256, "image/png")


def test_put_with_neither_content_writes_an_empty_file(
    server: RunningServer, admin: ServiceClient, admin_key: str, unique: str
) -> None:
    agent = _agent(admin, unique)
    admin.agents.put_file(agent, {}, path="empty.txt")
    assert _file(admin, agent, "empty.txt") == b""


def test_put_with_both_contents_is_400(admin: ServiceClient, unique: str) -> None:
    agent = _agent(admin, unique)
    with pytest.raises(ServiceValidationError) as caught:
        admin.agents.put_file(agent, {"content": "a", "contentBase64": "YQ=="}, path="a.txt")
    fields = [issue["field"] for issue in caught.value.envelope["issues"]]
    assert fields == ["body.content", "body.contentBase64"]


def test_bad_base64_is_400(admin: ServiceClient, unique: str) -> None:
    agent = _agent(admin, unique)
    with pytest.raises(ServiceValidationError) as caught:
        admin.agents.put_file(agent, {"contentBase64": "YQ="}, path="a.txt")
    assert caught.value.envelope["issues"][0]["field"] == "body.contentBase64"


def test_upload_several(
    server: RunningServer, admin: ServiceClient, admin_key: str, unique: str
) -> None:
    agent = _agent(admin, unique)
    files = [
        {"path": "main.py", "content": "print('hi')\n", "contentType": "text/x-python"},
        {"path": "data/logo.png", "contentBase64": "iVBORw0KGgo=", "contentType": "image/png"},
    ]

    uploaded = admin.agents.upload_files(agent, {"files": files})
    assert uploaded.ok and [f.root for f in uploaded.files] == ["main.py", "data/logo.png"]
    assert _file(admin, agent, "main.py") == b"print('hi')\n"
    assert _file(admin, agent, "data/logo.png") == base64.b64decode("iVBORw0KGgo=")


def test_upload_is_all_or_nothing(
    server: RunningServer, admin: ServiceClient, admin_key: str, unique: str
) -> None:
    agent = _agent(admin, unique)
    files = [{"path": "good.txt", "content": "ok"}, {"path": "bad/../escape.txt", "content": "x"}]

    with pytest.raises(ServiceValidationError) as caught:
        admin.agents.upload_files(agent, {"files": files})
    (issue,) = caught.value.envelope["issues"]
    assert issue["field"] == "body.files.1.path"
    assert "bad/../escape.txt" in issue["message"]
    assert [e.path for e in workspace_listing(admin, agent)] == ["agent.json", "main.py"]


def test_upload_with_a_path_twice_is_400(admin: ServiceClient, unique: str) -> None:
    agent = _agent(admin, unique)
    files = [{"path": "a.txt", "content": "1"}, {"path": "a.txt", "content": "2"}]
    with pytest.raises(ServiceValidationError) as caught:
        admin.agents.upload_files(agent, {"files": files})
    assert caught.value.envelope["issues"][0]["field"] == "body.files.1.path"


# Path attacks: every one is a 400 whose issue names the parameter and, where our own check
# finds it (the route's pattern finds the others first), quotes the path.
ATTACKS = {
    "dotdot": "../secret",
    "dotdot-inside": "a/../../secret",
    "dot": "a/./b",
    "absolute": "/etc/passwd",
    "nul": "a\x00b",
    "backslash": "a\\b",
    "empty-segment": "a//b",
    "trailing-slash": "a/",
    "too-long": "a" * 513,
    "long-segment": "a" * 256,
    "empty": "",
}


@pytest.mark.parametrize("attack", sorted(ATTACKS))
def test_path_attacks_on_put_are_400_naming_the_path(
    server: RunningServer, admin: ServiceClient, admin_key: str, unique: str, attack: str
) -> None:
    agent = _agent(admin, unique)
    path = ATTACKS[attack]
    with _raw(server, admin_key) as http:
        response = http.put(
            f"/api/v1/agents/{agent}/files", params={"path": path}, json={"content": "x"}
        )
    assert response.status_code == 400
    (issue,) = _issues(response)
    assert issue["field"] == "query.path"
    assert [e.path for e in workspace_listing(admin, agent)] == ["agent.json", "main.py"]


@pytest.mark.parametrize("attack", sorted(ATTACKS))
def test_path_attacks_on_upload_are_400_naming_the_path(
    admin: ServiceClient, unique: str, attack: str
) -> None:
    agent = _agent(admin, unique)
    with pytest.raises(ServiceValidationError) as caught:
        admin.agents.upload_files(agent, {"files": [{"path": ATTACKS[attack], "content": "x"}]})
    (issue,) = caught.value.envelope["issues"]
    assert issue["field"] == "body.files.0.path"


@pytest.mark.parametrize("attack", ["dotdot", "absolute", "backslash", "empty-segment", "nul"])
def test_path_attacks_on_download_and_prefix_are_400(
    server: RunningServer, admin: ServiceClient, admin_key: str, unique: str, attack: str
) -> None:
    agent = _agent(admin, unique)
    for params, field in (({"path": ATTACKS[attack]}, "query.path"),
                          ({"prefix": ATTACKS[attack]}, "query.prefix")):  # fmt: skip
        response = _download(server, admin_key, agent, **params)
        assert response.status_code == 400
        assert [issue["field"] for issue in _issues(response)] == [field]


def test_unsafe_path_message_quotes_the_path(
    server: RunningServer, admin: ServiceClient, admin_key: str, unique: str
) -> None:
    agent = _agent(admin, unique)
    response = _download(server, admin_key, agent, path="a/../b")
    (issue,) = _issues(response)
    assert "'a/../b'" in issue["message"] and "'..'" in issue["message"]


def test_file_and_folder_collisions_with_stored_files_are_409(
    admin: ServiceClient, unique: str
) -> None:
    agent = _agent(admin, unique)
    admin.agents.put_file(agent, {"content": "x"}, path="notes")
    admin.agents.put_file(agent, {"content": "y"}, path="docs/readme.md")

    for path, stored in (("notes/inner.txt", "notes"), ("docs", "docs/readme.md")):
        with pytest.raises(ServiceError) as caught:
            admin.agents.put_file(agent, {"content": "z"}, path=path)
        assert caught.value.status == 409
        (issue,) = caught.value.envelope["issues"]
        assert issue["field"] == "query.path" and issue["code"] == "conflict"
        assert issue["message"] == f"Path {path!r} collides with the file {stored!r}"
    with pytest.raises(ServiceError) as caught:
        admin.agents.upload_files(agent, {"files": [{"path": "notes/a", "content": "1"}]})
    assert caught.value.status == 409
    assert caught.value.envelope["issues"][0]["field"] == "body.files.0.path"


def test_file_and_folder_collisions_within_one_request_are_400(
    admin: ServiceClient, unique: str
) -> None:
    agent = _agent(admin, unique)
    with pytest.raises(ServiceValidationError) as caught:
        files = [{"path": "x", "content": "1"}, {"path": "x/y", "content": "2"}]
        admin.agents.upload_files(agent, {"files": files})
    assert caught.value.envelope["issues"][0]["field"] == "body.files.0.path"


def test_missing_file_is_404(
    server: RunningServer, admin: ServiceClient, admin_key: str, unique: str
) -> None:
    agent = _agent(admin, unique)
    response = _download(server, admin_key, agent, path="nope.txt")
    assert response.status_code == 404
    assert _issues(response)[0]["code"] == "not_found"


def test_files_of_unknown_agent_are_404(admin: ServiceClient) -> None:
    with pytest.raises(ServiceNotFoundError):
        admin.agents.list_files("no-such-agent")
    with pytest.raises(ServiceNotFoundError):
        admin.agents.put_file("no-such-agent", {"content": "x"}, path="a.txt")


def test_writing_agent_json_updates_the_config(admin: ServiceClient, unique: str) -> None:
    agent = _agent(admin, unique)
    manifest = '{"entrypoint": ["python", "other.py"], "timeoutSeconds": 42}'

    admin.agents.put_file(agent, {"content": manifest}, path="agent.json")
    config = admin.agents.get(agent).agent.config
    assert config is not None
    assert [item.root for item in config.entrypoint] == ["python", "other.py"]
    assert config.timeout_seconds == 42


@pytest.mark.parametrize(
    "manifest",
    ["not json", '{"entrypoint": []}', '{"entrypoint": ["x"], "bogus": 1}',
     '{"entrypoint": ["x"], "inputSchema": {"type": 5}}'],
)  # fmt: skip
def test_invalid_agent_json_is_400_and_keeps_the_config(
    admin: ServiceClient, unique: str, manifest: str
) -> None:
    agent = _agent(admin, unique)
    before = admin.agents.get(agent).agent.config

    with pytest.raises(ServiceValidationError) as caught:
        admin.agents.put_file(agent, {"content": manifest}, path="agent.json")
    assert caught.value.envelope["issues"][0]["field"].startswith("body.content")
    assert admin.agents.get(agent).agent.config == before
