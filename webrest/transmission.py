"""Writing a :class:`webrest.Response` to the ASGI server."""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator, Iterable

from starlette.concurrency import iterate_in_threadpool
from starlette.responses import StreamingResponse
from starlette.types import Receive, Scope, Send

from webrest.formats import Formats, Writer
from webrest.response import Response, StreamSource

__all__ = ["Rendered", "render"]

_NOSNIFF = (b"x-content-type-options", b"nosniff")
_NO_BODY_STATUSES = frozenset({204, 304})


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


def render(response: Response, negotiated: str | None, formats: Formats) -> Rendered:
    """Serialize the response's entity (or take its body or stream); may raise on values the
    format cannot write, so call it where errors are still rendered."""
    headers = [_NOSNIFF]
    media_type = response.media_type
    for name, value in response.headers.items():
        lowered = name.lower()
        if lowered == "content-type":
            media_type = media_type or value
        else:
            headers.append((lowered.encode("latin-1"), value.encode("latin-1")))
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
