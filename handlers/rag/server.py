"""The ``rag-server`` process: settings, components, the HTTP listener.

Startup: settings (an invalid one stops with a message naming it, status 2), then the listener
(announced in one line) at once, while the embedder, the generator and the store load in
background threads (after their libraries are imported serially, in one thread: parallel
imports can fail half-way); ``/health`` says 503 ``loading`` until all three are ready.

A component that cannot load stops the server: the reason in one log line
(``cannot load the generator: ...``), then the exit status 1 (2 for a setting that cannot
work, such as a chunk size that does not fit the embedding model), so that a supervisor
restarts it rather than leaving a process that answers ``/health`` 503 ``failed`` forever.
There is no retry inside the process: a failed import can leave the interpreter's modules
half-initialised, and a fresh process is the clean retry. SIGTERM or SIGINT: the listener
stops accepting, in-flight requests finish (up to 10 s), the components are closed.
"""

from __future__ import annotations

import os

# Nothing may reach a model hub: set before transformers (imported below) reads them.
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"

import asyncio
import contextlib
import logging
import signal
import socket
import sys
import threading
import time
from collections.abc import AsyncIterator

import uvicorn

from generated.rag.routes import create_app
from handlers.common.entry import run_service
from handlers.common.settings import SettingsError
from handlers.rag.components import Components
from handlers.rag.generation.base import Generator
from handlers.rag.http import RagHttpHandlers, log_client_disconnects
from handlers.rag.ingest.base import Embedder
from handlers.rag.ingest.parse_runner import ParseLimits, ParseRunner
from handlers.rag.ingestion_jobs import IngestionJobs, JobOptions
from handlers.rag.model_loading import import_serially
from handlers.rag.playground import mount_playground
from handlers.rag.service import RagService, ServiceOptions, check_chunk_window
from handlers.rag.settings import Settings
from handlers.rag.stores.base import VectorStore
from handlers.startup_heap import freeze_startup_heap
from webrest.application import Application

log = logging.getLogger("rag.startup")

SHUTDOWN_GRACE_SECONDS = 10
MULTIPART_OVERHEAD_BYTES = 64 * 1024
"""Room above RAG_MAX_UPLOAD_BYTES for the multipart framing around the file."""
OPENAI_DEFAULT_CONTEXT_WINDOW = 8192


MODEL_LIBRARIES = ("handlers.rag.ingest.embedder", "handlers.rag.generation.local")
"""The modules the loaders import (torch, transformers, accelerate come with them)."""
LAZY_MODEL_LIBRARIES = ("onnx", "onnxruntime", "gguf")
"""Imported by the loads themselves when installed (the ONNX export, GGUF dequantisation)."""


def import_model_libraries() -> None:
    """Blocking: imports the loaders' libraries one at a time, before the parallel loads."""
    import_serially(*MODEL_LIBRARIES)
    import_serially(*LAZY_MODEL_LIBRARIES, optional=True)


def load_embedder(settings: Settings) -> Embedder:
    """Blocking: the embedding model, checked against RAG_CHUNK_TOKENS."""
    from handlers.rag.ingest.embedder import TransformersEmbedder

    embedder = TransformersEmbedder.load(
        settings.embedding_model,
        batch_size=settings.embed_batch_size,
        threads=settings.torch_threads,
        runtime=settings.embedding_runtime,
        cache_dir=settings.data_dir / "models",
        background_tokens=settings.embed_background_tokens,
        background_nice=settings.embed_background_nice,
    )
    check_chunk_window(embedder, settings.chunk_tokens)
    return embedder


def load_generator(settings: Settings) -> Generator:
    """Blocking: the local model, or a client of the OpenAI-compatible endpoint."""
    if settings.llm_url:
        from handlers.rag.generation.openai_compatible import OpenAICompatibleGenerator

        return OpenAICompatibleGenerator(
            settings.llm_url,
            settings.llm_endpoint_model,
            api_key=settings.llm_api_key or None,
            context_window=settings.llm_context_window or OPENAI_DEFAULT_CONTEXT_WINDOW,
        )
    from handlers.rag.generation.local import LocalGenerator

    return LocalGenerator.load(
        settings.llm_model,
        cache_dir=settings.data_dir / "models",
        max_concurrent=settings.generation_concurrency,
        threads=settings.torch_threads,
    )


def build_store(settings: Settings, dimension: int) -> VectorStore:
    """Weaviate when WEAVIATE_URL is set, else LanceDB in the data directory."""
    if settings.weaviate_url:
        from handlers.rag.stores.weaviate_store import WeaviateStore

        return WeaviateStore(
            settings.weaviate_url,
            dimension,
            collection=settings.collection,
            grpc_port=settings.weaviate_grpc_port,
            api_key=settings.weaviate_api_key or None,
        )
    from handlers.rag.stores.lancedb_store import LanceDbStore

    return LanceDbStore(  # its upkeep task starts with it and stops at its close()
        settings.data_dir / "lancedb",
        dimension,
        index_threshold=settings.index_threshold,
        maintenance_writes=settings.store_upkeep_writes,
        upkeep_interval=settings.store_upkeep_interval,
        version_retention=settings.store_version_retention,
    )


def service_options(settings: Settings) -> ServiceOptions:
    return ServiceOptions(
        upload_dir=settings.data_dir / "uploads",
        chunk_tokens=settings.chunk_tokens,
        chunk_overlap_tokens=settings.chunk_overlap_tokens,
        max_upload_bytes=settings.max_upload_bytes,
        retrieval_top_k=settings.retrieval_top_k,
        context_window=settings.llm_context_window,
        api_keys=settings.api_key_scopes,
        parse_runner=ParseRunner(
            settings.parse_concurrency,
            ParseLimits(seconds=settings.parse_timeout, memory_bytes=settings.parse_memory_bytes),
        ),
    )


def job_options(settings: Settings) -> JobOptions:
    return JobOptions(
        directory=settings.data_dir / "jobs",
        concurrency=settings.ingest_concurrency,
        queue_files=settings.ingest_queue_limit,
        queue_bytes=settings.ingest_queue_bytes,
        retention_seconds=settings.ingest_job_retention,
    )


def create_rag_app(
    service: RagService,
    max_upload_bytes: int,
    *,
    jobs: IngestionJobs | None = None,
    ready_before_serving: bool = False,
    docs: bool = True,
    playground: bool = True,
) -> Application:
    """The HTTP application over ``service``: components load when it starts (its lifespan)
    or at the first request, and are closed when it stops; so is the ingestion job runner
    ``jobs`` (by default one with the default bounds in ``jobs/`` beside the upload spool),
    which resumes the unfinished jobs it finds. ``ready_before_serving``: its startup waits
    until no component is loading any more (the server does not: it answers ``/health``
    while the models load). ``docs``: Swagger UI at ``/docs``. ``playground``: the playground
    page at ``/`` (outside the API's contract, as the docs: :mod:`handlers.rag.playground`)."""
    runner = jobs or IngestionJobs(
        service, JobOptions(directory=service.options.upload_dir.with_name("jobs"))
    )

    @contextlib.asynccontextmanager
    async def lifespan(_app: Application) -> AsyncIterator[None]:
        service.components.start()
        parse_runner = service.options.parse_runner
        if parse_runner is not None:  # its spare parse process starts loading its libraries
            parse_runner.warm_up()
        await runner.start()
        if ready_before_serving:
            await service.components.wait_ready()
        try:
            yield
        finally:
            await runner.close()
            await service.components.close()
            if parse_runner is not None:
                parse_runner.close()

    app = create_app(
        RagHttpHandlers(service, runner),
        max_body_size=max_upload_bytes + MULTIPART_OVERHEAD_BYTES,
        lifespan=lifespan,
        docs_path="/docs" if docs else None,
    )
    if playground:
        mount_playground(app)
    return app.install(log_client_disconnects)


def listening_socket(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # IPPROTO_TCP explicitly: asyncio sets TCP_NODELAY only on sockets that say they are TCP,
    # and without it each streamed delta after the first waits for a delayed ACK (~40 ms)
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(2048)
    sock.setblocking(False)
    return sock


class RagServer:
    """The service behind its HTTP listener."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.fatal: BaseException | None = None
        self.stopping = asyncio.Event()
        components = Components(
            embedder=lambda: load_embedder(settings),
            generator=lambda: load_generator(settings),
            store=lambda dimension: build_store(settings, dimension),
            ready_timeout=settings.ready_timeout,
            on_failure=self._on_failure,
            prepare=import_model_libraries,
        )
        self.service = RagService(components, service_options(settings))
        self.app = create_rag_app(
            self.service,
            settings.max_upload_bytes,
            jobs=IngestionJobs(self.service, job_options(settings)),
            docs=settings.docs_enabled,
            # RAG_PLAYGROUND_ENABLED (read so until Settings declares playground_enabled)
            playground=settings.playground_enabled,
        )
        self.port = 0
        self._socket: socket.socket | None = None
        self._http: uvicorn.Server | None = None

    def _on_failure(self, _component: str, error: BaseException) -> None:
        """A component cannot load (already logged): stop, to exit non-zero."""
        if self.fatal is None:
            self.fatal = error
        self.stopping.set()

    @property
    def exit_status(self) -> int:
        """0 after a requested stop; 2 when a setting cannot work; 1 when a component failed."""
        if self.fatal is None:
            return 0
        return 2 if isinstance(self.fatal, SettingsError) else 1

    async def start(self) -> None:
        """Listen (the components start loading with the application's lifespan)."""
        settings = self.settings
        settings.data_dir.mkdir(parents=True, exist_ok=True)
        self._socket = listening_socket(settings.host, settings.port)
        self.port = self._socket.getsockname()[1]
        config = uvicorn.Config(
            self.app,
            lifespan="on",
            access_log=False,
            log_config=None,
            timeout_graceful_shutdown=SHUTDOWN_GRACE_SECONDS,
        )
        config.load()
        self._http = uvicorn.Server(config)
        self._http.lifespan = config.lifespan_class(config)
        await self._http.startup(sockets=[self._socket])
        host = f"[{settings.host}]" if ":" in settings.host else settings.host
        log.info(
            "rag listening on http://%s:%d (data %s, store %s, models loading)",
            host,
            self.port,
            settings.data_dir,
            settings.store_kind,
        )

    async def stop(self) -> None:
        """Stop accepting, let in-flight requests finish, close the components."""
        if self._http is not None and self._socket is not None:
            await self._http.shutdown(sockets=[self._socket])
            self._http = None


async def freeze_heap_once_loaded(components: Components) -> None:
    """Once no component is loading any more, freezes the heap (torch, transformers, the
    models, LanceDB: see :mod:`handlers.startup_heap`)."""
    while "loading" in (await components.wait_ready()).values():
        pass
    freeze_startup_heap(log)


async def serve(settings: Settings) -> int:
    """Run until SIGTERM or SIGINT; the exit status."""
    server = RagServer(settings)
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, server.stopping.set)
    await server.start()
    freezing = loop.create_task(freeze_heap_once_loaded(server.service.components))
    try:
        await server.stopping.wait()
    finally:
        log.info("shutting down")
        freezing.cancel()
        await server.stop()
    if server.fatal is not None:
        log.error("exiting with status %d: a component cannot load", server.exit_status)
    return server.exit_status


def leave_loading_threads(status: int, grace_seconds: float = SHUTDOWN_GRACE_SECONDS) -> None:
    """After a failed start: a model load still running in a worker thread (the other
    component's) would keep the interpreter from exiting until it ends, or forever if it
    hangs. It gets ``grace_seconds`` to end; then the process exits at once with ``status``."""
    deadline = time.monotonic() + grace_seconds
    others = [t for t in threading.enumerate() if t is not threading.current_thread()]
    for thread in others:
        if not thread.daemon:
            thread.join(max(0.0, deadline - time.monotonic()))
    running = [t.name for t in others if t.is_alive() and not t.daemon]
    if running:
        log.warning("exiting while a load is still running (%s)", ", ".join(running))
        logging.shutdown()
        os._exit(status)


def run(settings: Settings) -> int:
    """The server on ``settings`` (logging is set up): its exit status."""
    if settings.log_level != "DEBUG":  # uvicorn's own startup chatter; ours says where it listens
        logging.getLogger("uvicorn.error").setLevel(logging.WARNING)
    try:
        status = asyncio.run(serve(settings))
    except OSError as error:  # the port is taken, the data directory cannot be created
        log.error("cannot start: %s", error)
        return 1
    if status != 0:
        leave_loading_threads(status)
    return status


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``rag-server``: settings come from the environment (an invalid one: a
    message naming it and status 2), logging as ``LOG_LEVEL`` and ``LOG_FORMAT`` say (the
    listener line is shown at any level)."""
    del argv
    return run_service(Settings, run)


if __name__ == "__main__":
    sys.exit(main())
