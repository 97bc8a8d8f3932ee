"""The service's components (embedder, generator, vector store), loaded in the background.

The server answers at once; models load in worker threads. A request that needs a component
waits for it up to the readiness timeout (then :class:`NotReady`, a 503), and ``/health``
reports each one as ``loading``, ``ready`` or ``failed``.

Before the embedder and the generator load in parallel, an optional ``prepare`` step runs
alone in one worker thread: the server imports its model libraries there, because two threads
importing the same modules at once can fail on a partially initialised module (see
:mod:`handlers.rag.model_loading`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from typing import Generic, Literal, TypeVar

import anyio
import anyio.to_thread

from handlers.rag.generation.base import Generator
from handlers.rag.ingest.base import Embedder
from handlers.rag.stores.base import VectorStore

__all__ = ["Components", "ComponentState", "NotReady"]

log = logging.getLogger("rag.startup")

ComponentState = Literal["loading", "ready", "failed"]
T = TypeVar("T")

EMBEDDER = "embedder"
GENERATOR = "generator"
STORE = "store"


class NotReady(Exception):
    """A component is still loading after the readiness timeout, or failed to load."""

    def __init__(self, name: str, state: ComponentState) -> None:
        super().__init__(f"the {name} is {'still loading' if state == 'loading' else state}")
        self.name = name
        self.state = state


class _Slot(Generic[T]):
    """One component: its state, and its value once ready."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.reset()

    def reset(self) -> None:
        self.state: ComponentState = "loading"
        self.value: T | None = None
        self.error: BaseException | None = None
        self._settled = asyncio.Event()

    def ready(self, value: T) -> None:
        self.value, self.state = value, "ready"
        self._settled.set()

    def failed(self, error: BaseException) -> None:
        self.error, self.state = error, "failed"
        self._settled.set()

    async def get(self, wait_seconds: float) -> T:
        """The component, waiting up to ``wait_seconds`` while it loads; else NotReady."""
        if self.state == "loading":
            with anyio.move_on_after(wait_seconds):
                await self._settled.wait()
        if self.value is None:
            raise NotReady(self.name, self.state)
        return self.value


EmbedderLoader = Callable[[], Embedder]
GeneratorLoader = Callable[[], Generator]
StoreFactory = Callable[[int], VectorStore]
"""Builds the store for the embedder's dimension (cheap); its ``open()`` is awaited after."""
FailureHook = Callable[[str, BaseException], None]
Prepare = Callable[[], None]
"""Blocking work run alone before the parallel loads (the server's serial imports)."""


class Components:
    """Loads and holds the three components; ``start()`` (or the first request) begins loading.

    ``embedder`` and ``generator`` are blocking loaders run in worker threads, in parallel,
    after ``prepare`` (when given) has run alone; ``store`` is built once the embedder's
    dimension is known. ``on_failure`` hears of every load failure (after its one log line),
    e.g. to stop the server; a failed ``prepare`` fails every component and is heard once, as
    ``"model libraries"``.
    """

    def __init__(
        self,
        *,
        embedder: EmbedderLoader,
        generator: GeneratorLoader,
        store: StoreFactory,
        ready_timeout: float = 120.0,
        on_failure: FailureHook | None = None,
        prepare: Prepare | None = None,
    ) -> None:
        self._loaders = (embedder, generator, store)
        self._prepare = prepare
        self.ready_timeout = ready_timeout
        self._on_failure = on_failure
        self._embedder: _Slot[Embedder] = _Slot(EMBEDDER)
        self._generator: _Slot[Generator] = _Slot(GENERATOR)
        self._store: _Slot[VectorStore] = _Slot(STORE)
        self._tasks: list[asyncio.Task[bool] | asyncio.Task[None]] = []

    def start(self) -> None:
        """Begin loading every component in the background (idempotent)."""
        if self._tasks:
            return
        loop = asyncio.get_running_loop()
        prepared = loop.create_task(self._run_prepare(), name="rag-load-prepare")
        self._tasks = [
            prepared,
            loop.create_task(self._load_embedder_and_store(prepared), name="rag-load-embedder"),
            loop.create_task(self._load_generator(prepared), name="rag-load-generator"),
        ]

    def states(self) -> dict[str, ComponentState]:
        return {slot.name: slot.state for slot in (self._embedder, self._generator, self._store)}

    async def wait_ready(self, wait_seconds: float | None = None) -> dict[str, ComponentState]:
        """Wait until no component is loading (or ``wait_seconds``); the states then."""
        self.start()
        limit = self.ready_timeout if wait_seconds is None else wait_seconds
        for slot in (self._embedder, self._generator, self._store):
            with contextlib.suppress(NotReady):
                await slot.get(limit)
        return self.states()

    async def embedder(self) -> Embedder:
        self.start()
        return await self._embedder.get(self.ready_timeout)

    async def generator(self) -> Generator:
        self.start()
        return await self._generator.get(self.ready_timeout)

    async def store(self) -> VectorStore:
        self.start()
        return await self._store.get(self.ready_timeout)

    async def close(self) -> None:
        """Stop loading (a thread still loading finishes on its own) and close what loaded.
        The components are then as before ``start()``: a later start loads them again."""
        tasks, self._tasks = self._tasks, []
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        for slot in (self._store, self._generator, self._embedder):
            component = slot.value
            slot.reset()
            if component is not None:
                try:
                    await component.close()
                except Exception as error:  # closing the others matters more
                    log.warning("closing the %s failed: %s", slot.name, error)

    # -- loading -------------------------------------------------------------------------------

    async def _run_prepare(self) -> bool:
        """Runs ``prepare`` alone; False (every component failed, reported once) if it failed."""
        if self._prepare is None:
            return True
        started = time.perf_counter()
        try:
            await anyio.to_thread.run_sync(self._prepare, abandon_on_cancel=True)
        except Exception as error:
            for slot in (self._embedder, self._generator, self._store):
                slot.failed(error)
            self._report("model libraries", error)
            return False
        log.info("model libraries imported seconds=%.2f", time.perf_counter() - started)
        return True

    async def _load_embedder_and_store(self, prepared: asyncio.Task[bool]) -> None:
        if not await prepared:
            return
        embedder = await self._load(self._embedder, self._loaders[0])
        if embedder is None:
            self._store.failed(RuntimeError("the embedder did not load"))
            return
        factory = self._loaders[2]

        async def open_store() -> VectorStore:
            store = factory(embedder.dimension)
            await store.open()
            return store

        started = time.perf_counter()
        try:
            store = await open_store()
        except Exception as error:
            self._fail(self._store, error)
            return
        self._store.ready(store)
        log.info("store ready seconds=%.2f", time.perf_counter() - started)

    async def _load_generator(self, prepared: asyncio.Task[bool]) -> None:
        if await prepared:
            await self._load(self._generator, self._loaders[1])

    async def _load(self, slot: _Slot[T], loader: Callable[[], T]) -> T | None:
        started = time.perf_counter()
        try:
            value = await anyio.to_thread.run_sync(loader, abandon_on_cancel=True)
        except Exception as error:
            self._fail(slot, error)
            return None
        slot.ready(value)
        log.info("%s ready seconds=%.2f", slot.name, time.perf_counter() - started)
        return value

    def _fail(self, slot: _Slot[T], error: BaseException) -> None:
        slot.failed(error)
        self._report(slot.name, error)

    def _report(self, what: str, error: BaseException) -> None:
        log.error("cannot load the %s: %s", what, _one_line(error))
        if self._on_failure is not None:
            self._on_failure(what, error)


def _one_line(error: BaseException) -> str:
    """The error's message on one line (its type when it has none), for a single log line."""
    text = " ".join(str(error).split())
    return text or type(error).__name__
