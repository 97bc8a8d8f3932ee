"""The interface every vector store implements (LanceDB embedded, Weaviate)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal, Protocol, TypeAlias

import numpy as np
import numpy.typing as npt

from handlers.rag.documents import Chunk, DocumentRecord, SearchHit
from handlers.rag.filters import Filter
from handlers.rag.metadata import DEFAULT_COLLECTION

__all__ = ["SEARCH_MODES", "SearchMode", "StoreError", "Vectors", "VectorStore"]

SearchMode: TypeAlias = Literal["hybrid", "vector", "text"]
"""``hybrid``: keyword (BM25) and vector rankings fused; ``vector`` or ``text``: one alone."""
SEARCH_MODES: tuple[SearchMode, ...] = ("hybrid", "vector", "text")

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
        filename in its collection; returns the ids removed. Readers see either the old or
        the new state, never a mix, and a failure leaves the old state (raises StoreError)."""
        ...

    async def search(
        self,
        text: str,
        vector: Vectors,
        limit: int,
        *,
        collection: str = DEFAULT_COLLECTION,
        where: Filter | None = None,
        mode: SearchMode = "hybrid",
    ) -> list[SearchHit]:
        """At most ``limit`` chunks of ``collection`` whose document's metadata satisfies
        ``where``, best first, by keyword (BM25) and vector similarity (``mode``). ``vector``
        is the query's embedding, shape (dimension,). The filter runs inside the store before
        ranking, so up to ``limit`` hits come back whenever that many chunks match. An empty
        store gives []."""
        ...

    async def list_documents(self, collection: str | None = None) -> list[DocumentRecord]:
        """Every stored document (of ``collection``, or of all), most recently uploaded
        first."""
        ...

    async def delete_document(self, document_id: str) -> bool:
        """Removes the document and its chunks; False when no document has this id."""
        ...

    async def count_chunks(self) -> int: ...
