"""Fixtures of the generation tests: steerable generators over the tiny model (the session's
``tiny_model`` from tests/rag/conftest.py), loaded per test so that each test's event loop
owns its asyncio primitives."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.rag.generation.steering import SteeredGenerator


@contextlib.asynccontextmanager
async def steered(
    model: Path, cache_dir: Path, max_concurrent: int
) -> AsyncIterator[SteeredGenerator]:
    loaded = SteeredGenerator.load(str(model), cache_dir=cache_dir, max_concurrent=max_concurrent)
    assert isinstance(loaded, SteeredGenerator)
    try:
        yield loaded
    finally:
        if loaded.steering is not None:
            loaded.steering.gate.set()  # never leave a worker waiting at a gate
        await loaded.close()


@pytest.fixture
async def generator(tiny_model: Path, tmp_path: Path) -> AsyncIterator[SteeredGenerator]:
    """One generation at a time."""
    async with steered(tiny_model, tmp_path / "models", 1) as loaded:
        yield loaded


@pytest.fixture
async def pair_generator(tiny_model: Path, tmp_path: Path) -> AsyncIterator[SteeredGenerator]:
    """Two generations at once."""
    async with steered(tiny_model, tmp_path / "models", 2) as loaded:
        yield loaded
