"""The retrieval-quality benchmark's pieces (bench/rag/quality.py): nDCG@k and Recall@k against
values computed by hand, the BEIR-layout loader, the upload names, and the committed dataset
(well formed: every judgment names a stored passage)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from bench.rag import quality
from bench.ratelimit.servers import BenchError

DATASET = Path(__file__).resolve().parents[2] / "bench" / "rag" / "quality_data"


def test_ndcg_graded_by_hand() -> None:
    # DCG: a (1) at rank 1 -> 1/log2(2) = 1; c (2) at rank 3 -> 2/log2(4) = 1; total 2.
    # Ideal: 2 at rank 1 -> 2, 1 at rank 2 -> 1/log2(3) = 0.6309298; total 2.6309298.
    # nDCG@10 = 2 / 2.6309298 = 0.7601875.
    value = quality.ndcg_at(["a", "b", "c"], {"a": 1, "c": 2, "z": 0}, 10)
    assert value == pytest.approx(2 / (2 + 1 / math.log2(3)))
    assert value == pytest.approx(0.7601875, abs=1e-6)


def test_ndcg_perfect_and_reversed() -> None:
    judged = {"a": 2, "b": 1}
    assert quality.ndcg_at(["a", "b", "x"], judged, 10) == pytest.approx(1.0)
    # b then a: 1 + 2/log2(3) = 2.2618595 over 2.6309298
    assert quality.ndcg_at(["b", "a"], judged, 10) == pytest.approx(0.8597186, abs=1e-6)


def test_ndcg_cuts_at_k_and_ideal_at_k() -> None:
    ranked = [f"x{i}" for i in range(10)] + ["a"]
    assert quality.ndcg_at(ranked, {"a": 1}, 10) == 0.0
    # 12 relevant documents, the first 10 ranked: the ideal is cut at 10 too, so 1.0
    judged = {f"r{i}": 1 for i in range(12)}
    assert quality.ndcg_at([f"r{i}" for i in range(10)], judged, 10) == pytest.approx(1.0)
    # k = 1: only the first rank counts
    assert quality.ndcg_at(["b", "a"], {"a": 2, "b": 1}, 1) == pytest.approx(0.5)


def test_ndcg_without_relevant_documents_is_zero() -> None:
    assert quality.ndcg_at(["a"], {"a": 0}, 10) == 0.0
    assert quality.ndcg_at([], {"a": 1}, 10) == 0.0


def test_recall_by_hand() -> None:
    judged = {"a": 1, "b": 1, "c": 0, "d": 2}
    ranked = ["c", "a", "x", "d"]
    assert quality.recall_at(ranked, judged, 1) == 0.0
    assert quality.recall_at(ranked, judged, 2) == pytest.approx(1 / 3)
    assert quality.recall_at(ranked, judged, 10) == pytest.approx(2 / 3)
    assert quality.recall_at([*ranked, "b"], judged, 100) == pytest.approx(1.0)
    assert quality.recall_at(ranked, {"c": 0}, 10) == 0.0


def write_beir(directory: Path, qrels: str) -> Path:
    corpus = [
        {"_id": "d1", "title": "First", "text": "one"},
        {"_id": 2, "text": "two, untitled"},
        {"_id": "d3", "title": None, "text": "three", "metadata": {}},
    ]
    queries = [{"_id": "q1", "text": "find one"}, {"_id": "q2", "text": "nothing"}]
    directory.mkdir()
    (directory / "corpus.jsonl").write_text("".join(json.dumps(r) + "\n" for r in corpus))
    (directory / "queries.jsonl").write_text("\n".join(json.dumps(r) for r in queries) + "\n\n")
    (directory / "qrels").mkdir()
    (directory / "qrels" / "test.tsv").write_text(qrels)
    return directory


def test_load_beir(tmp_path: Path) -> None:
    qrels = "query-id\tcorpus-id\tscore\nq1\td1\t2\nq1\t2\t1\nq1\td3\t0\nq2\td3\t0\nq9\td1\t1\n"
    dataset = quality.load_beir(write_beir(tmp_path / "set", qrels))
    assert dataset.corpus["d1"] == quality.Passage("First", "one")
    assert dataset.corpus["2"].body() == "two, untitled"
    assert dataset.corpus["d1"].body() == "First\n\none"
    assert dataset.corpus["d3"].title == ""
    assert dataset.queries == {"q1": "find one", "q2": "nothing"}
    assert dataset.qrels["q1"] == {"d1": 2, "2": 1, "d3": 0}
    # q2 has no relevant document, q9 no text: neither is evaluated
    assert dataset.evaluated_queries() == ["q1"]


@pytest.mark.parametrize(
    ("qrels", "message"),
    [
        ("query-id\tcorpus-id\tscore\nq1\tnope\t1\n", "not in the corpus"),
        ("query-id\tcorpus-id\tscore\nq1\td1\thigh\n", "not an integer"),
        ("query-id\tcorpus-id\tscore\nq1\td1\n", "3 tab-separated fields"),
    ],
)
def test_load_beir_refuses_bad_judgments(tmp_path: Path, qrels: str, message: str) -> None:
    with pytest.raises(BenchError, match=message):
        quality.load_beir(write_beir(tmp_path / "set", qrels))


def test_load_beir_refuses_bad_lines(tmp_path: Path) -> None:
    directory = write_beir(tmp_path / "set", "query-id\tcorpus-id\tscore\n")
    (directory / "queries.jsonl").write_text('{"text": "no id"}\n')
    with pytest.raises(BenchError, match=r"queries\.jsonl:1: not an object with an _id"):
        quality.load_beir(directory)
    (directory / "queries.jsonl").write_text("{not json\n")
    with pytest.raises(BenchError, match="not JSON"):
        quality.load_beir(directory)


@pytest.mark.parametrize("doc", ["d1", "4983", "a/b c%.txt", "ünï", "..", "x\ny"])
def test_document_names_round_trip(doc: str) -> None:
    name = quality.document_name(doc)
    assert "/" not in name and "\\" not in name and "\n" not in name
    assert quality.corpus_id(name) == doc


def test_committed_dataset_is_well_formed() -> None:
    dataset = quality.load_beir(DATASET)
    assert len(dataset.corpus) >= 200
    assert len(dataset.evaluated_queries()) >= 50
    for query in dataset.evaluated_queries():
        relevant = [doc for doc, score in dataset.qrels[query].items() if score > 0]
        assert 1 <= len(relevant) <= 3, query
    assert all(passage.text.strip() for passage in dataset.corpus.values())
