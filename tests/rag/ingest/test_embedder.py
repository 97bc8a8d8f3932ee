"""The batching embedder with the real all-MiniLM-L6-v2 model."""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from transformers import PreTrainedModel

from handlers.rag.ingest.chunking import max_chunk_tokens
from handlers.rag.ingest.embedder import (
    EmbeddingError,
    LoadedModel,
    TransformersEmbedder,
    load_model,
)
from handlers.rag.ingest.encoder_runtime import TorchEncoder
from handlers.rag.stores.base import Vectors
from tests.rag.polling import wait_until

LONG_TEXT = " ".join(
    f"Sentence {n} describes how rivers carve valleys over many thousands of years."
    for n in range(60)
)  # far beyond the 256-token window


def direct_embedding(minilm: LoadedModel, network: PreTrainedModel, text: str) -> Vectors:
    """The reference: one text at a time, no padding, straight through the transformers model
    run by torch."""
    encoded = minilm.tokenizer(
        [text], truncation=True, max_length=256, return_tensors="pt", verbose=False
    )
    with torch.inference_mode():
        hidden = network(**encoded).last_hidden_state[0]
    mean = hidden.mean(dim=0)
    vector: Vectors = (mean / mean.norm()).numpy()
    return vector


def test_model_properties(minilm: LoadedModel) -> None:
    embedder = TransformersEmbedder(minilm)
    assert embedder.dimension == 384
    assert embedder.max_tokens == 256
    assert max_chunk_tokens(embedder.max_tokens, embedder.tokenizer) == 254
    assert embedder.count_tokens("Hello, world!") == 4
    assert embedder.count_tokens("") == 0


async def test_vectors_are_unit_length_float32_rows(embedder: TransformersEmbedder) -> None:
    vectors = await embedder.embed(["first text", "second, longer text to embed", ""])
    assert vectors.shape == (3, 384)
    assert vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)


@pytest.mark.parametrize("runtime", ["onnxruntime", "torch"])
async def test_vectors_match_a_direct_unbatched_computation(
    minilm: LoadedModel, minilm_network: PreTrainedModel, runtime: str
) -> None:
    encoder = minilm.encoder if runtime == "onnxruntime" else TorchEncoder(minilm_network)
    assert encoder.name == runtime
    embedder = TransformersEmbedder(dataclasses.replace(minilm, encoder=encoder))
    # Very different lengths: padded together, or split into passes by length.
    texts = [
        "query",
        "a medium sized sentence about mountains and rivers",
        LONG_TEXT,
        "x " * 60,
        "two words",
        "a sentence of eight words, padded in its pass",
    ]
    try:
        vectors = await embedder.embed(texts)
    finally:
        await embedder.close()
    for text, vector in zip(texts, vectors, strict=True):
        np.testing.assert_allclose(
            vector, direct_embedding(minilm, minilm_network, text), atol=1e-5
        )


async def test_similar_sentences_score_higher_than_unrelated_ones(
    embedder: TransformersEmbedder,
) -> None:
    fox, similar, unrelated = await embedder.embed(
        [
            "The quick brown fox jumps over the lazy dog.",
            "A fast auburn fox leaps over a sleepy hound.",
            "Quarterly tax returns must be filed before the deadline.",
        ]
    )
    assert float(fox @ similar) > 0.5
    assert float(fox @ unrelated) < 0.2


async def test_empty_input_gives_an_empty_array(embedder: TransformersEmbedder) -> None:
    vectors = await embedder.embed([])
    assert vectors.shape == (0, 384) and vectors.dtype == np.float32
    assert embedder.batches_run == 0


async def test_a_string_is_not_a_sequence_of_texts(embedder: TransformersEmbedder) -> None:
    with pytest.raises(TypeError, match="sequence of strings"):
        await embedder.embed("just one string")
    with pytest.raises(TypeError, match="sequence of strings"):
        await embedder.embed(["fine", 3])  # type: ignore[list-item]


async def test_concurrent_calls_are_batched_and_each_gets_its_own_rows(
    embedder: TransformersEmbedder,
) -> None:
    texts = [f"question number {n} about topic {n % 7}" for n in range(50)]
    results = await asyncio.gather(*(embedder.embed([text]) for text in texts))
    assert embedder.batches_run <= 4  # 50 calls, batches of up to 32
    alone = await embedder.embed(texts)  # one call, the same texts, in order
    for result, expected in zip(results, alone, strict=True):
        assert result.shape == (1, 384)
        np.testing.assert_allclose(result[0], expected, atol=1e-5)


async def test_a_large_call_is_split_into_batches(minilm: LoadedModel) -> None:
    embedder = TransformersEmbedder(minilm, batch_size=8)
    try:
        texts = [f"text {n}" for n in range(20)]
        vectors = await embedder.embed(texts)
        assert embedder.batches_run == 3
        np.testing.assert_allclose(vectors[13], (await embedder.embed(["text 13"]))[0], atol=1e-5)
    finally:
        await embedder.close()


async def test_a_short_query_does_not_wait_for_a_large_upload(minilm: LoadedModel) -> None:
    embedder = TransformersEmbedder(minilm, batch_size=8)
    try:
        upload = asyncio.create_task(embedder.embed([f"chunk {n} " * 20 for n in range(48)]))
        await wait_until(lambda: embedder.batches_run >= 1)
        await embedder.embed(["short query"])
        assert not upload.done()  # the query went ahead of the upload's remaining batches
        assert (await upload).shape == (48, 384)
    finally:
        await embedder.close()


async def test_the_event_loop_keeps_running_while_the_model_works(
    embedder: TransformersEmbedder,
) -> None:
    gaps: list[float] = []
    stop = asyncio.Event()

    async def ticker() -> None:
        last = time.perf_counter()
        while not stop.is_set():
            await asyncio.sleep(0.005)
            now = time.perf_counter()
            gaps.append(now - last)
            last = now

    ticking = asyncio.create_task(ticker())
    started = time.perf_counter()
    await embedder.embed([LONG_TEXT] * 32)
    elapsed = time.perf_counter() - started
    stop.set()
    await ticking
    assert elapsed > 0.3  # the model really worked for a while
    assert len(gaps) > 5
    assert max(gaps) < max(0.15, elapsed / 4), f"loop blocked {max(gaps):.3f}s of {elapsed:.3f}s"


class FailingOnTrigger:
    """The real network, except that it fails on any batch containing the trigger token."""

    name = "failing on a trigger"

    def __init__(self, minilm: LoadedModel, trigger: str) -> None:
        self.inner = minilm.encoder
        (self.trigger_id,) = minilm.tokenizer(trigger, add_special_tokens=False)["input_ids"]

    def last_hidden_state(self, encoded: Mapping[str, np.ndarray]) -> np.ndarray:
        if bool((encoded["input_ids"] == self.trigger_id).any()):
            raise RuntimeError("simulated model failure")
        return self.inner.last_hidden_state(encoded)


async def test_a_failing_batch_fails_only_its_callers(minilm: LoadedModel) -> None:
    flaky = dataclasses.replace(minilm, encoder=FailingOnTrigger(minilm, "volcano"))
    embedder = TransformersEmbedder(flaky, batch_size=2, max_wait_ms=50)
    try:
        results = await asyncio.gather(
            embedder.embed(["the volcano erupted"]),  # batch 1, fails
            embedder.embed(["a calm lake"]),  # batch 1, fails with it
            embedder.embed(["green hills"]),  # batch 2
            embedder.embed(["blue sky"]),  # batch 2
            return_exceptions=True,
        )
        assert embedder.batches_run == 2
        for failed in results[:2]:
            assert isinstance(failed, EmbeddingError)
            assert str(failed) == "embedding failed: simulated model failure"
        for served in results[2:]:
            assert isinstance(served, np.ndarray) and served.shape == (1, 384)
        assert (await embedder.embed(["still working"])).shape == (1, 384)
    finally:
        await embedder.close()


async def test_close_fails_waiting_calls_and_refuses_new_ones(minilm: LoadedModel) -> None:
    embedder = TransformersEmbedder(minilm, batch_size=4)
    pending = asyncio.create_task(embedder.embed([LONG_TEXT] * 16))
    await wait_until(lambda: embedder.batches_run >= 1)
    await embedder.close()
    with pytest.raises(EmbeddingError, match="the embedder is closed"):
        await pending
    with pytest.raises(RuntimeError, match="the embedder is closed"):
        await embedder.embed(["too late"])
    await embedder.close()  # closing twice is harmless


async def test_close_of_an_unused_embedder_is_clean(minilm: LoadedModel) -> None:
    await TransformersEmbedder(minilm).close()


def test_load_by_name_and_by_directory(minilm: LoadedModel, model_cache: Path) -> None:
    embedder = TransformersEmbedder.load(
        "sentence-transformers/all-MiniLM-L6-v2", batch_size=4, cache_dir=model_cache
    )
    assert (embedder.dimension, embedder.max_tokens) == (384, 256)
    directory = Path(minilm.tokenizer.name_or_path)
    assert load_model(str(directory), runtime="torch").window == 256


def test_unknown_model_name_is_refused_with_what_is_accepted() -> None:
    with pytest.raises(
        ValueError,
        match=r"unknown embedding model 'bert-base-uncased'.*"
        r"'all-MiniLM-L6-v2' or 'sentence-transformers/all-MiniLM-L6-v2'",
    ):
        load_model("bert-base-uncased")


def test_a_directory_without_a_model_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="cannot load an embedding model from"):
        load_model(str(tmp_path))


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"batch_size": 0}, "batch_size must be at least 1"),
        ({"max_wait_ms": -1.0}, "max_wait_ms must be >= 0"),
    ],
)
def test_invalid_options_are_refused(
    minilm: LoadedModel, options: dict[str, Any], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        TransformersEmbedder(minilm, **options)
