"""The webrest routes of Document retrieval and answer generation service: bind and validate requests, call the handlers,
answer in the API's error shape.

Generated from specs/rag.openapi.yaml by `make generate`; do not edit.
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
    fastapi_renderer,
    request_id_filter,
    success,
    validate_body,
)
from generated.rag import models  # noqa: F401
from generated.rag.handlers import RagHandlers
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

__all__ = ["OPENAPI", "RagRoutes", "create_api", "create_app"]

OPENAPI: dict[str, Any] = json.loads(
    (Path(__file__).with_name("openapi.json")).read_text(encoding="utf-8")
)
"""The contract these routes implement (specs/rag.openapi.yaml as JSON)."""

_GENERATE_BODY = TypeAdapter(models.Prompt)
_DOCUMENT_SEARCH_BODY = TypeAdapter(models.DocumentSearch)

_UPLOAD_DOCUMENT_FORM = (
    FormField("file", "file", True),
    FormField(
        "collection",
        "value",
        False,
        TypeAdapter(
            Annotated[str, Field(min_length=1, max_length=64, pattern="^[a-z0-9][a-z0-9_-]{0,63}$")]
        ),
        "default",
    ),
    FormField("metadata", "value", False, TypeAdapter(str), None),
)
_CREATE_INGESTION_JOB_FORM = (
    FormField(
        "collection",
        "value",
        False,
        TypeAdapter(
            Annotated[str, Field(min_length=1, max_length=64, pattern="^[a-z0-9][a-z0-9_-]{0,63}$")]
        ),
        "default",
    ),
    FormField("metadata", "value", False, TypeAdapter(str), None),
    FormField("files", "files", False),
)


@Resource("")
class RagRoutes:
    """Every operation of specs/rag.openapi.yaml, delegating to a ``RagHandlers``."""

    def __init__(self, handlers: RagHandlers) -> None:
        self._handlers = handlers

    @Post(
        "/uploadDocument",
        status=200,
        operation_id="upload_document",
        produces=("application/json",),
        consumes=("multipart/form-data", "application/x-www-form-urlencoded"),
    )
    async def upload_document(
        self,
        request: Request,
        payload: Annotated[object, Entity],
    ) -> Response:
        """POST /uploadDocument"""
        body, form = bind_payload(
            request.headers.get("content-type"),
            payload,
            json_adapter=None,
            form_fields=_UPLOAD_DOCUMENT_FORM,
            json_field=None,
            forbid_extra=True,
        )
        result = await self._handlers.upload_document(
            file=cast("UploadFile", form["file"]),
            collection=cast("str", form["collection"]),
            metadata=cast("str | None", form["metadata"]),
        )
        return success(result, 200, None)

    @Post(
        "/generate",
        status=200,
        operation_id="generate",
        produces=("text/plain", "text/event-stream"),
        consumes=("application/json",),
    )
    async def generate(
        self,
        request: Request,
        payload: Annotated[object, Entity],
    ) -> Response:
        """POST /generate"""
        body = validate_body(_GENERATE_BODY, payload)
        result = await self._handlers.generate(
            body=cast("models.Prompt", body), media_type=request.negotiated or "text/plain"
        )
        return success(result, 200, request.negotiated or "text/plain")

    @Post(
        "/documentSearch",
        status=200,
        operation_id="document_search",
        produces=("application/json",),
        consumes=("application/json",),
    )
    async def document_search(
        self,
        request: Request,
        payload: Annotated[object, Entity],
    ) -> Response:
        """POST /documentSearch"""
        body = validate_body(_DOCUMENT_SEARCH_BODY, payload)
        result = await self._handlers.document_search(body=cast("models.DocumentSearch", body))
        return success(result, 200, None)

    @Get(
        "/documents",
        status=200,
        operation_id="list_documents",
        produces=("application/json",),
    )
    async def list_documents(
        self,
        request: Request,
        collection: Annotated[
            str,
            Param("collection"),
            Field(min_length=1, max_length=64, pattern="^[a-z0-9][a-z0-9_-]{0,63}$"),
        ] = "default",
    ) -> Response:
        """GET /documents"""
        result = await self._handlers.list_documents(collection=collection)
        return success(result, 200, None)

    @Delete(
        "/documents/{document_id:[A-Za-z0-9-]+}",
        status=204,
        operation_id="delete_document",
    )
    async def delete_document(
        self,
        request: Request,
        document_id: Annotated[
            str, Param("document_id"), Field(min_length=1, max_length=64, pattern="^[A-Za-z0-9-]+$")
        ],
    ) -> Response:
        """DELETE /documents/{document_id}"""
        result = await self._handlers.delete_document(document_id=document_id)
        return success(result, 204, None)

    @Get(
        "/ingestionJobs",
        status=200,
        operation_id="list_ingestion_jobs",
        produces=("application/json",),
    )
    async def list_ingestion_jobs(
        self,
        request: Request,
        limit: Annotated[int, Param("limit"), Field(ge=1, le=1000)] = 100,
    ) -> Response:
        """GET /ingestionJobs"""
        result = await self._handlers.list_ingestion_jobs(limit=limit)
        return success(result, 200, None)

    @Post(
        "/ingestionJobs",
        status=202,
        operation_id="create_ingestion_job",
        produces=("application/json",),
        consumes=("multipart/form-data", "application/x-www-form-urlencoded"),
    )
    async def create_ingestion_job(
        self,
        request: Request,
        payload: Annotated[object, Entity],
    ) -> Response:
        """POST /ingestionJobs"""
        body, form = bind_payload(
            request.headers.get("content-type"),
            payload,
            json_adapter=None,
            form_fields=_CREATE_INGESTION_JOB_FORM,
            json_field=None,
        )
        result = await self._handlers.create_ingestion_job(
            collection=cast("str", form["collection"]),
            metadata=cast("str | None", form["metadata"]),
            files=cast("Mapping[str, UploadFile]", form["files"]),
        )
        return success(result, 202, None)

    @Get(
        "/ingestionJobs/{job_id:[A-Za-z0-9-]+}",
        status=200,
        operation_id="get_ingestion_job",
        produces=("application/json",),
    )
    async def get_ingestion_job(
        self,
        request: Request,
        job_id: Annotated[
            str, Param("job_id"), Field(min_length=1, max_length=64, pattern="^[A-Za-z0-9-]+$")
        ],
    ) -> Response:
        """GET /ingestionJobs/{job_id}"""
        result = await self._handlers.get_ingestion_job(job_id=job_id)
        return success(result, 200, None)

    @Get(
        "/health",
        status=200,
        operation_id="health",
        produces=("application/json",),
    )
    async def health(
        self,
        request: Request,
    ) -> Response:
        """GET /health"""
        result = await self._handlers.health()
        return success(result, 200, None)


def create_api(handlers: RagHandlers, *, max_body_size: int | None = None) -> RestApi:
    """The API's routes over ``handlers``, rendering errors in the API's shape."""
    return RestApi(
        RagRoutes(handlers),
        error_renderer=fastapi_renderer,
        max_body_size=max_body_size,
        lenient_accept=True,
    )


def create_app(
    handlers: RagHandlers,
    *,
    max_body_size: int | None = DEFAULT_MAX_BODY_SIZE,
    lifespan: Lifespan | None = None,
    docs_path: str | None = "/docs",
) -> Application:
    """An ASGI application serving the API, its contract at ``/openapi.json`` and Swagger UI
    over it at ``docs_path`` (``None``: no docs page)."""
    return Application(
        {"/": create_api(handlers, max_body_size=max_body_size)},
        error_renderer=fastapi_renderer,
        max_body_size=max_body_size,
        openapi=OPENAPI,
        docs_path=docs_path,
        lifespan=lifespan,
    )
