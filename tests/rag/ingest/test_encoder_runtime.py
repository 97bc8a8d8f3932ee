"""The embedding network on ONNX Runtime and on torch: same hidden states, the export's cache,
and what happens when the network cannot be exported."""

from __future__ import annotations

import logging
import shutil
from pathlib import Path

import numpy as np
import pytest
from transformers import PreTrainedModel

from handlers.rag.ingest.embedder import LoadedModel, load_model, resolve_model_path
from handlers.rag.ingest.encoder_runtime import OnnxEncoder, TorchEncoder, onnx_cache_path

TEXTS = [
    "query",
    "a medium sized sentence about mountains and rivers",
    "x " * 200,
    "a short one, padded to the longest",
]


def test_onnx_and_torch_give_the_same_hidden_states_for_a_padded_batch(
    minilm: LoadedModel, minilm_network: PreTrainedModel
) -> None:
    assert isinstance(minilm.encoder, OnnxEncoder)
    encoded = minilm.tokenizer(TEXTS, padding=True, truncation=True, return_tensors="np")
    onnx = minilm.encoder.last_hidden_state(encoded)
    torch_states = TorchEncoder(minilm_network).last_hidden_state(encoded)
    assert onnx.shape == torch_states.shape == (4, encoded["input_ids"].shape[1], 384)
    assert onnx.dtype == np.float32
    mask = encoded["attention_mask"].astype(bool)  # padded positions may differ; unused
    np.testing.assert_allclose(onnx[mask], torch_states[mask], atol=1e-4)


def test_the_export_is_cached_and_reused(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    cache = tmp_path / "models"
    caplog.set_level(logging.INFO, logger="handlers.rag.ingest.embedder")
    first = load_model("all-MiniLM-L6-v2", cache_dir=cache)
    (exported,) = cache.iterdir()  # nothing else: no partial file left behind
    assert exported == onnx_cache_path(resolve_model_path("all-MiniLM-L6-v2"), cache)
    assert "runtime=onnxruntime (exported to" in caplog.text
    written = exported.stat().st_mtime_ns
    caplog.clear()
    second = load_model("all-MiniLM-L6-v2", cache_dir=cache)
    assert f"runtime=onnxruntime (cache {exported})" in caplog.text
    assert exported.stat().st_mtime_ns == written
    encoded = first.tokenizer(TEXTS, padding=True, return_tensors="np")
    np.testing.assert_array_equal(
        first.encoder.last_hidden_state(encoded), second.encoder.last_hidden_state(encoded)
    )


def test_a_changed_model_gets_a_new_cache_file(tmp_path: Path) -> None:
    model = tmp_path / "model"
    shutil.copytree(resolve_model_path("all-MiniLM-L6-v2"), model)
    before = onnx_cache_path(model, tmp_path / "cache")
    assert before == onnx_cache_path(model, tmp_path / "cache")  # stable
    config = model / "config.json"
    config.write_text(config.read_text().replace('"hidden_act"', '"hidden_act" '))
    assert onnx_cache_path(model, tmp_path / "cache") != before


def test_runtime_torch_runs_the_transformers_model(model_cache: Path) -> None:
    loaded = load_model("all-MiniLM-L6-v2", runtime="torch", cache_dir=model_cache)
    assert isinstance(loaded.encoder, TorchEncoder)


def test_a_failed_export_stops_onnxruntime_and_auto_falls_back_to_torch(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    not_a_directory = tmp_path / "cache"
    not_a_directory.write_text("a file where the cache directory should be")
    with pytest.raises(ValueError, match="RAG_EMBEDDING_RUNTIME=torch runs the model"):
        load_model("all-MiniLM-L6-v2", runtime="onnxruntime", cache_dir=not_a_directory)
    caplog.set_level(logging.WARNING, logger="handlers.rag.ingest.embedder")
    loaded = load_model("all-MiniLM-L6-v2", runtime="auto", cache_dir=not_a_directory)
    assert loaded.encoder.name == "torch"
    assert "embedding model runs on torch:" in caplog.text


def test_an_unknown_runtime_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown embedding runtime 'cuda'"):
        load_model("all-MiniLM-L6-v2", runtime="cuda")  # type: ignore[arg-type]
