"""Writing a :class:`webrest.Response` to the ASGI server.

Every response gets the default headers it does not set itself: :data:`STANDARD_HEADERS`
(``X-Content-Type-Options: nosniff``, ``Cache-Control: no-cache``) unless
:func:`set_default_headers` changed them, or the ``defaults`` given to :func:`render`.
"""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator, Iterable, Mapping

from starlette.concurrency import iterate_in_threadpool
from starlette.responses import StreamingResponse
from starlette.types import Receive, Scope, Send

from webrest.formats import Formats, Writer
from webrest.response import Response, StreamSource

__all__ = [
    "STANDARD_HEADERS",
    "DefaultHeaders",
    "Rendered",
    "default_headers",
    "render",
    "set_default_headers",
]

_NO_BODY_STATUSES = frozenset({204, 304})

STANDARD_HEADERS: Mapping[str, str] = {
    "X-Content-Type-Options": "nosniff",
    "Cache-Control": "no-cache",
}
"""The headers every response gets unless it sets them itself (upstream's defaults): browsers
must not guess content types, and caches must revalidate before reusing a response."""


class DefaultHeaders:
    """Headers added to every response that does not set them itself, encoded once.

    ``DefaultHeaders({"Cache-Control": "no-cache"})``; a ``None`` value leaves the header out.
    """

    __slots__ = ("names", "pairs", "without")

    def __init__(self, headers: Mapping[str, str | None]) -> None:
        self.pairs: tuple[tuple[bytes, bytes], ...] = tuple(
            (name.lower().encode("latin-1"), value.encode("latin-1"))
            for name, value in headers.items()
            if value is not None
        )
        self.names = frozenset(name for name, _ in self.pairs)
        # the pairs left when a response sets one of them itself, for each (a lookup per response)
        self.without = {
            name: tuple(pair for pair in self.pairs if pair[0] != name) for name in self.names
        }

    @classmethod
    def standard(cls, changes: Mapping[str, str | None] = {}) -> DefaultHeaders:
        """:data:`STANDARD_HEADERS` with ``changes`` (names in any case; ``None`` removes)."""
        merged: dict[str, str | None] = {name.lower(): v for name, v in STANDARD_HEADERS.items()}
        merged.update((name.lower(), value) for name, value in changes.items())
        return cls(merged)

    def __repr__(self) -> str:
        shown = {name.decode("latin-1"): value.decode("latin-1") for name, value in self.pairs}
        return f"DefaultHeaders({shown!r})"


_defaults = DefaultHeaders(STANDARD_HEADERS)


def set_default_headers(changes: Mapping[str, str | None]) -> DefaultHeaders:
    """Change the default headers of every response in the process: ``changes`` apply to
    :data:`STANDARD_HEADERS` (not to earlier changes), and ``None`` removes a header.

    ``set_default_headers({"Cache-Control": None})`` switches ``Cache-Control`` off,
    ``set_default_headers({"Cache-Control": "private, max-age=60"})`` changes it, and
    ``set_default_headers({})`` restores the standard ones. Returns the headers now in effect.
    A response that sets a header itself (``Response.ok().header("Cache-Control", ...)``)
    always keeps its own value.
    """
    global _defaults
    _defaults = DefaultHeaders.standard(changes)
    return _defaults


def default_headers() -> DefaultHeaders:
    """The default headers in effect (see :func:`set_default_headers`)."""
    return _defaults


class Rendered:
    """A response with its body serialized (or its stream ready): nothing left can fail
    except the stream itself and the connection."""

    __slots__ = ("body", "headers", "media_type", "status", "stream", "stream_size")

    def __init__(
        self,
        status: int,
        headers: list[tuple[bytes, bytes]],
        media_type: str | None,
        body: bytes,
        stream: StreamSource | None = None,
        stream_size: int | None = None,
    ) -> None:
        self.status = status
        self.headers = headers
        self.media_type = media_type
        self.body = body
        self.stream = stream
        self.stream_size = stream_size

    async def send(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Send it; a ``HEAD`` request gets the headers only."""
        head = scope["method"] == "HEAD"
        if self.stream is not None:
            await self._send_stream(scope, receive, send, head)
            return
        headers = self.headers
        if self.media_type is not None:
            headers.append((b"content-type", self.media_type.encode("latin-1")))
        if self.status not in _NO_BODY_STATUSES and self.status >= 200:
            headers.append((b"content-length", str(len(self.body)).encode("latin-1")))
        await send({"type": "http.response.start", "status": self.status, "headers": headers})
        await send({"type": "http.response.body", "body": b"" if head else self.body})

    async def _send_stream(self, scope: Scope, receive: Receive, send: Send, head: bool) -> None:
        source = self.stream
        assert source is not None
        if head:
            await _close(source)
            source = ()
        response = StreamingResponse(
            _as_bytes(source), status_code=self.status, media_type=self.media_type
        )
        if self.stream_size is not None:
            response.headers["content-length"] = str(self.stream_size)
        response.raw_headers.extend(self.headers)
        await response(scope, receive, send)


async def _as_bytes(source: StreamSource) -> AsyncIterator[bytes]:
    iterator: AsyncIterable[bytes | str] = (
        source if isinstance(source, AsyncIterable) else iterate_in_threadpool(iter(source))
    )
    try:
        async for chunk in iterator:
            yield chunk.encode() if isinstance(chunk, str) else chunk
    finally:
        await _close(source)


async def _close(source: AsyncIterable[bytes | str] | Iterable[bytes | str]) -> None:
    aclose = getattr(source, "aclose", None)
    if aclose is not None:
        await aclose()
        return
    close = getattr(source, "close", None)
    if close is not None:
        close()


def _writer(response: Response, negotiated: str | None, formats: Formats) -> Writer:
    if response.media_type is not None:
        writer = formats.writer(response.media_type)
        mime = response.media_type.split(";")[0].strip().lower()
        if writer is None and "+" in mime:  # RFC 6839 suffix: application/vnd.x+json is JSON
            writer = formats.writer("application/" + mime.rsplit("+", 1)[1])
        if writer is None:  # never send one format labelled as another
            raise TypeError(f"No writer is registered for {response.media_type}")
        return writer
    if negotiated is not None:
        writer = formats.writer(negotiated)
        if writer is not None:
            return writer
    for mime in formats.writable:
        writer = formats.writer(mime)
        if writer is not None:
            return writer
    raise TypeError("No format is registered to write response entities")


def render(
    response: Response,
    negotiated: str | None,
    formats: Formats,
    defaults: DefaultHeaders | None = None,
) -> Rendered:
    """Serialize the response's entity (or take its body or stream); may raise on values the
    format cannot write, so call it where errors are still rendered.

    The response gets the ``defaults`` (else :func:`default_headers`) it does not set itself.
    """
    if defaults is None:
        defaults = _defaults
    media_type = response.media_type
    own_headers = response.headers
    if not own_headers:
        headers = [*defaults.pairs]
    else:
        headers = []
        names = defaults.names
        own: bytes | None = None
        lines = response.header_lines() if response.has_header_lists else own_headers.items()
        for name, value in lines:  # a list given for one header: a line per value
            lowered = name.lower()
            if lowered == "content-type":
                media_type = media_type or value
                continue
            key = lowered.encode("latin-1")
            headers.append((key, value.encode("latin-1")))
            if key in names:
                own = key if own is None else b""  # b"": more than one, filtered below
        if own is None:
            headers += defaults.pairs
        elif own:
            headers += defaults.without[own]
        else:
            taken = {key for key, _ in headers}
            headers += [pair for pair in defaults.pairs if pair[0] not in taken]
    if response.stream_source is not None:
        return Rendered(
            response.status_code,
            headers,
            media_type or "application/octet-stream",
            b"",
            response.stream_source,
            response.stream_size,
        )
    raw = response.raw_body
    if raw is not None:
        return Rendered(
            response.status_code, headers, media_type or "application/octet-stream", raw
        )
    if response.has_entity:
        writer = _writer(response, negotiated, formats)
        body = writer.write(response.entity_value)
        return Rendered(response.status_code, headers, media_type or writer.media_type, body)
    return Rendered(response.status_code, headers, media_type, b"")
