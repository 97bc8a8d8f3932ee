"""The reranking stage of a search: fused results in, the first ``candidates`` of them reordered
by the reranker's scores, the rest after them in their fused order.

Stable top-k (issue 25, item 3): the stage always scores the same ``candidates`` fused results
for a query, whatever number of results the caller then keeps, and orders equal scores by
their fused rank; so, as long as the fused list's prefix is stable (the store searches
``max(limit, candidates)`` results whatever ``limit``), the first k results of a k'-search are
the k-search's. A reranker that fails leaves the fused order (and logs why): a search never
fails because its optional stage did.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

from handlers.rag.rerank.base import Reranker, RerankError

__all__ = ["Reranked", "rerank_fused"]

logger = logging.getLogger(__name__)
T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Reranked(Generic[T]):
    """A fused result in its new place, with the reranker's score for it (``None`` for one
    after the candidates, or when the reranker failed)."""

    item: T
    score: float | None
    fused_rank: int


async def rerank_fused(
    reranker: Reranker,
    query: str,
    fused: Sequence[T],
    *,
    text: Callable[[T], str],
    candidates: int,
) -> list[Reranked[T]]:
    """``fused`` (best first) with its first ``candidates`` items ordered by the reranker's
    score of ``text(item)`` for ``query`` (best first; equal scores keep their fused order),
    followed by the others unscored. The fused order, unscored, if the reranker fails."""
    if candidates < 1:
        raise ValueError(f"candidates must be at least 1, got {candidates}")
    head = list(fused[:candidates])
    try:
        scores = await reranker.rerank(query, [text(item) for item in head])
    except RerankError as exc:
        logger.warning(
            "rerank failed, results keep their fused order reranker=%s error=%s", reranker.name, exc
        )
        return [Reranked(item, None, rank) for rank, item in enumerate(fused)]
    order = sorted(range(len(head)), key=lambda rank: (-scores[rank], rank))
    reordered = [Reranked(head[rank], scores[rank], rank) for rank in order]
    tail = [Reranked(item, None, rank) for rank, item in enumerate(fused) if rank >= len(head)]
    return reordered + tail
