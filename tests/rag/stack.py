"""The real service stack for tests: all-MiniLM-L6-v2, a tiny transformers generator, LanceDB
in a directory, wired exactly as the server wires them (only the models are shared)."""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path

import torch
import uvicorn
from transformers import AutoModelForCausalLM

from handlers.rag.components import Components, FailureHook
from handlers.rag.generation.base import Generator
from handlers.rag.generation.local import LocalGenerator
from handlers.rag.ingest.base import Embedder
from handlers.rag.ingest.embedder import LoadedModel, TransformersEmbedder
from handlers.rag.ingestion_jobs import IngestionJobs, JobOptions
from handlers.rag.model_loading import model_loading
from handlers.rag.server import create_rag_app, listening_socket
from handlers.rag.service import RagService, ServiceOptions, check_chunk_window
from handlers.rag.stores.base import VectorStore
from handlers.rag.stores.lancedb_store import LanceDbStore
from tests.rag.tiny_models import build_tiny_causal_lm
from webrest.application import Application

__all__ = ["RagStack", "build_stack", "quick_stopping_model", "serve_on_loopback"]

DEFAULT_UPLOAD_LIMIT = 1_000_000


def quick_stopping_model(directory: Path, eos_gain: float = 20.0) -> Path:
    """The tiny model with its end-of-sequence output weights amplified (and the others
    damped), so that its answers end after a few tokens: still a real model, only its output
    layer is rescaled. (Output layers here have no bias to raise.)"""
    path = build_tiny_causal_lm(directory)
    with model_loading():
        model = AutoModelForCausalLM.from_pretrained(path, local_files_only=True)
    eos = model.config.eos_token_id
    eos_id = eos[0] if isinstance(eos, list) else eos
    head = model.lm_head
    assert isinstance(eos_id, int) and isinstance(head, torch.nn.Linear)
    with torch.no_grad():
        head.weight[eos_id] *= eos_gain * eos_gain
        head.weight *= 1 / eos_gain
    model.save_pretrained(path)
    return path


@dataclass
class RagStack:
    """One service over real components, and its HTTP application."""

    data_dir: Path
    service: RagService
    app: Application
    jobs: IngestionJobs

    @property
    def components(self) -> Components:
        return self.service.components

    async def close(self) -> None:
        await self.jobs.close()
        await self.service.components.close()


def build_stack(
    data_dir: Path,
    *,
    minilm: LoadedModel | Callable[[], LoadedModel],
    generator_model: Path | Callable[[], Path],
    max_upload_bytes: int = DEFAULT_UPLOAD_LIMIT,
    chunk_tokens: int = 200,
    chunk_overlap_tokens: int = 40,
    retrieval_top_k: int = 8,
    ready_timeout: float = 60.0,
    embedder_loader: Callable[[], Embedder] | None = None,
    generator_loader: Callable[[], Generator] | None = None,
    on_failure: FailureHook | None = None,
    ready_before_serving: bool = False,
    job_options: JobOptions | None = None,
    store_factory: Callable[[Path, int], VectorStore] | None = None,
) -> RagStack:
    """A stack over ``data_dir`` (LanceDB in ``lancedb/``, ingestion jobs in ``jobs/`` unless
    ``job_options`` say otherwise). ``minilm`` and ``generator_model`` may be functions giving
    them when the components load; the loaders may be replaced (e.g. to hold a real loader
    back until a test lets it go), and so may the store (``store_factory(directory,
    dimension)``, e.g. a LanceDB store instrumented by a test)."""

    def load_embedder() -> Embedder:
        embedder = TransformersEmbedder(minilm() if callable(minilm) else minilm)
        check_chunk_window(embedder, chunk_tokens)
        return embedder

    def load_generator() -> Generator:
        model = generator_model() if callable(generator_model) else generator_model
        return LocalGenerator.load(str(model), cache_dir=data_dir / "models")

    def build_store(dimension: int) -> VectorStore:
        if store_factory is not None:
            return store_factory(data_dir / "lancedb", dimension)
        return LanceDbStore(data_dir / "lancedb", dimension)

    components = Components(
        embedder=embedder_loader or load_embedder,
        generator=generator_loader or load_generator,
        store=build_store,
        ready_timeout=ready_timeout,
        on_failure=on_failure,
    )
    options = ServiceOptions(
        upload_dir=data_dir / "uploads",
        chunk_tokens=chunk_tokens,
        chunk_overlap_tokens=chunk_overlap_tokens,
        max_upload_bytes=max_upload_bytes,
        retrieval_top_k=retrieval_top_k,
    )
    service = RagService(components, options)
    jobs = IngestionJobs(service, job_options or JobOptions(directory=data_dir / "jobs"))
    app = create_rag_app(
        service, max_upload_bytes, jobs=jobs, ready_before_serving=ready_before_serving
    )
    return RagStack(data_dir, service, app, jobs)


@contextlib.asynccontextmanager
async def serve_on_loopback(app: Application) -> AsyncIterator[str]:
    """``app`` served by a real uvicorn server on an ephemeral loopback port, in this event
    loop (lifespan included); yields its base URL."""
    sock: socket.socket = listening_socket("127.0.0.1", 0)
    config = uvicorn.Config(app, lifespan="on", access_log=False, log_config=None)
    config.load()
    server = uvicorn.Server(config)
    server.lifespan = config.lifespan_class(config)
    await server.startup(sockets=[sock])
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        server.force_exit = False
        await asyncio.wait_for(server.shutdown(sockets=[sock]), 30)
