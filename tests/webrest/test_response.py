"""The ``Response`` builder: factories, modifiers and how each is transmitted."""

from __future__ import annotations

import asyncio
import dataclasses
import enum
import re
import threading
from collections.abc import AsyncIterator, Iterator
from datetime import date, datetime, timedelta, timezone
from decimal import Decimal
from uuid import UUID

import httpx
import pytest

from webrest import Get, Resource, Response

from .support import asgi_call, client, mount, serve


@Resource("/r")
class Factories:
    @Get("/ok")
    def ok(self) -> Response:
        return Response.ok()

    @Get("/created")
    def created(self) -> Response:
        return Response.created("/users/{user}/avatars/{id}", "~friebe", 1)

    @Get("/created-encoded")
    def created_encoded(self) -> Response:
        return Response.created("/users/{name}", "a b/c?d&e")

    @Get("/created-keywords")
    def created_keywords(self) -> Response:
        return Response.created("/users/{user}/avatars/{id}", id=7, user="Jürgen")

    @Get("/created-mixed")
    def created_mixed(self) -> Response:
        return Response.created("/users/{user}/avatars/{id}", "positional", id=3)

    @Get("/created-plain")
    def created_plain(self) -> Response:
        return Response.created()

    @Get("/accepted")
    def accepted(self) -> Response:
        return Response.accepted()

    @Get("/no-content")
    def no_content(self) -> Response:
        return Response.no_content()

    @Get("/see")
    def see(self) -> Response:
        return Response.see("/users/{id}", 1549)

    @Get("/not-modified")
    def not_modified(self) -> Response:
        return Response.not_modified()

    @Get("/not-found")
    def not_found(self) -> Response:
        return Response.not_found("No such user #1549")

    @Get("/not-found-bare")
    def not_found_bare(self) -> Response:
        return Response.not_found()

    @Get("/not-found-exception")
    def not_found_exception(self) -> Response:
        return Response.not_found(LookupError("from exception"))

    @Get("/not-acceptable")
    def not_acceptable(self) -> Response:
        return Response.not_acceptable("Cannot do that")

    @Get("/error")
    def error(self) -> Response:
        return Response.error(402, "Payment Required")

    @Get("/error-bare")
    def error_bare(self) -> Response:
        return Response.error(503)

    @Get("/error-default")
    def error_default(self) -> Response:
        return Response.error()

    @Get("/status")
    def status(self) -> Response:
        return Response.status(418)


async def get(path: str) -> httpx.Response:
    async with client(mount(Factories())) as http:
        return await http.get(path)


async def test_ok() -> None:
    response = await get("/r/ok")
    assert response.status_code == 200
    assert response.content == b""
    assert response.headers["content-length"] == "0"


@pytest.mark.parametrize(
    ("path", "location"),
    [
        ("/r/created", "/users/~friebe/avatars/1"),
        ("/r/created-encoded", "/users/a%20b%2Fc%3Fd%26e"),
        ("/r/created-keywords", "/users/J%C3%BCrgen/avatars/7"),
        ("/r/created-mixed", "/users/positional/avatars/3"),
    ],
)
async def test_created_with_location(path: str, location: str) -> None:
    response = await get(path)
    assert response.status_code == 201
    assert response.headers["location"] == location
    assert response.content == b""


async def test_created_without_location() -> None:
    response = await get("/r/created-plain")
    assert response.status_code == 201
    assert "location" not in response.headers


def test_created_with_too_few_values() -> None:
    with pytest.raises(ValueError, match=r"No value for placeholder \{id\}"):
        Response.created("/users/{user}/{id}", "a")


async def test_accepted() -> None:
    response = await get("/r/accepted")
    assert response.status_code == 202
    assert response.content == b""


async def test_no_content() -> None:
    response = await get("/r/no-content")
    assert response.status_code == 204
    assert response.content == b""
    assert "content-length" not in response.headers


async def test_see() -> None:
    response = await get("/r/see")
    assert response.status_code == 302
    assert response.headers["location"] == "/users/1549"


async def test_not_modified() -> None:
    response = await get("/r/not-modified")
    assert response.status_code == 304
    assert response.content == b""
    assert "content-length" not in response.headers


@pytest.mark.parametrize(
    ("path", "status", "body"),
    [
        ("/r/not-found", 404, {"status": 404, "message": "No such user #1549"}),
        ("/r/not-found-exception", 404, {"status": 404, "message": "from exception"}),
        ("/r/not-acceptable", 406, {"status": 406, "message": "Cannot do that"}),
        ("/r/error", 402, {"status": 402, "message": "Payment Required"}),
    ],
)
async def test_errors_with_message(path: str, status: int, body: dict[str, object]) -> None:
    response = await get(path)
    assert response.status_code == status
    assert response.headers["content-type"] == "application/json"
    assert response.json() == body


@pytest.mark.parametrize(
    ("path", "status"),
    [("/r/not-found-bare", 404), ("/r/error-bare", 503), ("/r/error-default", 500)],
)
async def test_errors_without_message_have_no_body(path: str, status: int) -> None:
    response = await get(path)
    assert response.status_code == status
    assert response.content == b""
    assert "content-type" not in response.headers


async def test_status() -> None:
    response = await get("/r/status")
    assert response.status_code == 418
    assert response.content == b""


# -- modifiers ---------------------------------------------------------------------------------


@dataclasses.dataclass
class User:
    id: UUID
    name: str
    born: date


USER = User(UUID("12345678-1234-5678-1234-567812345678"), "Timm", date(1977, 12, 14))
USER_JSON = b'{"id":"12345678-1234-5678-1234-567812345678","name":"Timm","born":"1977-12-14"}'


async def async_chunks() -> AsyncIterator[bytes | str]:
    yield b"one,"
    yield "zwei,"
    yield "drei"


def sync_chunks() -> Iterator[str]:
    yield "a"
    yield "b"


@Resource("/m")
class Modifiers:
    @Get("/plain")
    def plain(self) -> User:
        return USER

    @Get("/none")
    def none(self) -> None:
        return None

    @Get("/entity")
    def entity(self) -> Response:
        return Response.created("/users/{id}", USER.id).entity(USER)

    @Get("/typed-entity")
    def typed_entity(self) -> Response:
        return Response.ok().type("application/vnd.user+json").entity({"a": 1})

    @Get("/headers")
    def headers(self) -> Response:
        return (
            Response.ok()
            .header("X-One", "1")
            .header("X-Two", "2")
            .header("X-One", "replaced")
            .body(b"with headers")
        )

    @Get("/content-type-header")
    def content_type_header(self) -> Response:
        return Response.ok().header("Content-Type", "text/html").body("<p>")

    @Get("/body")
    def body(self) -> Response:
        return Response.ok().type("text/plain; charset=utf-8").body("Grüße")

    @Get("/body-bytes")
    def body_bytes(self) -> Response:
        return Response.ok().body(b"\x00\x01")

    @Get("/stream-async")
    def stream_async(self) -> Response:
        return Response.ok().type("text/plain").stream(async_chunks())

    @Get("/stream-sized")
    def stream_sized(self) -> Response:
        return Response.ok().type("text/csv").stream(async_chunks(), size=13)

    @Get("/stream-sync")
    def stream_sync(self) -> Response:
        return Response.ok().stream(sync_chunks())

    @Get("/stream-list")
    def stream_list(self) -> Response:
        return Response.ok().stream([b"x", "y", b"z"], size=3)

    @Get("/last-wins")
    def last_wins(self) -> Response:
        return Response.ok().body(b"body").entity({"entity": True})


async def m(path: str, **kwargs: object) -> httpx.Response:
    async with client(mount(Modifiers())) as http:
        return await http.get(path, **kwargs)  # type: ignore[arg-type]


async def test_plain_return_value_is_ok_in_the_negotiated_format() -> None:
    response = await m("/m/plain")
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/json"
    assert response.headers["content-length"] == str(len(USER_JSON))
    assert response.content == USER_JSON


async def test_none_is_written_as_null() -> None:
    response = await m("/m/none")
    assert response.status_code == 200
    assert response.content == b"null"


async def test_entity() -> None:
    response = await m("/m/entity")
    assert response.status_code == 201
    assert response.headers["location"] == "/users/12345678-1234-5678-1234-567812345678"
    assert response.content == USER_JSON


async def test_type_sets_the_content_type() -> None:
    response = await m("/m/typed-entity")
    assert response.headers["content-type"] == "application/vnd.user+json"
    assert response.content == b'{"a":1}'


async def test_header() -> None:
    response = await m("/m/headers")
    assert response.headers["x-one"] == "replaced"
    assert response.headers["x-two"] == "2"
    assert response.headers.get_list("x-one") == ["replaced"]
    assert response.content == b"with headers"


async def test_content_type_given_as_header() -> None:
    response = await m("/m/content-type-header")
    assert response.headers.get_list("content-type") == ["text/html"]
    assert response.content == b"<p>"


async def test_body() -> None:
    response = await m("/m/body")
    assert response.headers["content-type"] == "text/plain; charset=utf-8"
    assert response.headers["content-length"] == str(len("Grüße".encode()))
    assert response.text == "Grüße"


async def test_body_bytes_default_to_octet_stream() -> None:
    response = await m("/m/body-bytes")
    assert response.headers["content-type"] == "application/octet-stream"
    assert response.content == b"\x00\x01"


async def test_last_modifier_wins() -> None:
    response = await m("/m/last-wins")
    assert response.json() == {"entity": True}


async def test_stream_from_async_iterable() -> None:
    response = await m("/m/stream-async")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/plain")
    assert "content-length" not in response.headers
    assert response.content == b"one,zwei,drei"


async def test_stream_with_size_has_content_length() -> None:
    response = await m("/m/stream-sized")
    assert response.headers["content-length"] == "13"
    assert response.headers["content-type"].startswith("text/csv")
    assert response.content == b"one,zwei,drei"


async def test_stream_from_sync_iterable() -> None:
    response = await m("/m/stream-sync")
    assert response.headers["content-type"] == "application/octet-stream"
    assert "content-length" not in response.headers
    assert response.content == b"ab"


async def test_stream_from_list() -> None:
    response = await m("/m/stream-list")
    assert response.headers["content-length"] == "3"
    assert response.content == b"xyz"


async def test_streams_are_sent_in_chunks_at_asgi_level() -> None:
    messages = await asgi_call(mount(Modifiers()), "GET", "/m/stream-async")
    bodies = [msg["body"] for msg in messages if msg["type"] == "http.response.body"]
    assert [b for b in bodies if b] == [b"one,", b"zwei,", b"drei"]
    start = messages[0]
    assert start["type"] == "http.response.start"
    names = [name for name, _ in start["headers"]]
    assert b"content-length" not in names
    assert (b"x-content-type-options", b"nosniff") in start["headers"]


async def test_head_on_a_sized_stream() -> None:
    messages = await asgi_call(mount(Modifiers()), "HEAD", "/m/stream-sized")
    start = messages[0]
    assert start["status"] == 200
    assert dict(start["headers"])[b"content-length"] == b"13"
    assert b"".join(msg.get("body", b"") for msg in messages[1:]) == b""


# -- streaming is not buffered -----------------------------------------------------------------


class Gate:
    """Holds a streaming generator after its first chunk until the test opens it."""

    def __init__(self) -> None:
        self.loop: asyncio.AbstractEventLoop | None = None
        self.release: asyncio.Event | None = None
        self.finished = threading.Event()
        self.closed = threading.Event()

    def open(self) -> None:
        assert self.loop is not None and self.release is not None
        self.loop.call_soon_threadsafe(self.release.set)


@Resource("/live")
class Live:
    def __init__(self, gate: Gate) -> None:
        self.gate = gate

    async def chunks(self) -> AsyncIterator[bytes]:
        self.gate.loop = asyncio.get_running_loop()
        self.gate.release = asyncio.Event()
        try:
            yield b"first\n"
            await self.gate.release.wait()
            yield b"second\n"
            self.gate.finished.set()
        finally:
            self.gate.closed.set()

    @Get("/stream")
    def stream(self) -> Response:
        return Response.ok().type("text/plain").stream(self.chunks())


async def test_streaming_is_not_buffered() -> None:
    gate = Gate()
    with serve(mount(Live(gate))) as server:
        async with (
            httpx.AsyncClient(base_url=server.url, timeout=10) as http,
            http.stream("GET", "/live/stream") as response,
        ):
            assert response.status_code == 200
            assert response.headers["transfer-encoding"] == "chunked"
            assert response.headers["x-content-type-options"] == "nosniff"
            chunks = response.aiter_raw()
            first = await anext(chunks)
            assert first == b"first\n"
            assert not gate.finished.is_set()  # the generator is still waiting
            gate.open()
            rest = b"".join([chunk async for chunk in chunks])
        assert rest == b"second\n"
        assert gate.finished.is_set()
        assert gate.closed.is_set()


async def test_head_on_a_streamed_get_closes_the_stream() -> None:
    gate = Gate()
    with serve(mount(Live(gate))) as server:
        async with httpx.AsyncClient(base_url=server.url, timeout=10) as http:
            response = await http.head("/live/stream")
    assert response.status_code == 200
    assert response.content == b""
    assert not gate.finished.is_set()


async def test_an_entity_in_a_type_without_writer_is_a_server_error(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """JSON bytes are never sent labelled as another type: the missing writer is a 500."""
    from webrest import Application, Get, Resource, RestApi

    @Resource("/t")
    class Texts:
        @Get()
        def text(self) -> Response:
            return Response.ok().type("text/plain").entity({"a": 1})

    async with client(Application({"/t": RestApi(Texts())})) as http:
        response = await http.get("/t")
    assert response.status_code == 500
    assert response.json() == {"status": 500, "message": "Internal Server Error"}
    assert "No writer is registered for text/plain" in caplog.text


# -- header values (issue 22): converted like upstream's, refused at the call ---------------------


class Color(enum.StrEnum):
    RED = "red"


class Level(enum.IntEnum):
    HIGH = 3


@Resource("/h")
class HeaderValues:
    @Get("/converted")
    def converted(self) -> Response:
        return (
            Response.ok()
            .header("Age", 12)
            .header("X-Ratio", 1.5)
            .header("X-Price", Decimal("3.50"))
            .header(
                "Last-Modified",
                datetime(2026, 6, 2, 14, 12, 11, tzinfo=timezone(timedelta(hours=2))),
            )
            .header("Vary", ["Accept", "Origin"])
            .header("X-Color", Color.RED)
            .header("X-Level", Level.HIGH)
            .header("X-Latin", "Grüße")
            .header("X-Bytes", b"raw")
            .header("X-Removed", "soon")
            .header("X-Removed", None)
            .body(b"")
        )


async def test_header_values_are_converted() -> None:
    async with client(mount(HeaderValues())) as http:
        response = await http.get("/h/converted")
    assert response.status_code == 200
    headers = response.headers
    assert headers["age"] == "12"
    assert headers["x-ratio"] == "1.5"
    assert headers["x-price"] == "3.50"
    assert headers["last-modified"] == "Tue, 02 Jun 2026 12:12:11 GMT"
    assert headers["vary"] == "Accept, Origin"
    assert headers["x-color"] == "red"
    assert headers["x-level"] == "3"
    assert headers.raw[[k for k, _ in headers.raw].index(b"x-latin")][1] == "Grüße".encode(
        "latin-1"
    )
    assert headers["x-bytes"] == "raw"
    assert "x-removed" not in headers


def test_a_list_gives_one_line_per_value() -> None:
    response = (
        Response.ok()
        .header("Set-Cookie", ["a=1; Path=/", "b=2; Expires=Wed, 21 Oct 2026 07:28:00 GMT"])
        .header("Vary", ["Accept"])
        .header("X-Empty", "x")
        .header("X-Empty", [])
    )
    assert response.header_lines() == [
        ("Set-Cookie", "a=1; Path=/"),
        ("Set-Cookie", "b=2; Expires=Wed, 21 Oct 2026 07:28:00 GMT"),
        ("Vary", "Accept"),
    ]
    assert response.headers["Set-Cookie"] == (
        "a=1; Path=/, b=2; Expires=Wed, 21 Oct 2026 07:28:00 GMT"
    )
    response.header("Set-Cookie", "c=3")  # replaces the lines
    assert response.header_lines()[0] == ("Set-Cookie", "c=3")
    response.header("Link", ["<a>", "<b>"])
    response.headers["Link"] = "<c>"  # set directly afterwards: that value counts
    assert ("Link", "<c>") in response.header_lines()


@pytest.mark.parametrize(
    ("value", "error", "message"),
    [
        (True, TypeError, "True is not a header value"),
        (object(), TypeError, "object is not a header value"),
        ({"a": 1}, TypeError, "dict is not a header value"),
        (date(2026, 6, 2), TypeError, "a date without a time"),
        (datetime(2026, 6, 2, 12, 0), ValueError, "has no time zone"),
        (float("nan"), ValueError, "nan is not a header value"),
        (Decimal("Infinity"), ValueError, "is not a header value"),
        ("a\r\nSet-Cookie: evil=1", ValueError, "line break or control character"),
        ("a\x00b", ValueError, "line break or control character"),
        ("Ωmega", ValueError, "Latin-1 only"),
        (["ok", None], TypeError, "NoneType is not a header value"),
    ],
)
def test_header_values_that_cannot_be_sent_fail_at_the_call(
    value: object, error: type[Exception], message: str
) -> None:
    with pytest.raises(error, match=re.escape(message)):
        Response.ok().header("X-Value", value)  # type: ignore[arg-type]


@pytest.mark.parametrize("name", ["", "X Space", "X:Colon", "X\r\n", "Grüße"])
def test_header_names_must_be_tokens(name: str) -> None:
    with pytest.raises(ValueError, match="is not a header name"):
        Response.ok().header(name, "x")


def test_a_tab_is_allowed_in_a_header_value() -> None:
    assert Response.ok().header("X-Tab", "a\tb").headers["X-Tab"] == "a\tb"


def test_content_type_with_a_line_break_fails_at_the_call() -> None:
    with pytest.raises(ValueError, match="line break"):
        Response.ok().type("text/plain\r\nX-Evil: 1")


@pytest.mark.parametrize("status", [99, 600, 1000])
def test_status_out_of_range_fails_at_the_call(status: int) -> None:
    with pytest.raises(ValueError, match="is not an HTTP status"):
        Response.status(status)
