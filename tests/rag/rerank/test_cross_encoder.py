"""The local cross-encoder: loaded from a model directory by the real loading code, its scores
are the model's own for each (query, passage) pair, in the passages' order, whatever the
batching, and its work is bounded and off the event loop."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import threading
from collections.abc import AsyncIterator, Mapping
from pathlib import Path

import numpy as np
import pytest
import torch
from transformers import AutoModelForSequenceClassification, AutoTokenizer

from handlers.rag.rerank.base import MAX_PASSAGE_CHARS, MAX_QUERY_CHARS, Reranker, RerankError
from handlers.rag.rerank.cross_encoder import CrossEncoderReranker, load_cross_encoder
from tests.rag.rerank.tiny_cross_encoder import WINDOW, build_tiny_cross_encoder

QUERY = "what is the capital of france"
PASSAGES = [
    "paris is the capital of france",
    "the cat is on the moon",
    "rain",
    "berlin germany population people live " * 30,  # longer than the window: truncated
    "refund policy: return within 30 days of purchase",
    "where do people live",
    "water",
]


def expected_scores(path: Path, query: str, passages: list[str], max_tokens: int) -> list[float]:
    """The model's scores computed directly with transformers, one pair at a time."""
    tokenizer = AutoTokenizer.from_pretrained(path, local_files_only=True)
    network = AutoModelForSequenceClassification.from_pretrained(path, local_files_only=True)
    network.eval()
    scores = []
    for passage in passages:
        encoded = tokenizer(
            query, passage, truncation="longest_first", max_length=max_tokens, return_tensors="pt"
        )
        with torch.inference_mode():
            logits = network(**encoded).logits[0]
        if logits.shape[0] == 1:
            scores.append(float(torch.sigmoid(logits[0])))
        else:
            scores.append(float(torch.softmax(logits, dim=0)[1]))
    return scores


@pytest.fixture
async def reranker(tiny_cross_encoder: Path) -> AsyncIterator[CrossEncoderReranker]:
    reranker = CrossEncoderReranker.load(tiny_cross_encoder, batch_size=3, max_tokens=512)
    yield reranker
    await reranker.close()


async def test_scores_are_the_models_own_in_the_passages_order(
    reranker: CrossEncoderReranker, tiny_cross_encoder: Path
) -> None:
    assert isinstance(reranker, Reranker)
    assert reranker.name == tiny_cross_encoder.name
    assert reranker.runtime == "onnxruntime"  # a BERT model, exported for this load
    assert reranker.max_tokens == WINDOW  # 512 asked, capped at the model's window
    scores = await reranker.rerank(QUERY, PASSAGES)
    expected = expected_scores(tiny_cross_encoder, QUERY, PASSAGES, WINDOW)
    # padded batches of 3, by length, against unpadded single pairs
    np.testing.assert_allclose(scores, expected, atol=1e-5)
    assert len(set(np.round(scores, 6))) == len(PASSAGES)  # distinct: the order is checked
    assert all(0 <= score <= 1 for score in scores)
    assert reranker.batches_run == 3  # 7 passages, 3 per pass


async def test_a_two_label_model_scores_the_relevant_class(
    tiny_two_label_cross_encoder: Path,
) -> None:
    reranker = CrossEncoderReranker.load(tiny_two_label_cross_encoder, batch_size=16)
    try:
        scores = await reranker.rerank(QUERY, PASSAGES)
    finally:
        await reranker.close()
    expected = expected_scores(tiny_two_label_cross_encoder, QUERY, PASSAGES, WINDOW)
    np.testing.assert_allclose(scores, expected, atol=1e-5)


async def test_pairs_are_cut_to_max_tokens_and_passages_to_their_character_limit(
    tiny_cross_encoder: Path,
) -> None:
    reranker = CrossEncoderReranker.load(tiny_cross_encoder, batch_size=4, max_tokens=24)
    huge = "paris " * 200_000  # 1.2 MB: cut to MAX_PASSAGE_CHARS before tokenizing
    try:
        scores = await reranker.rerank(QUERY * 1000, [*PASSAGES, huge])
    finally:
        await reranker.close()
    expected = expected_scores(
        tiny_cross_encoder,
        (QUERY * 1000)[:MAX_QUERY_CHARS],
        [*PASSAGES, huge[:MAX_PASSAGE_CHARS]],
        24,
    )
    np.testing.assert_allclose(scores, expected, atol=1e-5)


async def test_no_passages_is_no_work(reranker: CrossEncoderReranker) -> None:
    assert await reranker.rerank(QUERY, []) == []
    assert reranker.batches_run == 0


async def test_the_model_runs_in_the_worker_thread_and_concurrent_calls_agree(
    tiny_cross_encoder: Path,
) -> None:
    threads: set[str] = set()
    model = load_cross_encoder(tiny_cross_encoder)

    def recording(encoded: Mapping[str, np.ndarray]) -> np.ndarray:
        threads.add(threading.current_thread().name)
        return model.logits(encoded)

    reranker = CrossEncoderReranker(dataclasses.replace(model, logits=recording), batch_size=3)
    try:
        alone = await reranker.rerank(QUERY, PASSAGES)
        together = await asyncio.gather(
            reranker.rerank(QUERY, PASSAGES), reranker.rerank("rain", PASSAGES[::-1])
        )
    finally:
        await reranker.close()
    assert together[0] == alone
    assert together[1] != alone[::-1]  # another query, other scores
    assert threads and all(name.startswith("reranker") for name in threads)


async def test_torch_and_onnx_runtime_give_the_same_scores(
    tiny_cross_encoder: Path, tmp_path: Path
) -> None:
    on_torch = CrossEncoderReranker.load(tiny_cross_encoder, runtime="torch")
    cached = CrossEncoderReranker.load(tiny_cross_encoder, cache_dir=tmp_path / "models")
    again = CrossEncoderReranker.load(
        tiny_cross_encoder, runtime="onnxruntime", cache_dir=tmp_path / "models"
    )
    try:
        assert (on_torch.runtime, cached.runtime, again.runtime) == ("torch",) + (
            "onnxruntime",
        ) * 2
        assert len(list((tmp_path / "models").iterdir())) == 1  # exported once, then reused
        torch_scores = await on_torch.rerank(QUERY, PASSAGES)
        np.testing.assert_allclose(await cached.rerank(QUERY, PASSAGES), torch_scores, atol=1e-5)
        np.testing.assert_allclose(await again.rerank(QUERY, PASSAGES), torch_scores, atol=1e-5)
    finally:
        for reranker in (on_torch, cached, again):
            await reranker.close()


async def test_a_closed_reranker_refuses_work(tiny_cross_encoder: Path) -> None:
    reranker = CrossEncoderReranker.load(tiny_cross_encoder)
    await reranker.close()
    with pytest.raises(RerankError, match="closed"):
        await reranker.rerank(QUERY, PASSAGES)


def test_loading_a_directory_without_a_model_fails_with_its_name(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="no cross-encoder in"):
        load_cross_encoder(tmp_path / "missing")
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / "config.json").write_text("{not json", encoding="utf-8")
    with pytest.raises(ValueError, match="cannot load a cross-encoder from"):
        load_cross_encoder(tmp_path / "broken")


def test_a_classifier_of_more_labels_is_not_a_cross_encoder(tmp_path: Path) -> None:
    three = build_tiny_cross_encoder(tmp_path / "three-labels", labels=3)
    with pytest.raises(ValueError, match="3 labels"):
        load_cross_encoder(three)


def test_weights_that_do_not_fit_the_configuration_fail_with_the_directory_name(
    tiny_cross_encoder: Path, tmp_path: Path
) -> None:
    copy = tmp_path / "mismatched"
    copy.mkdir()
    for file in tiny_cross_encoder.iterdir():
        (copy / file.name).write_bytes(file.read_bytes())
    config = json.loads((copy / "config.json").read_text(encoding="utf-8"))
    config["id2label"] = {"0": "a", "1": "b", "2": "c"}
    config["label2id"] = {"a": 0, "b": 1, "c": 2}
    (copy / "config.json").write_text(json.dumps(config), encoding="utf-8")
    with pytest.raises(ValueError, match=r"cannot load a cross-encoder from .*mismatched"):
        load_cross_encoder(copy)
