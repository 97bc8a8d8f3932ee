"""The reranking stage over fused results: the candidates reordered by score, the rest after
them, ties and prefixes stable, and the fused order kept when the reranker fails."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from handlers.rag.rerank.base import RerankError
from handlers.rag.rerank.pipeline import Reranked, rerank_fused


class TableReranker:
    """Scores each passage from a fixed table (a stand-in for a model: this module's logic
    is what is tested); records what it was asked."""

    name = "table"

    def __init__(self, table: dict[str, float], *, fail: bool = False) -> None:
        self.table = table
        self.fail = fail
        self.calls: list[list[str]] = []

    async def rerank(self, query: str, passages: Sequence[str]) -> list[float]:
        self.calls.append(list(passages))
        if self.fail:
            raise RerankError("endpoint down")
        return [self.table[passage] for passage in passages]

    async def close(self) -> None:
        pass


FUSED = ["a", "b", "c", "d", "e", "f"]
TABLE = {"a": 0.1, "b": 0.9, "c": 0.5, "d": 0.9, "e": 0.99, "f": 1.0}


def items(result: list[Reranked[str]]) -> list[str]:
    return [entry.item for entry in result]


async def test_candidates_are_reordered_and_the_rest_follows_in_fused_order() -> None:
    reranker = TableReranker(TABLE)
    result = await rerank_fused(reranker, "q", FUSED, text=str.lower, candidates=4)
    assert reranker.calls == [["a", "b", "c", "d"]]  # only the candidates are scored
    assert items(result) == ["b", "d", "c", "a", "e", "f"]  # b, d tie: fused order
    assert [entry.score for entry in result] == [0.9, 0.9, 0.5, 0.1, None, None]
    assert [entry.fused_rank for entry in result] == [1, 3, 2, 0, 4, 5]


async def test_the_first_k_of_a_longer_list_are_the_k_list() -> None:
    reranker = TableReranker(TABLE)
    full = items(await rerank_fused(reranker, "q", FUSED, text=str, candidates=4))
    for size in range(4, len(FUSED) + 1):  # the store returns max(limit, candidates)
        shorter = items(await rerank_fused(reranker, "q", FUSED[:size], text=str, candidates=4))
        for k in range(1, size + 1):
            assert shorter[:k] == full[:k]


async def test_fewer_results_than_candidates_are_all_scored() -> None:
    result = await rerank_fused(TableReranker(TABLE), "q", ["a", "e"], text=str, candidates=50)
    assert items(result) == ["e", "a"]
    assert await rerank_fused(TableReranker(TABLE), "q", [], text=str, candidates=50) == []


async def test_a_failing_reranker_keeps_the_fused_order(caplog: pytest.LogCaptureFixture) -> None:
    result = await rerank_fused(TableReranker(TABLE, fail=True), "q", FUSED, text=str, candidates=4)
    assert items(result) == FUSED
    assert all(entry.score is None for entry in result)
    assert "rerank failed, results keep their fused order reranker=table" in caplog.text


async def test_candidates_must_be_positive() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        await rerank_fused(TableReranker(TABLE), "q", FUSED, text=str, candidates=0)
