"""Test data for the stores: synthetic chunks with random unit vectors (also the search
benchmark's corpus) and small hand-made documents."""

from __future__ import annotations

import datetime

import numpy as np

from handlers.rag.documents import Chunk, DocumentRecord, content_hash
from handlers.rag.stores.base import Vectors

__all__ = [
    "CHUNKS_PER_DOCUMENT",
    "T0",
    "TEXTS",
    "VOCABULARY",
    "a_document",
    "make_document",
    "synthetic_chunks",
    "synthetic_documents",
    "unit_vectors",
]

T0 = datetime.datetime(2025, 1, 1, tzinfo=datetime.UTC)
TEXTS = [
    "the river flows through the valley towards the ocean",
    "a castle stands on the mountain above the forest",
    "the router forwards each packet to the next server",
    "the invoice lists the price of every item in the contract",
]
CHUNKS_PER_DOCUMENT = 100
WORDS_PER_CHUNK = 30
VOCABULARY = (  # noqa: SIM905 (a word list reads better as text)
    "river mountain forest valley ocean desert island harbor bridge castle garden meadow "
    "engine signal circuit battery sensor module network protocol packet router server "
    "kernel thread memory buffer cache index vector matrix tensor gradient model layer "
    "market price budget invoice contract tenant lease permit policy audit ledger account "
    "winter summer autumn spring morning evening harvest season weather climate storm "
    "cloud"
).split()


def synthetic_chunks(n: int, dimension: int, seed: int) -> tuple[list[Chunk], Vectors]:
    """``n`` chunks in documents of up to CHUNKS_PER_DOCUMENT chunks each (one filename per
    document), texts drawn from VOCABULARY, and their random L2-normalised vectors."""
    if n < 0 or dimension < 1:
        raise ValueError(f"need n >= 0 and dimension >= 1, got n={n} dimension={dimension}")
    generator = np.random.default_rng(seed)
    vectors = generator.standard_normal((n, dimension)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    words = generator.integers(0, len(VOCABULARY), size=(n, WORDS_PER_CHUNK))
    chunks = []
    for row in range(n):
        document, position = divmod(row, CHUNKS_PER_DOCUMENT)
        text = " ".join(VOCABULARY[w] for w in words[row])
        chunks.append(
            Chunk(
                document_id=f"synthetic-{seed}-{document:05d}",
                filename=f"synthetic-{document:05d}.txt",
                position=position,
                page=None if document % 2 else position // 10 + 1,
                text=text,
                content_hash=content_hash(text),
            )
        )
    return chunks, vectors


def make_document(
    document_id: str,
    filename: str,
    texts: list[str],
    vectors: Vectors,
    uploaded_at: datetime.datetime,
) -> tuple[DocumentRecord, list[Chunk], Vectors]:
    """A document record with one chunk per text (pages 1, 2, ...) and the given vectors."""
    chunks = [
        Chunk(document_id, filename, position, position + 1, text, content_hash(text))
        for position, text in enumerate(texts)
    ]
    return DocumentRecord(document_id, filename, len(texts), uploaded_at), chunks, vectors


def synthetic_documents(
    n: int, dimension: int, seed: int, uploaded_at: datetime.datetime = T0
) -> list[tuple[DocumentRecord, list[Chunk], Vectors]]:
    """:func:`synthetic_chunks` grouped into documents, ready for ``replace_document``."""
    chunks, vectors = synthetic_chunks(n, dimension, seed)
    documents = []
    for start in range(0, n, CHUNKS_PER_DOCUMENT):
        part = chunks[start : start + CHUNKS_PER_DOCUMENT]
        record = DocumentRecord(part[0].document_id, part[0].filename, len(part), uploaded_at)
        documents.append((record, part, vectors[start : start + len(part)]))
    return documents


def unit_vectors(count: int, dimension: int, seed: int) -> Vectors:
    """``count`` random L2-normalised vectors."""
    vectors = np.random.default_rng(seed).standard_normal((count, dimension)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors


def a_document(
    document_id: str,
    filename: str,
    dimension: int,
    *,
    minutes: int = 0,
    seed: int = 0,
    texts: list[str] = TEXTS,
) -> tuple[DocumentRecord, list[Chunk], Vectors]:
    """A document of ``texts`` with random vectors, uploaded ``minutes`` after T0."""
    return make_document(
        document_id,
        filename,
        texts,
        unit_vectors(len(texts), dimension, seed),
        T0 + datetime.timedelta(minutes=minutes),
    )
