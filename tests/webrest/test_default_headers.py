"""Default headers: ``Cache-Control: no-cache`` and ``X-Content-Type-Options: nosniff`` on every
response unless it sets them itself, and how to change them."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from starlette.types import Message

from webrest import (
    Application,
    DefaultHeaders,
    FilterChain,
    Get,
    Request,
    Resource,
    Response,
    RestApi,
    set_default_headers,
)
from webrest.formats import default_formats
from webrest.transmission import STANDARD_HEADERS, default_headers, render

from .support import asgi_call, client, mount

STANDARD = [(b"x-content-type-options", b"nosniff"), (b"cache-control", b"no-cache")]


@pytest.fixture(autouse=True)
def standard_defaults() -> Iterator[None]:
    set_default_headers({})
    yield
    set_default_headers({})


@Resource("/h")
class Headers:
    @Get("/plain")
    def plain(self) -> str:
        return "plain"

    @Get("/cached")
    def cached(self) -> Response:
        return Response.ok().header("Cache-Control", "max-age=60").entity("cached")

    @Get("/lower")
    def lower(self) -> Response:
        return Response.ok().header("cache-control", "private").entity("lower")

    @Get("/sniff")
    def sniff(self) -> Response:
        return Response.ok().header("X-Content-Type-Options", "other").body(b"x")

    @Get("/stream")
    def stream(self) -> Response:
        return Response.ok().header("Cache-Control", "no-store").stream([b"a", b"b"])

    @Get("/plain-stream")
    def plain_stream(self) -> Response:
        return Response.ok().stream([b"a"])

    @Get("/error")
    def error(self) -> Response:
        return Response.error(409, "Conflict")

    @Get("/broken")
    def broken(self) -> None:
        raise RuntimeError("broken")

    @Get("/nothing")
    def nothing(self) -> Response:
        return Response.no_content()


def header_list(messages: list[Message]) -> list[tuple[bytes, bytes]]:
    start = messages[0]
    assert start["type"] == "http.response.start"
    return [(name, value) for name, value in start["headers"] if name != b"content-length"]


def named(headers: list[tuple[bytes, bytes]], name: bytes) -> list[bytes]:
    return [value for key, value in headers if key == name]


@pytest.mark.parametrize(
    "path",
    [
        "/h/plain",
        "/h/plain-stream",
        "/h/error",
        "/h/broken",
        "/h/nothing",
        "/h/missing",
        "/other",
        "/openapi.json",
    ],
)
async def test_every_response_gets_the_defaults(path: str) -> None:
    messages = await asgi_call(mount(Headers()), "GET", path)
    headers = header_list(messages)
    assert named(headers, b"cache-control") == [b"no-cache"]
    assert named(headers, b"x-content-type-options") == [b"nosniff"]


async def test_405_options_and_head_get_them_too() -> None:
    app = mount(Headers())
    for method in ("POST", "OPTIONS", "HEAD"):
        headers = header_list(await asgi_call(app, method, "/h/plain"))
        assert named(headers, b"cache-control") == [b"no-cache"], method


@pytest.mark.parametrize(
    ("path", "expected"),
    [("/h/cached", b"max-age=60"), ("/h/lower", b"private"), ("/h/stream", b"no-store")],
)
async def test_a_response_keeps_its_own_cache_control(path: str, expected: bytes) -> None:
    headers = header_list(await asgi_call(mount(Headers()), "GET", path))
    assert named(headers, b"cache-control") == [expected]  # once: the default is left out
    assert named(headers, b"x-content-type-options") == [b"nosniff"]


async def test_a_response_keeps_its_own_nosniff_header() -> None:
    headers = header_list(await asgi_call(mount(Headers()), "GET", "/h/sniff"))
    assert named(headers, b"x-content-type-options") == [b"other"]
    assert named(headers, b"cache-control") == [b"no-cache"]


async def test_a_filter_can_set_cache_control() -> None:
    async def cache_for_a_minute(request: Request, chain: FilterChain) -> Response:
        response = await chain.proceed(request)
        return response.header("Cache-Control", "public, max-age=60")

    app = Application({"/": RestApi(Headers())}, filters=[cache_for_a_minute])
    async with client(app) as http:
        response = await http.get("/h/plain")
    assert response.headers.get_list("cache-control") == ["public, max-age=60"]


async def test_switch_cache_control_off() -> None:
    set_default_headers({"Cache-Control": None})
    async with client(mount(Headers())) as http:
        plain = await http.get("/h/plain")
        cached = await http.get("/h/cached")
    assert "cache-control" not in plain.headers
    assert plain.headers["x-content-type-options"] == "nosniff"
    assert cached.headers["cache-control"] == "max-age=60"


async def test_change_and_add_defaults() -> None:
    in_effect = set_default_headers(
        {"cache-control": "private, max-age=0", "Referrer-Policy": "no-referrer"}
    )
    assert in_effect is default_headers()
    async with client(mount(Headers())) as http:
        plain = await http.get("/h/plain")
    assert plain.headers.get_list("cache-control") == ["private, max-age=0"]
    assert plain.headers["referrer-policy"] == "no-referrer"
    assert plain.headers["x-content-type-options"] == "nosniff"


def test_changes_apply_to_the_standard_headers_not_to_earlier_changes() -> None:
    set_default_headers({"Cache-Control": None})
    assert set_default_headers({"X-Frame-Options": "DENY"}).pairs == (
        *STANDARD,
        (b"x-frame-options", b"DENY"),
    )
    assert set_default_headers({}).pairs == tuple(STANDARD)
    assert dict(STANDARD_HEADERS) == {
        "X-Content-Type-Options": "nosniff",
        "Cache-Control": "no-cache",
    }


def test_standard_headers_with_changes() -> None:
    assert DefaultHeaders.standard().pairs == tuple(STANDARD)
    changed = DefaultHeaders.standard({"CACHE-CONTROL": "no-store", "x-content-type-options": None})
    assert changed.pairs == ((b"cache-control", b"no-store"),)
    assert default_headers().pairs == tuple(STANDARD)  # a value, not the process's setting


def test_render_takes_the_defaults_to_apply() -> None:
    formats = default_formats()
    custom = DefaultHeaders({"Cache-Control": "no-store", "X-Absent": None})
    assert custom.pairs == ((b"cache-control", b"no-store"),)
    assert repr(custom) == "DefaultHeaders({'cache-control': 'no-store'})"
    rendered = render(Response.ok().entity(1), "application/json", formats, custom)
    assert rendered.headers == [(b"cache-control", b"no-store")]
    none = render(Response.ok().entity(1), "application/json", formats, DefaultHeaders({}))
    assert none.headers == []
    own = render(Response.ok().header("Cache-Control", "x").entity(1), None, formats, custom)
    assert own.headers == [(b"cache-control", b"x")]
    standard = render(Response.ok().header("X-A", "1"), None, formats)
    assert standard.headers == [(b"x-a", b"1"), *STANDARD]


def test_rendered_headers_are_not_shared_between_responses() -> None:
    formats = default_formats()
    first = render(Response.ok().entity(1), None, formats)
    first.headers.append((b"x-extra", b"1"))
    assert render(Response.ok().entity(1), None, formats).headers == STANDARD
    assert default_headers().pairs == tuple(STANDARD)


@Resource("/c")
class Cookies:
    @Get("/two")
    def two(self) -> Response:
        return Response.ok().header("Set-Cookie", ["a=1; Path=/", "b=2; Path=/"]).body(b"x")


async def test_an_application_may_change_its_own_defaults() -> None:
    changed = Application(
        {"/": RestApi(Headers())}, default_headers={"Cache-Control": None, "X-Frame": "DENY"}
    )
    headers = header_list(await asgi_call(changed, "GET", "/h/plain"))
    assert (b"cache-control", b"no-cache") not in headers
    assert (b"x-frame", b"DENY") in headers and (b"x-content-type-options", b"nosniff") in headers
    # another application keeps the process-wide defaults
    assert (b"cache-control", b"no-cache") in header_list(
        await asgi_call(mount(Headers()), "GET", "/h/plain")
    )
    # errors rendered by the application get its defaults too
    missing = header_list(await asgi_call(changed, "GET", "/nowhere"))
    assert (b"x-frame", b"DENY") in missing


async def test_a_header_given_a_list_is_sent_as_one_line_per_value() -> None:
    headers = header_list(await asgi_call(mount(Cookies()), "GET", "/c/two"))
    assert [value for name, value in headers if name == b"set-cookie"] == [
        b"a=1; Path=/",
        b"b=2; Path=/",
    ]
