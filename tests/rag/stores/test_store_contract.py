"""The VectorStore contract, run against every backend the environment provides."""

from __future__ import annotations

import asyncio
import dataclasses
import datetime
from typing import Any

import numpy as np
import pytest

from handlers.rag.documents import Chunk
from handlers.rag.stores.base import Vectors, VectorStore
from tests.rag.stores.conftest import DIMENSION, StoreSite
from tests.rag.stores.corpus import T0, TEXTS, a_document, synthetic_documents, unit_vectors


def vectors(count: int, seed: int) -> Vectors:
    return unit_vectors(count, DIMENSION, seed)


async def store_document(
    store: VectorStore, document_id: str, filename: str, **kwargs: Any
) -> list[Chunk]:
    record, chunks, chunk_vectors = a_document(document_id, filename, DIMENSION, **kwargs)
    await store.replace_document(record, chunks, chunk_vectors)
    return chunks


async def test_an_empty_store_finds_nothing(store: VectorStore) -> None:
    assert await store.search("river", vectors(1, 9)[0], 5) == []
    assert await store.list_documents() == []
    assert await store.count_chunks() == 0


async def test_a_stored_chunk_is_found_with_all_its_fields(store: VectorStore) -> None:
    record, chunks, chunk_vectors = a_document("doc-1", "notes.txt", DIMENSION)
    assert await store.replace_document(record, chunks, chunk_vectors) == []

    hits = await store.search(TEXTS[2], chunk_vectors[2], 1)

    assert len(hits) == 1
    assert hits[0].chunk == chunks[2]
    assert (hits[0].chunk.page, hits[0].chunk.position) == (3, 2)
    assert hits[0].score > 0


async def test_a_rare_word_is_found_by_keyword_alone(store: VectorStore) -> None:
    texts = [*TEXTS, "the zyxwvut appears only here"]
    chunks = await store_document(store, "doc-1", "notes.txt", texts=texts)
    # A query vector far from every chunk: only the keyword ranking can put it first.
    away = -vectors(len(texts), 0).sum(axis=0)
    away /= np.linalg.norm(away)

    hits = await store.search("zyxwvut", away.astype(np.float32), 1)

    assert [hit.chunk for hit in hits] == [chunks[4]]


async def test_a_close_vector_is_found_without_any_matching_word(store: VectorStore) -> None:
    record, chunks, chunk_vectors = a_document("doc-1", "notes.txt", DIMENSION, seed=4)
    await store.replace_document(record, chunks, chunk_vectors)

    hits = await store.search("qwertyuiop", chunk_vectors[1], 2)

    assert hits[0].chunk == chunks[1]


async def test_hits_are_best_first_and_at_most_limit(store: VectorStore) -> None:
    documents = synthetic_documents(300, DIMENSION, 4)
    for record, chunks, chunk_vectors in documents:
        await store.replace_document(record, chunks, chunk_vectors)
    _, chunks, chunk_vectors = documents[2]

    hits = await store.search(chunks[47].text, chunk_vectors[47], 5)

    assert len(hits) == 5
    assert hits[0].chunk == chunks[47]  # first in both rankings
    scores = [hit.score for hit in hits]
    assert scores == sorted(scores, reverse=True)
    assert len({(hit.chunk.document_id, hit.chunk.position) for hit in hits}) == 5
    assert await store.count_chunks() == 300


async def test_uploading_a_filename_again_replaces_the_document(store: VectorStore) -> None:
    await store_document(store, "old", "notes.txt", seed=1)
    await store_document(store, "other", "other.txt", minutes=1, seed=2)
    record, chunks, chunk_vectors = a_document(
        "new", "notes.txt", DIMENSION, minutes=2, seed=3, texts=TEXTS[:2]
    )

    assert await store.replace_document(record, chunks, chunk_vectors) == ["old"]

    documents = await store.list_documents()
    assert [d.document_id for d in documents] == ["new", "other"]
    assert documents[0] == record
    hits = await store.search(TEXTS[1], chunk_vectors[1], 10)
    assert {hit.chunk.document_id for hit in hits} == {"new", "other"}
    assert await store.count_chunks() == 2 + len(TEXTS)


async def test_documents_are_listed_newest_first(store: VectorStore) -> None:
    for minutes, name in [(5, "b"), (1, "a"), (9, "c")]:
        await store_document(store, name, f"{name}.txt", minutes=minutes)

    documents = await store.list_documents()

    assert [d.document_id for d in documents] == ["c", "b", "a"]
    assert all(d.uploaded_at.tzinfo is not None for d in documents)
    assert documents[0].uploaded_at == T0 + datetime.timedelta(minutes=9)


async def test_delete_removes_a_document_and_its_chunks(store: VectorStore) -> None:
    await store_document(store, "gone", "gone.txt", seed=1)
    kept = await store_document(store, "kept", "kept.txt", seed=2)

    assert await store.delete_document("gone") is True
    assert await store.delete_document("gone") is False
    assert await store.delete_document("never-stored") is False

    assert [d.document_id for d in await store.list_documents()] == ["kept"]
    assert await store.count_chunks() == len(kept)
    hits = await store.search(TEXTS[0], vectors(1, 5)[0], 10)
    assert {hit.chunk.document_id for hit in hits} == {"kept"}


async def test_bad_input_is_refused(store: VectorStore) -> None:
    record, chunks, chunk_vectors = a_document("doc-1", "notes.txt", DIMENSION)
    with pytest.raises(ValueError, match="shape"):
        await store.replace_document(record, chunks, chunk_vectors[:2])
    with pytest.raises(ValueError, match="shape"):
        await store.replace_document(record, chunks, vectors(len(chunks) * 2, 0).reshape(4, -1))
    with pytest.raises(ValueError, match="another document"):
        stray = dataclasses.replace(chunks[3], document_id="doc-2")
        await store.replace_document(record, [*chunks[:3], stray], chunk_vectors)
    with pytest.raises(ValueError, match="shape"):
        await store.search("river", np.zeros(DIMENSION + 1, dtype=np.float32), 3)
    with pytest.raises(ValueError, match="limit"):
        await store.search("river", chunk_vectors[0], 0)
    assert await store.count_chunks() == 0


async def test_documents_survive_reopening(site: StoreSite, store: VectorStore) -> None:
    record, chunks, chunk_vectors = a_document("doc-1", "notes.txt", DIMENSION)
    await store.replace_document(record, chunks, chunk_vectors)
    await store.close()

    again = await site.open()

    assert await again.list_documents() == [record]
    assert await again.count_chunks() == len(chunks)
    assert [hit.chunk for hit in await again.search(TEXTS[3], chunk_vectors[3], 1)] == [chunks[3]]


async def test_open_is_idempotent(store: VectorStore) -> None:
    await store_document(store, "doc-1", "notes.txt")
    await store.open()
    assert await store.count_chunks() == len(TEXTS)


async def test_concurrent_replacements_of_two_filenames_both_land(store: VectorStore) -> None:
    await asyncio.gather(
        store_document(store, "a", "a.txt", seed=1),
        store_document(store, "b", "b.txt", seed=2),
    )

    assert {d.document_id for d in await store.list_documents()} == {"a", "b"}
    hits = await store.search(TEXTS[0], vectors(1, 3)[0], 10)
    assert {hit.chunk.document_id for hit in hits} == {"a", "b"}


async def test_a_search_during_replacements_sees_one_version(store: VectorStore) -> None:
    await store_document(store, "v0", "notes.txt", seed=0)
    query = vectors(1, 99)[0]
    seen: list[set[str]] = []
    replacing = True

    async def search_until_done() -> None:
        while replacing or not seen:
            hits = await store.search(TEXTS[0], query, 10)
            seen.append({hit.chunk.document_id for hit in hits})

    searcher = asyncio.create_task(search_until_done())
    for version in range(1, 6):
        await store_document(store, f"v{version}", "notes.txt", minutes=version, seed=version)
    replacing = False
    await searcher

    assert all(len(ids) == 1 for ids in seen), seen
    assert [d.document_id for d in await store.list_documents()] == ["v5"]
