"""``Application``: REST APIs mounted at path prefixes, as one plain ASGI app.

::

    app = Application(
        {"/users": RestApi(Users()), "/monitoring": RestApi(Monitoring())},
        filters=[auth],
    )
    # uvicorn module:app
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any, Protocol

from starlette.types import ASGIApp, Receive, Scope, Send

from webrest.api import Endpoint, RestApi
from webrest.docs import DocsPage
from webrest.error_rendering import ErrorRenderer, default_error_renderer, with_error_headers
from webrest.errors import HttpError
from webrest.formats import default_formats
from webrest.interception import Filter, FilterChain, check_filter
from webrest.negotiation import negotiate
from webrest.openapi import generate_openapi
from webrest.request import Request
from webrest.response import Response
from webrest.transmission import DefaultHeaders, Rendered, render

__all__ = ["DEFAULT_MAX_BODY_SIZE", "Application", "Instrument"]

log = logging.getLogger("webrest")

DEFAULT_MAX_BODY_SIZE = 10 * 1024 * 1024
"""Requests with a larger body get 413 unless the API or route allows more."""

Lifespan = Callable[["Application"], AbstractAsyncContextManager[None]]

_FIXED_METHODS = "GET, HEAD, OPTIONS"
"""The methods of the paths the application answers itself (its OpenAPI document, its docs)."""


class Instrument(Protocol):
    """Observes every HTTP request of an application (:class:`webrest.metrics.RequestMetrics`):
    ``attach`` is called once by :meth:`Application.instrument`, then ``observe`` runs the
    application on each request, with its own ``send`` if it likes."""

    def attach(self, app: Application) -> None: ...

    async def observe(self, scope: Scope, receive: Receive, send: Send, app: ASGIApp) -> None: ...


def relative_path(scope: Scope) -> str:
    """The request's path under the application's ``root_path``."""
    path: str = scope["path"]
    root = scope.get("root_path", "")
    if root and path.startswith(root):
        return path[len(root) :] or "/"
    return path


@asynccontextmanager
async def _no_lifespan(app: Application) -> AsyncIterator[None]:
    yield


class Application:
    """An ASGI application routing each request to the API mounted at its path prefix.

    Prefixes match whole segments (``/users`` serves ``/users`` and ``/users/...``, not
    ``/usersx``); the longest prefix wins. The API sees the full path: its resources' prefixes
    repeat the mount path, or the API's ``base`` strips it.

    ``filters`` wrap every request in order; ``max_body_size`` (bytes, default 10 MiB, ``None``
    for no limit) applies unless an API or route sets its own; ``openapi_path`` serves the
    OpenAPI document (``None`` to serve none): ``openapi`` when given (a contract written
    first), otherwise one generated from the APIs; ``docs_path`` serves Swagger UI over that
    document (``None``, or no ``openapi_path``, to serve none; :mod:`webrest.docs`);
    ``default_headers`` changes the headers every response of this application gets unless
    it sets them itself (``{"Cache-Control": None}`` drops one; default: the process-wide
    :func:`~webrest.transmission.set_default_headers`, ``Cache-Control: no-cache`` and
    ``X-Content-Type-Options: nosniff``); ``lifespan`` is an async context manager factory run
    around the server's life.

    The document and the docs are answered before filters and APIs: ``GET`` and ``HEAD``,
    ``OPTIONS`` with ``204``, any other method with ``405``, each with ``Allow``.
    """

    def __init__(
        self,
        apis: Mapping[str, RestApi],
        *,
        filters: Sequence[Filter] = (),
        error_renderer: ErrorRenderer | None = None,
        max_body_size: int | None = DEFAULT_MAX_BODY_SIZE,
        openapi_path: str | None = "/openapi.json",
        title: str = "API",
        version: str = "1.0.0",
        openapi: Mapping[str, Any] | None = None,
        docs_path: str | None = "/docs",
        default_headers: Mapping[str, str | None] | None = None,
        lifespan: Lifespan | None = None,
    ) -> None:
        self.mounts: list[tuple[str, RestApi]] = sorted(
            ((prefix.rstrip("/"), api) for prefix, api in apis.items()),
            key=lambda item: len(item[0]),
            reverse=True,
        )
        self.filters: list[Filter] = [check_filter(filter_) for filter_ in filters]
        self._default_headers = (
            DefaultHeaders.standard(default_headers) if default_headers is not None else None
        )
        self.error_renderer: ErrorRenderer = error_renderer or default_error_renderer
        self._shared_renderer = error_renderer  # for the APIs without a renderer of their own
        self.max_body_size = max_body_size
        self.openapi_path = openapi_path
        self.title = title
        self.version = version
        self.lifespan: Lifespan = lifespan or _no_lifespan
        self.state: dict[str, Any] = {}
        self._formats = default_formats()
        self._document = openapi
        self._openapi: bytes | None = None
        self._title: str | None = None
        self.docs: DocsPage | None = None
        self._instrument: Instrument | None = None
        # the paths answered before routing, looked up once per request: path -> GET answer
        self._fixed: dict[str, Callable[[str], Response]] = {}
        if openapi_path is not None:
            self._fixed[openapi_path] = lambda root_path: self._openapi_response()
            if docs_path is not None:
                self.docs = DocsPage(docs_path, openapi_path, self._docs_title)
                self._fixed.update(self.docs.routes())

    def install(self, filter_: Filter) -> Application:
        """Add a filter after the ones already installed; returns the application."""
        self.filters.append(check_filter(filter_))
        return self

    def instrument(self, instrument: Instrument) -> Application:
        """Observe every HTTP request with ``instrument`` (one per application), for example
        ``app.instrument(RequestMetrics())``; returns the application."""
        if self._instrument is not None:
            raise ValueError("the application is already instrumented")
        instrument.attach(self)
        self._instrument = instrument
        return self

    def answer(self, path: str, respond: Callable[[], Response]) -> Application:
        """Answer ``GET`` and ``HEAD`` on ``path`` with ``respond()`` before filters and APIs,
        as the OpenAPI document is answered (``OPTIONS``: ``204``; other methods: ``405``)."""
        if path in self._fixed:
            raise ValueError(f"the application already answers {path}")
        self._fixed[path] = lambda root_path: respond()
        return self

    def route_for(self, scope: Scope) -> Endpoint | str | None:
        """What answers this request: the endpoint routing picks, the path when the
        application answers it itself (its document, its docs), or ``None`` (no route)."""
        path = relative_path(scope)
        if path in self._fixed:
            return path
        api = self._api_for(path)
        return api.endpoint_for(path, scope["method"]) if api is not None else None

    def openapi(self) -> dict[str, Any]:
        """The OpenAPI document: the one given, or one generated from every mounted API."""
        if self._document is not None:
            return dict(self._document)
        return generate_openapi(self)

    # -- ASGI ----------------------------------------------------------------------------------

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        kind = scope["type"]
        if kind == "http":
            if self._instrument is None:
                await self._http(scope, receive, send)
            else:
                await self._instrument.observe(scope, receive, send, self._http)
        elif kind == "lifespan":
            await self._lifespan(receive, send)
        else:
            await send({"type": "websocket.close", "code": 1000})

    async def _http(self, scope: Scope, receive: Receive, send: Send) -> None:
        request = Request(scope, receive, send)
        scope["webrest.max_body_size"] = self.max_body_size
        if self._shared_renderer is not None:
            scope["webrest.error_renderer"] = self._shared_renderer
        path = relative_path(scope)
        root = scope.get("root_path", "")
        fixed = self._fixed.get(path)
        if fixed is not None:
            await self._send(self._answer_fixed(fixed, request, root), scope, receive, send)
            return
        api = self._api_for(path)
        if self.filters:
            response = await self._filtered(request, path, api)
        elif api is not None:
            response = await api.handle(request, path)
        else:
            response = await self._unmounted(request, path)
        try:
            await self._send(response, scope, receive, send, api)
        finally:
            if request._form is not None:  # uploads spooled to temporary files
                await request.close()

    async def _filtered(self, request: Request, path: str, api: RestApi | None) -> Response:
        async def route(request: Request) -> Response:
            if api is not None:
                return await api.handle(request, path)
            return await self._unmounted(request, path)

        try:
            if self.max_body_size is not None:  # filters may read the body; a route may
                request.limit_body(self.max_body_size, check_length=False)  # allow more
            return await FilterChain(self.filters, route).proceed(request)
        except HttpError as error:
            return self._render_error(error, request, api)
        except Exception:
            log.exception("Unhandled error in a filter for %s %s", request.method, path)
            return self._render_error(HttpError(500, "Internal Server Error"), request, api)

    def _answer_fixed(
        self, answer: Callable[[str], Response], request: Request, root_path: str
    ) -> Response:
        method = request.method
        if method == "GET" or method == "HEAD":
            return answer(root_path)
        if method == "OPTIONS":
            return Response.no_content().header("Allow", _FIXED_METHODS)
        error = HttpError(405, f"Method {method} not allowed", headers={"Allow": _FIXED_METHODS})
        return self._render_error(error, request, None)

    def _docs_title(self) -> str:
        if self._title is None:
            info = self.openapi().get("info")
            title = info.get("title") if isinstance(info, dict) else None
            self._title = title if isinstance(title, str) and title else self.title
        return self._title

    def _openapi_response(self) -> Response:
        if self._openapi is None:
            import json

            self._openapi = json.dumps(self.openapi()).encode()
        return Response.ok().type("application/json").body(self._openapi)

    async def _unmounted(self, request: Request, path: str) -> Response:
        return self._render_error(
            HttpError(404, f"Cannot route request to {request.url.path}"), request, None
        )

    def _api_for(self, path: str) -> RestApi | None:
        for prefix, api in self.mounts:
            if not prefix or path == prefix or path.startswith(prefix + "/"):
                return api
        return None

    def _render_error(self, error: HttpError, request: Request, api: RestApi | None) -> Response:
        if api is not None:
            return api.render_error(error, request)
        offered = self._formats.writable
        request.scope["webrest.negotiated"] = (
            negotiate(request.header(b"accept"), offered) or offered[0]
        )
        return with_error_headers(self.error_renderer(error, request), error)

    async def _send(
        self,
        response: Response,
        scope: Scope,
        receive: Receive,
        send: Send,
        api: RestApi | None = None,
    ) -> None:
        formats = api.formats if api is not None else self._formats
        negotiated = scope.get("webrest.negotiated")
        try:
            rendered: Rendered = render(response, negotiated, formats, self._default_headers)
        except Exception:
            log.exception("Cannot write the response to %s %s", scope["method"], scope["path"])
            request = Request(scope, receive, send)
            try:
                error = self._render_error(HttpError(500, "Internal Server Error"), request, api)
                rendered = render(
                    error, scope.get("webrest.negotiated"), formats, self._default_headers
                )
            except Exception:  # the format cannot write errors either: plain JSON then
                log.exception("Cannot write the error response either")
                error = Response.error(500, "Internal Server Error")
                rendered = render(error, "application/json", self._formats, self._default_headers)
        scope["webrest.status"] = rendered.status  # for instruments (webrest.metrics)
        await rendered.send(scope, receive, send)

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        message = await receive()
        assert message["type"] == "lifespan.startup"
        context = self.lifespan(self)
        try:
            await context.__aenter__()
        except Exception as exc:
            log.exception("Application startup failed")
            await send({"type": "lifespan.startup.failed", "message": str(exc)})
            return
        await send({"type": "lifespan.startup.complete"})
        message = await receive()
        try:
            await context.__aexit__(None, None, None)
        except Exception as exc:
            log.exception("Application shutdown failed")
            await send({"type": "lifespan.shutdown.failed", "message": str(exc)})
            return
        await send({"type": "lifespan.shutdown.complete"})
