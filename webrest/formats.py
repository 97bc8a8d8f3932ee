"""Entity formats: how request bodies are read and response entities written, by media type.

A format registers a media type with a :class:`Reader` (for request bodies of that
``Content-Type``) and/or a :class:`Writer` (for responses negotiated to it)::

    api.register("text/csv", writer=CsvWriter())
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator
from dataclasses import dataclass
from itertools import accumulate
from typing import Final, Protocol

from pydantic_core import PydanticSerializationError, from_json, to_json
from starlette.datastructures import FormData
from starlette.formparsers import MultiPartException

from webrest.errors import BadRequest, ErrorDetail, HttpError
from webrest.negotiation import parse_media_type
from webrest.request import MAX_FORM_FIELD_SIZE, MAX_FORM_FIELDS, Request

__all__ = [
    "MAX_JSON_DEPTH",
    "MAX_JSON_NUMBER_DIGITS",
    "FormReader",
    "Formats",
    "JsonReader",
    "JsonWriter",
    "OctetStreamReader",
    "Reader",
    "Writer",
    "default_formats",
    "form_to_dict",
]


class Reader(Protocol):
    """Deserializes a request body; raises :class:`webrest.BadRequest` on malformed input."""

    async def read(self, request: Request) -> object: ...


class Writer(Protocol):
    """Serializes a response entity; ``media_type`` is the ``Content-Type`` it is sent with."""

    @property
    def media_type(self) -> str: ...

    def write(self, value: object) -> bytes: ...


MAX_JSON_DEPTH: Final = 64
"""How deeply arrays and objects may nest in a JSON body (``[[1]]`` is 2 levels deep)."""
MAX_JSON_NUMBER_DIGITS: Final = 100
"""How many digits a number of a JSON body may have before its exponent."""

_JSON_PARSER_DEPTH: Final = 200  # what pydantic-core's parser allows, whatever the setting


class _JsonLimitExceeded(ValueError):
    """A JSON body beyond a limit of the reader, or with a number no float can hold."""


class JsonReader:
    """``application/json``: the body parsed as UTF-8 JSON (RFC 8259); empty body → ``None``.

    Parsing is bounded, so that no body makes the server fail: arrays and objects nest at most
    ``max_depth`` levels (at most 200), numbers have at most ``max_number_digits`` digits
    before their exponent, and a number too large for a float (``1e999``) is refused like the
    ``NaN`` and ``Infinity`` literals, which are not JSON. A body beyond them, malformed, or not
    UTF-8 is a :class:`webrest.BadRequest`.
    """

    def __init__(
        self, max_depth: int = MAX_JSON_DEPTH, max_number_digits: int = MAX_JSON_NUMBER_DIGITS
    ) -> None:
        if not 1 <= max_depth <= _JSON_PARSER_DEPTH:
            raise ValueError(f"max_depth must be between 1 and {_JSON_PARSER_DEPTH}")
        if max_number_digits < 1:
            raise ValueError("max_number_digits must be positive")
        self.max_depth = max_depth
        self.max_number_digits = max_number_digits
        self._long_number = b"0" * (max_number_digits + 1)

    async def read(self, request: Request) -> object:
        body = await request.body()
        if not body:
            return None
        return self.parse(body)

    def parse(self, body: bytes | str) -> object:
        """The JSON value of ``body``; :class:`webrest.BadRequest` when it is not one, or one
        beyond the limits. Text (JSON sent in a form field, say) is read as its UTF-8 bytes."""
        if isinstance(body, str):
            body = body.encode("utf-8", "surrogatepass")  # a lone surrogate: not UTF-8, a 400
        try:
            value = from_json(body, allow_inf_nan=False)
        except ValueError as exc:
            return self._parse_exactly(body, str(exc))
        self.check(body)
        return value

    def check(self, body: bytes) -> None:
        """Refuse a body, known to be well-formed JSON, that nests too deeply or has a number
        beyond the limits: a few scans of the bytes in C, and an exact parse only for a body
        that fails them (``NaN`` or ``Infinity`` somewhere, a long run of digits, a positive
        exponent of three digits), so that a small body costs about a microsecond."""
        shape = body.translate(_SHAPES)
        if shape.count(b"[") > self.max_depth and self._too_deep(body):
            raise _too_deep_error(self.max_depth)
        if (
            b"e000" in shape
            or (len(shape) > self.max_number_digits and self._long_number in shape)
            or (b"N" in shape and (b"NaN" in body or b"Infinity" in body))
        ):
            self._parse_exactly(body, None)

    def _too_deep(self, body: bytes) -> bool:
        """Whether well-formed ``body`` nests deeper than allowed: each round removes the
        innermost empty pairs of its brackets, and brackets in strings are counted only when
        that is not enough to decide."""
        brackets = body.translate(_BRACKETS, _NOT_BRACKETS)
        for _ in range(self.max_depth):
            brackets = brackets.replace(b"[]", b"")
            if not brackets:
                return False
        return _running_depth(_JSON_STRING.sub(b'""', body)) > self.max_depth

    def _parse_exactly(self, body: bytes, fast_error: str | None) -> object:
        """Parse with the standard library, bounded, for its error messages (those FastAPI
        gives) or to check every number; ``fast_error`` is the fast parser's complaint, if
        any: a body only the standard library reads (a BOM, UTF-16, lone surrogates) is still
        refused with it."""
        if _running_depth(_JSON_STRING.sub(b'""', body)) > self.max_depth:
            raise _too_deep_error(self.max_depth)
        try:
            value = json.loads(
                body,
                parse_int=self._int,
                parse_float=self._float,
                parse_constant=_no_constant,
            )
        except json.JSONDecodeError as exc:
            raise _malformed(exc.msg, exc.pos) from exc
        except UnicodeDecodeError as exc:
            detail = ErrorDetail(
                loc=("body", exc.start),
                msg="JSON decode error",
                type="json_invalid",
                input={},
                ctx={"error": "Invalid UTF-8"},
            )
            raise BadRequest("Malformed JSON: the body is not valid UTF-8", [detail]) from exc
        except _JsonLimitExceeded as exc:
            raise _malformed(str(exc), None) from exc
        except (ValueError, RecursionError) as exc:  # pragma: no cover - bounded above
            raise _malformed("Unreadable JSON", None) from exc
        if fast_error is not None:
            raise _malformed(fast_error[:1].upper() + fast_error[1:], None)
        return value

    def _int(self, literal: str) -> int:
        if len(literal) - literal.startswith("-") > self.max_number_digits:
            raise _JsonLimitExceeded(
                f"Number with more than {self.max_number_digits} digits: {literal[:20]}..."
            )
        return int(literal)

    def _float(self, literal: str) -> float:
        mantissa = literal.partition("e")[0].partition("E")[0]
        digits = len(mantissa) - mantissa.startswith("-") - ("." in mantissa)
        if digits > self.max_number_digits:
            raise _JsonLimitExceeded(
                f"Number with more than {self.max_number_digits} digits: {literal[:20]}..."
            )
        value = float(literal)
        if math.isinf(value):
            raise _JsonLimitExceeded(f"Number out of range: {literal[:40]}")
        return value


def _no_constant(literal: str) -> object:
    raise _JsonLimitExceeded(f"{literal} is not a JSON number")


def _malformed(reason: str, position: int | None) -> BadRequest:
    detail = ErrorDetail(
        loc=("body",) if position is None else ("body", position),
        msg="JSON decode error",
        type="json_invalid",
        input={},
        ctx={"error": reason},
    )
    where = "" if position is None else f" at position {position}"
    return BadRequest(f"Malformed JSON: {reason}{where}", [detail])


def _too_deep_error(limit: int) -> BadRequest:
    return _malformed(f"Arrays and objects nested deeper than {limit} levels", None)


# The bytes of a body as its checks see them: digits and points as 0, exponent marks and
# plus signs as e (``1e+400`` is ``0ee000``), openers as [, the capitals that begin ``NaN``
# and ``Infinity`` as N, anything else as a space.
_SHAPES: Final = bytes(
    ord("0")
    if chr(byte) in "0123456789."
    else ord("e")
    if chr(byte) in "eE+"
    else ord("[")
    if chr(byte) in "[{"
    else ord("N")
    if chr(byte) in "NI"
    else ord(" ")
    for byte in range(256)
)
# Brackets as the depth checks see them: ``{`` as ``[``, ``}`` as ``]``, nothing else.
_BRACKETS: Final = bytes.maketrans(b"{}", b"[]")
_NOT_BRACKETS: Final = bytes(byte for byte in range(256) if byte not in b"[]{}")
_DEPTH_STEP: Final = tuple(
    1 if byte in b"[{" else -1 if byte in b"]}" else 0 for byte in range(256)
)
_JSON_STRING: Final = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)


def _running_depth(body: bytes) -> int:
    """The deepest nesting reached reading ``body`` (strings taken out) from its start, as a
    recursive parser would reach it before finding an error: no recursion here."""
    brackets = body.translate(None, _NOT_BRACKETS)
    return max(accumulate(map(_DEPTH_STEP.__getitem__, brackets)), default=0)


class JsonWriter:
    """Dense JSON of anything pydantic can serialize (models, dataclasses, dates, UUIDs...)."""

    media_type = "application/json"

    def write(self, value: object) -> bytes:
        try:
            return to_json(value, inf_nan_mode="null")
        except PydanticSerializationError as exc:
            raise TypeError(f"Cannot write {type(value).__name__} as JSON: {exc}") from exc


def form_to_dict(form: FormData) -> dict[str, object]:
    """A form's fields by name; a repeated name gives a list, files stay ``UploadFile``s."""
    result: dict[str, object] = {}
    for key, value in form.multi_items():
        if key in result:
            existing = result[key]
            if isinstance(existing, list):
                existing.append(value)
            else:
                result[key] = [existing, value]
        else:
            result[key] = value
    return result


class FormReader:
    """``application/x-www-form-urlencoded`` and ``multipart/form-data``: a dict of fields.

    Names and values must be valid text in the body's charset (UTF-8 unless its
    ``Content-Type`` names another), whether their bytes came raw or percent-encoded;
    otherwise, or beyond ``max_fields`` fields, ``max_files`` files or a field of
    ``max_field_size`` bytes, the body is a :class:`webrest.BadRequest`. Files are Starlette
    ``UploadFile``s spooled to disk beyond 1 MB; to handle uploads as they arrive, take a
    :class:`webrest.Multipart` parameter instead.
    """

    def __init__(
        self,
        max_files: int = MAX_FORM_FIELDS,
        max_fields: int = MAX_FORM_FIELDS,
        max_field_size: int = MAX_FORM_FIELD_SIZE,
    ) -> None:
        self.max_files = max_files
        self.max_fields = max_fields
        self.max_field_size = max_field_size

    async def read(self, request: Request) -> object:
        try:
            form = await request.form(
                max_files=self.max_files,
                max_fields=self.max_fields,
                max_part_size=self.max_field_size,
            )
        except MultiPartException as exc:
            raise BadRequest(f"Malformed form body: {exc.message}") from exc
        except HttpError:
            raise
        except (ValueError, UnicodeDecodeError, AssertionError, KeyError) as exc:
            raise BadRequest("Malformed form body") from exc
        return form_to_dict(form)


class OctetStreamReader:
    """``application/octet-stream``: the body as bytes."""

    async def read(self, request: Request) -> object:
        return await request.body()


@dataclass(frozen=True, slots=True)
class _Format:
    mime: str
    reader: Reader | None
    writer: Writer | None


class Formats:
    """The media types an API reads and writes, in registration order."""

    def __init__(self) -> None:
        self._formats: dict[str, _Format] = {}
        self.writable: tuple[str, ...] = ()

    def register(
        self, mime: str, reader: Reader | None = None, writer: Writer | None = None
    ) -> None:
        """Add or replace the format of ``mime``; the first writable one is the default."""
        mime = parse_media_type(mime)[0]
        previous = self._formats.get(mime)
        self._formats[mime] = _Format(
            mime,
            reader if reader is not None else (previous.reader if previous else None),
            writer if writer is not None else (previous.writer if previous else None),
        )
        self.writable = tuple(f.mime for f in self._formats.values() if f.writer is not None)

    def reader(self, content_type: str | None) -> Reader:
        """The reader for a request ``Content-Type`` (default JSON); 415 when none reads it."""
        mime = parse_media_type(content_type)[0] if content_type else "application/json"
        found = self._formats.get(mime)
        if found is None or found.reader is None:
            raise HttpError(415, f"Unsupported request body type {mime}")
        return found.reader

    def writer(self, mime: str) -> Writer | None:
        """The writer registered for ``mime`` (parameters ignored), if any."""
        found = self._formats.get(parse_media_type(mime)[0])
        return found.writer if found else None

    def __iter__(self) -> Iterator[str]:
        return iter(self._formats)

    def copy(self) -> Formats:
        """A registry with the same formats, to extend without changing this one."""
        other = Formats()
        for fmt in self._formats.values():
            other.register(fmt.mime, fmt.reader, fmt.writer)
        return other


def default_formats() -> Formats:
    """JSON (read and write), url-encoded and multipart forms, and octet-stream (read)."""
    formats = Formats()
    formats.register("application/json", JsonReader(), JsonWriter())
    forms = FormReader()
    formats.register("application/x-www-form-urlencoded", forms)
    formats.register("multipart/form-data", forms)
    formats.register("application/octet-stream", OctetStreamReader())
    return formats
