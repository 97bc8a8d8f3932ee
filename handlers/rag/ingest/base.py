"""The ingestion pipeline's interfaces: extracted text, extraction errors, the embedder."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, Protocol

from handlers.rag.stores.base import Vectors

__all__ = [
    "EMBEDDING_RUNTIMES",
    "Embedder",
    "EmbeddingRuntime",
    "ExtractedDocument",
    "ExtractionError",
    "PageText",
]

EmbeddingRuntime = Literal["auto", "onnxruntime", "torch"]
"""What runs the embedding network: ONNX Runtime, torch, or ``auto`` (ONNX Runtime, or torch
for a network that cannot be exported)."""
EMBEDDING_RUNTIMES: tuple[EmbeddingRuntime, ...] = ("auto", "onnxruntime", "torch")


@dataclass(frozen=True, slots=True)
class PageText:
    """Text of one page (1-based), or of the whole document when ``page`` is None."""

    page: int | None
    text: str


@dataclass(frozen=True, slots=True)
class ExtractedDocument:
    filename: str
    pages: list[PageText]


class ExtractionError(Exception):
    """The file cannot be ingested; ``message`` says why in words a user understands and
    ``kind`` is one of ``empty``, ``unsupported``, ``undecodable``."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message


class Embedder(Protocol):
    """Turns texts into L2-normalised vectors. Calls from concurrent requests are batched
    together; the model runs off the event loop."""

    @property
    def dimension(self) -> int: ...

    @property
    def max_tokens(self) -> int:
        """The model's window in tokens (256 for all-MiniLM-L6-v2); longer texts are cut."""
        ...

    def count_tokens(self, text: str) -> int:
        """Tokens of ``text`` without special tokens."""
        ...

    async def embed(self, texts: Sequence[str], *, background: bool = False) -> Vectors:
        """Shape (len(texts), dimension), float32. ``background``: ingestion work (a
        document's chunks), served only while no query waits; the vectors are the same."""
        ...

    async def close(self) -> None: ...
