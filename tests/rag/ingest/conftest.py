"""Fixtures of the ingestion tests: the real all-MiniLM-L6-v2 model, loaded once."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from transformers import PreTrainedTokenizerBase

from handlers.rag.ingest.embedder import LoadedModel, TransformersEmbedder, load_model


@pytest.fixture(scope="session")
def minilm() -> LoadedModel:
    return load_model("all-MiniLM-L6-v2")


@pytest.fixture(scope="session")
def tokenizer(minilm: LoadedModel) -> PreTrainedTokenizerBase:
    return minilm.tokenizer


@pytest.fixture
async def embedder(minilm: LoadedModel) -> AsyncIterator[TransformersEmbedder]:
    """A fresh embedder (own queue, worker and counters) over the shared model."""
    embedder = TransformersEmbedder(minilm)
    yield embedder
    await embedder.close()
