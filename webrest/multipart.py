"""A streaming ``multipart/form-data`` reader that hands the body over part by part.

Nothing is spooled: each part's data is yielded chunk by chunk as the request body arrives, so
memory use stays in the order of one network chunk whatever the size of an upload. Parsing is
done by :class:`python_multipart.multipart.MultipartParser`, a push parser fed from the body.

Usage::

    async for part in Multipart.from_request(request):
        if part.is_file:
            await part.save(target / "upload.bin")
        else:
            value = await part.text()

A :class:`Multipart` and its parts are meant to be consumed by one task, in order: moving on to
the next part discards whatever was left unread of the current one.
"""

from __future__ import annotations

import os
from collections import deque
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Final
from urllib.parse import unquote_to_bytes

import anyio
from python_multipart.exceptions import FormParserError
from python_multipart.multipart import MultipartParser, parse_options_header
from starlette.datastructures import Headers

from webrest.errors import BadRequest
from webrest.request import decode_text, text_codec

if TYPE_CHECKING:
    from python_multipart.multipart import MultipartCallbacks
    from starlette.requests import Request

__all__ = ["Multipart", "Part"]

# Slack given to the parser's own per-line header limit over ours, so that ours (which counts
# only name and value bytes, not the colon and padding) is the one normally hit.
_HEADER_LINE_SLACK: Final = 1024
# How many headers one part may have (the parser's limit; browsers send two or three).
_MAX_HEADER_COUNT: Final = 32
# Part.save() gathers chunks smaller than this before writing them out.
_SAVE_BUFFER_SIZE: Final = 64 * 1024


class _Marker:
    """A parser event without data."""

    __slots__ = ("label",)

    def __init__(self, label: str) -> None:
        self.label = label

    def __repr__(self) -> str:
        return f"<{self.label}>"


_PART_END: Final = _Marker("part end")
_END: Final = _Marker("end")

_Event = bytes | _Marker


class Part:
    """One part of a multipart body: its headers, and its data as an async stream of bytes."""

    name: str | None
    filename: str | None
    content_type: str | None
    headers: Headers

    def __init__(
        self,
        owner: Multipart,
        *,
        name: str | None,
        filename: str | None,
        headers: Headers,
    ) -> None:
        self._owner = owner
        self._done = False
        self.name = name
        self.filename = filename
        self.headers = headers
        self.content_type = headers.get("content-type")

    def __repr__(self) -> str:
        return (
            f"Part(name={self.name!r}, filename={self.filename!r}, "
            f"content_type={self.content_type!r})"
        )

    @property
    def is_file(self) -> bool:
        """Whether the part is a file upload (its Content-Disposition has a filename)."""
        return self.filename is not None

    async def __aiter__(self) -> AsyncIterator[bytes]:
        """Yield the part's data chunk by chunk as it arrives; nothing once the part is over."""
        while not self._done:
            event = await self._owner._next_event()
            if isinstance(event, bytes):
                yield event
                continue
            self._done = True
            if event is not _PART_END:  # pragma: no cover - the parser ends each part first
                self._owner._events.appendleft(event)

    async def read(self) -> bytes:
        """The rest of the part's data, in one piece."""
        return b"".join([chunk async for chunk in self])

    async def text(self, encoding: str = "utf-8") -> str:
        """The rest of the part's data decoded as text; undecodable data is a 400."""
        data = await self.read()
        try:
            return decode_text(data, encoding)
        except UnicodeDecodeError as exc:
            raise BadRequest(f"Field {self.name!r} is not valid {encoding} text") from exc

    async def save(self, path: str | os.PathLike[str]) -> int:
        """Write the rest of the part's data to ``path`` chunk by chunk; return the byte count.

        Writes go through :func:`anyio.open_file`, so a slow disk does not block the event loop.
        If the body turns out to be malformed half way, the error is raised and the partial
        file is left in place.
        """
        written = 0
        pending = bytearray()  # small chunks are gathered to spare a thread hop per chunk
        async with await anyio.open_file(path, "wb") as file:
            async for chunk in self:
                written += len(chunk)
                if not pending and len(chunk) >= _SAVE_BUFFER_SIZE:
                    await file.write(chunk)
                    continue
                pending += chunk
                if len(pending) >= _SAVE_BUFFER_SIZE:
                    await file.write(pending)
                    pending.clear()
            if pending:
                await file.write(pending)
        return written

    async def _drain(self) -> None:
        """Discard whatever is left of the part."""
        async for _ in self:
            pass


class Multipart:
    """Async iterator of :class:`Part` over a ``multipart/form-data`` request body."""

    def __init__(
        self,
        content_type: str,
        body: AsyncIterator[bytes],
        *,
        max_fields: int = 1000,
        max_files: int = 1000,
        max_part_header_size: int = 16384,
    ) -> None:
        media_type, params = parse_options_header(content_type)
        if media_type != b"multipart/form-data":
            raise BadRequest(
                f"Expected a multipart/form-data content type, got {content_type or 'none'!r}"
            )
        boundary = params.get(b"boundary")
        if not boundary:
            raise BadRequest("Missing boundary in multipart/form-data content type")
        self._charset = _charset(params.get(b"charset"))

        self._body = body
        self.max_fields = max_fields
        self.max_files = max_files
        self.max_part_header_size = max_part_header_size

        self._events: deque[_Event | Part] = deque()
        self._error: BadRequest | None = None
        self._finished = False
        self._iterated = False
        self._current: Part | None = None
        self._fields = 0
        self._files = 0
        self._header_size = 0
        self._header_name = bytearray()
        self._header_value = bytearray()
        self._part_headers: list[tuple[bytes, bytes]] = []

        callbacks: MultipartCallbacks = {
            "on_part_begin": self._on_part_begin,
            "on_part_data": self._on_part_data,
            "on_part_end": self._on_part_end,
            "on_header_field": self._on_header_field,
            "on_header_value": self._on_header_value,
            "on_header_end": self._on_header_end,
            "on_headers_finished": self._on_headers_finished,
            "on_end": self._on_end,
        }
        try:
            self._parser = MultipartParser(
                boundary,
                callbacks,
                max_header_count=_MAX_HEADER_COUNT,
                max_header_size=max_part_header_size + _HEADER_LINE_SLACK,
            )
        except FormParserError as exc:
            raise BadRequest(f"Invalid multipart boundary: {exc}") from exc

    @classmethod
    def from_request(
        cls,
        request: Request,
        *,
        max_fields: int = 1000,
        max_files: int = 1000,
        max_part_header_size: int = 16384,
    ) -> Multipart:
        """A reader over ``request``'s body stream, per its Content-Type header."""
        return cls(
            request.headers.get("content-type", ""),
            request.stream(),
            max_fields=max_fields,
            max_files=max_files,
            max_part_header_size=max_part_header_size,
        )

    def __aiter__(self) -> AsyncIterator[Part]:
        """The parts in body order; a Multipart can be iterated only once."""
        if self._iterated:
            raise RuntimeError("A Multipart body can be iterated only once")
        self._iterated = True
        return self._iterate()

    async def fields(self) -> dict[str, str | list[str]]:
        """All non-file parts as text (a repeated name gives a list); file parts are skipped."""
        result: dict[str, str | list[str]] = {}
        async for part in self:
            if part.is_file or part.name is None:
                continue
            value = await part.text(self._charset)
            existing = result.get(part.name)
            if existing is None:
                result[part.name] = value
            elif isinstance(existing, list):
                existing.append(value)
            else:
                result[part.name] = [existing, value]
        return result

    # -- pulling -------------------------------------------------------------------------------

    async def _iterate(self) -> AsyncIterator[Part]:
        while True:
            if self._current is not None:
                await self._current._drain()
                self._current = None
            event = await self._next_event()
            if event is _END:
                return
            if isinstance(event, Part):
                self._current = event
                yield event

    async def _next_event(self) -> _Event | Part:
        """The next parser event, reading and parsing more of the body when none is queued."""
        while True:
            if self._events:
                return self._events.popleft()
            if self._error is not None:
                raise self._error
            if self._finished:
                return _END
            try:
                chunk = await self._body.__anext__()
            except StopAsyncIteration:
                self._error = BadRequest("Multipart body ended unexpectedly")
                continue
            if chunk:
                self._feed(chunk)

    def _feed(self, chunk: bytes) -> None:
        # Events the chunk produced before an error stay queued: the error is raised when the
        # consumer reaches the point of the body where it happened.
        try:
            self._parser.write(chunk)
        except BadRequest as exc:
            self._error = exc
        except FormParserError as exc:
            error = BadRequest(f"Invalid multipart body: {exc}")
            error.__cause__ = exc
            self._error = error

    # -- parser callbacks ----------------------------------------------------------------------

    def _on_part_begin(self) -> None:
        self._header_size = 0
        self._part_headers = []

    def _on_part_data(self, data: bytes, start: int, end: int) -> None:
        if end > start:
            self._events.append(data[start:end])

    def _on_part_end(self) -> None:
        self._events.append(_PART_END)

    def _count_header_bytes(self, count: int) -> None:
        self._header_size += count
        if self._header_size > self.max_part_header_size:
            raise BadRequest(
                f"Part headers too large: maximum is {self.max_part_header_size} bytes"
            )

    def _on_header_field(self, data: bytes, start: int, end: int) -> None:
        self._count_header_bytes(end - start)
        self._header_name += data[start:end]

    def _on_header_value(self, data: bytes, start: int, end: int) -> None:
        self._count_header_bytes(end - start)
        self._header_value += data[start:end]

    def _on_header_end(self) -> None:
        self._part_headers.append((bytes(self._header_name).lower(), bytes(self._header_value)))
        self._header_name.clear()
        self._header_value.clear()

    def _on_headers_finished(self) -> None:
        headers = Headers(raw=self._part_headers)
        self._part_headers = []
        name, filename = _parse_disposition(headers.get("content-disposition", ""), self._charset)
        if name is None:
            raise BadRequest('A multipart part has no Content-Disposition "name"')
        if filename is None:
            self._fields += 1
            if self._fields > self.max_fields:
                raise BadRequest(f"Too many fields: maximum is {self.max_fields}")
        else:
            self._files += 1
            if self._files > self.max_files:
                raise BadRequest(f"Too many files: maximum is {self.max_files}")
        self._events.append(Part(self, name=name, filename=filename, headers=headers))

    def _on_end(self) -> None:
        self._finished = True


def _charset(value: bytes | None) -> str:
    """The codec named by a charset parameter; utf-8 when absent, a 400 when unknown."""
    codec = text_codec(value)
    if codec is None:
        name = (value or b"").decode("latin-1")
        raise BadRequest(f"Unknown charset {name[:40]!r} in multipart/form-data content type")
    return codec


def _decode(value: bytes, charset: str) -> str:
    """A file name: in the body's charset, or Latin-1 when it is not valid there (old clients
    send names in their own encoding)."""
    try:
        return decode_text(value, charset)
    except UnicodeDecodeError:
        return value.decode("latin-1")


def _decode_name(value: bytes, charset: str) -> str:
    """A field name: valid text in the body's charset, as the field values must be."""
    try:
        return decode_text(value, charset)
    except UnicodeDecodeError:
        shown = value.decode("utf-8", "replace")[:40]
        raise BadRequest(f"The name of field {shown!r} is not valid {charset} text") from None


def _parse_disposition(header: str, charset: str) -> tuple[str | None, str | None]:
    """``(name, filename)`` from a Content-Disposition value (a latin-1 decoded header)."""
    _, options = parse_options_header(header)
    raw_name = options.get(b"name")
    raw_filename = options.get(b"filename")
    name = None if raw_name is None else _decode_name(raw_name, charset)
    filename = _extended_filename(header)
    if filename is None and raw_filename is not None:
        filename = _decode(raw_filename, charset)
    return name, filename


def _extended_filename(header: str) -> str | None:
    """The RFC 5987 ``filename*=charset'lang'percent-encoded`` value, if present and valid."""
    for param in _split_params(header)[1:]:
        key, sep, value = param.partition("=")
        if not sep or key.strip().lower() != "filename*":
            continue
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] == '"':
            value = value[1:-1]
        encoding, sep1, rest = value.partition("'")
        _language, sep2, encoded = rest.partition("'")
        if not (sep1 and sep2):
            return None
        try:
            return decode_text(unquote_to_bytes(encoded), encoding or "utf-8")
        except (UnicodeDecodeError, LookupError):
            return None
    return None


def _split_params(header: str) -> list[str]:
    """Split a header value on the semicolons that are not inside a quoted string."""
    params: list[str] = []
    current: list[str] = []
    quoted = escaped = False
    for char in header:
        if escaped:
            escaped = False
        elif quoted and char == "\\":
            escaped = True
        elif char == '"':
            quoted = not quoted
        elif char == ";" and not quoted:
            params.append("".join(current))
            current = []
            continue
        current.append(char)
    params.append("".join(current))
    return params
