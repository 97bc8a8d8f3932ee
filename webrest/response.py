"""The ``Response`` builder: explicit status, headers and body for a method's result.

Static factories create a response with a status; fluent modifiers return the same response::

    return Response.created("/users/{id}", user.id).entity(user)
    return Response.ok().type("text/csv").stream(rows(), size=None)
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterable, Iterable
from typing import Self
from urllib.parse import quote

__all__ = ["Response", "StreamSource", "expand_location"]

StreamSource = AsyncIterable[bytes | str] | Iterable[bytes | str]

_PLACEHOLDER = re.compile(r"\{([^{}]*)\}")
_NO_ENTITY = object()


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

    __slots__ = ("_body", "_entity", "_size", "_stream", "headers", "media_type", "status_code")

    def __init__(self, status_code: int) -> None:
        self.status_code = status_code
        self.headers: dict[str, str] = {}
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
        self.media_type = media_type
        return self

    def header(self, name: str, value: str) -> Self:
        """Set a header; a later call with the same name replaces the value."""
        self.headers[name] = value
        return self

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
