"""Queries before ingestion in the embedder: background calls (``embed(..., background=True)``)
run in small slices only while no query waits, still finish with the same vectors, stop when
their caller is cancelled, and fail only their own caller.

Ordering, never timing: each test records the order in which calls complete."""

from __future__ import annotations

import asyncio
import dataclasses
import os
import threading
from collections.abc import Mapping

import numpy as np
import pytest

from handlers.rag.ingest.embedder import EmbeddingError, LoadedModel, TransformersEmbedder
from handlers.rag.stores.base import Vectors
from tests.rag.ingest.test_embedder import FailingOnTrigger
from tests.rag.polling import wait_until

CHUNK = (
    "The quarterly report describes revenue, costs and the outlook for the coming year, "
    "with a section on hiring and one on the new offices. "
)


def document(chunks: int) -> list[str]:
    """Distinct chunk-sized texts (about 60 tokens each)."""
    return [f"Part {number}. {CHUNK * 2}" for number in range(chunks)]


async def until_background_started(embedder: TransformersEmbedder) -> None:
    """Returns once the embedder has run a first slice of background work."""
    await wait_until(lambda: embedder.background_batches_run >= 1)


async def test_a_query_is_answered_before_a_large_background_call_finishes(
    minilm: LoadedModel,
) -> None:
    embedder = TransformersEmbedder(minilm, background_tokens=64)  # one chunk per slice
    texts = document(120)
    finished: list[str] = []

    async def call(name: str, texts: list[str], background: bool) -> Vectors:
        vectors = await embedder.embed(texts, background=background)
        finished.append(name)
        return vectors

    try:
        ingestion = asyncio.create_task(call("ingestion", texts, True))
        await until_background_started(embedder)
        queries = [await call(f"query {n}", [f"question number {n}"], False) for n in range(3)]
        slices_when_answered = embedder.background_batches_run
        await ingestion
        assert finished == ["query 0", "query 1", "query 2", "ingestion"]
        # the ingestion was cut into slices, most of them run after the queries
        assert slices_when_answered < len(texts) / 2
        assert embedder.background_batches_run == len(texts)
        assert all(vectors.shape == (1, 384) for vectors in queries)
    finally:
        await embedder.close()


async def test_queued_queries_all_go_before_the_next_background_slice(
    minilm: LoadedModel,
) -> None:
    embedder = TransformersEmbedder(minilm, background_tokens=64)
    try:
        ingestion = asyncio.create_task(embedder.embed(document(40), background=True))
        await until_background_started(embedder)
        before = embedder.background_batches_run
        await asyncio.gather(*(embedder.embed([f"query {n}"]) for n in range(8)))
        # at most the slice that was running when they arrived, and the one measuring step
        assert embedder.background_batches_run <= before + 1
        await ingestion
    finally:
        await embedder.close()


class GatedEncoder:
    """The real network, logging which thread runs each pass; a pass with the gate token waits
    until the test opens the gate."""

    name = "gated"

    def __init__(self, minilm: LoadedModel, gate_word: str) -> None:
        self.inner = minilm.encoder
        (self.gate_id,) = minilm.tokenizer(gate_word, add_special_tokens=False)["input_ids"]
        self.gate = threading.Event()
        self.passes: list[str] = []

    def last_hidden_state(self, encoded: Mapping[str, np.ndarray]) -> np.ndarray:
        gated = bool((encoded["input_ids"] == self.gate_id).any())
        if gated:
            self.gate.wait(60)
        self.passes.append("gated" if gated else threading.current_thread().name.split("_")[0])
        return self.inner.last_hidden_state(encoded)


async def test_no_background_slice_starts_while_a_query_is_unfinished(
    minilm: LoadedModel,
) -> None:
    gated = GatedEncoder(minilm, "volcano")
    embedder = TransformersEmbedder(dataclasses.replace(minilm, encoder=gated))
    try:
        query = asyncio.create_task(embedder.embed(["the volcano erupted"]))
        await wait_until(lambda: embedder.batches_run == 1)  # its pass waits at the gate
        ingestion = asyncio.create_task(embedder.embed(document(5), background=True))
        for _ in range(20):  # every chance to start a slice, were it allowed to
            await asyncio.sleep(0.005)
        assert embedder.background_batches_run == 0
        gated.gate.set()
        await query
        await ingestion
        slices = embedder.background_batches_run
        assert slices >= 1
        assert gated.passes == ["gated", *["embedder-background"] * slices]
    finally:
        gated.gate.set()
        await embedder.close()


async def test_background_vectors_equal_foreground_vectors(minilm: LoadedModel) -> None:
    texts = [*document(20), "short", "a somewhat longer sentence of a dozen words or so"]
    embedder = TransformersEmbedder(minilm, background_tokens=1)  # one text per slice
    try:
        background = await embedder.embed(texts, background=True)
        alone = np.concatenate([await embedder.embed([text]) for text in texts])
        np.testing.assert_array_equal(background, alone)  # the same passes: the same numbers
        batched = await embedder.embed(texts)  # padded passes: equal to float rounding
        np.testing.assert_allclose(background, batched, atol=2e-6)
    finally:
        await embedder.close()


async def test_slices_respect_the_token_bound(minilm: LoadedModel) -> None:
    text = "a short text"
    tokens = len(minilm.tokenizer(text, padding=False, truncation=False)["input_ids"])
    short = [text] * 64
    bound = 4 * tokens + 1  # four texts per slice
    embedder = TransformersEmbedder(minilm, background_tokens=bound)
    try:
        vectors = await embedder.embed(short, background=True)
        assert embedder.background_batches_run == 64 // 4
        np.testing.assert_allclose(vectors, await embedder.embed(short), atol=2e-6)
    finally:
        await embedder.close()


async def test_a_cancelled_background_call_drops_its_remaining_slices(
    minilm: LoadedModel,
) -> None:
    embedder = TransformersEmbedder(minilm, background_tokens=64)
    texts = document(200)
    try:
        ingestion = asyncio.create_task(embedder.embed(texts, background=True))
        await until_background_started(embedder)
        ingestion.cancel()
        with pytest.raises(asyncio.CancelledError):
            await ingestion
        # a query after the cancellation is served, then nothing is left to run
        assert (await embedder.embed(["still answering"])).shape == (1, 384)
        run = embedder.background_batches_run
        assert run < len(texts) / 4
        assert (await embedder.embed(["and again"])).shape == (1, 384)
        assert embedder.background_batches_run == run
    finally:
        await embedder.close()


async def test_a_failing_background_slice_fails_only_its_caller(minilm: LoadedModel) -> None:
    flaky = dataclasses.replace(minilm, encoder=FailingOnTrigger(minilm, "volcano"))
    embedder = TransformersEmbedder(flaky, background_tokens=64)
    poisoned = [*document(6), "the volcano erupted", *document(3)]
    try:
        failing = asyncio.create_task(embedder.embed(poisoned, background=True))
        healthy = asyncio.create_task(embedder.embed(document(5), background=True))
        query = await embedder.embed(["a calm lake"])
        with pytest.raises(EmbeddingError, match="simulated model failure"):
            await failing
        assert (await healthy).shape == (5, 384)
        assert query.shape == (1, 384)
        with pytest.raises(EmbeddingError, match="simulated model failure"):
            await embedder.embed(["volcano"])  # a failing query fails its own caller
        assert (await embedder.embed(["green hills"], background=True)).shape == (1, 384)
    finally:
        await embedder.close()


async def test_close_fails_a_background_call_in_progress(minilm: LoadedModel) -> None:
    embedder = TransformersEmbedder(minilm, background_tokens=64)
    ingestion = asyncio.create_task(embedder.embed(document(100), background=True))
    await until_background_started(embedder)
    await embedder.close()
    with pytest.raises(EmbeddingError, match="the embedder is closed"):
        await ingestion


def thread_nice(name_prefix: str) -> int:
    """The nice value of the live thread whose name starts with ``name_prefix``."""
    (thread,) = [t for t in threading.enumerate() if t.name.startswith(name_prefix)]
    assert thread.native_id is not None
    return os.getpriority(os.PRIO_PROCESS, thread.native_id)


@pytest.mark.parametrize("nice", [19, 0])
async def test_the_background_thread_runs_at_the_nice_value(minilm: LoadedModel, nice: int) -> None:
    process = os.getpriority(os.PRIO_PROCESS, 0)
    embedder = TransformersEmbedder(minilm, background_nice=nice)
    try:
        await embedder.embed(["a query"])
        await embedder.embed(["an upload's chunk"], background=True)
        assert thread_nice("embedder-background") == max(process, nice)
        assert thread_nice("embedder_") == process  # queries keep the process's priority
    finally:
        await embedder.close()


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"background_tokens": 0}, "background_tokens must be at least 1, got 0"),
        ({"background_nice": -1}, "background_nice must be 0 to 19, got -1"),
        ({"background_nice": 20}, "background_nice must be 0 to 19, got 20"),
    ],
)
def test_invalid_background_options_are_refused(
    minilm: LoadedModel, options: dict[str, int], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        TransformersEmbedder(minilm, **options)
