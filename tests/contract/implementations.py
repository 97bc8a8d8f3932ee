"""Handlers of the generated Protocols for the contract tests.

The contract tests run every service's real handlers over real components: ratelimit and rag
in-process, agents as the real server on a loopback port (:func:`agents_server`).
``RagContract`` is a small in-memory stand-in that exercises only the generated layer (binding,
validation, error shapes, streaming); the generated clients' tests use it."""

from __future__ import annotations

import atexit
import datetime
import functools
import hashlib
import shutil
import tempfile
from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from starlette.datastructures import UploadFile

from generated.rag import models as rag
from generated.rag.handlers import RagHandlers
from generated.ratelimit.handlers import RatelimitHandlers
from handlers.ratelimit.backends.memory import MemoryStore
from handlers.ratelimit.config.parse import load_rule_set
from handlers.ratelimit.health import Health
from handlers.ratelimit.http import HttpHandlers
from handlers.ratelimit.limiter import Limiter
from handlers.ratelimit.service import RateLimitService
from handlers.ratelimit.stats import ServiceStats
from tests.agents.support import RunningServer, Storage
from webrest import HttpError, Response

if TYPE_CHECKING:
    from handlers.rag.ingest.embedder import LoadedModel
    from webrest.application import Application


class RagContract:
    """Stores uploaded files' names (per collection); answers by echoing; searches by
    substring."""

    def __init__(self) -> None:
        self.documents: dict[str, tuple[str, bytes, str]] = {}
        self.jobs: dict[str, rag.IngestionJob] = {}

    async def upload_document(
        self, *, file: UploadFile, collection: str = "default", metadata: str | None = None
    ) -> rag.UploadResult | Response:
        data = await file.read()
        name = file.filename or "upload"
        document_id = hashlib.sha256(f"{collection}/{name}".encode()).hexdigest()[:16]
        self.documents[document_id] = (name, data, collection)
        return rag.UploadResult(
            document_id=document_id,
            filename=name,
            chunks=1 if data else 0,
            message="File uploaded successfully",
        )

    async def generate(self, *, body: rag.Prompt, media_type: str) -> AsyncIterator[str] | Response:
        async def deltas() -> AsyncIterator[str]:
            words = body.question.split()[: body.num_tokens] or ["?"]
            for word in words:
                if media_type == "text/event-stream":
                    yield 'data: {"delta": "' + word.replace('"', "") + ' "}\n\n'
                else:
                    yield word + " "

        return deltas()

    async def document_search(
        self, *, body: rag.DocumentSearch
    ) -> list[rag.SearchResult] | Response:
        hits = [
            rag.SearchResult(
                score=1.0,
                source=name,
                content=data[:200].decode("utf-8", "replace"),
                document_id=document_id,
                page=None,
                chunk=0,
            )
            for document_id, (name, data, _) in self.documents.items()
        ]
        return hits[: body.num_docs]

    async def list_documents(
        self, *, collection: str = "default"
    ) -> list[rag.DocumentInfo] | Response:
        return [
            rag.DocumentInfo(
                document_id=document_id,
                filename=name,
                chunks=1 if data else 0,
                uploaded_at=datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC),
                collection=stored_in,
                metadata=rag.Metadata(),
            )
            for document_id, (name, data, stored_in) in self.documents.items()
            if stored_in == collection
        ]

    async def delete_document(self, *, document_id: str) -> Response | None:
        if self.documents.pop(document_id, None) is None:
            raise HttpError(404, "Document not found")
        return None

    async def create_ingestion_job(
        self,
        *,
        files: Mapping[str, UploadFile],
        collection: str = "default",
        metadata: str | None = None,
    ) -> rag.IngestionJob | Response:
        queued = [
            rag.IngestionFile(
                filename=file.filename or "upload",
                bytes=len(await file.read()),
                state=rag.IngestionFileState.queued,
                chunks_done=0,
                chunks_total=None,
                document_id=None,
                error=None,
            )
            for file in files.values()
        ]
        job = rag.IngestionJob(
            job_id=f"job-{len(self.jobs) + 1}",
            state=rag.IngestionJobState.queued,
            created_at=datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC),
            started_at=None,
            finished_at=None,
            chunks_done=0,
            chunks_total=None,
            error=None,
            files=queued,
        )
        self.jobs[job.job_id] = job
        return job

    async def get_ingestion_job(self, *, job_id: str) -> rag.IngestionJob | Response:
        job = self.jobs.get(job_id)
        if job is None:
            raise HttpError(404, "Not Found")
        return job

    async def list_ingestion_jobs(self, *, limit: int = 100) -> list[rag.IngestionJob] | Response:
        return list(reversed(self.jobs.values()))[:limit]

    async def health(self) -> rag.Health | Response:
        return rag.Health(status="ready", components={"store": "ready"})


RATELIMIT_RULES = """
domain: edge_proxy
descriptors:
  - key: remote_address
    rate_limit: {unit: minute, requests_per_unit: 10}
  - key: path
    value: /api/login
    rate_limit: {unit: minute, requests_per_unit: 1}
"""


def ratelimit_handlers() -> HttpHandlers:
    """The service's real HTTP handlers over the in-memory backend and example rules."""
    service = RateLimitService(Limiter(MemoryStore()), ServiceStats())
    service.set_rules(load_rule_set([("edge.yaml", RATELIMIT_RULES)], merge_domains=False))
    return HttpHandlers(service, Health())


def _temporary_directory(prefix: str) -> Path:
    directory = Path(tempfile.mkdtemp(prefix=prefix))
    atexit.register(shutil.rmtree, directory, ignore_errors=True)
    return directory


@functools.cache
def _minilm() -> LoadedModel:
    from handlers.rag.ingest.embedder import load_model

    return load_model("all-MiniLM-L6-v2")


@functools.cache
def _tiny_generator_model() -> Path:
    """A tiny generator that ends its answers after a few tokens: the fuzzer's many /generate
    calls stay fast."""
    from tests.rag.stack import quick_stopping_model

    return quick_stopping_model(_temporary_directory("rag-contract-model-") / "tiny-lm")


def rag_app() -> Application:
    """The rag service's real application: its handlers over all-MiniLM-L6-v2, the tiny
    generator and LanceDB in a fresh temporary directory. The models are loaded (once per
    process) when the application starts, not when it is built."""
    from tests.rag.stack import build_stack  # torch, transformers, LanceDB: only when needed

    stack = build_stack(
        _temporary_directory("rag-contract-data-"),
        minilm=_minilm,
        generator_model=_tiny_generator_model,
        ready_before_serving=True,  # /health's 503 while loading is no server error
    )
    return stack.app


def agents_server() -> RunningServer:
    """The real ``agents-server`` on a free loopback port, SQLite and blobs in a fresh
    temporary directory, executions run by its own worker. The caller stops it (the contract
    suite's ``pytest_sessionfinish``) before the directory is removed at exit."""
    data_dir = _temporary_directory("agents-contract-")
    return RunningServer(Storage(data_dir, f"sqlite:///{data_dir}/agents.db"))


def _check() -> tuple[RagHandlers, RatelimitHandlers]:
    return RagContract(), ratelimit_handlers()  # mypy checks the Protocol conformance
