"""``Request.body``: read once from however many ``http.request`` messages, as Starlette's."""

from __future__ import annotations

from typing import Any

import pytest
from starlette.requests import ClientDisconnect
from starlette.types import Message

from webrest.request import Request


def _request(*messages: Message) -> Request:
    pending = list(messages)
    scope: dict[str, Any] = {"type": "http", "method": "POST", "path": "/", "headers": []}

    async def receive() -> Message:
        return pending.pop(0)

    async def send(message: Message) -> None:
        raise AssertionError("nothing is sent")

    return Request(scope, receive, send)


def _chunk(body: bytes, more: bool) -> Message:
    return {"type": "http.request", "body": body, "more_body": more}


async def test_the_body_is_every_chunk_joined_and_read_once() -> None:
    request = _request(_chunk(b"ab", True), _chunk(b"", True), _chunk(b"cd", False))
    assert await request.body() == b"abcd"
    assert await request.body() == b"abcd"  # nothing left to receive: it is remembered
    assert [chunk async for chunk in request.stream()] == [b"abcd", b""]


async def test_a_message_without_body_or_more_body_ends_an_empty_body() -> None:
    assert await _request({"type": "http.request"}).body() == b""


async def test_a_disconnect_before_the_end_is_a_client_disconnect() -> None:
    request = _request(_chunk(b"ab", True), {"type": "http.disconnect"})
    with pytest.raises(ClientDisconnect):
        await request.body()
    assert request._is_disconnected


async def test_a_consumed_stream_cannot_be_read_as_a_body() -> None:
    request = _request(_chunk(b"ab", False))
    assert [chunk async for chunk in request.stream()] == [b"ab", b""]
    with pytest.raises(RuntimeError, match="Stream consumed"):
        await request.body()


def test_header_is_the_value_of_a_lower_case_name_or_none() -> None:
    request = _request()
    request.scope["headers"] = [(b"accept", b"a/b"), (b"x-twice", b"1"), (b"x-twice", b"2")]
    assert request.header(b"accept") == "a/b"
    assert request.header(b"content-length") is None


def test_a_header_sent_on_several_lines_is_one_list() -> None:
    """RFC 9110 §5.3: the lines of a field are one comma-separated list."""
    request = _request()
    request.scope["headers"] = [
        (b"x-twice", b"1"),
        (b"accept", b"application/xml"),
        (b"x-twice", b"2, 3"),
        (b"x-twice", b"4"),
    ]
    assert request.header(b"x-twice") == "1, 2, 3, 4"
    assert request.header_values(b"x-twice") == ["1", "2, 3", "4"]
    assert request.header_values(b"accept") == ["application/xml"]
    assert request.header_values(b"x-none") == []
    latin = _request()
    latin.scope["headers"] = [(b"x-latin", "é".encode("latin-1"))]
    assert latin.header(b"x-latin") == "é" == latin.headers.get("x-latin")
