"""The request object handed to filters, interceptors and methods."""

from __future__ import annotations

import codecs
import re
from collections.abc import AsyncGenerator
from typing import Any, Final
from urllib.parse import unquote_to_bytes

from python_multipart.multipart import parse_options_header
from starlette.datastructures import FormData, ImmutableMultiDict, UploadFile
from starlette.formparsers import MultiPartException, MultiPartParser
from starlette.requests import ClientDisconnect
from starlette.requests import Request as StarletteRequest
from starlette.types import Message, Receive, Scope, Send

from webrest.errors import BadRequest, HttpError

__all__ = [
    "MAX_FORM_FIELDS",
    "MAX_FORM_FIELD_SIZE",
    "ClientDisconnected",
    "Request",
    "decode_text",
    "parse_form_urlencoded",
    "text_codec",
]

MAX_FORM_FIELDS: Final = 1000
"""How many fields (and, for multipart bodies, files) a form body may have."""
MAX_FORM_FIELD_SIZE: Final = 1024 * 1024
"""How many bytes one field of a form body may have (files excepted)."""


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
        """The value of header ``name`` (lower case, as ASGI servers pass names), or ``None``.

        A header sent on several lines is one comma-separated list, its lines joined with
        ``", "`` (RFC 9110 §5.3): two ``Accept`` lines are one ``Accept`` list. Made for the
        lookups of every request: no headers mapping is built.
        """
        found: str | None = None
        for key, value in self.scope["headers"]:
            if key == name:
                text = value.decode("latin-1")
                found = text if found is None else f"{found}, {text}"
        return found

    def header_values(self, name: bytes) -> list[str]:
        """Every line of header ``name`` (lower case), in the order sent."""
        return [value.decode("latin-1") for key, value in self.scope["headers"] if key == name]

    # -- request parameters: the query string, then the form ----------------------------------

    async def param(self, name: str, default: str | None = None) -> str | None:
        """Request parameter ``name``: from the query string, else from a form body
        (url-encoded or multipart, files left out), else ``default``.

        A name given in the query string is read from there only, as ``Param`` parameters
        are; given several times, its last value counts (``param_values`` has them all).
        """
        query = self.query_params
        if name in query:
            return query[name]
        form = await self._form_fields()
        return form.get(name, default) if form is not None else default

    async def param_values(self, name: str) -> list[str]:
        """Every value of request parameter ``name``, in the order sent: the query string's,
        or, when it has none, the form body's; ``[]`` when neither has one."""
        values = self.query_params.getlist(name)
        if values:
            return values
        form = await self._form_fields()
        return form.getlist(name) if form is not None else []

    async def params(self) -> dict[str, str]:
        """Every request parameter with its last value: the form body's fields, overridden by
        the query string's parameters of the same name."""
        form = await self._form_fields()
        merged = dict(form.items()) if form is not None else {}
        merged.update(self.query_params)
        return merged

    async def _form_fields(self) -> ImmutableMultiDict[str, str] | None:
        """The text fields of a form body (parsed once, shared with ``form()``), or ``None``
        when the body is no form."""
        content_type = self.header(b"content-type")
        if not content_type:
            return None
        mime = parse_options_header(content_type)[0]
        if mime not in _FORM_TYPES:
            return None
        form = await self.form()
        return ImmutableMultiDict([(k, v) for k, v in form.multi_items() if isinstance(v, str)])

    async def _get_form(
        self,
        *,
        max_files: int | float = MAX_FORM_FIELDS,
        max_fields: int | float = MAX_FORM_FIELDS,
        max_part_size: int = MAX_FORM_FIELD_SIZE,
    ) -> FormData:
        """Starlette's form parsing with text decoded strictly: a name or value that is not
        valid text in the body's charset (UTF-8 unless the ``Content-Type`` names another) is
        a :class:`webrest.BadRequest`, whether its bytes came raw or percent-encoded."""
        if self._form is None:
            content_type = self.header(b"content-type") or ""
            mime, options = parse_options_header(content_type)
            if mime == b"application/x-www-form-urlencoded":
                charset = _charset(options.get(b"charset"))
                fields: list[tuple[str, str | UploadFile]] = []
                fields.extend(
                    parse_form_urlencoded(
                        await self.body(),
                        charset,
                        max_fields=max_fields,
                        max_field_size=max_part_size,
                    )
                )
                self._form = FormData(fields)
            elif mime == b"multipart/form-data":
                _charset(options.get(b"charset"))  # an unknown one is a 400, not Latin-1
                parser = _StrictMultiPartParser(
                    self.headers,
                    self.stream(),
                    max_files=max_files,
                    max_fields=max_fields,
                    max_part_size=max_part_size,
                )
                try:
                    self._form = await parser.parse()
                except MultiPartException as exc:
                    raise BadRequest(f"Malformed form body: {exc.message}") from exc
                except ValueError as exc:  # a codec that fails in Starlette's own decoding
                    raise BadRequest("Malformed form body: undecodable text") from exc
            else:
                self._form = FormData()
        return self._form

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

    async def stream(self) -> AsyncGenerator[bytes, None]:
        """Starlette's body stream; a client gone before the end is :class:`ClientDisconnected`."""
        try:
            async for chunk in super().stream():
                yield chunk
        except ClientDisconnect:
            raise ClientDisconnected() from None

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
                    raise ClientDisconnected()
            self._stream_consumed = True
            self._body = b"".join(chunks)
        return self._body

    @property
    def negotiated(self) -> str | None:
        """The media type chosen for the response body, once routing has negotiated it."""
        media_type: str | None = self.scope.get("webrest.negotiated")
        return media_type


class ClientDisconnected(ClientDisconnect, HttpError):
    """The client went away before it sent the whole body: Starlette's ``ClientDisconnect``,
    and a 400 (which nobody receives) rather than an unhandled error."""

    def __init__(self) -> None:
        HttpError.__init__(self, 400, "The client disconnected before the end of the body")


_SURROGATE: Final = re.compile("[\ud800-\udfff]")
_UNICODE_SAFE: Final = frozenset({"utf-8", "ascii", "iso8859-1", "latin-1", "cp1252"})


def decode_text(data: bytes, charset: str) -> str:
    """``data`` decoded as ``charset``; ``UnicodeDecodeError`` when it is not valid text there,
    ``LookupError`` when ``charset`` names no text codec.

    Valid means valid Unicode too: the codecs that can decode to lone surrogates (UTF-7,
    ``unicode_escape``, ...) are held to what UTF-8 allows, so that no request text fails
    later, written to a file, a database or a JSON response.
    """
    try:
        text = data.decode(charset)
    except UnicodeDecodeError:
        raise
    except ValueError as exc:  # a name with a NUL in it, a codec that decodes nothing
        raise UnicodeDecodeError(charset, data, 0, len(data), str(exc)) from exc
    if (
        charset not in _UNICODE_SAFE
        and codecs.lookup(charset).name not in _UNICODE_SAFE
        and _SURROGATE.search(text) is not None
    ):
        raise UnicodeDecodeError(charset, data, 0, len(data), "lone surrogate")
    return text


_FORM_TYPES: Final = frozenset({b"application/x-www-form-urlencoded", b"multipart/form-data"})


def text_codec(value: bytes | None) -> str | None:
    """The text codec a ``charset`` parameter names (UTF-8 without one), or ``None`` when it
    names none: unknown, or a codec of bytes to bytes or text to text (hex, rot13, ...), which
    ``bytes.decode`` refuses."""
    if not value:
        return "utf-8"
    try:
        codec = codecs.lookup(value.decode("latin-1"))
    except (LookupError, ValueError):  # ValueError: a NUL in the name
        return None
    return codec.name if getattr(codec, "_is_text_encoding", True) else None


def _charset(value: bytes | None) -> str:
    """The codec of a form's ``charset`` parameter; 400 for one that names no text codec."""
    codec = text_codec(value)
    if codec is None:
        name = (value or b"").decode("latin-1")
        raise BadRequest(f"Malformed form body: unknown charset {name[:40]!r}")
    return codec


def parse_form_urlencoded(
    body: bytes,
    charset: str = "utf-8",
    *,
    max_fields: int | float = MAX_FORM_FIELDS,
    max_field_size: int = MAX_FORM_FIELD_SIZE,
) -> list[tuple[str, str]]:
    """The fields of an ``application/x-www-form-urlencoded`` body, in order.

    ``+`` is a space, and percent escapes are decoded to bytes (an invalid one such as ``%zz``
    stays as it is); the bytes, raw or escaped alike, must then be valid ``charset`` text.
    Empty pairs (``a=1&&b=2``) are skipped. More than ``max_fields`` fields, a field longer
    than ``max_field_size`` bytes or undecodable text is a :class:`webrest.BadRequest`.
    """
    fields: list[tuple[str, str]] = []
    if not body:
        return fields
    for pair in body.split(b"&"):
        if not pair:
            continue
        if len(pair) > max_field_size:
            raise BadRequest(f"Malformed form body: a field is larger than {max_field_size} bytes")
        if len(fields) >= max_fields:
            raise BadRequest(f"Malformed form body: more than {max_fields} fields")
        raw_name, _, raw_value = pair.partition(b"=")
        name = unquote_to_bytes(raw_name.replace(b"+", b" "))
        value = unquote_to_bytes(raw_value.replace(b"+", b" "))
        try:
            fields.append((decode_text(name, charset), decode_text(value, charset)))
        except UnicodeDecodeError:
            shown = name.decode("utf-8", "replace")[:40]
            raise BadRequest(
                f"Malformed form body: field {shown!r} is not valid {charset} text"
            ) from None
    return fields


class _StrictMultiPartParser(MultiPartParser):
    """Starlette's multipart parser without its Latin-1 fallback: a field name or value that
    is not valid text in the body's charset ends parsing (file names keep the fallback). A
    body without its closing boundary is refused too, instead of giving the parts before
    it (and leaving the spooled file of a part cut short unclosed)."""

    _ended = False

    def on_end(self) -> None:
        self._ended = True

    async def parse(self) -> FormData:
        form = await super().parse()
        if not self._ended:
            for file in self._files_to_close_on_error:
                file.close()
            raise MultiPartException("the body ended before its closing boundary")
        return form

    def on_headers_finished(self) -> None:
        super().on_headers_finished()
        disposition = self._current_part.content_disposition
        name = parse_options_header(disposition)[1].get(b"name", b"")
        self._decode(name, f"The name of field {self._current_part.field_name[:40]!r}")

    def on_part_end(self) -> None:
        part = self._current_part
        if part.file is not None:
            super().on_part_end()
            return
        value = self._decode(bytes(part.data), f"Field {part.field_name[:40]!r}")
        self.items.append((part.field_name, value))

    def _decode(self, data: bytes, what: str) -> str:
        try:
            return decode_text(data, self._charset)
        except UnicodeDecodeError:
            raise MultiPartException(f"{what} is not valid {self._charset} text") from None


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
