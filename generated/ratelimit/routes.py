"""The webrest routes of Rate limit service, HTTP port: bind and validate requests, call the handlers,
answer in the API's error shape.

Generated from specs/ratelimit.openapi.yaml by `make generate`; do not edit.
"""

from __future__ import annotations

import datetime  # noqa: F401
import json
import uuid  # noqa: F401
from collections.abc import Mapping  # noqa: F401
from pathlib import Path
from typing import Annotated, Any, Literal, cast  # noqa: F401

from pydantic import Field, TypeAdapter  # noqa: F401
from starlette.datastructures import UploadFile  # noqa: F401

from codegen.runtime import (  # noqa: F401
    RFC3339,
    FormField,
    bind_payload,
    plain_text_renderer,
    request_id_filter,
    success,
    validate_body,
)
from generated.ratelimit import models  # noqa: F401
from generated.ratelimit.handlers import RatelimitHandlers
from webrest import (  # noqa: F401
    DEFAULT_MAX_BODY_SIZE,
    Application,
    Delete,
    Entity,
    Get,
    Head,
    Header,
    Options,
    Param,
    Patch,
    Post,
    Put,
    Request,
    Resource,
    Response,
    RestApi,
    SeparatedBy,
)
from webrest.application import Lifespan

__all__ = ["OPENAPI", "RatelimitRoutes", "create_api", "create_app"]

OPENAPI: dict[str, Any] = json.loads(
    (Path(__file__).with_name("openapi.json")).read_text(encoding="utf-8")
)
"""The contract these routes implement (specs/ratelimit.openapi.yaml as JSON)."""


@Resource("")
class RatelimitRoutes:
    """Every operation of specs/ratelimit.openapi.yaml, delegating to a ``RatelimitHandlers``."""

    def __init__(self, handlers: RatelimitHandlers) -> None:
        self._handlers = handlers

    @Post(
        "/json",
        status=200,
        operation_id="should_rate_limit",
        produces=("application/json",),
    )
    async def should_rate_limit(
        self,
        request: Request,
    ) -> Response:
        """POST /json"""
        body = await request.body()
        result = await self._handlers.should_rate_limit(body=body)
        return success(result, 200, None)

    @Post(
        "/counters",
        status=200,
        operation_id="read_counters",
        produces=("application/json",),
    )
    async def read_counters(
        self,
        request: Request,
    ) -> Response:
        """POST /counters"""
        body = await request.body()
        result = await self._handlers.read_counters(body=body)
        return success(result, 200, None)

    @Get(
        "/healthcheck",
        status=200,
        operation_id="healthcheck",
        produces=("text/plain",),
    )
    async def healthcheck(
        self,
        request: Request,
    ) -> Response:
        """GET /healthcheck"""
        result = await self._handlers.healthcheck()
        return success(result, 200, request.negotiated or "text/plain")


def create_api(handlers: RatelimitHandlers, *, max_body_size: int | None = None) -> RestApi:
    """The API's routes over ``handlers``, rendering errors in the API's shape."""
    return RestApi(
        RatelimitRoutes(handlers),
        error_renderer=plain_text_renderer,
        max_body_size=max_body_size,
        lenient_accept=True,
    )


def create_app(
    handlers: RatelimitHandlers,
    *,
    max_body_size: int | None = DEFAULT_MAX_BODY_SIZE,
    lifespan: Lifespan | None = None,
    docs_path: str | None = "/docs",
) -> Application:
    """An ASGI application serving the API, its contract at ``/openapi.json`` and Swagger UI
    over it at ``docs_path`` (``None``: no docs page)."""
    return Application(
        {"/": create_api(handlers, max_body_size=max_body_size)},
        error_renderer=plain_text_renderer,
        max_body_size=max_body_size,
        openapi=OPENAPI,
        docs_path=docs_path,
        lifespan=lifespan,
    )
