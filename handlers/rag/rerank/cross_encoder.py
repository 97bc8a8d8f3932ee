"""A local cross-encoder: a transformers sequence-classification model scoring query-passage
pairs on the CPU.

The model reads the query and a passage together (``[CLS] query [SEP] passage [SEP]``) and
gives one logit (MS MARCO cross-encoders, bge-reranker: the score is its sigmoid) or two
(not relevant, relevant: the score is the second one's softmax probability), so every score
lies in [0, 1]. It is loaded from a local directory only (``RAG_RERANK_MODEL``): nothing is
downloaded.

Work is bounded: a pair is cut to ``max_tokens`` (at most the model's window; the longer of
query and passage loses tokens first), pairs are scored ``batch_size`` at a time, shortest
with shortest (padding is to the longest of a pass), each pass in the reranker's worker
thread, so the event loop never waits on the model and a cancelled search stops after the
pass that is running. One thread serves every search: two searches take turns pass by pass
instead of both competing for the same cores.

Runtimes (``runtime``, as the embedder's ``RAG_EMBEDDING_RUNTIME``): for a BERT-family model
(``BertForSequenceClassification``: the MS MARCO MiniLM and TinyBERT cross-encoders) the
encoder runs on ONNX Runtime, exported once by the embedder's own exporter
(:mod:`handlers.rag.ingest.encoder_runtime`, cached in ``cache_dir``), and the small head
(pooler and classifier: two matrix products) on torch; any other architecture runs whole on
torch. Speed, measured on the shared 2-core development machine (nice 19, other jobs running,
load 1.5-3), pairs of 177 tokens at ms-marco-MiniLM-L6-v2's size (6 layers, 384 wide), 16
pairs a pass: 20 pairs took 0.45-1.0 s on ONNX Runtime and 0.9-2.2 s on torch, 50 pairs
2.4-3.6 s and 1.3-4.9 s; the machine's noise is larger than the difference between the two.
"""

from __future__ import annotations

import logging
import math
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Self

import numpy as np
import torch
from transformers import (
    AutoModelForSequenceClassification,
    AutoTokenizer,
    PreTrainedModel,
    PreTrainedTokenizerBase,
)

from handlers.rag.ingest.base import EMBEDDING_RUNTIMES, EmbeddingRuntime
from handlers.rag.ingest.encoder_runtime import OnnxEncoder, export_onnx, onnx_cache_path
from handlers.rag.model_loading import model_loading
from handlers.rag.rerank.base import RerankError, clipped
from handlers.rag.worker_threads import WorkerThreads

__all__ = ["CrossEncoder", "CrossEncoderReranker", "load_cross_encoder"]

logger = logging.getLogger(__name__)
Logits = Callable[[Mapping[str, np.ndarray]], np.ndarray]
"""Runs the network on tokenized pairs (numpy arrays): logits, shape (pairs, labels)."""


@dataclass(frozen=True, slots=True)
class CrossEncoder:
    """A loaded cross-encoder: its tokenizer, what runs its network (and which runtime), and
    the most tokens a pair may have."""

    path: Path
    tokenizer: PreTrainedTokenizerBase
    logits: Logits
    runtime: str
    window: int

    def scores(self, query: str, passages: Sequence[str], max_tokens: int) -> np.ndarray:
        """Scores in [0, 1] for one forward pass over ``(query, passage)`` pairs. Blocking."""
        encoded = self.tokenizer(
            [query] * len(passages),
            list(passages),
            padding=True,
            truncation="longest_first",
            max_length=min(max_tokens, self.window),
            return_tensors="np",
        )
        logits = torch.from_numpy(self.logits(encoded))
        if logits.shape[-1] == 1:
            probabilities = torch.sigmoid(logits[:, 0])
        else:
            probabilities = torch.softmax(logits, dim=-1)[:, -1]
        return np.asarray(probabilities.numpy(), dtype=np.float64)


def load_cross_encoder(
    path: Path, *, runtime: EmbeddingRuntime = "auto", cache_dir: Path | None = None
) -> CrossEncoder:
    """Loads the cross-encoder in the directory ``path`` from its files only. Blocking (call it
    from a worker thread); raises ``ValueError`` naming the directory when it cannot.

    ``runtime``: ``auto`` runs a BERT-family encoder on ONNX Runtime (exported to
    ``cache_dir``, or for this load only without one), anything else on torch; ``torch`` runs
    all on torch; ``onnxruntime`` fails for a model it cannot run."""
    if runtime not in EMBEDDING_RUNTIMES:
        raise ValueError(f"unknown runtime {runtime!r}: expected one of {EMBEDDING_RUNTIMES}")
    path = path.expanduser()
    if not (path / "config.json").is_file():
        raise ValueError(f"no cross-encoder in {path}: expected a transformers model directory")
    started = time.perf_counter()
    try:
        with model_loading():
            tokenizer = AutoTokenizer.from_pretrained(path, local_files_only=True)
            network = AutoModelForSequenceClassification.from_pretrained(
                path, local_files_only=True
            )
    except (OSError, ValueError, KeyError, RuntimeError) as exc:  # RuntimeError: bad weights
        raise ValueError(f"cannot load a cross-encoder from {path}: {exc}") from exc
    network.eval()
    labels = int(network.config.num_labels)
    if labels not in (1, 2):
        raise ValueError(
            f"{path} is a classifier of {labels} labels; a cross-encoder has 1 (a relevance "
            "logit) or 2 (not relevant, relevant)"
        )
    window = min(int(tokenizer.model_max_length), int(network.config.max_position_embeddings))
    logits, used = _runner(network, tokenizer, path, runtime, cache_dir)
    logger.info(
        "cross-encoder loaded path=%s labels=%d window=%d runtime=%s seconds=%.2f",
        path,
        labels,
        window,
        used,
        time.perf_counter() - started,
    )
    return CrossEncoder(path=path, tokenizer=tokenizer, logits=logits, runtime=used, window=window)


def _runner(
    network: PreTrainedModel,
    tokenizer: PreTrainedTokenizerBase,
    path: Path,
    runtime: EmbeddingRuntime,
    cache_dir: Path | None,
) -> tuple[Logits, str]:
    """What computes the logits, and the runtime's name."""
    base = getattr(network, "bert", None)
    pooler = getattr(base, "pooler", None)
    classifier = getattr(network, "classifier", None)
    split = isinstance(base, PreTrainedModel) and pooler is not None and classifier is not None
    if runtime != "torch" and split:
        assert isinstance(base, PreTrainedModel) and pooler is not None
        assert classifier is not None
        try:
            encoder = _exported(base, tokenizer, path, cache_dir)
        except (RuntimeError, OSError, ImportError) as exc:
            if runtime == "onnxruntime":
                raise ValueError(f"cannot run {path} on ONNX Runtime: {exc}") from exc
            logger.warning("cross-encoder runs on torch: %s", exc)
        else:

            def head(encoded: Mapping[str, np.ndarray]) -> np.ndarray:
                hidden = torch.from_numpy(encoder.last_hidden_state(encoded))
                with torch.inference_mode():
                    return np.asarray(classifier(pooler(hidden)).to(torch.float32).numpy())

            return head, "onnxruntime"
    elif runtime == "onnxruntime":
        raise ValueError(
            f"{path} ({type(network).__name__}) runs on torch only: ONNX Runtime takes "
            "BertForSequenceClassification models"
        )

    def whole(encoded: Mapping[str, np.ndarray]) -> np.ndarray:
        inputs = {key: torch.from_numpy(value) for key, value in encoded.items()}
        with torch.inference_mode():
            return np.asarray(network(**inputs).logits.to(torch.float32).numpy())

    return whole, "torch"


def _exported(
    base: PreTrainedModel, tokenizer: PreTrainedTokenizerBase, path: Path, cache_dir: Path | None
) -> OnnxEncoder:
    """The encoder of ``path`` on ONNX Runtime, exported to ``cache_dir`` once (or for this
    load only). Its cache file is the one the embedder would make of the same directory: the
    same network."""
    if cache_dir is None:
        with tempfile.TemporaryDirectory(prefix="rag-reranker-") as scratch:
            exported = Path(scratch) / "model.onnx"
            export_onnx(base, tokenizer, exported)
            return OnnxEncoder(exported)
    cached = onnx_cache_path(path, cache_dir)
    if not cached.is_file():
        export_onnx(base, tokenizer, cached)
    return OnnxEncoder(cached)


class CrossEncoderReranker:
    """The :class:`~handlers.rag.rerank.base.Reranker` of a local :class:`CrossEncoder`."""

    def __init__(self, model: CrossEncoder, *, batch_size: int = 16, max_tokens: int = 512):
        if batch_size < 1:
            raise ValueError(f"batch_size must be at least 1, got {batch_size}")
        if max_tokens < 16:
            raise ValueError(f"max_tokens must be at least 16, got {max_tokens}")
        self._model = model
        self._batch_size = batch_size
        self._max_tokens = min(max_tokens, model.window)
        self._workers = WorkerThreads(1, "reranker")
        self._closed = False
        self.batches_run = 0
        """Forward passes run so far."""

    @classmethod
    def load(
        cls,
        path: Path,
        *,
        batch_size: int = 16,
        max_tokens: int = 512,
        runtime: EmbeddingRuntime = "auto",
        cache_dir: Path | None = None,
    ) -> Self:
        """Loads the model in ``path`` (see :func:`load_cross_encoder`). Blocking."""
        model = load_cross_encoder(path, runtime=runtime, cache_dir=cache_dir)
        return cls(model, batch_size=batch_size, max_tokens=max_tokens)

    @property
    def name(self) -> str:
        return self._model.path.name

    @property
    def runtime(self) -> str:
        """``onnxruntime`` or ``torch``: what runs the encoder."""
        return self._model.runtime

    @property
    def max_tokens(self) -> int:
        """Tokens of a pair the model reads (the setting, capped at the model's window)."""
        return self._max_tokens

    async def rerank(self, query: str, passages: Sequence[str]) -> list[float]:
        if self._closed:
            raise RerankError("the reranker is closed")
        if not passages:
            return []
        query, texts = clipped(query, passages)
        scores = np.empty(len(texts), dtype=np.float64)
        for batch in self._batches(texts):
            try:
                batch_scores = await self._workers.run(
                    self._model.scores, query, [texts[i] for i in batch], self._max_tokens
                )
            except RuntimeError as exc:  # torch's errors, or a closed worker pool
                raise RerankError(f"the cross-encoder failed: {exc}") from exc
            self.batches_run += 1
            scores[batch] = batch_scores
        if not np.isfinite(scores).all():
            raise RerankError("the cross-encoder gave a score that is not a number")
        return [float(score) for score in scores]

    async def close(self) -> None:
        self._closed = True
        await self._workers.close()

    def _batches(self, texts: list[str]) -> list[list[int]]:
        """Indices of ``texts`` in passes of ``batch_size``, by length (characters stand in for
        tokens: measuring tokens would take a tokenizer pass on the event loop)."""
        order = sorted(range(len(texts)), key=lambda index: len(texts[index]))
        count = math.ceil(len(order) / self._batch_size)
        return [order[i * self._batch_size : (i + 1) * self._batch_size] for i in range(count)]
