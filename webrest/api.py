"""``RestApi``: the routes of one or more resource instances, and how a request is handled."""

from __future__ import annotations

import inspect
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from webrest.asynchronous import Async
from webrest.binding import MethodPlan, plan_method
from webrest.declarations import RouteDeclaration, annotations_of, resource_prefix, routes_of
from webrest.error_rendering import ErrorRenderer, default_error_renderer, with_error_headers
from webrest.errors import HttpError
from webrest.formats import Formats, Reader, Writer, default_formats
from webrest.interception import Interceptor, Invocation, Target
from webrest.negotiation import negotiate
from webrest.request import Request
from webrest.response import Response
from webrest.routing import PathTemplate, RouteTable, compile_template

__all__ = ["Endpoint", "RestApi"]

log = logging.getLogger("webrest")

_ALL_METHODS = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS")


@dataclass(slots=True)
class Endpoint:
    """A method bound to one HTTP method and path: what routing finds."""

    method: str
    template: PathTemplate
    declaration: RouteDeclaration
    target: Target
    plan: MethodPlan
    is_coroutine: bool

    @property
    def path(self) -> str:
        return self.template.template


def allow_header(methods: frozenset[str]) -> str:
    """The ``Allow`` value for a path answering ``methods`` (HEAD with GET, OPTIONS always)."""
    allowed = set(methods) | {"OPTIONS"}
    if "GET" in allowed:
        allowed.add("HEAD")
    return ", ".join(m for m in _ALL_METHODS if m in allowed)


class RestApi:
    """The HTTP API of resource instances: ``RestApi(Users(), Avatars(), base="/api/1.0")``.

    Each resource's ``@Resource`` prefix and each method's sub-path make its routes;
    ``base`` is stripped from the request path before matching. Routes and binding plans are
    compiled here, once. With ``lenient_accept`` an unsatisfiable ``Accept`` gets the route's
    first media type instead of a 406 (for contracts that document no 406).
    ``error_renderer`` renders this API's errors; without one, the application's applies.
    """

    def __init__(
        self,
        *resources: object,
        base: str = "",
        formats: Formats | None = None,
        error_renderer: ErrorRenderer | None = None,
        max_body_size: int | None = None,
        lenient_accept: bool = False,
    ) -> None:
        self.base = base.rstrip("/")
        self.lenient_accept = lenient_accept
        self.formats = formats.copy() if formats is not None else default_formats()
        self.error_renderer: ErrorRenderer = error_renderer or default_error_renderer
        self._own_renderer = error_renderer is not None  # else the application's applies
        self.max_body_size = max_body_size
        self.interceptors: list[Interceptor] = []
        self.routes: RouteTable[Endpoint] = RouteTable()
        self.endpoints: list[Endpoint] = []
        for instance in resources:
            self._add_resource(instance)

    # -- configuration -------------------------------------------------------------------------

    def register(
        self, mime: str, reader: Reader | None = None, writer: Writer | None = None
    ) -> RestApi:
        """Read and/or write ``mime`` with these; returns the API for chaining."""
        self.formats.register(mime, reader, writer)
        return self

    def intercepting(self, interceptor: Interceptor) -> RestApi:
        """Add an interceptor around every method call; returns the API for chaining."""
        self.interceptors.append(interceptor)
        return self

    def _add_resource(self, instance: object) -> None:
        prefix = resource_prefix(instance)
        cls = type(instance)
        found = False
        for attribute, member in inspect.getmembers(cls):
            declarations = routes_of(member)
            if not declarations or attribute.startswith("__"):
                continue
            found = True
            function: Callable[..., Any] = getattr(instance, attribute)
            for declaration in declarations:
                self._add_route(prefix, cls, attribute, function, declaration)
        if not found:
            raise TypeError(f"{cls.__qualname__} declares no routes (@Get, @Post, ...)")

    def _add_route(
        self,
        prefix: str,
        cls: type,
        attribute: str,
        function: Callable[..., Any],
        declaration: RouteDeclaration,
    ) -> None:
        path = prefix + ("/" + declaration.path.lstrip("/") if declaration.path else "")
        template = compile_template(path or "/")
        plan = plan_method(
            function, declaration.method, template.names, self.formats, declaration.consumes
        )
        target = Target(
            name=f"{cls.__module__}.{cls.__qualname__}.{attribute}",
            function=function,
            annotations=annotations_of(getattr(cls, attribute)),
            route=declaration,
            parameters=plan.parameters,
        )
        endpoint = Endpoint(
            declaration.method,
            template,
            declaration,
            target,
            plan,
            inspect.iscoroutinefunction(function),
        )
        self.routes.add(template.template, declaration.method, endpoint)
        self.endpoints.append(endpoint)

    # -- handling ------------------------------------------------------------------------------

    async def handle(self, request: Request, path: str) -> Response:
        """Route, bind, invoke; every failure is rendered by the API's error renderer."""
        try:
            return await self._handle(request, path)
        except HttpError as error:
            return self.render_error(error, request)
        except Exception:
            log.exception("Unhandled error in %s %s", request.method, request.url.path)
            return self.render_error(HttpError(500, "Internal Server Error"), request)

    def render_error(self, error: HttpError, request: Request) -> Response:
        """The error as the client sees it, in the negotiated (or default) format."""
        scope = request.scope
        if scope.get("webrest.negotiated") is None or error.status == 406:
            offered = self.formats.writable
            chosen = negotiate(request.headers.get("accept"), offered)
            scope["webrest.negotiated"] = chosen or (offered[0] if offered else None)
        renderer: ErrorRenderer = (
            self.error_renderer
            if self._own_renderer
            else scope.get("webrest.error_renderer", self.error_renderer)
        )
        return with_error_headers(renderer(error, request), error)

    async def _handle(self, request: Request, path: str) -> Response:
        if self.base:
            if path == self.base or path.startswith(self.base + "/"):
                path = path[len(self.base) :] or "/"
            else:
                raise HttpError(404, f"Cannot route request to {request.url.path}")
        method = request.method
        match = self.routes.match(path, method)
        endpoint = match.endpoint
        if endpoint is None:
            if not match.allowed:
                raise HttpError(404, f"Cannot route request to {request.url.path}")
            allow = allow_header(match.allowed)
            if method == "OPTIONS":
                return Response.no_content().header("Allow", allow)
            raise HttpError(405, f"Method {method} not allowed", headers={"Allow": allow})

        offered = endpoint.declaration.produces or self.formats.writable
        accept = request.header(b"accept")
        chosen = negotiate(accept, offered)
        if chosen is None and self.lenient_accept and offered:
            chosen = offered[0]
        if chosen is None:
            raise HttpError(406, f"Cannot produce any of {accept}; available: {', '.join(offered)}")
        request.scope["webrest.negotiated"] = chosen

        if endpoint.plan.reads_body:
            limit = endpoint.declaration.max_body_size
            if limit is None:
                limit = self.max_body_size
            if limit is None:
                limit = request.scope.get("webrest.max_body_size")
            if limit is not None:
                request.limit_body(limit)

        arguments = await endpoint.plan.bind(request, match.params)
        if self.interceptors:
            result = await Invocation(endpoint.target, self.interceptors).proceed(arguments)
        elif endpoint.is_coroutine:
            result = await endpoint.target.function(**arguments)
        else:
            result = endpoint.target.function(**arguments)
        if isinstance(result, Async):
            result = await result.run()
        if isinstance(result, Response):
            return result
        return Response.ok().entity(result)
