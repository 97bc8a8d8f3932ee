"""Fixtures of the reranker tests: tiny cross-encoders, built once per session."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.rag.rerank.tiny_cross_encoder import build_tiny_cross_encoder


@pytest.fixture(scope="session")
def tiny_cross_encoder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny random cross-encoder with one output (a relevance logit)."""
    return build_tiny_cross_encoder(tmp_path_factory.mktemp("cross-encoder"))


@pytest.fixture(scope="session")
def tiny_two_label_cross_encoder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny random cross-encoder with two outputs (not relevant, relevant)."""
    return build_tiny_cross_encoder(tmp_path_factory.mktemp("cross-encoder-2"), labels=2)
