"""Expected files over HTTP: upload, copy an output, list, download, rename, delete, path
safety, errors and key scopes."""

from __future__ import annotations

from collections.abc import Callable
from urllib.parse import quote

import pytest

from generated.agents.client import (
    ServiceClient,
    ServiceError,
    ServiceNotFoundError,
)
from handlers.agents.storage.blobs import BlobStore, sha256_hex
from tests.agents.feedback_support import (
    StoredExecution,
    insert_execution,
    issues,
    new_agent,
    raw_client,
)
from tests.agents.support import RunningServer

BINARY = bytes(range(256)) * 3 + b"\x00\r\n\xff"


@pytest.fixture
def execution(server: RunningServer, admin: ServiceClient, unique: str) -> StoredExecution:
    return insert_execution(server, new_agent(admin, unique, "exp"))


def _download(client: ServiceClient, execution_id: str, name: str) -> bytes:
    return b"".join(client.agents.executions.download_expected(execution_id, name))


def _names(client: ServiceClient, execution_id: str) -> list[str]:
    return [item.name for item in client.agents.executions.list_expected(execution_id).files]


def _url(execution_id: str, name: str = "") -> str:
    base = f"/api/v1/agents/executions/{execution_id}/expected"
    return f"{base}/{quote(name, safe='')}" if name else base


def test_upload_list_and_download_exact_bytes(
    server: RunningServer, admin: ServiceClient, admin_key: str, execution: StoredExecution
) -> None:
    executions = admin.agents.executions
    created = executions.upload_expected(
        execution.id, ("whatever.bin", BINARY, "application/x-custom"), name="tables/blob.bin"
    )
    assert created.name == "tables/blob.bin"
    assert executions.upload_expected(execution.id, ("totals.json", b'{"total": 1}')).name == (
        "totals.json"
    )  # default name: the part's filename

    listed = executions.list_expected(execution.id)
    assert listed.expected is None
    files = {item.name: (item.size_bytes, item.content_type) for item in listed.files}
    assert files == {
        "tables/blob.bin": (len(BINARY), "application/x-custom"),
        "totals.json": (len(b'{"total": 1}'), "application/json"),
    }
    assert [item.name for item in listed.files] == ["tables/blob.bin", "totals.json"]
    assert _download(admin, execution.id, "tables/blob.bin") == BINARY

    with raw_client(server, admin_key) as http:
        response = http.get(_url(execution.id, "tables/blob.bin"))
    assert response.status_code == 200
    assert response.content == BINARY
    assert response.headers["content-type"] == "application/octet-stream"
    assert response.headers["content-disposition"] == 'attachment; filename="blob.bin"'

    detail = executions.get_feedback(execution.id)
    assert [item.name for item in detail.expected_files] == ["tables/blob.bin", "totals.json"]


def test_content_type_is_guessed_for_generic_parts(
    server: RunningServer, admin_key: str, admin: ServiceClient, execution: StoredExecution
) -> None:
    with raw_client(server, admin_key) as http:
        response = http.post(
            _url(execution.id),
            files={"file": ("lines.csv", b"a,b\n", "application/octet-stream")},
            data={"name": "out/lines.csv"},
        )
    assert response.status_code == 201, response.text
    assert response.json() == {"name": "out/lines.csv"}
    (entry,) = admin.agents.executions.list_expected(execution.id).files
    assert entry.content_type == "text/csv"


def test_upload_replaces_a_file_of_the_same_name(
    admin: ServiceClient, execution: StoredExecution
) -> None:
    executions = admin.agents.executions
    executions.upload_expected(execution.id, b"first version", name="a.txt")
    executions.upload_expected(execution.id, b"v2", name="a.txt")
    assert _names(admin, execution.id) == ["a.txt"]
    assert _download(admin, execution.id, "a.txt") == b"v2"
    (entry,) = executions.list_expected(execution.id).files
    assert entry.size_bytes == 2


def test_empty_file(admin: ServiceClient, execution: StoredExecution) -> None:
    admin.agents.executions.upload_expected(execution.id, b"", name="empty.txt")
    assert _download(admin, execution.id, "empty.txt") == b""


def test_copy_an_output_file(admin: ServiceClient, execution: StoredExecution) -> None:
    executions = admin.agents.executions
    same = executions.copy_output_to_expected(execution.id, {"outputFileName": "tables/lines.csv"})
    renamed = executions.copy_output_to_expected(
        execution.id, {"outputFileName": "raw.bin", "expectedName": "expected/raw copy.bin"}
    )
    explicit_null = executions.copy_output_to_expected(
        execution.id, {"outputFileName": "totals.json", "expectedName": None}
    )
    assert (same.name, renamed.name, explicit_null.name) == (
        "tables/lines.csv",
        "expected/raw copy.bin",
        "totals.json",
    )
    assert (
        _download(admin, execution.id, "tables/lines.csv")
        == (execution.outputs["tables/lines.csv"][0])
    )
    assert (
        _download(admin, execution.id, "expected/raw copy.bin") == execution.outputs["raw.bin"][0]
    )
    entries = {item.name: item for item in executions.list_expected(execution.id).files}
    assert entries["tables/lines.csv"].content_type == "text/csv"
    assert entries["expected/raw copy.bin"].size_bytes == len(execution.outputs["raw.bin"][0])


def test_copy_of_an_unknown_output_is_a_404(
    admin: ServiceClient, execution: StoredExecution
) -> None:
    with pytest.raises(ServiceNotFoundError) as caught:
        admin.agents.executions.copy_output_to_expected(
            execution.id, {"outputFileName": "missing.json"}
        )
    assert "missing.json" in str(caught.value)
    assert _names(admin, execution.id) == []


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({}, "body.outputFileName"),
        ({"outputFileName": "totals.json", "extra": 1}, "body.extra"),
        ({"outputFileName": "../totals.json"}, "body.outputFileName"),
        ({"outputFileName": "totals.json", "expectedName": "a/../../etc"}, "body.expectedName"),
        ({"outputFileName": "totals.json", "expectedName": "/etc/passwd"}, "body.expectedName"),
    ],
)
def test_invalid_copy_is_a_400(
    server: RunningServer,
    admin: ServiceClient,
    admin_key: str,
    execution: StoredExecution,
    body: dict[str, object],
    field: str,
) -> None:
    with raw_client(server, admin_key) as http:
        response = http.post(_url(execution.id), json=body)
    assert response.status_code == 400
    assert [issue["field"] for issue in issues(response)] == [field]
    assert _names(admin, execution.id) == []


UNSAFE_NAMES = [
    "..",
    "../x",
    "a/../b",
    "./a",
    "a/.",
    "a//b",
    "a/",
    "/abs",
    "a\\b",
    "tab\tname",
    "nul\x00",
    "é.txt",
    "x" * 256,
]


@pytest.mark.parametrize("name", UNSAFE_NAMES)
def test_unsafe_upload_names_are_refused(
    server: RunningServer,
    admin: ServiceClient,
    admin_key: str,
    execution: StoredExecution,
    name: str,
) -> None:
    with raw_client(server, admin_key) as http:
        response = http.post(
            _url(execution.id), files={"file": ("f.txt", b"x")}, data={"name": name}
        )
    assert response.status_code == 400
    (issue,) = issues(response)
    assert issue["field"] == "body.name"
    assert _names(admin, execution.id) == []


@pytest.mark.parametrize("filename", ["..", "é.txt", "a\\b"])
def test_unsafe_part_filenames_are_refused(
    server: RunningServer,
    admin: ServiceClient,
    admin_key: str,
    execution: StoredExecution,
    filename: str,
) -> None:
    with raw_client(server, admin_key) as http:
        response = http.post(_url(execution.id), files={"file": (filename, b"x")})
    assert response.status_code == 400
    (issue,) = issues(response)
    assert issue["field"] == "body.file"
    assert repr(filename) in issue["message"]
    assert _names(admin, execution.id) == []


def test_a_message_quotes_the_refused_path(
    server: RunningServer, admin_key: str, execution: StoredExecution
) -> None:
    with raw_client(server, admin_key) as http:
        response = http.post(
            _url(execution.id), files={"file": ("f.txt", b"x")}, data={"name": "a/../b"}
        )
    assert "'a/../b'" in issues(response)[0]["message"]
    assert "'..' segment" in issues(response)[0]["message"]


@pytest.mark.parametrize("name", ["..", "../x", "a/../b", "a//b", "./a"])
def test_unsafe_path_parameters_are_refused(
    server: RunningServer,
    admin: ServiceClient,
    admin_key: str,
    execution: StoredExecution,
    name: str,
) -> None:
    admin.agents.executions.upload_expected(execution.id, b"x", name="x")
    encoded = quote(name, safe="").replace(".", "%2E")  # keep the client from resolving dots
    url = f"{_url(execution.id)}/{encoded}"
    with raw_client(server, admin_key) as http:
        answers = [
            http.get(url),
            http.delete(url),
            http.patch(url, json={"name": "y"}),
        ]
    for response in answers:
        assert response.status_code == 400, response.text
        assert issues(response)[0]["field"] == "path.filename"
    assert _names(admin, execution.id) == ["x"]


def test_a_file_and_a_folder_of_the_same_name_collide(
    admin: ServiceClient, execution: StoredExecution
) -> None:
    executions = admin.agents.executions
    executions.upload_expected(execution.id, b"1", name="report")
    executions.upload_expected(execution.id, b"2", name="tables/a.csv")
    with pytest.raises(ServiceError) as caught:
        executions.upload_expected(execution.id, b"3", name="report/b.txt")
    assert caught.value.status == 409
    (issue,) = caught.value.envelope["issues"]
    assert issue["code"] == "conflict"
    assert issue["message"] == "Path 'report/b.txt' collides with the expected file 'report'"
    with pytest.raises(ServiceError) as caught:
        executions.copy_output_to_expected(
            execution.id, {"outputFileName": "raw.bin", "expectedName": "tables"}
        )
    assert caught.value.status == 409
    with pytest.raises(ServiceError) as caught:
        executions.rename_expected(execution.id, "report", {"name": "tables/a.csv/deeper"})
    assert caught.value.status == 409
    assert _names(admin, execution.id) == ["report", "tables/a.csv"]


def test_rename(admin: ServiceClient, execution: StoredExecution) -> None:
    executions = admin.agents.executions
    executions.upload_expected(execution.id, BINARY, name="totals.json")
    renamed = executions.rename_expected(
        execution.id, "totals.json", {"name": "expected/totals (v2).json"}
    )
    assert (renamed.name, renamed.previous_name) == ("expected/totals (v2).json", "totals.json")
    assert _names(admin, execution.id) == ["expected/totals (v2).json"]
    assert _download(admin, execution.id, "expected/totals (v2).json") == BINARY
    with pytest.raises(ServiceNotFoundError):
        _download(admin, execution.id, "totals.json")
    same = executions.rename_expected(
        execution.id, "expected/totals (v2).json", {"name": "expected/totals (v2).json"}
    )
    assert (same.name, same.previous_name) == ("expected/totals (v2).json",) * 2


def test_rename_onto_an_existing_name_is_a_409(
    server: RunningServer, admin: ServiceClient, admin_key: str, execution: StoredExecution
) -> None:
    executions = admin.agents.executions
    executions.upload_expected(execution.id, b"a", name="a.json")
    executions.upload_expected(execution.id, b"b", name="b.json")
    with raw_client(server, admin_key) as http:
        response = http.patch(_url(execution.id, "a.json"), json={"name": "b.json"})
    assert response.status_code == 409
    assert issues(response) == [
        {
            "field": "body.name",
            "message": "An expected file named 'b.json' already exists",
            "code": "conflict",
            "severity": "error",
        }
    ]
    with pytest.raises(ServiceError) as caught:
        executions.rename_expected(execution.id, "a.json", {"name": "b.json"})
    assert caught.value.status == 409
    assert _download(admin, execution.id, "a.json") == b"a"
    assert _download(admin, execution.id, "b.json") == b"b"


def test_rename_errors(
    server: RunningServer, admin: ServiceClient, admin_key: str, execution: StoredExecution
) -> None:
    executions = admin.agents.executions
    with pytest.raises(ServiceNotFoundError):
        executions.rename_expected(execution.id, "missing.json", {"name": "b.json"})
    executions.upload_expected(execution.id, b"a", name="a.json")
    with raw_client(server, admin_key) as http:
        bad_names = [
            http.patch(_url(execution.id, "a.json"), json={"name": name})
            for name in ["../b.json", "a/./b", "/b", ""]
        ]
        no_name = http.patch(_url(execution.id, "a.json"), json={})
    for response in [*bad_names, no_name]:
        assert response.status_code == 400
        assert issues(response)[0]["field"] == "body.name"
    assert _names(admin, execution.id) == ["a.json"]


def test_delete(admin: ServiceClient, execution: StoredExecution) -> None:
    executions = admin.agents.executions
    executions.upload_expected(execution.id, b"a", name="dir/a.json")
    executions.upload_expected(execution.id, b"b", name="b.json")
    executions.delete_expected(execution.id, "dir/a.json")
    assert _names(admin, execution.id) == ["b.json"]
    with pytest.raises(ServiceNotFoundError):
        executions.delete_expected(execution.id, "dir/a.json")
    with pytest.raises(ServiceNotFoundError):
        _download(admin, execution.id, "dir/a.json")


def test_upload_needs_a_file_part(
    server: RunningServer, admin: ServiceClient, admin_key: str, execution: StoredExecution
) -> None:
    with raw_client(server, admin_key) as http:
        no_file = http.post(_url(execution.id), files={"name": (None, b"a.txt")})
        extra = http.post(
            _url(execution.id), files={"file": ("a.txt", b"x"), "other": ("b.txt", b"y")}
        )
        as_text = http.post(
            _url(execution.id), content=b"x", headers={"content-type": "text/plain"}
        )
    assert no_file.status_code == 400
    assert issues(no_file)[0]["field"] == "body.file"
    assert extra.status_code == 400
    assert as_text.status_code in (400, 415)
    assert _names(admin, execution.id) == []


def test_a_body_over_the_limit_is_a_413(
    server: RunningServer, admin: ServiceClient, admin_key: str, execution: StoredExecution
) -> None:
    too_big = b"\0" * (server.server.settings.max_request_bytes + 1)  # AGENTS_MAX_REQUEST_BODY
    with raw_client(server, admin_key) as http:
        response = http.post(_url(execution.id), files={"file": ("big.bin", too_big)})
    assert response.status_code == 413
    assert issues(response)[0]["code"] == "too_large"
    assert _names(admin, execution.id) == []


def _expected_calls(client: ServiceClient, execution_id: str) -> list[Callable[[], object]]:
    executions = client.agents.executions
    return [
        lambda: executions.list_expected(execution_id),
        lambda: executions.upload_expected(execution_id, b"x", name="intruder.txt"),
        lambda: executions.copy_output_to_expected(execution_id, {"outputFileName": "raw.bin"}),
        lambda: b"".join(executions.download_expected(execution_id, "mine.txt")),
        lambda: executions.rename_expected(execution_id, "mine.txt", {"name": "theirs.txt"}),
        lambda: executions.delete_expected(execution_id, "mine.txt"),
    ]


def test_unknown_execution_is_a_404(admin: ServiceClient) -> None:
    for call in _expected_calls(admin, "aex_doesnotexist"):
        with pytest.raises(ServiceNotFoundError) as caught:
            call()
        assert "aex_doesnotexist" in str(caught.value)


def test_other_keys_see_nothing_and_change_nothing(
    server: RunningServer, admin: ServiceClient, unique: str, execution: StoredExecution
) -> None:
    admin.agents.executions.upload_expected(execution.id, b"mine", name="mine.txt")
    outsider_key = server.key("outsider", agents=(new_agent(admin, unique, "other"),))
    with server.client(outsider_key) as outsider:
        for call in _expected_calls(outsider, execution.id):
            with pytest.raises(ServiceNotFoundError):
                call()
    secret_content = f"outsider {unique}".encode()
    with server.client(outsider_key) as outsider, pytest.raises(ServiceNotFoundError):
        outsider.agents.executions.upload_expected(execution.id, secret_content, name="x.txt")
    blobs = BlobStore(server.storage.settings().blob_dir)
    assert not blobs.exists(sha256_hex(secret_content))  # nothing stored for it
    insider_key = server.key("insider", agents=(execution.agent_id,))
    with server.client(insider_key) as insider:
        assert _names(insider, execution.id) == ["mine.txt"]
        assert _download(insider, execution.id, "mine.txt") == b"mine"


def test_expected_files_of_executions_are_separate(
    server: RunningServer, admin: ServiceClient, execution: StoredExecution
) -> None:
    sibling = insert_execution(server, execution.agent_slug)
    admin.agents.executions.upload_expected(execution.id, b"one", name="same.txt")
    admin.agents.executions.upload_expected(sibling.id, b"two", name="same.txt")
    admin.agents.executions.delete_expected(sibling.id, "same.txt")
    assert _download(admin, execution.id, "same.txt") == b"one"
    assert _names(admin, sibling.id) == []
