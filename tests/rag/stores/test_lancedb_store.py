"""What only the LanceDB store promises: failed writes and crashes leave the old state, the
vector index is built in the background, tables can share a directory."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import lancedb
import numpy as np
import pytest
from lancedb.table import AsyncTable

from handlers.rag.documents import Chunk
from handlers.rag.stores.base import StoreError
from handlers.rag.stores.lancedb_store import LanceDbStore
from tests.rag.polling import wait_until
from tests.rag.stores.conftest import DIMENSION
from tests.rag.stores.corpus import (
    CHUNKS_PER_DOCUMENT,
    T0,
    TEXTS,
    a_document,
    synthetic_documents,
    unit_vectors,
)


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[LanceDbStore]:
    store = LanceDbStore(tmp_path / "lancedb", DIMENSION, index_threshold=300)
    await store.open()
    yield store
    await store.close()


async def raw_table(directory: Path, name: str) -> AsyncTable:
    connection = await lancedb.connect_async(directory)
    return await connection.open_table(name)


async def test_a_failed_write_keeps_the_old_document(
    store: LanceDbStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    old, old_chunks, old_vectors = a_document("old", "notes.txt", DIMENSION, seed=1)
    await store.replace_document(old, old_chunks, old_vectors)
    real_add = AsyncTable.add
    calls = 0

    async def add_then_fail(self: AsyncTable, data: Any, **kwargs: Any) -> Any:
        nonlocal calls
        calls += 1
        if calls == 2:  # the document row, after the chunks were written
            raise OSError("disk full")
        return await real_add(self, data, **kwargs)

    monkeypatch.setattr(AsyncTable, "add", add_then_fail)
    record, chunks, vectors = a_document("new", "notes.txt", DIMENSION, minutes=1, seed=2)
    with pytest.raises(StoreError, match="disk full"):
        await store.replace_document(record, chunks, vectors)
    monkeypatch.undo()

    assert await store.list_documents() == [old]
    hits = await store.search(TEXTS[0], vectors[0], 10)
    assert {hit.chunk.document_id for hit in hits} == {"old"}
    chunk_table = await raw_table(store.directory, "chunks")
    assert await chunk_table.count_rows() == len(old_chunks)  # the new chunks were removed


async def test_open_keeps_the_newest_complete_document_of_each_filename(tmp_path: Path) -> None:
    directory = tmp_path / "lancedb"
    store = LanceDbStore(directory, DIMENSION)
    await store.open()
    current, current_chunks, _ = a_document("current", "notes.txt", DIMENSION, minutes=5)
    await store.replace_document(current, current_chunks, unit_vectors(4, DIMENSION, 1))
    await store.close()
    # What crashes leave: an older row of the same filename not yet deleted, a newer row
    # whose chunks were deleted halfway, and chunks of a document whose row never was.
    documents = await raw_table(directory, "documents")
    await documents.add(
        [
            {
                "document_id": "older",
                "filename": "notes.txt",
                "chunks": 0,
                "uploaded_at": T0,
                "collection": "default",
                "metadata": "{}",
            },
            {
                "document_id": "incomplete",
                "filename": "notes.txt",
                "chunks": 3,
                "uploaded_at": current.uploaded_at.replace(year=2030),
                "collection": "default",
                "metadata": "{}",
            },
        ]
    )
    chunks = await raw_table(directory, "chunks")
    row = {**(await chunks.query().limit(1).to_arrow()).to_pylist()[0], "meta_numbers": None}
    await chunks.add([{**row, "document_id": "orphan", "text": "orphaned quokka"}])
    await chunks.add([{**row, "document_id": "incomplete"}])

    reopened = LanceDbStore(directory, DIMENSION)
    await reopened.open()
    try:
        assert await reopened.list_documents() == [current]
        hits = await reopened.search("quokka", unit_vectors(1, DIMENSION, 3)[0], 10)
        assert {hit.chunk.document_id for hit in hits} == {"current"}
        assert await (await raw_table(directory, "chunks")).count_rows() == len(TEXTS)
        assert await (await raw_table(directory, "documents")).count_rows() == 1
    finally:
        await reopened.close()


async def test_a_vector_index_is_built_past_the_threshold(
    store: LanceDbStore, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="handlers.rag.stores.lancedb_store")
    documents = synthetic_documents(400, DIMENSION, 11)
    for record, chunks, vectors in documents:
        await store.replace_document(record, chunks, vectors)
    await store.wait_idle()

    table = await raw_table(store.directory, "chunks")
    assert [i.index_type for i in await table.list_indices() if i.columns == ["vector"]] == [
        "IvfSq"
    ]
    messages = [r.getMessage() for r in caplog.records]
    assert any(m.startswith("lancedb vector index build started rows=") for m in messages)
    assert any(m.startswith("lancedb vector index build finished rows=") for m in messages)
    # A document written after the build is found before any refresh folds it in.
    late, late_chunks, late_vectors = a_document("late", "late.txt", DIMENSION, seed=5)
    await store.replace_document(late, late_chunks, late_vectors)
    for (_, chunks, vectors), row in zip(documents[:3], (5, 50, 99), strict=True):
        hits = await store.search(chunks[row].text, vectors[row], 3)
        assert hits[0].chunk == chunks[row]
    hits = await store.search(TEXTS[1], late_vectors[1], 3)
    assert hits[0].chunk == late_chunks[1]
    assert await store.count_chunks() == 400 + len(TEXTS)


async def test_indexed_search_finds_what_an_exact_search_finds(tmp_path: Path) -> None:
    """Random unit vectors are the hardest case for the index's scalar quantisation; the
    refine step re-ranks its candidates on the stored vectors."""
    dimension, rows = 384, 5_000
    store = LanceDbStore(tmp_path / "lancedb", dimension, index_threshold=rows)
    await store.open()
    try:
        all_vectors = []
        for record, chunks, vectors in synthetic_documents(rows, dimension, 21):
            await store.replace_document(record, chunks, vectors)
            all_vectors.append(vectors)
        await store.wait_idle()
        table = await raw_table(store.directory, "chunks")
        assert any(i.columns == ["vector"] for i in await table.list_indices())
        corpus = np.concatenate(all_vectors)
        queries = unit_vectors(50, dimension, 22)
        found = in_order = 0
        for query in queries:
            exact = [int(row) for row in np.argsort(-(corpus @ query))[:10]]
            # a text no chunk contains: the ranking is the vector ranking alone
            hits = [_row(hit.chunk) for hit in await store.search("nothing-matches", query, 10)]
            found += len(set(exact) & set(hits))
            in_order += hits == exact
        # without the refine step: recall 0.98, 11 of the 50 rankings in the exact order
        assert found / (10 * len(queries)) >= 0.995
        assert in_order >= 0.9 * len(queries)
    finally:
        await store.close()


def _row(chunk: Chunk) -> int:
    """The row of ``chunk`` in the corpus of :func:`synthetic_documents`."""
    return int(chunk.document_id.rsplit("-", 1)[1]) * CHUNKS_PER_DOCUMENT + chunk.position


async def test_index_upkeep_waits_for_writes_to_pause_or_pile_up(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    optimized: list[str] = []
    real_optimize = AsyncTable.optimize

    async def counted(self: AsyncTable, **kwargs: Any) -> Any:
        optimized.append(self.name)
        return await real_optimize(self, **kwargs)

    monkeypatch.setattr(AsyncTable, "optimize", counted)
    documents = synthetic_documents(500, DIMENSION, 13)
    # writes piling up: the third one starts the upkeep, however long the delay
    store = LanceDbStore(
        tmp_path / "a", DIMENSION, maintenance_delay=3600, maintenance_writes=3, upkeep_interval=0
    )
    await store.open()
    await store.wait_idle()  # the round a new store's first versions ask for
    optimized.clear()
    try:
        for record, chunks, vectors in documents[:2]:
            await store.replace_document(record, chunks, vectors)
        await asyncio.sleep(0.2)
        assert optimized == []
        # what is not folded into the indexes yet is found all the same
        _, chunks, vectors = documents[1]
        assert (await store.search(chunks[3].text, vectors[3], 1))[0].chunk == chunks[3]
        by_text = await store.search(chunks[4].text, unit_vectors(1, DIMENSION, 0)[0], 10)
        assert chunks[4] in [hit.chunk for hit in by_text]
        record, chunks, vectors = documents[2]
        await store.replace_document(record, chunks, vectors)
        await wait_until(lambda: optimized == ["chunks", "documents"])
        # wait_idle does not wait for the delay
        record, chunks, vectors = documents[3]
        await store.replace_document(record, chunks, vectors)
        await asyncio.wait_for(store.wait_idle(), 30)
        assert optimized == ["chunks", "documents"] * 2
    finally:
        await store.close()
    # writes pausing: the upkeep runs once, the delay after the last of them
    optimized.clear()
    store = LanceDbStore(tmp_path / "b", DIMENSION, maintenance_delay=0.5, upkeep_interval=0)
    await store.open()
    try:
        await store.wait_idle()
        optimized.clear()
        for record, chunks, vectors in documents[:3]:
            await store.replace_document(record, chunks, vectors)
        await asyncio.sleep(0.2)
        assert optimized == []
        await wait_until(lambda: optimized == ["chunks", "documents"])
    finally:
        await store.close()


async def test_the_vector_index_is_used_after_reopening(tmp_path: Path) -> None:
    directory = tmp_path / "lancedb"
    store = LanceDbStore(directory, DIMENSION, index_threshold=300)
    await store.open()
    documents = synthetic_documents(300, DIMENSION, 12)
    for record, chunks, vectors in documents:
        await store.replace_document(record, chunks, vectors)
    await store.close()  # before the background build could finish

    reopened = LanceDbStore(directory, DIMENSION, index_threshold=300)
    await reopened.open()  # builds the index the closed store did not
    try:
        await reopened.wait_idle()
        table = await raw_table(directory, "chunks")
        assert any(i.columns == ["vector"] for i in await table.list_indices())
        _, chunks, vectors = documents[1]
        assert (await reopened.search(chunks[7].text, vectors[7], 1))[0].chunk == chunks[7]
    finally:
        await reopened.close()


async def test_stores_with_other_table_prefixes_share_a_directory(tmp_path: Path) -> None:
    first = LanceDbStore(tmp_path, DIMENSION, table_prefix="kb1_")
    second = LanceDbStore(tmp_path, DIMENSION, table_prefix="kb2_")
    await first.open()
    await second.open()
    try:
        record, chunks, vectors = a_document("doc-1", "notes.txt", DIMENSION)
        await first.replace_document(record, chunks, vectors)

        assert await second.list_documents() == []
        assert await second.search(TEXTS[0], vectors[0], 3) == []
        assert (await first.search(TEXTS[0], vectors[0], 1))[0].chunk == chunks[0]
    finally:
        await first.close()
        await second.close()


async def test_a_directory_of_another_dimension_is_refused(tmp_path: Path) -> None:
    store = LanceDbStore(tmp_path, DIMENSION)
    await store.open()
    await store.close()

    with pytest.raises(StoreError, match="dimension"):
        await LanceDbStore(tmp_path, DIMENSION * 2).open()


async def test_a_closed_store_refuses_work(store: LanceDbStore) -> None:
    await store.close()
    with pytest.raises(StoreError, match="not open"):
        await store.search("river", unit_vectors(1, DIMENSION, 0)[0], 3)
    with pytest.raises(ValueError, match="table_prefix"):
        LanceDbStore(Path("x"), DIMENSION, table_prefix="a b")
