"""Where a method parameter's value comes from, declared with ``typing.Annotated``.

``Annotated[int, Param]`` and ``Annotated[int, Param("page")]`` are both accepted: a marker
class used bare stands for the marker with no name (the parameter's own name).
Parameters without a source take the verb's default: request parameters for GET, HEAD,
DELETE and OPTIONS, the deserialized body for POST, PUT and PATCH.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Body", "Entity", "Header", "Matrix", "Param", "Source", "Stream", "Value"]


@dataclass(frozen=True, slots=True)
class Source:
    """Base of the parameter-source markers; ``name`` overrides the parameter's name."""

    name: str | None = None


class Param(Source):
    """A request parameter: a path segment ``{name}``, the query string, or a form field."""

    __slots__ = ()


class Value(Source):
    """A value a filter passed earlier with ``request.pass_value(name, value)``."""

    __slots__ = ()


class Header(Source):
    """A request header (case-insensitive); the default name is the parameter's name with
    underscores as dashes (``x_request_id`` reads ``X-Request-Id``)."""

    __slots__ = ()


class Entity(Source):
    """The request body, deserialized by the format its ``Content-Type`` selects."""

    __slots__ = ()


class Body(Source):
    """The request body as a string, decoded with the ``charset`` of its ``Content-Type``."""

    __slots__ = ()


class Stream(Source):
    """The request body as it arrives: an ``AsyncIterator[bytes]``, or a
    :class:`webrest.Multipart` when the parameter is typed so."""

    __slots__ = ()


class Matrix(Source):
    """Matrix parameters of a path segment: ``status=open;labels=a,b`` becomes
    ``{"status": "open", "labels": ["a", "b"]}`` (or the annotated model built from it).

    Reads the path segment bound to the parameter's name; used together with another source
    it converts that source's value instead.
    """

    __slots__ = ()

    def convert(self, value: object) -> object:
        return parse_matrix(value)


def parse_matrix(value: object) -> object:
    """Split ``a=1;b=x,y;c`` into ``{"a": "1", "b": ["x", "y"], "c": None}``."""
    if not isinstance(value, str):
        return value
    result: dict[str, str | list[str] | None] = {}
    for pair in value.split(";"):
        if not pair:
            continue
        key, sep, raw = pair.partition("=")
        if not sep:
            result[key] = None
        elif "," in raw:
            result[key] = raw.split(",")
        else:
            result[key] = raw
    return result
