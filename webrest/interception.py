"""Interceptors (around a method, with its target and arguments) and filters (around routing).

Interceptors run in registration order, the first registered outermost::

    async def timing(invocation: Invocation, arguments: dict[str, object]) -> object:
        started = time.perf_counter()
        try:
            return await invocation.proceed(arguments)
        finally:
            log.info("%s took %.3fs", invocation.target.name, time.perf_counter() - started)

An interceptor may also be a plain function: its result is used as it is, or awaited when it
is awaitable (``return invocation.proceed(arguments)`` from a plain function works).

Filters wrap the whole request, before routing; they can pass values to methods with
``request.pass_value(name, value)``, answer themselves, or change the response::

    async def auth(request: Request, chain: FilterChain) -> Response:
        user = lookup(request.headers.get("authorization"))
        if user is None:
            return Response.error(401, "Authentication required")
        request.pass_value("user", user)
        return await chain.proceed(request)

A filter may be a plain function too, returning a :class:`webrest.Response` or an awaitable
of one (``return chain.proceed(request)``). :func:`check_interceptor` and :func:`check_filter`
refuse, with a :class:`webrest.RegistrationError`, what cannot be called with the two
arguments; ``RestApi.intercepting`` checks its interceptors so.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from webrest.declarations import RouteDeclaration
from webrest.errors import RegistrationError
from webrest.response import Response

if TYPE_CHECKING:
    from webrest.binding import ParameterPlan
    from webrest.request import Request

__all__ = [
    "Filter",
    "FilterChain",
    "Interceptor",
    "Invocation",
    "Target",
    "check_filter",
    "check_interceptor",
]


@dataclass(frozen=True, slots=True)
class Target:
    """The method a request is routed to."""

    name: str
    """``module.Class.method``."""
    function: Callable[..., Any]
    """The bound method."""
    annotations: tuple[object, ...]
    """Objects attached with :func:`webrest.annotate`."""
    route: RouteDeclaration
    parameters: tuple[ParameterPlan, ...]

    @property
    def is_coroutine(self) -> bool:
        return inspect.iscoroutinefunction(self.function)


class Interceptor(Protocol):
    """Called with the invocation and the bound arguments; returns the method's result (or
    its own) by awaiting ``invocation.proceed(arguments)`` or not. A plain function's result
    is awaited when it is awaitable."""

    def __call__(self, invocation: Invocation, arguments: dict[str, object]) -> object: ...


class Invocation:
    """The remaining interceptors and the target method of one call."""

    __slots__ = ("_index", "_interceptors", "target")

    def __init__(self, target: Target, interceptors: Sequence[Interceptor], index: int = 0) -> None:
        self.target = target
        self._interceptors = interceptors
        self._index = index

    async def proceed(self, arguments: dict[str, object]) -> object:
        """Call the next interceptor, or the method itself after the last one."""
        if self._index < len(self._interceptors):
            following = Invocation(self.target, self._interceptors, self._index + 1)
            result = self._interceptors[self._index](following, arguments)
        else:
            result = self.target.function(**arguments)
        if inspect.isawaitable(result):
            result = await result
        return result


class Filter(Protocol):
    """Wraps request handling: await ``chain.proceed(request)`` to go on, or answer directly.
    A plain function returns a response, or an awaitable of one."""

    def __call__(self, request: Request, chain: FilterChain) -> Awaitable[Response] | Response: ...


class FilterChain:
    """The filters still to run, then routing."""

    __slots__ = ("_filters", "_handler", "_index")

    def __init__(
        self,
        filters: Sequence[Filter],
        handler: Callable[[Request], Awaitable[Response]],
        index: int = 0,
    ) -> None:
        self._filters = filters
        self._handler = handler
        self._index = index

    async def proceed(self, request: Request) -> Response:
        """Run the next filter, or route the request after the last one."""
        if self._index < len(self._filters):
            following = FilterChain(self._filters, self._handler, self._index + 1)
            filter_ = self._filters[self._index]
            result = filter_(request, following)
            if not isinstance(result, Response):
                result = await result if inspect.isawaitable(result) else result
                if not isinstance(result, Response):
                    raise TypeError(
                        f"Filter {_describe(filter_)} returned {type(result).__name__}, "
                        "not a Response"
                    )
            return result
        return await self._handler(request)


def _describe(function: object) -> str:
    return str(getattr(function, "__qualname__", None) or repr(function))


def _check(function: object, what: str, arguments: str) -> None:
    if not callable(function):
        raise RegistrationError(
            f"{what} {function!r} is not callable; it is called with ({arguments})"
        )
    try:
        signature = inspect.signature(function)
    except (TypeError, ValueError):  # some builtins have none: nothing to check
        return
    try:
        signature.bind(None, None)
    except TypeError as exc:
        raise RegistrationError(
            f"{what} {_describe(function)} cannot be called with ({arguments}): {exc}"
        ) from None


def check_interceptor(interceptor: object) -> Interceptor:
    """``interceptor`` if it can be called with ``(invocation, arguments)``; otherwise a
    :class:`webrest.RegistrationError`."""
    _check(interceptor, "Interceptor", "invocation, arguments")
    return interceptor  # type: ignore[return-value]  # callable with two arguments


def check_filter(filter_: object) -> Filter:
    """``filter_`` if it can be called with ``(request, chain)``; otherwise a
    :class:`webrest.RegistrationError`."""
    _check(filter_, "Filter", "request, chain")
    return filter_  # type: ignore[return-value]  # callable with two arguments
