"""The reranker the settings ask for, built (and its model loaded) at the service's start."""

from __future__ import annotations

import logging
from pathlib import Path

from handlers.rag.ingest.base import EmbeddingRuntime
from handlers.rag.rerank.base import Reranker
from handlers.rag.rerank.settings import RerankSettings

__all__ = ["build_reranker"]

logger = logging.getLogger(__name__)


def build_reranker(
    settings: RerankSettings,
    *,
    runtime: EmbeddingRuntime = "auto",
    cache_dir: Path | None = None,
) -> Reranker | None:
    """The remote or local reranker of ``settings`` (see :attr:`RerankSettings.choice`), or
    ``None``. Blocking (a local model is loaded): call it from a worker thread. Raises
    ``ValueError`` naming the model directory when it cannot be loaded: a configured reranker
    that is missing is an error, also under ``RAG_RERANK=auto``. ``runtime`` and ``cache_dir``:
    the embedder's (``RAG_EMBEDDING_RUNTIME``, ``RAG_DATA_DIR/models``), see
    :func:`~handlers.rag.rerank.cross_encoder.load_cross_encoder`."""
    choice = settings.choice
    if choice == "remote":
        from handlers.rag.rerank.remote import RemoteReranker

        assert settings.rerank_url is not None
        key = settings.rerank_api_key
        reranker: Reranker = RemoteReranker(
            str(settings.rerank_url),
            model=settings.rerank_remote_model,
            api_key=key.get_secret_value() if key is not None else None,
            timeout=settings.rerank_timeout,
        )
    elif choice == "local":
        from handlers.rag.rerank.cross_encoder import CrossEncoderReranker  # imports torch

        assert settings.rerank_model is not None
        reranker = CrossEncoderReranker.load(
            settings.rerank_model,
            batch_size=settings.rerank_batch,
            max_tokens=settings.rerank_max_tokens,
            runtime=runtime,
            cache_dir=cache_dir,
        )
    else:
        logger.info(
            "no reranker: RAG_RERANK=%s, no RAG_RERANK_URL or RAG_RERANK_MODEL", settings.rerank
        )
        return None
    logger.info("reranker %s=%s candidates=%d", choice, reranker.name, settings.rerank_candidates)
    return reranker
