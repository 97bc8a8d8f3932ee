"""What every store shares: input checks, and the set of live documents that makes a
replacement all-or-nothing for readers of a store without multi-table transactions.

The scheme: a store writes the new chunks, then the new document record, then publishes its
new live set (:meth:`LiveDocuments.publish`), and only then deletes the replaced rows.
Searches return only chunks of documents live when they started, and publishing waits for
the searches that started before it, so a search never finds its documents' rows deleted
under it. At open, :func:`recover_live` picks the live documents from what a crash may have
left behind.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import Counter
from collections.abc import AsyncIterator, Iterable, Mapping, Sequence

import numpy as np

from handlers.rag.documents import Chunk, DocumentRecord
from handlers.rag.metadata import check_collection
from handlers.rag.stores.base import Vectors

__all__ = [
    "LiveDocuments",
    "check_document",
    "check_query",
    "newest_first",
    "recover_live",
    "with_document",
    "without_document",
]


class LiveDocuments:
    """The documents searches may return, by id; replaced as a whole, never mutated."""

    def __init__(self, documents: Mapping[str, DocumentRecord] | None = None) -> None:
        self.documents: Mapping[str, DocumentRecord] = dict(documents or {})
        self._generation = 0
        self._readers: Counter[int] = Counter()  # searches in progress, by generation
        self._changed = asyncio.Condition()

    @contextlib.asynccontextmanager
    async def reading(self) -> AsyncIterator[Mapping[str, DocumentRecord]]:
        """The live documents, kept (their rows not deleted) until the block ends."""
        generation = self._generation
        self._readers[generation] += 1
        try:
            yield self.documents
        finally:
            self._readers[generation] -= 1
            if not self._readers[generation]:
                del self._readers[generation]
                async with self._changed:
                    self._changed.notify_all()

    async def publish(self, documents: Mapping[str, DocumentRecord]) -> None:
        """Makes ``documents`` the live set at once, then waits until every search that
        started before is done (after which rows of documents no longer live can go)."""
        self.documents = documents
        self._generation += 1
        current = self._generation
        async with self._changed:
            await self._changed.wait_for(lambda: all(g >= current for g in self._readers))


def check_document(
    document: DocumentRecord, chunks: Sequence[Chunk], vectors: Vectors, dimension: int
) -> None:
    """Raises ValueError unless ``chunks`` and ``vectors`` make up ``document``."""
    if document.chunks != len(chunks):
        raise ValueError(f"the record says {document.chunks} chunks, {len(chunks)} given")
    if vectors.shape != (len(chunks), dimension):
        raise ValueError(
            f"vectors of shape {vectors.shape} for {len(chunks)} chunks of dimension {dimension}"
        )
    if not np.isfinite(vectors).all():
        raise ValueError("vectors hold NaN or infinite values")
    if document.uploaded_at.tzinfo is None:
        raise ValueError("uploaded_at must be timezone-aware")
    check_collection(document.collection)
    for chunk in chunks:
        if (chunk.document_id, chunk.filename, chunk.collection) != (
            document.document_id,
            document.filename,
            document.collection,
        ):
            raise ValueError(f"chunk {chunk.position} belongs to another document")


def check_query(vector: Vectors, limit: int, dimension: int) -> Vectors:
    """The query vector as a flat float32 array; ValueError for a bad shape or limit."""
    if limit < 1:
        raise ValueError(f"limit must be positive, got {limit}")
    query = np.asarray(vector, dtype=np.float32).reshape(-1)
    if query.shape != (dimension,) or not np.isfinite(query).all():
        raise ValueError(f"query vector of shape {vector.shape}, expected ({dimension},)")
    return query


def recover_live(
    records: Iterable[DocumentRecord], stored_chunks: Mapping[str, int]
) -> dict[str, DocumentRecord]:
    """Of each filename of each collection, the newest complete document: one whose chunks
    are all stored (``stored_chunks``: chunk rows per document id)."""
    newest: dict[tuple[str, str], DocumentRecord] = {}
    for record in records:
        if stored_chunks.get(record.document_id, 0) != record.chunks:
            continue
        current = newest.get((record.collection, record.filename))
        if current is None or (record.uploaded_at, record.document_id) > (
            current.uploaded_at,
            current.document_id,
        ):
            newest[record.collection, record.filename] = record
    return {record.document_id: record for record in newest.values()}


def with_document(
    live: Mapping[str, DocumentRecord], document: DocumentRecord
) -> tuple[dict[str, DocumentRecord], list[str]]:
    """The live set once ``document`` replaces every document of its filename in its
    collection, and the ids it replaces."""
    replaced = [
        old.document_id
        for old in live.values()
        if (old.collection, old.filename) == (document.collection, document.filename)
    ]
    after = {k: v for k, v in live.items() if k not in replaced}
    after[document.document_id] = document
    return after, replaced


def without_document(
    live: Mapping[str, DocumentRecord], document_id: str
) -> dict[str, DocumentRecord]:
    """The live set without ``document_id``."""
    return {k: v for k, v in live.items() if k != document_id}


def newest_first(
    live: Mapping[str, DocumentRecord], collection: str | None = None
) -> list[DocumentRecord]:
    """The live documents (of ``collection``, or all), most recently uploaded first."""
    records = [r for r in live.values() if collection is None or r.collection == collection]
    return sorted(records, key=lambda r: r.uploaded_at, reverse=True)
