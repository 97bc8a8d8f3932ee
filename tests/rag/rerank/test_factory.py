"""The reranker the settings ask for: none, the endpoint's client, or the local model."""

from __future__ import annotations

from pathlib import Path

import pytest

from handlers.rag.rerank.cross_encoder import CrossEncoderReranker
from handlers.rag.rerank.factory import build_reranker
from handlers.rag.rerank.remote import RemoteReranker
from handlers.rag.rerank.settings import RerankSettings


def test_nothing_configured_is_no_reranker() -> None:
    assert build_reranker(RerankSettings.from_env({})) is None


async def test_an_endpoint_gives_its_client() -> None:
    settings = RerankSettings.from_env(
        {"RAG_RERANK_URL": "http://127.0.0.1:1/rerank", "RAG_RERANK_REMOTE_MODEL": "m"}
    )
    reranker = build_reranker(settings)
    assert isinstance(reranker, RemoteReranker)
    assert reranker.name == "m"
    await reranker.close()


async def test_a_model_directory_gives_the_local_cross_encoder(tiny_cross_encoder: Path) -> None:
    settings = RerankSettings.from_env(
        {"RAG_RERANK_MODEL": str(tiny_cross_encoder), "RAG_RERANK_MAX_TOKENS": "64"}
    )
    reranker = build_reranker(settings)
    assert isinstance(reranker, CrossEncoderReranker)
    assert reranker.max_tokens == 64
    assert len(await reranker.rerank("q", ["a", "b"])) == 2
    await reranker.close()


def test_a_configured_model_that_is_missing_is_an_error_also_in_auto(tmp_path: Path) -> None:
    settings = RerankSettings.from_env({"RAG_RERANK_MODEL": str(tmp_path / "nothing")})
    with pytest.raises(ValueError, match="no cross-encoder in"):
        build_reranker(settings)
