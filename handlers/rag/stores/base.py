"""The interface every vector store implements (LanceDB embedded, Weaviate)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import numpy as np
import numpy.typing as npt

from handlers.rag.documents import Chunk, DocumentRecord, SearchHit

__all__ = ["StoreError", "Vectors", "VectorStore"]

Vectors = npt.NDArray[np.float32]  # shape (n, dimension), rows L2-normalised


class StoreError(Exception):
    """The store failed; the message is safe to log (nothing about it is partially applied)."""


class VectorStore(Protocol):
    """Chunks with their vectors, searchable by text and vector together (hybrid search).

    All methods are safe to call concurrently from the event loop; blocking work runs off it.
    """

    async def open(self) -> None:
        """Connects or creates what the store needs (tables, collections). Idempotent."""
        ...

    async def close(self) -> None: ...

    async def replace_document(
        self, document: DocumentRecord, chunks: Sequence[Chunk], vectors: Vectors
    ) -> list[str]:
        """Stores ``document`` with its chunks, removing every earlier document of the same
        filename; returns the ids removed. Readers see either the old or the new state, never
        a mix, and a failure leaves the old state (raises StoreError)."""
        ...

    async def search(self, text: str, vector: Vectors, limit: int) -> list[SearchHit]:
        """At most ``limit`` hits, best first, combining keyword (BM25) and vector similarity.
        ``vector`` is the query's embedding, shape (dimension,). An empty store gives []."""
        ...

    async def list_documents(self) -> list[DocumentRecord]:
        """Every stored document, most recently uploaded first."""
        ...

    async def delete_document(self, document_id: str) -> bool:
        """Removes the document and its chunks; False when no document has this id."""
        ...

    async def count_chunks(self) -> int: ...
