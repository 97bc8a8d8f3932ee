"""The decorators that declare resources and routes: ``@Resource(prefix)``, ``@Get(path)``...

They only record metadata on the class and its functions; :class:`webrest.RestApi` reads it
once, at registration, and compiles the routes and binding plans.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

__all__ = [
    "Delete",
    "Get",
    "Head",
    "Options",
    "Patch",
    "Post",
    "Put",
    "Resource",
    "RouteDeclaration",
    "annotate",
    "annotations_of",
    "resource_prefix",
    "routes_of",
]

F = TypeVar("F", bound=Callable[..., Any])
C = TypeVar("C", bound=type)

_ROUTES = "__webrest_routes__"
_ANNOTATIONS = "__webrest_annotations__"
_RESOURCE = "__webrest_resource__"


@dataclass(frozen=True, slots=True)
class RouteDeclaration:
    """One HTTP method and sub-path bound to a method, with its documentation options."""

    method: str
    path: str
    produces: tuple[str, ...] = ()
    status: int = 200
    operation_id: str | None = None
    summary: str | None = None
    responses: Mapping[int, object] = field(default_factory=dict)
    max_body_size: int | None = None
    tags: tuple[str, ...] = ()
    consumes: tuple[str, ...] = ()


class _Verb:
    """Base of the verb decorators; subclasses fix :attr:`method`."""

    method = ""

    def __init__(
        self,
        path: str = "",
        *,
        produces: Sequence[str] = (),
        status: int = 200,
        operation_id: str | None = None,
        summary: str | None = None,
        responses: Mapping[int, object] | None = None,
        max_body_size: int | None = None,
        tags: Sequence[str] = (),
        consumes: Sequence[str] = (),
    ) -> None:
        """``path`` is relative to the resource prefix; ``{name}`` binds the parameter ``name``
        and ``{name:regex}`` constrains the segment. ``produces`` limits the media types the
        route answers with (default: every registered format); ``status`` and ``responses``
        (status → type or description) document the route in the OpenAPI document;
        ``max_body_size`` overrides the API's request body limit for this route; ``consumes``
        limits the request body types it reads (others are 415; default: every readable format)."""
        self.declaration = RouteDeclaration(
            method=self.method,
            path=path,
            produces=tuple(produces),
            status=status,
            operation_id=operation_id,
            summary=summary,
            responses=dict(responses or {}),
            max_body_size=max_body_size,
            tags=tuple(tags),
            consumes=tuple(consumes),
        )

    def __call__(self, function: F) -> F:
        declared: list[RouteDeclaration] = list(getattr(function, _ROUTES, ()))
        declared.append(self.declaration)
        setattr(function, _ROUTES, tuple(declared))
        return function


class Get(_Verb):
    """Bind a method to ``GET`` (and ``HEAD``, answered without a body) on a sub-path."""

    method = "GET"


class Head(_Verb):
    """Bind a method to ``HEAD``; it takes precedence over the ``GET`` route's fallback."""

    method = "HEAD"


class Post(_Verb):
    """Bind a method to ``POST``."""

    method = "POST"


class Put(_Verb):
    """Bind a method to ``PUT``."""

    method = "PUT"


class Patch(_Verb):
    """Bind a method to ``PATCH``."""

    method = "PATCH"


class Delete(_Verb):
    """Bind a method to ``DELETE``."""

    method = "DELETE"


class Options(_Verb):
    """Bind a method to ``OPTIONS`` instead of the automatic ``204`` with ``Allow``."""

    method = "OPTIONS"


class Resource:
    """Class decorator: the class's routes live under ``prefix`` (``""`` for the root)."""

    def __init__(self, prefix: str = "") -> None:
        self.prefix = prefix.rstrip("/")

    def __call__(self, cls: C) -> C:
        setattr(cls, _RESOURCE, self.prefix)
        return cls


def annotate(*annotations: object) -> Callable[[F], F]:
    """Attach arbitrary objects to a method, for interceptors to read from
    ``invocation.target.annotations`` (``@annotate(Cached(ttl=3600))``)."""

    def decorate(function: F) -> F:
        setattr(function, _ANNOTATIONS, (*getattr(function, _ANNOTATIONS, ()), *annotations))
        return function

    return decorate


def resource_prefix(instance: object) -> str:
    """The ``@Resource`` prefix of an instance's class, ``""`` when it has none."""
    prefix: str = getattr(type(instance), _RESOURCE, "")
    return prefix


def routes_of(function: object) -> tuple[RouteDeclaration, ...]:
    """The route declarations made on a function."""
    routes: tuple[RouteDeclaration, ...] = getattr(function, _ROUTES, ())
    return routes


def annotations_of(function: object) -> tuple[object, ...]:
    """The objects attached to a function with :func:`annotate`."""
    annotations: tuple[object, ...] = getattr(function, _ANNOTATIONS, ())
    return annotations
