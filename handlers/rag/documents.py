"""What the service stores: documents, their chunks, and search hits over them."""

from __future__ import annotations

import datetime
import hashlib
from dataclasses import dataclass, field

from handlers.rag.metadata import DEFAULT_COLLECTION, Metadata

__all__ = ["Chunk", "DocumentRecord", "SearchHit", "content_hash"]


def content_hash(text: str) -> str:
    """The chunk's content hash: sha256 of its UTF-8 text, hex."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass(frozen=True, slots=True)
class Chunk:
    """One piece of a document, small enough for the embedder's window."""

    document_id: str
    filename: str
    position: int  # 0-based position of the chunk in its document
    page: int | None  # 1-based page the chunk starts on; None for formats without pages
    text: str
    content_hash: str  # content_hash(text)
    collection: str = DEFAULT_COLLECTION  # its document's collection
    metadata: Metadata = field(default_factory=dict)  # its document's metadata


@dataclass(frozen=True, slots=True)
class DocumentRecord:
    """One stored document."""

    document_id: str
    filename: str
    chunks: int
    uploaded_at: datetime.datetime  # timezone-aware UTC
    collection: str = DEFAULT_COLLECTION
    metadata: Metadata = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class SearchHit:
    """A chunk found by a search; higher scores are more relevant."""

    chunk: Chunk
    score: float
