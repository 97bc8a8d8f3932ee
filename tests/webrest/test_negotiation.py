"""Content negotiation: request bodies by Content-Type, responses by Accept."""

from __future__ import annotations

import csv
import io
from typing import Annotated, Any

import pytest

import webrest
from webrest import Application, Entity, Get, Post, Resource, Response, RestApi, negotiate

from .support import client


class CsvWriter:
    """Writes a list of rows (sequences) as CSV; a dict as a header row and a value row."""

    media_type = "text/csv"

    def write(self, value: object) -> bytes:
        if isinstance(value, dict):
            value = [list(value), list(value.values())]
        if not isinstance(value, list):
            raise TypeError(f"Cannot write {type(value).__name__} as CSV")
        out = io.StringIO()
        writer = csv.writer(out, lineterminator="\n")
        for row in value:
            writer.writerow(row)
        return out.getvalue().encode()


class ListsOnlyCsvWriter(CsvWriter):
    """Cannot write dicts, so not error bodies either."""

    def write(self, value: object) -> bytes:
        if isinstance(value, dict):
            raise TypeError("Cannot write a dict as CSV")
        return super().write(value)


class CsvReader:
    """Reads CSV rows as lists of strings."""

    async def read(self, request: webrest.Request) -> object:
        text = (await request.body()).decode()
        return [row for row in csv.reader(io.StringIO(text)) if row]


@Resource("/data")
class Data:
    @Get("/rows")
    def rows(self) -> list[list[object]]:
        return [["id", "name"], [1, "one"], [2, "two, too"]]

    @Post("/echo")
    def echo(self, data: Any) -> Any:
        return data

    @Post("/typed")
    def typed(self, data: dict[str, int]) -> dict[str, int]:
        return data

    @Post("/bytes")
    def bytes_(self, data: Annotated[bytes, Entity]) -> dict[str, object]:
        return {"size": len(data), "head": data[:4].hex()}

    @Get("/json-only", produces=["application/json"])
    def json_only(self) -> list[list[object]]:
        return [["a"]]

    @Get("/error")
    def error(self) -> Response:
        return Response.not_found("Gone")

    @Get("/always-csv")
    def always_csv(self) -> Response:
        return Response.ok().type("text/csv").entity([["a", "b"]])


def app_with_csv() -> Application:
    api = RestApi(Data()).register("text/csv", reader=CsvReader(), writer=CsvWriter())
    return Application({"/": api})


def plain_app() -> Application:
    return Application({"/": RestApi(Data())})


# -- input -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "content_type",
    ["application/json", "application/json; charset=utf-8", "Application/JSON;charset=UTF-8"],
)
async def test_json_body(content_type: str) -> None:
    async with client(plain_app()) as http:
        response = await http.post(
            "/data/echo", content=b'{"a": [1, "x"]}', headers={"Content-Type": content_type}
        )
        typed = await http.post(
            "/data/typed", content=b'{"a": "1"}', headers={"Content-Type": content_type}
        )
    assert response.json() == {"a": [1, "x"]}
    assert typed.json() == {"a": 1}


async def test_body_without_content_type_is_read_as_json() -> None:
    async with client(plain_app()) as http:
        response = await http.post("/data/echo", content=b"[1, 2]")
    assert response.json() == [1, 2]


async def test_form_urlencoded_body() -> None:
    async with client(plain_app()) as http:
        response = await http.post("/data/echo", data={"a": "1", "b": ["x", "y"]})
    assert response.json() == {"a": "1", "b": ["x", "y"]}


async def test_multipart_form_body() -> None:
    async with client(plain_app()) as http:
        response = await http.post(
            "/data/typed", data={"a": "1", "b": "2"}, files={"ignored": ("f.txt", b"data")}
        )
    assert response.status_code == 400  # the file is not an int
    async with client(plain_app()) as http:
        response = await http.post("/data/typed", data={"a": "1", "b": "2"}, files={})
    assert response.json() == {"a": 1, "b": 2}


async def test_multipart_form_fields() -> None:
    async with client(plain_app()) as http:
        response = await http.post(
            "/data/typed",
            files={"a": (None, b"1"), "b": (None, b"2")},
        )
    assert response.status_code == 200
    assert response.json() == {"a": 1, "b": 2}


async def test_octet_stream_body() -> None:
    async with client(plain_app()) as http:
        response = await http.post(
            "/data/bytes",
            content=b"\x00\x01\x02\x03\xff",
            headers={"Content-Type": "application/octet-stream"},
        )
    assert response.json() == {"size": 5, "head": "00010203"}


async def test_registered_reader_is_used() -> None:
    async with client(app_with_csv()) as http:
        response = await http.post(
            "/data/echo", content=b"a,b\n1,2\n", headers={"Content-Type": "text/csv"}
        )
    assert response.json() == [["a", "b"], ["1", "2"]]


async def test_unsupported_request_body_type() -> None:
    async with client(plain_app()) as http:
        response = await http.post(
            "/data/echo", content=b"<a/>", headers={"Content-Type": "application/xml"}
        )
    assert response.status_code == 415
    assert response.json() == {
        "status": 415,
        "message": "Unsupported request body type application/xml",
    }


@pytest.mark.parametrize("path", ["/data/echo", "/data/typed"])
async def test_malformed_json(path: str) -> None:
    async with client(plain_app()) as http:
        response = await http.post(
            path, content=b'{"a": ', headers={"Content-Type": "application/json"}
        )
    assert response.status_code == 400
    assert response.json()["message"].startswith("Malformed JSON")


@pytest.mark.parametrize("path", ["/data/echo", "/data/typed"])
async def test_invalid_utf8_json(path: str) -> None:
    async with client(plain_app()) as http:
        response = await http.post(
            path, content=b'{"a": "\xff\xfe"}', headers={"Content-Type": "application/json"}
        )
    assert response.status_code == 400
    assert response.json()["message"].startswith("Malformed JSON")


# -- output ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("accept", "expected"),
    [
        (None, "application/json"),
        ("*/*", "application/json"),
        ("application/json", "application/json"),
        ("text/csv", "text/csv"),
        ("text/*", "text/csv"),
        ("text/csv;q=0.5, application/json", "application/json"),
        ("text/csv, application/json;q=0.9", "text/csv"),
        ("application/json;q=0, */*", "text/csv"),
        ("*/*;q=0.1, text/csv;q=0.2", "text/csv"),
        ("text/csv, application/json", "text/csv"),
        ("application/json, text/csv", "application/json"),
        ("text/*, application/json", "application/json"),
        ("text/html, */*;q=0.1", "application/json"),
    ],
)
async def test_output_format_by_accept(accept: str | None, expected: str) -> None:
    headers = {"Accept": accept} if accept is not None else {}
    async with client(app_with_csv()) as http:
        response = await http.get("/data/rows", headers=headers)
    assert response.status_code == 200
    assert response.headers["content-type"] == expected
    if expected == "text/csv":
        assert response.text == 'id,name\n1,one\n2,"two, too"\n'
    else:
        assert response.json() == [["id", "name"], [1, "one"], [2, "two, too"]]


async def test_type_of_the_response_selects_the_writer() -> None:
    async with client(app_with_csv()) as http:
        response = await http.get("/data/always-csv", headers={"Accept": "application/json"})
    assert response.headers["content-type"] == "text/csv"
    assert response.text == "a,b\n"


async def test_nothing_acceptable() -> None:
    async with client(app_with_csv()) as http:
        response = await http.get("/data/rows", headers={"Accept": "text/html"})
        refused = await http.get("/data/rows", headers={"Accept": "*/*;q=0"})
    assert response.status_code == 406
    assert response.headers["content-type"] == "application/json"
    assert response.json() == {
        "status": 406,
        "message": "Cannot produce any of text/html; available: application/json, text/csv",
    }
    assert refused.status_code == 406


async def test_produces_limits_the_offered_types() -> None:
    async with client(app_with_csv()) as http:
        json_ok = await http.get("/data/json-only", headers={"Accept": "text/csv, */*;q=0.1"})
        csv_only = await http.get("/data/json-only", headers={"Accept": "text/csv"})
    assert json_ok.headers["content-type"] == "application/json"
    assert csv_only.status_code == 406
    assert csv_only.headers["content-type"] == "text/csv"
    assert csv_only.text == (
        "status,message\n406,Cannot produce any of text/csv; available: application/json\n"
    )


async def test_format_that_cannot_write_a_value(caplog: pytest.LogCaptureFixture) -> None:
    api = RestApi(Data()).register("text/csv", writer=ListsOnlyCsvWriter())
    async with client(Application({"/": api})) as http:
        written = await http.get("/data/rows", headers={"Accept": "text/csv"})
        with caplog.at_level("ERROR", logger="webrest"):
            error = await http.get("/data/error", headers={"Accept": "text/csv"})
    assert written.status_code == 200
    assert error.status_code == 500
    assert error.headers["content-type"] == "application/json"
    assert error.headers["x-content-type-options"] == "nosniff"
    assert error.json() == {"status": 500, "message": "Internal Server Error"}
    assert "Cannot write the response to GET /data/error" in caplog.text


async def test_error_bodies_use_the_negotiated_format() -> None:
    async with client(app_with_csv()) as http:
        response = await http.get("/data/error", headers={"Accept": "text/csv"})
        missing = await http.get("/data/nope", headers={"Accept": "text/csv"})
    assert response.status_code == 404
    assert response.headers["content-type"] == "text/csv"
    assert response.text == "status,message\n404,Gone\n"
    assert missing.status_code == 404
    assert missing.text == "status,message\n404,Cannot route request to /data/nope\n"


# -- webrest.negotiate --------------------------------------------------------------------------

OFFERED = ("application/json", "text/csv", "text/plain")


@pytest.mark.parametrize(
    ("accept", "expected"),
    [
        (None, "application/json"),
        ("", "application/json"),
        ("*/*", "application/json"),
        ("*", "application/json"),
        ("text/plain", "text/plain"),
        ("TEXT/PLAIN", "text/plain"),
        ("text/*", "text/csv"),
        ("text/*, text/plain", "text/plain"),
        ("text/plain;q=0.5, text/csv;q=0.6", "text/csv"),
        ("text/plain;q=0.5, text/csv;q=0.5", "text/plain"),
        ("text/csv;q=0.5, text/plain;q=0.5", "text/csv"),
        ("text/*;q=0.5, application/json;q=0.4", "text/csv"),
        ("text/*, text/csv;q=0", "text/plain"),
        ("application/json;q=0, */*", "text/csv"),
        ("application/json;q=0", None),
        ("image/png", None),
        ("image/png, */*;q=0.01", "application/json"),
        ("text/plain; charset=utf-8", "text/plain"),
        ('text/plain;format="flowed";q=0.2, application/json;q=0.1', "text/plain"),
        ("text/plain;q=abc, application/json;q=0.1", "application/json"),
        ("text/plain;q=5", "text/plain"),
        (",,text/csv,,", "text/csv"),
    ],
)
def test_negotiate(accept: str | None, expected: str | None) -> None:
    assert negotiate(accept, OFFERED) == expected


def test_negotiate_nothing_offered() -> None:
    assert negotiate("*/*", ()) is None
    assert negotiate(None, ()) is None


def test_negotiate_is_stable_across_calls() -> None:
    for _ in range(3):
        assert negotiate("text/*", OFFERED) == "text/csv"
        assert negotiate("text/*", ("text/plain", "text/csv")) == "text/plain"
