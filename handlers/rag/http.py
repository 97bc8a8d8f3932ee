"""The HTTP face of the service: the generated ``RagHandlers`` over :class:`RagService`.

Errors in the API's shapes: an upload that cannot be ingested is a 422 at ``["body", "file"]``,
one over the limit a 413 (``file_too_large``), an unknown document a 404, and a request whose
component is not ready within the readiness timeout a 503. A client that goes away before it
sent the whole body (an upload cut off) is an ordinary event: one INFO line
(:func:`log_client_disconnects`), no error.

A client that goes away after sending its upload but before the answer cancels the upload:
the handler polls the request (made visible to it by the filter) every
:data:`DISCONNECT_POLL_SECONDS` while the service ingests, cancels the ingestion, and logs one
INFO line; nothing is stored unless the store write, the last step, had already begun (it then
completes). Ingestion jobs (``/ingestionJobs``) are the way to upload without waiting.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Iterator, Mapping
from contextlib import aclosing, contextmanager
from contextvars import ContextVar
from typing import Any, TypeVar

from starlette.datastructures import UploadFile

from generated.rag import models
from handlers.rag.api_keys import KeyScope
from handlers.rag.components import NotReady
from handlers.rag.documents import DocumentRecord, SearchHit
from handlers.rag.filters import Filter, FilterError, parse_filter
from handlers.rag.generation.base import Finish, GenerationError, Sampling
from handlers.rag.ingestion_jobs import (
    MAX_JOB_FILES,
    IngestionJobs,
    Job,
    NewFile,
    QueueFull,
    SpoolFailed,
)
from handlers.rag.metadata import (
    DEFAULT_COLLECTION,
    MetadataError,
    MetadataValue,
    check_collection,
    parse_metadata,
)
from handlers.rag.service import Answer, RagService, UploadRejected, UploadTooLarge
from handlers.rag.stores.base import SEARCH_MODES, SearchMode
from webrest import BadRequest, ErrorDetail, FilterChain, HttpError, Request, Response

__all__ = [
    "DISCONNECT_POLL_SECONDS",
    "EVENT_STREAM",
    "TEXT_PLAIN",
    "RagHttpHandlers",
    "job_info",
    "log_client_disconnects",
]

log = logging.getLogger("rag.http")

EVENT_STREAM = "text/event-stream"
TEXT_PLAIN = "text/plain; charset=utf-8"
UPLOAD_MESSAGE = "File uploaded successfully"
DISCONNECT_POLL_SECONDS = 0.25
"""How often an upload being ingested checks that its client is still there."""

T = TypeVar("T")
_REQUEST: ContextVar[Request | None] = ContextVar("rag_request", default=None)
"""The request being handled, set by :func:`log_client_disconnects` for the handlers."""
_UPLOAD_CANCELLED = "rag.upload_cancelled"


def search_result(hit: SearchHit) -> models.SearchResult:
    chunk = hit.chunk
    return models.SearchResult(
        score=float(hit.score),
        source=chunk.filename,
        content=chunk.text,
        document_id=chunk.document_id,
        page=chunk.page,
        chunk=chunk.position,
        collection=chunk.collection,
        metadata=dict(chunk.metadata),
    )


def document_info(record: DocumentRecord) -> models.DocumentInfo:
    return models.DocumentInfo(
        document_id=record.document_id,
        filename=record.filename,
        chunks=record.chunks,
        uploaded_at=record.uploaded_at,
        collection=record.collection,
        metadata=dict(record.metadata),
    )


def job_info(job: Job) -> models.IngestionJob:
    return models.IngestionJob.model_validate(
        {
            "job_id": job.job_id,
            "state": job.state,
            "created_at": job.created_at,
            "started_at": job.started_at,
            "finished_at": job.finished_at,
            "chunks_done": job.chunks_done,
            "chunks_total": job.chunks_total,
            "error": job.error,
            "files": [
                {
                    "filename": entry.filename,
                    "bytes": entry.bytes,
                    "state": entry.state,
                    "chunks_done": entry.chunks_done,
                    "chunks_total": entry.chunks_total,
                    "document_id": entry.document_id,
                    "error": entry.error,
                }
                for entry in job.files
            ],
        }
    )


def sampling_of(prompt: models.Prompt) -> Sampling:
    """The decoding a prompt asks for (its bounds are the spec's, validated already)."""
    return Sampling(
        temperature=float(prompt.temperature),
        top_p=float(prompt.top_p),
        stop=tuple(item.root for item in prompt.stop),
        seed=prompt.seed,
    )


@contextmanager
def _unavailable_while_not_ready() -> Iterator[None]:
    """A component that is not ready (after the readiness wait) makes the request a 503."""
    try:
        yield
    except NotReady as error:
        log.warning("request refused: %s", error)
        raise HttpError(503, "Service Unavailable") from None


_CHALLENGE = {"WWW-Authenticate": "Bearer"}
_MODES: dict[str, SearchMode] = {mode: mode for mode in SEARCH_MODES}


def _invalid(field: str, message: str, path: tuple[str | int, ...] = ()) -> BadRequest:
    """A 422 at ``["body", field, *path]`` in the API's error shape."""
    detail = ErrorDetail(("body", field, *path), f"Value error, {message}", "value_error")
    return BadRequest(f"Invalid {field}", [detail])


def placement_of(
    collection: str | None, metadata: str | None
) -> tuple[str, dict[str, MetadataValue]]:
    """An upload's collection and metadata form fields, checked (BadRequest: a 422)."""
    name = DEFAULT_COLLECTION if collection is None else collection
    try:
        check_collection(name)
    except MetadataError as error:
        raise _invalid("collection", str(error)) from None
    try:
        return name, parse_metadata(metadata)
    except MetadataError as error:
        raise _invalid("metadata", str(error)) from None


def retrieval_of(
    body: models.Prompt | models.DocumentSearch,
) -> tuple[str, Filter | None, SearchMode]:
    """A request's collection, parsed filter and mode (BadRequest for a filter outside the
    grammar: a 422 at its place in the filter)."""
    collection = body.collection or DEFAULT_COLLECTION
    raw = body.filter.root if isinstance(body.filter, models.MetadataFilter) else None
    try:
        where = parse_filter(raw)
    except FilterError as error:
        raise _invalid("filter", error.message, error.path) from None
    mode = _MODES.get(body.mode.value if body.mode is not None else "hybrid", "hybrid")
    return collection, where, mode


class RagHttpHandlers:
    """The ``RagHandlers`` of the service."""

    def __init__(self, service: RagService, jobs: IngestionJobs) -> None:
        self.service = service
        self.jobs = jobs

    def _authorize(self, collection: str | None = None) -> KeyScope | None:
        """With API keys on (``service.options.api_keys``): the caller's scope; 401 without a
        valid ``Authorization: Bearer`` key, 403 when ``collection`` is named and the key may
        not use it. None when keys are off."""
        keys = self.service.options.api_keys
        if keys is None:
            return None
        request = _REQUEST.get()
        header = request.headers.get("authorization", "") if request is not None else ""
        scheme, _, token = header.partition(" ")
        if not header:
            raise HttpError(401, "Missing API key: send 'Authorization: Bearer <API_KEY>'",
                            (), _CHALLENGE)  # fmt: skip
        scope = keys.scope(token.strip()) if scheme.lower() == "bearer" else None
        if scope is None:
            raise HttpError(401, "Invalid API key", (), _CHALLENGE)
        if collection is not None and not scope.may_use(collection):
            raise HttpError(403, f"This API key may not use the collection {collection!r}")
        return scope

    async def upload_document(
        self, *, file: UploadFile, collection: str | None = None, metadata: str | None = None
    ) -> models.UploadResult | Response:
        name, checked = placement_of(collection, metadata)
        self._authorize(name)
        size = file.size if file.size is not None else _size_of(file)
        await file.seek(0)
        try:
            with _unavailable_while_not_ready():
                record = await _cancelled_if_client_leaves(
                    self.service.upload(
                        file.file, file.filename, size, collection=name, metadata=checked
                    ),
                    file.filename,
                )
        except UploadTooLarge as error:
            raise HttpError(413, str(error)) from None
        except UploadRejected as error:
            detail = ErrorDetail(("body", "file"), f"Value error, {error.message}", "value_error")
            raise BadRequest("Invalid upload", [detail]) from None
        return models.UploadResult(
            document_id=record.document_id,
            filename=record.filename,
            chunks=record.chunks,
            message=UPLOAD_MESSAGE,
        )

    async def generate(
        self, *, body: models.Prompt, media_type: str
    ) -> AsyncIterator[str] | Response:
        collection, where, mode = retrieval_of(body)
        self._authorize(collection)
        with _unavailable_while_not_ready():
            answer = await self.service.answer(
                body.question,
                context=body.context,
                use_knowledge_base=body.use_knowledge_base,
                max_new_tokens=body.num_tokens,
                sampling=sampling_of(body),
                collection=collection,
                where=where,
                mode=mode,
            )
        if media_type == EVENT_STREAM:
            stream = Response.ok().type(EVENT_STREAM).stream(_events(answer))
            return stream.header("cache-control", "no-cache").header("x-accel-buffering", "no")
        return Response.ok().type(TEXT_PLAIN).stream(_text(answer))

    async def document_search(
        self, *, body: models.DocumentSearch
    ) -> list[models.SearchResult] | Response:
        collection, where, mode = retrieval_of(body)
        self._authorize(collection)
        with _unavailable_while_not_ready():
            hits = await self.service.search(
                body.content, body.num_docs, collection=collection, where=where, mode=mode
            )
        return [search_result(hit) for hit in hits]

    async def list_documents(
        self, *, collection: str = DEFAULT_COLLECTION
    ) -> list[models.DocumentInfo] | Response:
        self._authorize(collection)
        with _unavailable_while_not_ready():
            records = await self.service.list_documents(collection)
        return [document_info(record) for record in records]

    async def delete_document(self, *, document_id: str) -> Response | None:
        scope = self._authorize()
        with _unavailable_while_not_ready():
            if scope is not None and scope.collections is not None:
                for record in await self.service.list_documents():
                    if record.document_id == document_id:
                        self._authorize(record.collection)
            deleted = await self.service.delete_document(document_id)
        if not deleted:
            raise HttpError(404, "Not Found")
        return None

    async def create_ingestion_job(
        self,
        *,
        files: Mapping[str, UploadFile],
        collection: str | None = None,
        metadata: str | None = None,
    ) -> models.IngestionJob | Response:
        name, checked = placement_of(collection, metadata)
        self._authorize(name)
        if not files:
            detail = ErrorDetail(
                ("body",), "Value error, at least one file part is required", "value_error"
            )
            raise BadRequest("No files", [detail])
        if len(files) > MAX_JOB_FILES:
            detail = ErrorDetail(
                ("body",),
                f"Value error, at most {MAX_JOB_FILES} files per job, got {len(files)}",
                "value_error",
            )
            raise BadRequest("Too many files", [detail])
        new_files = []
        for upload in files.values():
            size = upload.size if upload.size is not None else _size_of(upload)
            await upload.seek(0)
            new_files.append(NewFile(upload.filename, upload.file, size))
        try:
            job = await self.jobs.submit(new_files, collection=name, metadata=checked)
        except QueueFull as error:
            return (
                Response.status(429)
                .type("application/json")
                .header("retry-after", str(error.retry_after))
                .entity({"detail": str(error)})
            )
        except SpoolFailed:
            raise HttpError(503, "Service Unavailable") from None
        return job_info(job)

    async def get_ingestion_job(self, *, job_id: str) -> models.IngestionJob | Response:
        self._authorize()
        job = await self.jobs.get(job_id)
        if job is None:
            raise HttpError(404, "Not Found")
        self._authorize(job.collection)
        return job_info(job)

    async def list_ingestion_jobs(
        self, *, limit: int = 100
    ) -> list[models.IngestionJob] | Response:
        scope = self._authorize()
        jobs = await self.jobs.recent(limit)
        return [job_info(job) for job in jobs if scope is None or scope.may_use(job.collection)]

    async def health(self) -> models.Health | Response:
        status, components = self.service.health()
        health = models.Health.model_validate({"status": status, "components": components})
        if status == "ready":
            return health
        return Response.status(503).type("application/json").entity(health.model_dump(mode="json"))


async def log_client_disconnects(request: Request, chain: FilterChain) -> Response:
    """A filter: a request whose client went away before the end of its body (webrest answers
    it with a 400, rendered as this API's 422, that nobody receives) is logged in one INFO
    line. Only refused requests (4xx) are checked, so others pay nothing but the call. It
    also makes the request visible to the handlers (an upload watches for its client leaving:
    :func:`_cancelled_if_client_leaves`, which logs its own line)."""
    token = _REQUEST.set(request)
    try:
        response = await chain.proceed(request)
    except HttpError as error:  # refused by a later filter (which reads the body)
        await _log_if_disconnected(request, error.status)
        raise
    finally:
        _REQUEST.reset(token)
    await _log_if_disconnected(request, response.status_code)
    return response


async def _log_if_disconnected(request: Request, status: int) -> None:
    if request.value(_UPLOAD_CANCELLED) or not 400 <= status < 500:
        return
    if await request.is_disconnected():
        log.info(
            "client disconnected before the end of the request body: %s %s",
            request.method,
            request.url.path,
        )


async def _cancelled_if_client_leaves(work: Awaitable[T], filename: str | None) -> T:
    """``work``'s result, or, when the client of the request being handled disconnects first,
    ``work`` cancelled, one INFO line, and a 400 that nobody receives. Checked every
    :data:`DISCONNECT_POLL_SECONDS` (the body is read already: polling cannot take a part of
    it); without a request (a direct call), ``work`` simply runs."""
    request = _REQUEST.get()
    if request is None:
        return await work
    task = asyncio.ensure_future(work)
    try:
        while True:
            done, _ = await asyncio.wait({task}, timeout=DISCONNECT_POLL_SECONDS)
            if done:
                return task.result()
            if await request.is_disconnected():
                break
        task.cancel()
        await asyncio.wait({task})
        if not task.cancelled():
            task.exception()  # retrieved: nobody receives the answer either way
    finally:
        if not task.done():  # this handler itself was cancelled (the server stops)
            task.cancel()
    request.pass_value(_UPLOAD_CANCELLED, True)
    log.info(
        "client disconnected before the answer: %s %s cancelled (filename=%s)",
        request.method,
        request.url.path,
        filename,
    )
    raise HttpError(400, "The client disconnected; the upload was cancelled")


def _size_of(file: UploadFile) -> int:
    position = file.file.tell()
    size = file.file.seek(0, 2)
    file.file.seek(position)
    return size


async def _deltas(answer: Answer) -> AsyncGenerator[str | Finish, None]:
    """The answer's stream, closed however the response ends (done, failed, or the client
    went away: one INFO line); a generation failure is logged and ends the body early."""
    stream = answer.stream
    deltas = 0
    ended = False
    try:
        async for item in stream:
            if isinstance(item, Finish):
                ended = True  # closing the stream after this is no disconnect
            else:
                deltas += 1
            yield item
        ended = True
    except GenerationError as error:
        ended = True
        log.error("generation failed after the response started: %s", error)
    except Exception:
        ended = True
        log.exception("generation failed after the response started")
    finally:
        if not ended:
            log.info("client disconnected during the answer, after %d deltas", deltas)
        aclose = getattr(stream, "aclose", None)
        if aclose is not None:
            await aclose()


async def _text(answer: Answer) -> AsyncIterator[str]:
    """The answer's text deltas, as they come."""
    async with aclosing(_deltas(answer)) as deltas:
        async for item in deltas:
            if isinstance(item, str) and item:
                yield item


async def _events(answer: Answer) -> AsyncIterator[str]:
    """One ``data: {"delta": ...}`` frame per delta, then ``event: done`` with the sources."""
    async with aclosing(_deltas(answer)) as deltas:
        async for item in deltas:
            if isinstance(item, Finish):
                sources = [search_result(hit).model_dump(mode="json") for hit in answer.sources]
                yield _frame({"finish_reason": item.reason, "sources": sources}, event="done")
                return
            if item:
                yield _frame({"delta": item})


def _frame(data: dict[str, Any], event: str | None = None) -> str:
    text = json.dumps(data, ensure_ascii=False)
    return (f"event: {event}\n" if event else "") + f"data: {text}\n\n"
