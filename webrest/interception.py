"""Interceptors (around a method, with its target and arguments) and filters (around routing).

Interceptors run in registration order, the first registered outermost::

    async def timing(invocation: Invocation, arguments: dict[str, object]) -> object:
        started = time.perf_counter()
        try:
            return await invocation.proceed(arguments)
        finally:
            log.info("%s took %.3fs", invocation.target.name, time.perf_counter() - started)

Filters wrap the whole request, before routing; they can pass values to methods with
``request.pass_value(name, value)``, answer themselves, or change the response::

    async def auth(request: Request, chain: FilterChain) -> Response:
        user = lookup(request.headers.get("authorization"))
        if user is None:
            return Response.error(401, "Authentication required")
        request.pass_value("user", user)
        return await chain.proceed(request)
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from webrest.declarations import RouteDeclaration

if TYPE_CHECKING:
    from webrest.binding import ParameterPlan
    from webrest.request import Request
    from webrest.response import Response

__all__ = ["Filter", "FilterChain", "Interceptor", "Invocation", "Target"]


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
    its own) by awaiting ``invocation.proceed(arguments)`` or not."""

    def __call__(
        self, invocation: Invocation, arguments: dict[str, object]
    ) -> Awaitable[object]: ...


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
            return await self._interceptors[self._index](following, arguments)
        result = self.target.function(**arguments)
        if inspect.isawaitable(result):
            result = await result
        return result


class Filter(Protocol):
    """Wraps request handling: await ``chain.proceed(request)`` to go on, or answer directly."""

    def __call__(self, request: Request, chain: FilterChain) -> Awaitable[Response]: ...


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
            return await self._filters[self._index](request, following)
        return await self._handler(request)
