"""What a reranker is: a scorer of (query, passage) pairs, and the bounds every one applies.

A reranker reads a query and the passages retrieval found for it and returns one relevance
score per passage, aligned with the input, higher meaning more relevant. The local
cross-encoder (:mod:`.cross_encoder`) gives scores in [0, 1] (its logit through a sigmoid, or
its "relevant" class's probability); a remote ``/rerank`` endpoint (:mod:`.remote`) gives its
``relevance_score`` as sent (in [0, 1] for Cohere's and Jina's, and for vLLM and Infinity
serving a one-logit cross-encoder).

Input is bounded before any work: at most :data:`MAX_QUERY_CHARS` of the query and
:data:`MAX_PASSAGE_CHARS` of each passage are scored (a cross-encoder's window, 512 tokens for
the usual ones, holds less than that anyway); how many passages one call takes is the caller's
``RAG_RERANK_CANDIDATES``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

__all__ = [
    "MAX_PASSAGE_CHARS",
    "MAX_QUERY_CHARS",
    "RerankError",
    "Reranker",
    "clipped",
]

MAX_QUERY_CHARS = 2_048
"""Characters of a query a reranker reads (the rest is cut off)."""

MAX_PASSAGE_CHARS = 8_192
"""Characters of a passage a reranker reads: 16 per token of a 512-token window."""


class RerankError(RuntimeError):
    """The reranker could not score a call's passages (the model failed, the endpoint did not
    answer in time or answered something else than scores); the caller keeps its own order."""


@runtime_checkable
class Reranker(Protocol):
    """Scores passages for a query."""

    @property
    def name(self) -> str:
        """What scores (a model directory's name, or the endpoint's model), for logs."""
        ...

    async def rerank(self, query: str, passages: Sequence[str]) -> list[float]:
        """One score per passage, in the passages' order (higher: more relevant).
        Raises :class:`RerankError`; an empty ``passages`` gives ``[]`` without any work."""
        ...

    async def close(self) -> None:
        """Releases threads and connections; later calls raise :class:`RerankError`."""
        ...


def clipped(query: str, passages: Sequence[str]) -> tuple[str, list[str]]:
    """The query and passages cut to :data:`MAX_QUERY_CHARS` and :data:`MAX_PASSAGE_CHARS`."""
    return query[:MAX_QUERY_CHARS], [passage[:MAX_PASSAGE_CHARS] for passage in passages]
