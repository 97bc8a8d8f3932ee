"""Entity formats: how request bodies are read and response entities written, by media type.

A format registers a media type with a :class:`Reader` (for request bodies of that
``Content-Type``) and/or a :class:`Writer` (for responses negotiated to it)::

    api.register("text/csv", writer=CsvWriter())
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Protocol

from pydantic_core import PydanticSerializationError, to_json
from starlette.datastructures import FormData
from starlette.formparsers import MultiPartException

from webrest.errors import BadRequest, ErrorDetail, HttpError
from webrest.negotiation import parse_media_type
from webrest.request import Request

__all__ = [
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


class JsonReader:
    """``application/json``: the body parsed as UTF-8 JSON; empty body → ``None``."""

    async def read(self, request: Request) -> object:
        body = await request.body()
        if not body:
            return None
        try:
            return json.loads(body)
        except json.JSONDecodeError as exc:
            detail = ErrorDetail(
                loc=("body", exc.pos),
                msg="JSON decode error",
                type="json_invalid",
                input={},
                ctx={"error": exc.msg},
            )
            raise BadRequest(f"Malformed JSON: {exc.msg} at position {exc.pos}", [detail]) from exc
        except UnicodeDecodeError as exc:
            detail = ErrorDetail(
                loc=("body", exc.start),
                msg="JSON decode error",
                type="json_invalid",
                input={},
                ctx={"error": "Invalid UTF-8"},
            )
            raise BadRequest("Malformed JSON: the body is not valid UTF-8", [detail]) from exc


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

    Files are Starlette ``UploadFile``s spooled to disk beyond 1 MB; to handle uploads as
    they arrive, take a :class:`webrest.Multipart` parameter instead.
    """

    def __init__(self, max_files: int = 1000, max_fields: int = 1000) -> None:
        self.max_files = max_files
        self.max_fields = max_fields

    async def read(self, request: Request) -> object:
        try:
            form = await request.form(max_files=self.max_files, max_fields=self.max_fields)
        except MultiPartException as exc:
            raise BadRequest(f"Malformed form body: {exc.message}") from exc
        except HttpError:
            raise
        except (ValueError, UnicodeDecodeError, AssertionError) as exc:
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
