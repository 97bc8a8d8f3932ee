"""Fixtures of the ingestion tests: the real all-MiniLM-L6-v2 model, loaded once (``minilm``
is the rag tests' fixture)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from transformers import AutoModel, PreTrainedModel, PreTrainedTokenizerBase

from handlers.rag.ingest.embedder import LoadedModel, TransformersEmbedder, resolve_model_path


@pytest.fixture(scope="session")
def minilm_network() -> PreTrainedModel:
    """The transformers model itself, run by torch: the reference the embedder is held to."""
    network = AutoModel.from_pretrained(
        resolve_model_path("all-MiniLM-L6-v2"), local_files_only=True
    )
    network.eval()
    reference: PreTrainedModel = network
    return reference


@pytest.fixture(scope="session")
def tokenizer(minilm: LoadedModel) -> PreTrainedTokenizerBase:
    return minilm.tokenizer


@pytest.fixture
async def embedder(minilm: LoadedModel) -> AsyncIterator[TransformersEmbedder]:
    """A fresh embedder (own queue, worker and counters) over the shared model."""
    embedder = TransformersEmbedder(minilm)
    yield embedder
    await embedder.close()
