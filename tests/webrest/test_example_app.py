"""A walk through the example application over ASGI."""

from __future__ import annotations

import hashlib
import json
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest

from examples.webrest_example.app import create_app
from examples.webrest_example.resources.avatars import MAX_AVATAR_SIZE
from examples.webrest_example.store import placeholder_png

from .support import client

TIMM = {
    "id": 1549,
    "name": "Timm",
    "handle": "timm",
    "email": "timm@example.com",
    "role": "admin",
    "created_by": "seed",
}
ALICE = {"name": "Alice", "handle": "alice", "email": "alice@example.com"}


@pytest.fixture
async def http(tmp_path: Path) -> AsyncIterator[httpx.AsyncClient]:
    async with client(create_app(storage=tmp_path / "avatars")) as http:
        yield http


# -- users ---------------------------------------------------------------------------------------


async def test_create_get_list_update_and_delete_a_user(http: httpx.AsyncClient) -> None:
    created = await http.post("/users", json=ALICE, headers={"Authorization": "Bearer bob"})
    assert created.status_code == 201
    alice = {**ALICE, "id": 6101, "role": "author", "created_by": "bob"}
    assert created.json() == alice
    assert created.headers["location"] == "/users/6101"

    found = await http.get("/users/6101")
    assert (found.status_code, found.json()) == (200, alice)
    etag = found.headers["etag"]
    unchanged = await http.get("/users/6101", headers={"If-None-Match": etag})
    assert (unchanged.status_code, unchanged.content) == (304, b"")

    listed = await http.get("/users", params={"roles": "author,editor"})
    assert [user["id"] for user in listed.json()] == [6100, 6101]
    assert (await http.get("/users/count")).json() == 3
    assert (await http.get("/users/@alice")).json() == alice

    replaced = await http.put("/users/6101", json={**ALICE, "name": "Alice B.", "role": "editor"})
    assert replaced.json() == {**alice, "name": "Alice B.", "role": "editor"}
    changed = await http.patch("/users/6101", json={"email": "ab@example.com"})
    assert changed.json()["email"] == "ab@example.com"
    assert changed.json()["name"] == "Alice B."
    refreshed = await http.get("/users/6101", headers={"If-None-Match": etag})
    assert refreshed.status_code == 200

    deleted = await http.delete("/users/6101")
    assert (deleted.status_code, deleted.content) == (204, b"")
    gone = await http.get("/users/6101")
    assert gone.status_code == 404
    assert gone.json() == {"status": 404, "message": "No such user #6101"}
    assert (await http.delete("/users/6101")).status_code == 404


async def test_create_from_a_form_as_anonymous(http: httpx.AsyncClient) -> None:
    created = await http.post("/users", data=ALICE)
    assert created.status_code == 201
    assert created.json()["created_by"] == "anonymous"


async def test_create_rejects_invalid_users_and_taken_handles(http: httpx.AsyncClient) -> None:
    invalid = await http.post("/users", json={**ALICE, "handle": "Alice!", "extra": 1})
    assert invalid.status_code == 400
    message = invalid.json()["message"]
    assert "handle" in message and "extra" in message
    taken = await http.post("/users", json={**ALICE, "handle": "timm"})
    assert taken.status_code == 409
    assert taken.json() == {"status": 409, "message": "The handle 'timm' is taken"}
    unsupported = await http.post("/users", content=b"x", headers={"Content-Type": "text/plain"})
    assert unsupported.status_code == 415


async def test_list_filters_and_pages(http: httpx.AsyncClient) -> None:
    for index in range(5):
        handle = "user" + "abcde"[index]
        await http.post("/users", json={**ALICE, "handle": handle, "role": "editor"})

    async def ids(query: str) -> list[int]:
        response = await http.get("/users?" + query)
        assert response.status_code == 200, response.text
        return [user["id"] for user in response.json()]

    assert await ids("") == [1549, 6100, 6101, 6102, 6103, 6104, 6105]
    assert await ids("roles=admin,author") == [1549, 6100]
    assert await ids("ids=6100,6104,1") == [6100, 6104]
    assert await ids("ids=6100&ids=6104") == [6100, 6104]
    assert await ids("per_page=3&page=2") == [6102, 6103, 6104]
    assert await ids("roles=") == [1549, 6100, 6101, 6102, 6103, 6104, 6105]
    for query in ("roles=owner", "ids=1,x", "per_page=0", "page=x", "per_page=101"):
        assert (await http.get("/users?" + query)).status_code == 400


async def test_list_links_the_other_pages(http: httpx.AsyncClient) -> None:
    for index in range(5):
        handle = "user" + "abcde"[index]
        await http.post("/users", json={**ALICE, "handle": handle, "role": "editor"})

    everyone = await http.get("/users")
    assert len(everyone.json()) == 7
    assert "link" not in everyone.headers  # one page only

    first = await http.get("/users?per_page=3")
    assert [user["id"] for user in first.json()] == [1549, 6100, 6101]
    assert first.headers["link"] == (
        '<http://test/users?per_page=3&page=2>; rel="next",'
        ' <http://test/users?per_page=3&page=3>; rel="last"'
    )
    second = await http.get(first.links["next"]["url"])
    assert [user["id"] for user in second.json()] == [6102, 6103, 6104]
    assert {rel: link["url"] for rel, link in second.links.items()} == {
        "first": "http://test/users?per_page=3&page=1",
        "prev": "http://test/users?per_page=3&page=1",
        "next": "http://test/users?per_page=3&page=3",
        "last": "http://test/users?per_page=3&page=3",
    }
    last = await http.get(second.links["last"]["url"])
    assert [user["id"] for user in last.json()] == [6105]
    assert set(last.links) == {"first", "prev"}

    filtered = await http.get("/users", params={"roles": "editor", "per_page": 2, "page": 2})
    assert [user["id"] for user in filtered.json()] == [6103, 6104]
    assert filtered.links["next"]["url"] == "http://test/users?roles=editor&per_page=2&page=3"
    assert filtered.links["last"]["url"] == "http://test/users?roles=editor&per_page=2&page=3"


async def test_responses_are_not_cached_unless_they_say_so(http: httpx.AsyncClient) -> None:
    found = await http.get("/users/1549")
    assert found.headers["cache-control"] == "no-cache"  # the default: revalidate with ETag
    assert found.headers["x-content-type-options"] == "nosniff"
    status = await http.get("/monitoring/status")
    assert status.headers.get_list("cache-control") == ["max-age=2"]  # set by ResultCache


async def test_find_by_handle_and_matrix_filter(http: httpx.AsyncClient) -> None:
    assert (await http.get("/users/@timm")).json() == TIMM
    assert (await http.get("/users/@nobody")).status_code == 404
    await http.post("/users", json=ALICE, headers={"Authorization": "Bearer bob"})

    async def authors(segment: str) -> list[str]:
        response = await http.get(f"/users/{segment}/authors")
        assert response.status_code == 200, response.text
        return [user["handle"] for user in response.json()]

    assert await authors("all") == ["test", "alice"]
    assert await authors("created_by=bob") == ["alice"]
    assert await authors("handles=test,alice;created_by=seed") == ["test"]
    assert await authors("handles=timm") == []  # an admin, not an author


async def test_routing_errors(http: httpx.AsyncClient) -> None:
    not_allowed = await http.post("/users/1549")
    assert not_allowed.status_code == 405
    assert not_allowed.headers["allow"] == "GET, HEAD, PUT, PATCH, DELETE, OPTIONS"
    unacceptable = await http.get("/users/1549", headers={"Accept": "text/html"})
    assert unacceptable.status_code == 406
    assert (await http.get("/users/not-a-number/avatar")).status_code == 404


# -- avatars -------------------------------------------------------------------------------------


async def test_upload_and_download_an_avatar(http: httpx.AsyncClient, tmp_path: Path) -> None:
    placeholder = await http.get("/users/1549/avatar")
    assert placeholder.status_code == 200
    assert placeholder.headers["content-type"] == "image/png"
    assert placeholder.content == placeholder_png(1549)

    image = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 1000
    uploaded = await http.put(
        "/users/1549/avatar",
        files={"avatar": ("me.png", image, "image/png")},
        data={"alt": "Timm, smiling"},
    )
    assert (uploaded.status_code, uploaded.content) == (204, b"")
    assert (tmp_path / "avatars" / "1549.png").read_bytes() == image

    downloaded = await http.get("/users/1549/avatar")
    assert downloaded.content == image
    assert downloaded.headers["content-length"] == str(len(image))
    info = await http.get("/users/1549/avatar/info")
    assert info.json() == {
        "size": len(image),
        "alt": "Timm, smiling",
        "sha256": hashlib.sha256(image).hexdigest(),
    }

    described = await http.put(
        "/users/1549/avatar/alt", content="Timm", headers={"Content-Type": "text/plain"}
    )
    assert described.json()["alt"] == "Timm"
    assert (await http.put("/users/1549/avatar/alt", content="x" * 201)).status_code == 400

    raw = await http.put(
        "/users/1549/avatar/raw",
        content=b"raw image",
        headers={"Content-Type": "application/octet-stream"},
    )
    assert raw.status_code == 204
    assert (await http.get("/users/1549/avatar")).content == b"raw image"
    assert list((tmp_path / "avatars").iterdir()) == [tmp_path / "avatars" / "1549.png"]


async def test_avatar_errors(http: httpx.AsyncClient) -> None:
    unknown = await http.put("/users/42/avatar", files={"avatar": ("a.png", b"x", "image/png")})
    assert unknown.status_code == 404
    assert (await http.get("/users/42/avatar")).status_code == 404
    assert (await http.get("/users/42/avatar/info")).status_code == 404
    missing = await http.put("/users/1549/avatar", files={"other": ("a.png", b"x", "image/png")})
    assert missing.status_code == 400
    assert missing.json()["message"] == "Missing the file part 'avatar'"
    too_large = await http.put(
        "/users/1549/avatar", files={"avatar": ("a.png", b"x" * MAX_AVATAR_SIZE, "image/png")}
    )
    assert too_large.status_code == 413
    not_multipart = await http.put("/users/1549/avatar", json={"avatar": "x"})
    assert not_multipart.status_code == 400
    assert (await http.get("/users/1549/avatar")).content == placeholder_png(1549)


async def test_deleting_a_user_deletes_the_avatar(http: httpx.AsyncClient, tmp_path: Path) -> None:
    await http.put("/users/6100/avatar/raw", content=b"image")
    assert (tmp_path / "avatars" / "6100.png").exists()
    assert (await http.delete("/users/6100")).status_code == 204
    assert not (tmp_path / "avatars" / "6100.png").exists()


# -- monitoring ----------------------------------------------------------------------------------


async def test_status_is_cached_by_the_interceptor(http: httpx.AsyncClient) -> None:
    first = await http.get("/monitoring/status")
    assert first.status_code == 200
    assert first.headers["cache-control"] == "max-age=2"
    assert first.json()["status"] == "ok"
    assert first.json()["users"] == 2
    await http.post("/users", json=ALICE)
    assert (await http.get("/monitoring/status")).json() == first.json()  # for two seconds


async def test_metrics_as_json_and_csv(http: httpx.AsyncClient) -> None:
    await http.get("/users/1549")
    await http.get("/users/1549")
    await http.get("/users/count")
    as_json = await http.get("/monitoring/metrics")
    assert as_json.headers["content-type"] == "application/json"
    assert as_json.json() == [  # counted on the way in: this call is one too
        {"name": "Monitoring.metrics_table", "calls": 1},
        {"name": "Users.count", "calls": 1},
        {"name": "Users.find", "calls": 2},
    ]
    as_csv = await http.get("/monitoring/metrics", headers={"Accept": "text/csv"})
    assert as_csv.headers["content-type"] == "text/csv; charset=utf-8"
    assert as_csv.text.splitlines() == [
        "name,calls",
        "Monitoring.metrics_table,2",
        "Users.count,1",
        "Users.find,2",
    ]
    error = await http.get("/monitoring/events?count=0", headers={"Accept": "text/csv"})
    assert error.status_code == 406  # events are only ever ndjson


async def test_events_are_streamed(http: httpx.AsyncClient) -> None:
    async with http.stream("GET", "/monitoring/events", params={"count": 3}) as response:
        assert response.status_code == 200
        assert response.headers["content-type"] == "application/x-ndjson"
        assert "content-length" not in response.headers
        lines = [json.loads(line) async for line in response.aiter_lines() if line]
    assert lines == [{"event": n, "users": 2} for n in (1, 2, 3)]
    invalid = await http.get("/monitoring/events", params={"count": 101})
    assert invalid.status_code == 400


async def test_csv_errors_are_written_as_csv(http: httpx.AsyncClient) -> None:
    response = await http.post("/monitoring/metrics", headers={"Accept": "text/csv"})
    assert response.status_code == 405
    assert response.text.splitlines() == ["status,message", "405,Method POST not allowed"]


async def test_the_document_is_served(http: httpx.AsyncClient) -> None:
    response = await http.get("/openapi.json")
    assert response.status_code == 200
    assert response.json()["info"]["title"] == "webrest example"
