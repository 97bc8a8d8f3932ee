"""The ``Response`` builder: explicit status, headers and body for a method's result.

Static factories create a response with a status; fluent modifiers return the same response::

    return Response.created("/users/{id}", user.id).entity(user)
    return Response.ok().type("text/csv").stream(rows(), size=None)

Header values are converted as upstream's: ``.header("Age", 12)`` sends ``Age: 12``, a
``datetime`` is an HTTP date and a list gives one header line per value. A value that
cannot be a header fails at the ``.header()`` call, not when the response is sent.
"""

from __future__ import annotations

import math
import re
from collections.abc import AsyncIterable, Iterable, Sequence
from datetime import UTC, date, datetime
from decimal import Decimal
from email.utils import format_datetime
from typing import Self, TypeAlias
from urllib.parse import quote

__all__ = ["HeaderValue", "Response", "StreamSource", "expand_location", "header_value"]

StreamSource = AsyncIterable[bytes | str] | Iterable[bytes | str]

HeaderScalar: TypeAlias = str | int | float | Decimal | datetime | bytes
HeaderValue: TypeAlias = HeaderScalar | Sequence[HeaderScalar] | None
"""What :meth:`Response.header` takes: text, a number, a ``datetime`` (sent as an HTTP date),
bytes (as Latin-1), a list of those (one line each), or ``None`` (no such header)."""

_PLACEHOLDER = re.compile(r"\{([^{}]*)\}")
_NO_ENTITY = object()
_TOKEN = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+\Z")
_FORBIDDEN = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")  # controls but tab: CR, LF, NUL, ...


_NAMES: set[str] = set()
"""Header names already checked (at most a few hundred: names are written in code)."""


def _check_name(name: object) -> None:
    if not isinstance(name, str) or not _TOKEN.match(name):
        raise ValueError(f"{name!r} is not a header name")
    if len(_NAMES) < 1024:
        _NAMES.add(name)


def header_value(value: HeaderScalar) -> str:
    """One header line's value: ``12`` → ``"12"``, a ``datetime`` → an HTTP date
    (``"Tue, 02 Jun 2026 12:11:00 GMT"``), bytes as Latin-1. ``TypeError`` for any other type
    (``bool``, ``None``, ``date``, objects); ``ValueError`` for a value that cannot be sent (a
    line break or other control character, text outside Latin-1, NaN, a naive ``datetime``)."""
    if type(value) is str:
        text = value
    elif isinstance(value, bool):
        raise TypeError(f"{value!r} is not a header value: write it as text ('true', '1', ...)")
    elif isinstance(value, int):
        text = str(int(value))
    elif isinstance(value, (float, Decimal)):
        if isinstance(value, float) and not math.isfinite(value):
            raise ValueError(f"{value!r} is not a header value")
        if isinstance(value, Decimal) and not value.is_finite():
            raise ValueError(f"{value!r} is not a header value")
        text = str(value)
    elif isinstance(value, datetime):
        if value.tzinfo is None or value.utcoffset() is None:
            raise ValueError(
                f"{value!r} has no time zone; an HTTP date needs one (datetime.now(UTC))"
            )
        text = format_datetime(value.astimezone(UTC), usegmt=True)
    elif isinstance(value, str):  # a str subclass (StrEnum): its text
        text = str.__str__(value)
    elif isinstance(value, bytes):
        text = value.decode("latin-1")
    elif isinstance(value, date):
        raise TypeError(f"{value!r} is a date without a time; an HTTP date needs a datetime")
    else:
        raise TypeError(f"{type(value).__name__} is not a header value: {value!r}")
    if _FORBIDDEN.search(text):
        raise ValueError(f"{text!r} contains a line break or control character")
    if not text.isascii():
        try:
            text.encode("latin-1")
        except UnicodeEncodeError:
            raise ValueError(f"{text!r} cannot be sent in a header (Latin-1 only)") from None
    return text


def expand_location(template: str, *args: object, **kwargs: object) -> str:
    """Fill ``{name}`` placeholders, URL-encoded, from ``kwargs`` by name or ``args`` in order."""
    positional = iter(args)

    def fill(match: re.Match[str]) -> str:
        name = match.group(1)
        if name in kwargs:
            value = kwargs[name]
        else:
            try:
                value = next(positional)
            except StopIteration:
                raise ValueError(f"No value for placeholder {{{name}}} in {template!r}") from None
        return quote(str(value), safe="")

    return _PLACEHOLDER.sub(fill, template)


class Response:
    """A response under construction; create it with one of the static factories."""

    __slots__ = (
        "_body",
        "_entity",
        "_lines",
        "_size",
        "_stream",
        "headers",
        "media_type",
        "status_code",
    )

    def __init__(self, status_code: int) -> None:
        if not 100 <= status_code <= 599:
            raise ValueError(f"{status_code!r} is not an HTTP status (100-599)")
        self.status_code = status_code
        self.headers: dict[str, str] = {}
        """One value per name; a list given to :meth:`header` is here joined by ``", "``."""
        self._lines: dict[str, tuple[str, ...]] | None = None
        self.media_type: str | None = None
        self._entity: object = _NO_ENTITY
        self._stream: StreamSource | None = None
        self._size: int | None = None
        self._body: bytes | None = None

    # -- factories ---------------------------------------------------------------------------

    @classmethod
    def ok(cls) -> Response:
        """200 OK."""
        return cls(200)

    @classmethod
    def created(cls, location: str | None = None, *args: object, **kwargs: object) -> Response:
        """201 Created, with a ``Location`` expanded from the template when given."""
        response = cls(201)
        if location is not None:
            response.headers["Location"] = expand_location(location, *args, **kwargs)
        return response

    @classmethod
    def accepted(cls) -> Response:
        """202 Accepted."""
        return cls(202)

    @classmethod
    def no_content(cls) -> Response:
        """204 No Content."""
        return cls(204)

    @classmethod
    def see(cls, location: str, *args: object, **kwargs: object) -> Response:
        """302 Found, redirecting to the expanded ``location``."""
        response = cls(302)
        response.headers["Location"] = expand_location(location, *args, **kwargs)
        return response

    @classmethod
    def not_modified(cls) -> Response:
        """304 Not Modified."""
        return cls(304)

    @classmethod
    def not_found(cls, message: str | BaseException | None = None) -> Response:
        """404 Not Found; a message is serialized as ``{"status": 404, "message": ...}``."""
        return cls.error(404, message)

    @classmethod
    def not_acceptable(cls, message: str | BaseException | None = None) -> Response:
        """406 Not Acceptable; a message is serialized like :meth:`not_found`'s."""
        return cls.error(406, message)

    @classmethod
    def error(cls, code: int = 500, message: str | BaseException | None = None) -> Response:
        """Any error status; a message is serialized as ``{"status": code, "message": ...}``."""
        response = cls(code)
        if message is not None:
            response._entity = {"status": code, "message": str(message)}
        return response

    @classmethod
    def status(cls, code: int) -> Response:
        """Any other status."""
        return cls(code)

    # -- modifiers ---------------------------------------------------------------------------

    def type(self, media_type: str) -> Self:
        """Set the ``Content-Type``; an entity is written in that format when one is registered."""
        self.media_type = header_value(media_type)
        return self

    def header(self, name: str, value: HeaderValue) -> Self:
        """Set a header; a later call with the same name replaces the value.

        Numbers are sent as text, a ``datetime`` as an HTTP date, and a list as one line per
        value (``.header("Vary", ["Accept", "Origin"])``); ``None`` or ``[]`` removes the
        header. Anything else is a ``TypeError``, a value that cannot be sent (a line break,
        text outside Latin-1) a ``ValueError``, raised here.
        """
        if name not in _NAMES:
            _check_name(name)
        if type(value) is str and value.isascii() and value.isprintable():
            self.headers[name] = value  # the common case: printable ASCII
        elif value is None:
            self.headers.pop(name, None)
        elif isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
            self.headers[name] = header_value(value)
        else:
            lines = tuple(header_value(item) for item in value)
            if not lines:
                self.headers.pop(name, None)
            else:
                self.headers[name] = ", ".join(lines)
                if len(lines) > 1:
                    if self._lines is None:
                        self._lines = {}
                    self._lines[name] = lines
                    return self
        if self._lines is not None:
            self._lines.pop(name, None)
        return self

    @property
    def has_header_lists(self) -> bool:
        """Whether some header was given several values (see :meth:`header_lines`)."""
        return bool(self._lines)

    def header_lines(self) -> list[tuple[str, str]]:
        """Every header line to send: one per value of a header given a list (so that
        ``Set-Cookie`` values, which cannot be joined, stay apart)."""
        lines: list[tuple[str, str]] = []
        several = self._lines or {}
        for name, value in self.headers.items():
            values = several.get(name)
            if values is not None and ", ".join(values) == value:
                lines.extend((name, line) for line in values)
            else:  # one value, or set through ``headers`` since
                lines.append((name, value))
        return lines

    def entity(self, value: object) -> Self:
        """Serialize ``value`` as the body, in the negotiated format."""
        self._entity = value
        self._stream = None
        self._body = None
        return self

    def stream(self, source: StreamSource, size: int | None = None) -> Self:
        """Stream the body from a sync or async iterable of bytes (or text, sent as UTF-8).

        Without ``size`` the body is sent chunked; nothing is buffered either way.
        """
        self._stream = source
        self._size = size
        self._entity = _NO_ENTITY
        self._body = None
        return self

    def body(self, data: bytes | str) -> Self:
        """Send these bytes (text is encoded as UTF-8) as the body, as they are."""
        self._body = data.encode() if isinstance(data, str) else data
        self._entity = _NO_ENTITY
        self._stream = None
        return self

    # -- what transmission reads -------------------------------------------------------------

    @property
    def has_entity(self) -> bool:
        """Whether :meth:`entity` (or an error message) gave this response a value to write."""
        return self._entity is not _NO_ENTITY

    @property
    def entity_value(self) -> object:
        """The value set with :meth:`entity`."""
        return None if self._entity is _NO_ENTITY else self._entity

    @property
    def stream_source(self) -> StreamSource | None:
        """The iterable set with :meth:`stream`."""
        return self._stream

    @property
    def stream_size(self) -> int | None:
        """The size announced with :meth:`stream`."""
        return self._size

    @property
    def raw_body(self) -> bytes | None:
        """The bytes set with :meth:`body`."""
        return self._body

    def __repr__(self) -> str:
        return f"Response({self.status_code}, headers={self.headers!r})"
