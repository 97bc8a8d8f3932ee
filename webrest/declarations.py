"""The decorators that declare resources and routes: ``@Resource(prefix)``, ``@Get(path)``...

They only record metadata on the class and its functions; :class:`webrest.RestApi` reads it
once, at registration, and compiles the routes and binding plans. Arguments that could not
work (``status=700``, ``produces="application/json"`` instead of a list, a malformed media
type, ``@Get`` without parentheses, a route on a property) are a
:class:`webrest.RegistrationError` naming the method, raised when the decorator is applied.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeGuard, TypeVar

from webrest.errors import RegistrationError

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
    "is_resource",
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


_TOKEN = r"[A-Za-z0-9!#$%&'*+.^_`|~-]+"
_MEDIA_TYPE = re.compile(rf"{_TOKEN}/{_TOKEN}\Z")


def _is_status(value: object) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool) and 100 <= value <= 599


def _strings(value: object, what: str) -> tuple[str, ...]:
    """``value`` as a tuple of strings; a lone string is refused (it would be its letters)."""
    if isinstance(value, str):
        raise ValueError(f"{what} is a list of strings, not one string: write {what}=[{value!r}]")
    if not isinstance(value, Sequence) or not all(isinstance(item, str) for item in value):
        raise ValueError(f"{what} is a list of strings, not {value!r}")
    return tuple(value)


def _media_types(value: object, what: str, *, parameters: bool) -> tuple[str, ...]:
    """Lower-cased ``type/subtype`` media types; no wildcards, parameters only if allowed."""
    checked: list[str] = []
    for item in _strings(value, what):
        mime, _, rest = item.partition(";")
        mime = mime.strip().lower()
        if not _MEDIA_TYPE.match(mime):
            raise ValueError(f"{what}: {item!r} is not a media type (type/subtype)")
        if "*" in mime:
            raise ValueError(f"{what}: {item!r} is a range; list the concrete media types")
        if rest.strip() and not parameters:
            raise ValueError(
                f"{what}: {item!r} has parameters, which negotiation does not match; write {mime!r}"
            )
        checked.append(mime + (";" + rest if rest.strip() else ""))
    return tuple(checked)


def _declare(
    method: str,
    path: object,
    produces: object,
    status: object,
    operation_id: object,
    summary: object,
    responses: object,
    max_body_size: object,
    tags: object,
    consumes: object,
) -> RouteDeclaration:
    """The declaration, or a ``ValueError`` saying which argument could not work."""
    if not isinstance(path, str):
        raise ValueError(f"the path is a string, not {path!r}")
    if not _is_status(status):
        raise ValueError(f"status={status!r} is not an HTTP status (100-599)")
    if not isinstance(responses, Mapping):
        raise ValueError(f"responses maps statuses to types or descriptions, not {responses!r}")
    for code in responses:
        if not _is_status(code):
            raise ValueError(f"responses: {code!r} is not an HTTP status (100-599)")
    if max_body_size is not None and (
        not isinstance(max_body_size, int) or isinstance(max_body_size, bool) or max_body_size < 0
    ):
        raise ValueError(f"max_body_size={max_body_size!r} is not a number of bytes")
    if operation_id is not None and not isinstance(operation_id, str):
        raise ValueError(f"operation_id={operation_id!r} is not a string")
    if summary is not None and not isinstance(summary, str):
        raise ValueError(f"summary={summary!r} is not a string")
    return RouteDeclaration(
        method=method,
        path=path,
        produces=_media_types(produces, "produces", parameters=False),
        status=status,
        operation_id=operation_id,
        summary=summary,
        responses=dict(responses),
        max_body_size=max_body_size,
        tags=_strings(tags, "tags"),
        consumes=_media_types(consumes, "consumes", parameters=True),
    )


def _name(function: object) -> str:
    target = getattr(function, "fget", None) or function  # a property names its getter
    return str(getattr(target, "__qualname__", None) or repr(target))


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
        limits the request body types it reads (others are 415; default: every readable format).

        Media types are ``type/subtype`` (lower-cased here); ``produces`` takes no parameters
        and neither takes ranges (``text/*``). A :class:`webrest.RegistrationError` names the
        method when an argument could not work.
        """
        if callable(path):  # ``@Get`` without parentheses: ``path`` is the method
            raise RegistrationError(
                f"{_name(path)}: write @{type(self).__name__}() or "
                f"@{type(self).__name__}('/path'), with parentheses"
            )
        self._problem: str | None = None
        try:
            self.declaration = _declare(
                self.method,
                path,
                produces,
                status,
                operation_id,
                summary,
                {} if responses is None else responses,
                max_body_size,
                tags,
                consumes,
            )
        except ValueError as exc:  # reported with the method's name when applied to it
            self._problem = str(exc)
            self.declaration = RouteDeclaration(self.method, "")

    def __call__(self, function: F) -> F:
        decorator = f"@{type(self).__name__}"
        if self._problem is not None:
            raise RegistrationError(f"{_name(function)}: {decorator}: {self._problem}")
        if isinstance(function, property):
            raise RegistrationError(
                f"{_name(function)}: {decorator} applies to a method, not to a property"
            )
        # ``@Get() @staticmethod`` (or classmethod): the routes go on the function within
        target: object = function
        if isinstance(function, (staticmethod, classmethod)):
            target = function.__func__
        if not callable(target):
            raise RegistrationError(f"{_name(function)}: {decorator} applies to a method")
        declared: list[RouteDeclaration] = list(getattr(target, _ROUTES, ()))
        declared.append(self.declaration)
        setattr(target, _ROUTES, tuple(declared))
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
        if not isinstance(prefix, str):  # ``@Resource`` without parentheses: it is the class
            raise RegistrationError(
                f"{_name(prefix)}: write @Resource() or @Resource('/prefix'), with parentheses"
            )
        self.prefix = prefix.rstrip("/")

    def __call__(self, cls: C) -> C:
        setattr(cls, _RESOURCE, self.prefix)
        return cls


def annotate(*annotations: object) -> Callable[[F], F]:
    """Attach arbitrary objects to a method, for interceptors to read from
    ``invocation.target.annotations`` (``@annotate(Cached(ttl=3600))``)."""

    def decorate(function: F) -> F:
        target: object = function
        if isinstance(function, (staticmethod, classmethod)):
            target = function.__func__
        setattr(target, _ANNOTATIONS, (*getattr(target, _ANNOTATIONS, ()), *annotations))
        return function

    return decorate


def is_resource(cls: type) -> bool:
    """Whether ``cls`` itself carries ``@Resource`` (a subclass of one does not)."""
    return _RESOURCE in vars(cls)


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
