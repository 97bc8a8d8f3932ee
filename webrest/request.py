"""The request object handed to filters, interceptors and methods."""

from __future__ import annotations

from typing import Any

from starlette.requests import ClientDisconnect
from starlette.requests import Request as StarletteRequest
from starlette.types import Message, Receive, Scope, Send

from webrest.errors import HttpError

__all__ = ["Request"]


class Request(StarletteRequest):
    """A Starlette request plus the values that filters pass down to methods.

    ``request.pass_value("user", u)`` in a filter is what ``Annotated[User, Value("user")]``
    reads in a method. ``negotiated`` is the output media type chosen from ``Accept``.
    """

    __slots__ = ()

    def __init__(self, scope: Scope, receive: Receive, send: Send) -> None:
        super().__init__(scope, receive, send)
        scope.setdefault("webrest.values", {})

    @property
    def passed(self) -> dict[str, Any]:
        """Values passed by filters, by name."""
        passed: dict[str, Any] = self.scope["webrest.values"]
        return passed

    def value(self, name: str, default: object = None) -> object:
        """The value a filter passed as ``name``, or ``default``."""
        return self.scope["webrest.values"].get(name, default)

    def pass_value(self, name: str, value: object) -> None:
        """Make ``value`` available to ``Value(name)`` parameters of the method called later."""
        self.scope["webrest.values"][name] = value

    def header(self, name: bytes) -> str | None:
        """The first value of header ``name`` (lower case, as ASGI servers pass names), or
        ``None``: ``headers.get`` without building the headers mapping or raising inside it
        for an absent header, for the lookups made on every request."""
        for key, value in self.scope["headers"]:
            if key == name:
                return value.decode("latin-1")  # type: ignore[no-any-return]
        return None

    def limit_body(self, max_bytes: int, *, check_length: bool = True) -> None:
        """Answer 413 when the body is, or turns out while read to be, over ``max_bytes``.

        ``check_length=False`` only counts the bytes read, without rejecting a larger
        ``Content-Length`` up front: for a limit that a later, route-specific one may raise.
        """
        length = self.header(b"content-length") if check_length else None
        if length is not None and length.isdigit() and int(length) > max_bytes:
            raise _too_large(max_bytes)
        if isinstance(self._receive, _LimitedReceive):
            self._receive.limit = max_bytes
        else:
            self._receive = _LimitedReceive(self._receive, max_bytes)

    async def body(self) -> bytes:
        """The whole body, read once: Starlette's ``body`` without the async generator and
        context manager it reads through (a cost paid by every request with a body)."""
        if not hasattr(self, "_body"):
            if self._stream_consumed:
                raise RuntimeError("Stream consumed")
            receive = self._receive
            chunks: list[bytes] = []
            while True:
                message = await receive()
                kind = message["type"]
                if kind == "http.request":
                    chunk = message.get("body", b"")
                    if chunk:
                        chunks.append(chunk)
                    if not message.get("more_body", False):
                        break
                elif kind == "http.disconnect":
                    self._is_disconnected = True
                    raise ClientDisconnect()
            self._stream_consumed = True
            self._body = b"".join(chunks)
        return self._body

    @property
    def negotiated(self) -> str | None:
        """The media type chosen for the response body, once routing has negotiated it."""
        media_type: str | None = self.scope.get("webrest.negotiated")
        return media_type


def _too_large(limit: int) -> HttpError:
    return HttpError(413, f"The request body is larger than the limit of {limit} bytes")


class _LimitedReceive:
    """A ``receive`` that counts body bytes and raises 413 past the limit."""

    __slots__ = ("limit", "receive", "received")

    def __init__(self, receive: Receive, limit: int) -> None:
        self.receive = receive
        self.limit = limit
        self.received = 0

    async def __call__(self) -> Message:
        message = await self.receive()
        if message["type"] == "http.request":
            self.received += len(message.get("body", b""))
            if self.received > self.limit:
                raise _too_large(self.limit)
        return message
