"""``RestApi``: the routes of one or more resource instances, and how a request is handled."""

from __future__ import annotations

import functools
import inspect
import logging
import types
import typing
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any, Union, get_args, get_origin

from webrest.asynchronous import Async
from webrest.binding import Kind, MethodPlan, plan_method
from webrest.conversions import Conversion
from webrest.declarations import RouteDeclaration, annotations_of, resource_prefix, routes_of
from webrest.error_rendering import ErrorRenderer, default_error_renderer, with_error_headers
from webrest.errors import HttpError, RegistrationError
from webrest.formats import Formats, Reader, Writer, default_formats
from webrest.interception import Interceptor, Invocation, Target, check_interceptor
from webrest.negotiation import negotiate
from webrest.request import Request
from webrest.response import Response
from webrest.routing import DuplicateRoute, PathTemplate, RouteTable, compile_template
from webrest.sources import Source

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


_STREAMING = frozenset({Kind.STREAM, Kind.MULTIPART})


def _check(function: Callable[..., Any], template: PathTemplate, plan: MethodPlan) -> None:
    """Refuse what binding accepted but a request would fail on; raises ``ValueError``.

    * an async generator method (its result cannot be written: return ``Async`` or a stream);
    * a positional-only parameter (arguments are passed by name);
    * a path placeholder that binds no parameter (a typo: the parameter meant for it would be
      read from elsewhere); a placeholder named ``_...`` only matches, and binds nothing;
    * two parameters reading the body as it arrives (``Stream``, ``Multipart``): it can be
      read so only once;
    * a conversion class where an instance is meant (``SeparatedBy`` for ``SeparatedBy(",")``).

    And adjusts one thing: a method streaming the body reads its other parameters from the
    query only, not from form fields (reading those would consume the stream first).
    """
    if inspect.isasyncgenfunction(function):
        raise ValueError(
            "an async generator cannot be a route: return Async(generator) to run it, "
            "or Response.ok().stream(...) to send what it yields"
        )
    for declared in inspect.signature(function).parameters.values():
        if declared.kind is declared.POSITIONAL_ONLY:
            raise ValueError(
                f"parameter {declared.name} is positional-only; arguments are passed by name"
            )
    bound = {p.key for p in plan.parameters if p.kind is Kind.PATH}
    for name in template.names:
        if name not in bound and not name.startswith("_"):
            raise ValueError(
                f"path placeholder {{{name}}} in {template.template} binds no parameter; "
                f"add a parameter {name} (or one annotated Param({name!r})), or name the "
                f"placeholder {{_{name}}} to match without binding"
            )
    streaming = [p.name for p in plan.parameters if p.kind in _STREAMING]
    if len(streaming) > 1:
        raise ValueError(
            f"parameters {', '.join(streaming)} all read the body as it arrives, "
            "which can be done once"
        )
    if streaming:
        plan.reads_form_params = False
    hints = typing.get_type_hints(function, include_extras=True)
    for parameter in plan.parameters:
        annotation = hints.get(parameter.name)
        origin = get_origin(annotation)
        if origin is Union or origin is types.UnionType:
            for member in get_args(annotation):
                if get_origin(member) is Annotated and any(
                    _is_marker(item) for item in get_args(member)[1:]
                ):
                    written = repr(annotation).replace("typing.", "")
                    raise ValueError(
                        f"parameter {parameter.name}: {written} puts the source or conversion "
                        "inside a union, where it is not seen; write Annotated[T | None, ...]"
                    )
        if origin is not Annotated:
            continue
        for item in get_args(annotation)[1:]:
            if (
                isinstance(item, type)
                and not issubclass(item, Source)
                and callable(getattr(item, "convert", None))
            ):
                raise ValueError(
                    f"parameter {parameter.name}: {item.__name__} is a conversion class; "
                    f"annotate with an instance, {item.__name__}(...)"
                )


def _is_marker(item: object) -> bool:
    """A parameter source (``Header``, ``Header("X")``) or a conversion (``SeparatedBy(",")``)."""
    if isinstance(item, type):
        return issubclass(item, Source)
    return isinstance(item, (Source, Conversion))


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
    compiled here, once, and a declaration that could not work is refused here with a
    :class:`webrest.RegistrationError` naming the class and method. With ``lenient_accept`` an
    unsatisfiable ``Accept`` gets the route's first media type instead of a 406 (for contracts
    that document no 406).
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
        if not isinstance(base, str):
            raise RegistrationError(f"RestApi: base is a path, not {base!r}")
        if max_body_size is not None and (
            not isinstance(max_body_size, int)
            or isinstance(max_body_size, bool)
            or max_body_size < 0
        ):
            raise RegistrationError(f"RestApi: max_body_size={max_body_size!r} is not a size")
        if base and not base.startswith("/"):
            base = "/" + base
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
        """Add an interceptor around every method call; returns the API for chaining.

        It is called with ``(invocation, arguments)``: anything that cannot be is a
        :class:`webrest.RegistrationError` here."""
        self.interceptors.append(check_interceptor(interceptor))
        return self

    def _add_resource(self, instance: object) -> None:
        if isinstance(instance, type):
            raise RegistrationError(
                f"{instance.__qualname__} is a class: RestApi takes resource instances, "
                f"RestApi({instance.__name__}())"
            )
        prefix = resource_prefix(instance)
        cls = type(instance)
        found = False
        for attribute, member in inspect.getmembers(cls):
            if isinstance(member, (property, functools.cached_property)):
                getter = member.fget if isinstance(member, property) else member.func
                if routes_of(getter):
                    raise RegistrationError(
                        f"{cls.__qualname__}.{attribute}: a route is a method, not a property"
                    )
                continue
            declarations = routes_of(member)
            if not declarations:
                continue
            if attribute.startswith("__") and attribute.endswith("__"):
                raise RegistrationError(
                    f"{cls.__qualname__}.{attribute}: a special method cannot be a route"
                )
            found = True
            function: Callable[..., Any] = getattr(instance, attribute)
            for declaration in declarations:
                self._add_route(prefix, cls, attribute, function, declaration)
        if not found:
            raise RegistrationError(f"{cls.__qualname__} declares no routes (@Get, @Post, ...)")

    def _add_route(
        self,
        prefix: str,
        cls: type,
        attribute: str,
        function: Callable[..., Any],
        declaration: RouteDeclaration,
    ) -> None:
        where = f"{cls.__qualname__}.{attribute}"
        try:
            self._compile_route(prefix, cls, attribute, function, declaration)
        except RegistrationError as exc:
            if str(exc).startswith(where):
                raise
            raise RegistrationError(f"{where}: {exc}") from exc
        except DuplicateRoute as exc:
            other = exc.existing.target.name if isinstance(exc.existing, Endpoint) else "?"
            raise RegistrationError(f"{where}: {exc}, first by {other}") from exc
        except (TypeError, ValueError) as exc:
            reason = str(exc)
            qualname = getattr(function, "__qualname__", "")
            if qualname and reason.startswith(qualname):  # binding names the method itself
                raise RegistrationError(reason) from exc
            raise RegistrationError(f"{where}: {reason}") from exc
        except NameError as exc:  # an annotation that does not resolve: keep what it is
            exc.add_note(f"while registering {where} ({declaration.method} {declaration.path})")
            raise

    def _compile_route(
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
        _check(function, template, plan)
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
            chosen = negotiate(request.header(b"accept"), offered)
            scope["webrest.negotiated"] = chosen or (offered[0] if offered else None)
        renderer: ErrorRenderer = (
            self.error_renderer
            if self._own_renderer
            else scope.get("webrest.error_renderer", self.error_renderer)
        )
        return with_error_headers(renderer(error, request), error)

    def _within_base(self, path: str) -> str | None:
        """``path`` relative to :attr:`base`, or ``None`` when it is outside."""
        if not self.base:
            return path
        if path == self.base or path.startswith(self.base + "/"):
            return path[len(self.base) :] or "/"
        return None

    def endpoint_for(self, path: str, method: str) -> Endpoint | None:
        """The endpoint a request for ``method`` on ``path`` is routed to, if any."""
        relative = self._within_base(path)
        return self.routes.match(relative, method).endpoint if relative is not None else None

    async def _handle(self, request: Request, path: str) -> Response:
        relative = self._within_base(path)
        if relative is None:
            raise HttpError(404, f"Cannot route request to {request.url.path}")
        path = relative
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
        request.scope["webrest.endpoint"] = endpoint  # for instruments (webrest.metrics)

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
