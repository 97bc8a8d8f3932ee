"""The handlers of Document retrieval and answer generation service: implement this Protocol to serve the API.

Generated from specs/rag.openapi.yaml by `make generate`; do not edit.
"""

from __future__ import annotations

import datetime  # noqa: F401
import uuid  # noqa: F401
from collections.abc import AsyncIterator, Mapping  # noqa: F401
from typing import Any, Literal, Protocol  # noqa: F401

from starlette.datastructures import UploadFile  # noqa: F401

from generated.rag import models  # noqa: F401
from webrest import Response

__all__ = ["RagHandlers"]


class RagHandlers(Protocol):
    """One method per operation of specs/rag.openapi.yaml.

    A method returns the documented success body (a model, or an async iterator of chunks for
    streamed responses) or a webrest ``Response`` for any other documented status. Raising
    ``webrest.HttpError`` answers in the API's error shape.
    """

    async def upload_document(
        self,
        *,
        file: UploadFile,
        collection: str = "default",
        metadata: str | None = None,
    ) -> models.UploadResult | Response:
        """POST /uploadDocument: Upload Document"""
        ...

    async def generate(
        self,
        *,
        body: models.Prompt,
        media_type: str,
    ) -> AsyncIterator[str] | Response:
        """POST /generate: Generate Answer"""
        ...

    async def document_search(
        self,
        *,
        body: models.DocumentSearch,
    ) -> list[models.SearchResult] | Response:
        """POST /documentSearch: Document Search"""
        ...

    async def list_documents(
        self,
        *,
        collection: str = "default",
    ) -> list[models.DocumentInfo] | Response:
        """GET /documents: List Documents"""
        ...

    async def delete_document(
        self,
        *,
        document_id: str,
    ) -> None | Response:
        """DELETE /documents/{document_id}: Delete Document"""
        ...

    async def list_ingestion_jobs(
        self,
        *,
        limit: int = 100,
    ) -> list[models.IngestionJob] | Response:
        """GET /ingestionJobs: List Ingestion Jobs"""
        ...

    async def create_ingestion_job(
        self,
        *,
        files: Mapping[str, UploadFile],
        collection: str = "default",
        metadata: str | None = None,
    ) -> models.IngestionJob | Response:
        """POST /ingestionJobs: Create Ingestion Job"""
        ...

    async def get_ingestion_job(
        self,
        *,
        job_id: str,
    ) -> models.IngestionJob | Response:
        """GET /ingestionJobs/{job_id}: Get Ingestion Job"""
        ...

    async def health(
        self,
    ) -> models.Health | Response:
        """GET /health: Health"""
        ...
