"""Collections, metadata filters and search modes, on every backend the environment provides;
and the migration of a LanceDB store written before collections existed."""

from __future__ import annotations

import dataclasses
import datetime
from pathlib import Path
from typing import Any

import lancedb
import numpy as np
import pyarrow as pa  # type: ignore[import-untyped]

from handlers.rag.documents import Chunk, DocumentRecord
from handlers.rag.filters import parse_filter
from handlers.rag.metadata import Metadata
from handlers.rag.stores.base import Vectors, VectorStore
from handlers.rag.stores.lancedb_store import LanceDbStore
from tests.rag.stores.conftest import DIMENSION, StoreSite
from tests.rag.stores.corpus import T0, TEXTS, a_document, unit_vectors


def placed(
    document_id: str,
    filename: str,
    collection: str = "default",
    metadata: Metadata | None = None,
    seed: int = 0,
    minutes: int = 0,
) -> tuple[DocumentRecord, list[Chunk], Vectors]:
    record, chunks, vectors = a_document(
        document_id, filename, DIMENSION, seed=seed, minutes=minutes
    )
    extra: dict[str, Any] = {"collection": collection, "metadata": metadata or {}}
    return (
        dataclasses.replace(record, **extra),
        [dataclasses.replace(chunk, **extra) for chunk in chunks],
        vectors,
    )


async def put(store: VectorStore, *args: Any, **kwargs: Any) -> list[str]:
    return await store.replace_document(*placed(*args, **kwargs))


async def found(store: VectorStore, condition: object = None, **kwargs: Any) -> set[str]:
    hits = await store.search(
        "river", unit_vectors(1, DIMENSION, 99)[0], 50, where=parse_filter(condition), **kwargs
    )
    return {hit.chunk.document_id for hit in hits}


async def test_collections_keep_documents_apart(store: VectorStore) -> None:
    await put(store, "a", "notes.txt")
    await put(store, "b", "notes.txt", collection="legal", metadata={"year": 2020})
    # the same file name in another collection replaces nothing
    assert await found(store) == {"a"}
    assert await found(store, collection="legal") == {"b"}
    assert await found(store, collection="nobody") == set()
    assert [r.document_id for r in await store.list_documents("legal")] == ["b"]
    assert {r.document_id for r in await store.list_documents()} == {"a", "b"}
    # replacement by file name happens within the collection
    assert await put(store, "c", "notes.txt", collection="legal", minutes=1) == ["b"]
    assert [r.document_id for r in await store.list_documents("default")] == ["a"]
    hits = await store.search("river", unit_vectors(1, DIMENSION, 9)[0], 1, collection="legal")
    assert (hits[0].chunk.collection, hits[0].chunk.metadata) == ("legal", {})
    assert await store.delete_document("c")
    assert await found(store, collection="legal") == set()


async def test_filters_select_documents_inside_the_store(store: VectorStore) -> None:
    metadata: list[dict[str, Any]] = [
        {"year": 2019, "dept": "finance", "tags": ["q1"]},
        {"year": 2020, "dept": "legal", "tags": ["q1", "audited"]},
        {"year": 2021.0, "dept": "finance", "draft": True},
        {"year": "2021", "dept": "it's"},
        {},
    ]
    for index, item in enumerate(metadata):
        await put(store, f"d{index}", f"f{index}.txt", metadata=item, seed=index)
    assert await found(store, {"dept": "finance"}) == {"d0", "d2"}
    assert await found(store, {"dept": "it's"}) == {"d3"}
    assert await found(store, {"year": 2021}) == {"d2"}
    assert await found(store, {"year": {"$gte": 2020}}) == {"d1", "d2"}
    assert await found(store, {"year": {"$gt": 2019, "$lt": 2021}}) == {"d1"}
    assert await found(store, {"year": {"$gt": 3000}}) == set()
    assert await found(store, {"tags": "audited"}) == {"d1"}
    assert await found(store, {"tags": {"$in": ["q1", "zz"]}}) == {"d0", "d1"}
    assert await found(store, {"draft": True}) == {"d2"}
    assert await found(store, {"$or": [{"dept": "legal"}, {"year": 2019}]}) == {"d0", "d1"}
    assert await found(store, {"$and": [{"dept": "finance"}, {"tags": "q1"}]}) == {"d0"}
    assert await found(store, {"dept": "finance"}, collection="other") == set()
    hits = await store.search(
        "x", unit_vectors(1, DIMENSION, 1)[0], 1, where=parse_filter({"tags": "audited"})
    )
    assert hits[0].chunk.metadata == metadata[1]


async def test_a_filtered_search_returns_limit_hits_when_enough_match(store: VectorStore) -> None:
    for index in range(30):
        await put(store, f"d{index}", f"f{index}.txt", metadata={"n": index}, seed=index)
    query = unit_vectors(1, DIMENSION, 5)[0]
    where = parse_filter({"n": {"$in": [3, 17]}})
    hits = await store.search("river", query, 2 * len(TEXTS), where=where)
    assert len(hits) == 2 * len(TEXTS)
    assert {hit.chunk.document_id for hit in hits} == {"d3", "d17"}


async def test_modes_rank_by_one_list_or_both(store: VectorStore) -> None:
    texts = [*TEXTS, "the zyxwvut appears only here"]
    record, chunks, vectors = a_document("doc", "notes.txt", DIMENSION, texts=texts)
    await store.replace_document(record, chunks, vectors)
    by_text = await store.search("zyxwvut", vectors[0], 5, mode="text")
    assert [hit.chunk.position for hit in by_text] == [len(TEXTS)]  # keyword matches only
    by_vector = await store.search("zyxwvut", vectors[1], 1, mode="vector")
    assert by_vector[0].chunk.position == 1
    assert len(await store.search("zyxwvut", vectors[1], 5, mode="hybrid")) == 5


async def test_collections_and_metadata_survive_reopening(site: StoreSite) -> None:
    store = await site.open()
    await put(store, "a", "a.txt", collection="x", metadata={"k": ["v"], "n": 1.5})
    reopened = await site.open()
    [record] = await reopened.list_documents("x")
    assert (record.collection, record.metadata) == ("x", {"k": ["v"], "n": 1.5})
    assert await found(reopened, {"n": {"$lte": 1.5}}, collection="x") == {"a"}


async def test_a_store_written_before_collections_is_migrated_at_open(tmp_path: Path) -> None:
    directory = tmp_path / "lancedb"
    directory.mkdir()
    vectors = unit_vectors(len(TEXTS), DIMENSION, 0)
    connection = await lancedb.connect_async(directory)
    chunk_rows = pa.table(
        {
            "vector": pa.FixedSizeListArray.from_arrays(pa.array(vectors.reshape(-1)), DIMENSION),
            "text": TEXTS,
            "document_id": ["old"] * len(TEXTS),
            "filename": ["old.txt"] * len(TEXTS),
            "position": list(range(len(TEXTS))),
            "page": [None] * len(TEXTS),
            "content_hash": ["h"] * len(TEXTS),
        },
        schema=pa.schema(
            [
                pa.field("vector", pa.list_(pa.float32(), DIMENSION), nullable=False),
                pa.field("text", pa.string(), nullable=False),
                pa.field("document_id", pa.string(), nullable=False),
                pa.field("filename", pa.string(), nullable=False),
                pa.field("position", pa.int64(), nullable=False),
                pa.field("page", pa.int64(), nullable=True),
                pa.field("content_hash", pa.string(), nullable=False),
            ]
        ),
    )
    document_rows = pa.table(
        {
            "document_id": ["old"],
            "filename": ["old.txt"],
            "chunks": [len(TEXTS)],
            "uploaded_at": [T0.astimezone(datetime.UTC)],
        },
        schema=pa.schema(
            [
                pa.field("document_id", pa.string(), nullable=False),
                pa.field("filename", pa.string(), nullable=False),
                pa.field("chunks", pa.int64(), nullable=False),
                pa.field("uploaded_at", pa.timestamp("us", tz="UTC"), nullable=False),
            ]
        ),
    )
    await connection.create_table("chunks", chunk_rows)
    await connection.create_table("documents", document_rows)
    connection.close()  # type: ignore[no-untyped-call]

    store = LanceDbStore(directory, DIMENSION)
    await store.open()
    try:
        [record] = await store.list_documents("default")
        assert (record.document_id, record.collection, record.metadata) == ("old", "default", {})
        hits = await store.search(TEXTS[1], vectors[1], 1)
        assert (hits[0].chunk.document_id, hits[0].chunk.position) == ("old", 1)
        assert await found(store, {"any": 1}) == set()
        await put(store, "new", "new.txt", metadata={"any": 1})
        assert await found(store, {"any": 1}) == {"new"}
        assert await found(store) == {"old", "new"}
    finally:
        await store.close()
    reopened = LanceDbStore(directory, DIMENSION)  # migrated once: opens as a current store
    await reopened.open()
    try:
        assert {r.document_id for r in await reopened.list_documents()} == {"old", "new"}
    finally:
        await reopened.close()


def test_vectors_helper_is_normalised() -> None:
    assert np.allclose(np.linalg.norm(unit_vectors(3, DIMENSION, 1), axis=1), 1.0)


async def test_an_indexed_filtered_search_still_finds_every_match(tmp_path: Path) -> None:
    store = LanceDbStore(tmp_path / "lancedb", DIMENSION, index_threshold=256)
    await store.open()
    try:
        for index in range(80):
            await put(store, f"d{index}", f"f{index}.txt", metadata={"n": index}, seed=index)
        await store.wait_idle()  # the vector index is built: queries probe some partitions
        for wanted in (7, 41, 66):
            hits = await store.search(
                "river",
                unit_vectors(1, DIMENSION, 1000 + wanted)[0],
                len(TEXTS),
                where=parse_filter({"n": wanted}),
                mode="vector",
            )
            assert {hit.chunk.document_id for hit in hits} == {f"d{wanted}"}
            assert len(hits) == len(TEXTS)
    finally:
        await store.close()
