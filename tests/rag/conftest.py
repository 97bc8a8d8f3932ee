"""Fixtures of the rag service tests: the real models, loaded or built once per session, and
a fresh service stack (own LanceDB directory) per test."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest

from handlers.rag.ingest.embedder import LoadedModel, load_model
from tests.rag.stack import RagStack, build_stack, quick_stopping_model
from tests.rag.tiny_models import build_tiny_causal_lm


@pytest.fixture(scope="session")
def model_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One cache of exported embedding networks for the session's loads."""
    return tmp_path_factory.mktemp("model-cache")


@pytest.fixture(scope="session")
def minilm(model_cache: Path) -> LoadedModel:
    """all-MiniLM-L6-v2 from its package, run by ONNX Runtime (the default); each test wraps
    it in its own embedder."""
    return load_model("all-MiniLM-L6-v2", cache_dir=model_cache)


@pytest.fixture(scope="session")
def tiny_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny random causal LM: it rambles until ``num_tokens``."""
    return build_tiny_causal_lm(tmp_path_factory.mktemp("tiny-lm"))


@pytest.fixture(scope="session")
def stopping_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tiny model biased towards end-of-sequence: its answers end after a few tokens."""
    return quick_stopping_model(tmp_path_factory.mktemp("tiny-lm-stopping"))


@pytest.fixture
async def stack(tmp_path: Path, minilm: LoadedModel, tiny_model: Path) -> AsyncIterator[RagStack]:
    stack = build_stack(tmp_path / "data", minilm=minilm, generator_model=tiny_model)
    yield stack
    await stack.close()


@pytest.fixture
async def client(stack: RagStack) -> AsyncIterator[httpx.AsyncClient]:
    """In-process HTTP client of the stack's application (bodies are buffered whole)."""
    transport = httpx.ASGITransport(app=stack.app)
    async with httpx.AsyncClient(transport=transport, base_url="http://rag.test") as client:
        yield client
