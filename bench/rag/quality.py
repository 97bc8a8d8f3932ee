"""(d) Retrieval quality: a dataset in the BEIR layout, the standard ranking metrics, and the
evaluation of the rag service's search on it through its HTTP API.

A BEIR directory holds ``corpus.jsonl`` (one JSON object per line: ``_id``, ``title``,
``text``), ``queries.jsonl`` (``_id``, ``text``) and ``qrels/test.tsv`` (a header line, then
``query-id<TAB>corpus-id<TAB>score`` with graded integer scores, 0 meaning judged not
relevant). The metrics are those BEIR reports through ``pytrec_eval`` (trec_eval's
definitions): nDCG@k with linear gains (``rel / log2(rank + 1)``, the ideal ranking made of
every judged document of the query), and Recall@k over the documents judged relevant
(score >= 1). Queries without a relevant document are not evaluated; a hit whose id equals
the query's id is dropped (BEIR's ``ignore_identical_ids``, on by default there).

Each corpus entry is uploaded as one plain-text document named after its id (percent-encoded,
``.txt``), the title and the text separated by a blank line; every query is then searched
with ``num_docs`` 100 once per mode, its hits (chunks, best first) mapped back to corpus ids
through their ``source`` file name, each document ranked at its best chunk.
"""

from __future__ import annotations

import csv
import json
import math
import time
import urllib.parse
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from bench.ratelimit.servers import BenchError

__all__ = [
    "MODES",
    "NUM_DOCS",
    "BeirSet",
    "ModeResult",
    "Passage",
    "corpus_id",
    "document_name",
    "evaluate",
    "load_beir",
    "ndcg_at",
    "recall_at",
    "upload_documents",
]

NUM_DOCS = 100  # the service's largest num_docs: chunks, so at most 100 documents
MAX_LINE = 1 << 20  # bytes per JSONL line or qrels row: a larger one is not a BEIR entry

# Each mode: the extra /documentSearch fields to try, first accepted wins. A mode whose every
# alternative is refused with a 422 (an unknown field) is reported as not supported. Hybrid
# search is the service's default, so its last alternative sends no extra field.
MODES: dict[str, list[dict[str, Any]]] = {
    "text": [{"mode": "text", "rerank": False}, {"mode": "text"}],
    "vector": [{"mode": "vector", "rerank": False}, {"mode": "vector"}],
    "hybrid": [{"mode": "hybrid", "rerank": False}, {"mode": "hybrid"}, {}],
    "hybrid+rerank": [{"mode": "hybrid", "rerank": True}],
}
NOT_SUPPORTED = "n/a (not supported by this server)"

Say = Callable[[str], None]
Upload = Callable[[str, list[tuple[str, bytes]], int], Awaitable[int]]


@dataclass(frozen=True)
class Passage:
    """One corpus entry."""

    title: str
    text: str

    def body(self) -> str:
        """What is uploaded: the title, a blank line, the text (the text alone if untitled)."""
        return f"{self.title}\n\n{self.text}" if self.title.strip() else self.text


@dataclass(frozen=True)
class BeirSet:
    """A loaded BEIR directory: passages and queries by id, and per query the graded
    judgments ``{corpus id: score}`` of its split."""

    corpus: dict[str, Passage]
    queries: dict[str, str]
    qrels: dict[str, dict[str, int]]

    def evaluated_queries(self) -> list[str]:
        """Ids of the queries that have text and at least one relevant document, sorted."""
        return sorted(
            query
            for query, judged in self.qrels.items()
            if query in self.queries and any(score > 0 for score in judged.values())
        )


def _jsonl(path: Path) -> list[dict[str, Any]]:
    rows = []
    with path.open("rb") as lines:
        for number, line in enumerate(lines, 1):
            if len(line) > MAX_LINE:
                raise BenchError(f"{path}:{number}: line longer than {MAX_LINE} bytes")
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except ValueError as error:
                raise BenchError(f"{path}:{number}: not JSON ({error})") from None
            if not isinstance(row, dict) or not isinstance(row.get("_id"), str | int):
                raise BenchError(f"{path}:{number}: not an object with an _id")
            rows.append(row)
    return rows


def _text(row: Mapping[str, Any], key: str, where: str) -> str:
    value = row.get(key, "")
    if value is None:
        return ""
    if not isinstance(value, str):
        raise BenchError(f"{where}: {key} is not a string")
    return value


def load_beir(directory: Path, split: str = "test") -> BeirSet:
    """The BEIR dataset in ``directory`` with the judgments of ``qrels/{split}.tsv``."""
    corpus: dict[str, Passage] = {}
    for row in _jsonl(directory / "corpus.jsonl"):
        where = f"corpus entry {row['_id']}"
        corpus[str(row["_id"])] = Passage(_text(row, "title", where), _text(row, "text", where))
    queries = {
        str(row["_id"]): _text(row, "text", f"query {row['_id']}")
        for row in _jsonl(directory / "queries.jsonl")
    }
    qrels: dict[str, dict[str, int]] = {}
    path = directory / "qrels" / f"{split}.tsv"
    with path.open(newline="", encoding="utf-8") as rows:
        reader = csv.reader(rows, delimiter="\t", quoting=csv.QUOTE_NONE)
        for number, fields in enumerate(reader, 1):
            if number == 1 and fields[:1] == ["query-id"]:
                continue
            if not fields:
                continue
            if len(fields) != 3:
                raise BenchError(f"{path}:{number}: expected 3 tab-separated fields")
            query, document, score = fields
            try:
                qrels.setdefault(query, {})[document] = int(score)
            except ValueError:
                raise BenchError(f"{path}:{number}: score {score!r} is not an integer") from None
    missing = {d for judged in qrels.values() for d in judged} - corpus.keys()
    if missing:
        raise BenchError(f"{path}: {len(missing)} judged documents not in the corpus")
    return BeirSet(corpus, queries, qrels)


# --------------------------------------------------------------------------- metrics


def ndcg_at(ranked: Sequence[str], judged: Mapping[str, int], k: int = 10) -> float:
    """nDCG@k of ``ranked`` (ids, best first, no repeats) against graded ``judged`` scores:
    DCG = sum of ``rel_i / log2(i + 1)`` over ranks i = 1..k, divided by the DCG of the ideal
    order of the judged documents; 0 when nothing is relevant."""
    dcg = sum(judged.get(doc, 0) / math.log2(rank + 2) for rank, doc in enumerate(ranked[:k]))
    ideal_gains = sorted((score for score in judged.values() if score > 0), reverse=True)[:k]
    ideal = sum(score / math.log2(rank + 2) for rank, score in enumerate(ideal_gains))
    return dcg / ideal if ideal > 0 else 0.0


def recall_at(ranked: Sequence[str], judged: Mapping[str, int], k: int) -> float:
    """The share of the relevant documents (score >= 1) among the first ``k`` of ``ranked``;
    0 when nothing is relevant."""
    relevant = {doc for doc, score in judged.items() if score > 0}
    if not relevant:
        return 0.0
    return len(relevant.intersection(ranked[:k])) / len(relevant)


# --------------------------------------------------------------------------- the service


def document_name(corpus_id: str) -> str:
    """The file name a corpus entry is uploaded under (reversible by :func:`corpus_id`)."""
    return urllib.parse.quote(corpus_id, safe="") + ".txt"


def corpus_id(source: str) -> str:
    """The corpus id of a hit's ``source`` file name."""
    if not source.endswith(".txt"):
        raise BenchError(f"a hit from {source!r}, not a document of the corpus")
    return urllib.parse.unquote(source.removesuffix(".txt"))


async def upload_documents(
    url: str, dataset: BeirSet, upload: Upload, concurrency: int, say: Say
) -> dict[str, Any]:
    """Uploads the corpus with ``upload`` (the benchmark's uploader); its figures."""
    docs = [
        (document_name(doc), passage.body().encode())
        for doc, passage in dataset.corpus.items()
        if passage.body().strip()
    ]
    skipped = len(dataset.corpus) - len(docs)
    if any(len(name) > 255 for name, _ in docs):
        raise BenchError("a corpus id is too long to be a file name (255 characters)")
    say(f"  uploading {len(docs)} documents, {concurrency} at a time ({skipped} empty ones not)")
    started = time.perf_counter()
    chunks = await upload(url, docs, concurrency)
    seconds = time.perf_counter() - started
    say(f"  uploaded in {seconds:.1f} s: {chunks} chunks, {len(docs) / seconds:.1f} documents/s")
    return {"documents": len(docs), "empty_skipped": skipped, "chunks": chunks, "seconds": seconds}


@dataclass
class ModeResult:
    """One mode's outcome: the metrics (means over the evaluated queries) or why not."""

    name: str
    fields: dict[str, Any] | None = None
    ndcg_10: float = 0.0
    recall_10: float = 0.0
    recall_100: float = 0.0
    seconds: float = 0.0
    queries: int = 0

    @property
    def supported(self) -> bool:
        return self.fields is not None

    def summary(self) -> str:
        if not self.supported:
            return f"{self.name:<14} {NOT_SUPPORTED}"
        per_query = self.seconds / self.queries * 1000
        return (
            f"{self.name:<14} nDCG@10 {self.ndcg_10:.4f}  Recall@10 {self.recall_10:.4f}  "
            f"Recall@100 {self.recall_100:.4f}  {self.seconds:.1f} s "
            f"({per_query:.0f} ms/query; fields {json.dumps(self.fields)})"
        )

    def figures(self) -> dict[str, Any]:
        if not self.supported:
            return {"supported": False, "note": NOT_SUPPORTED}
        return {
            "supported": True,
            "fields": self.fields,
            "ndcg@10": self.ndcg_10,
            "recall@10": self.recall_10,
            "recall@100": self.recall_100,
            "seconds": self.seconds,
            "queries": self.queries,
        }


async def _search(client: httpx.AsyncClient, query: str, fields: Mapping[str, Any]) -> list[str]:
    """The corpus ids of one search, best first (each document at its best chunk); a 422 to
    extra ``fields`` raises ``_Refused``."""
    response = await client.post(
        "/documentSearch", json={"content": query[:4000], "num_docs": NUM_DOCS, **fields}
    )
    if response.status_code == 422 and fields:
        raise _Refused(response.text[:300])
    if response.status_code != 200:
        raise BenchError(f"/documentSearch: {response.status_code} {response.text[:300]}")
    ranked: list[str] = []
    for hit in response.json():
        doc = corpus_id(hit["source"])
        if doc not in ranked:
            ranked.append(doc)
    return ranked


class _Refused(Exception):
    """The server answered a field set with a 422."""


async def _accepted_fields(
    client: httpx.AsyncClient, probe: str, alternatives: Sequence[dict[str, Any]]
) -> dict[str, Any] | None:
    for fields in alternatives:
        try:
            await _search(client, probe, fields)
        except _Refused:
            continue
        return fields
    return None


async def evaluate(url: str, dataset: BeirSet, say: Say) -> list[ModeResult]:
    """Every evaluated query searched once per mode of :data:`MODES`, in turn."""
    query_ids = dataset.evaluated_queries()
    if not query_ids:
        raise BenchError("no query has a relevant document in the judgments")
    results = []
    async with httpx.AsyncClient(base_url=url, timeout=120) as client:
        for name, alternatives in MODES.items():
            result = ModeResult(name)
            results.append(result)
            result.fields = await _accepted_fields(
                client, dataset.queries[query_ids[0]], alternatives
            )
            if result.fields is None:
                say(f"  {result.summary()}")
                continue
            ndcg = recall10 = recall100 = 0.0
            started = time.perf_counter()
            for query in query_ids:
                judged = dataset.qrels[query]
                ranked = [
                    doc
                    for doc in await _search(client, dataset.queries[query], result.fields)
                    if doc != query
                ]
                ndcg += ndcg_at(ranked, judged, 10)
                recall10 += recall_at(ranked, judged, 10)
                recall100 += recall_at(ranked, judged, 100)
            result.seconds = time.perf_counter() - started
            count = len(query_ids)
            result.queries = count
            result.ndcg_10, result.recall_10 = ndcg / count, recall10 / count
            result.recall_100 = recall100 / count
            say(f"  {result.summary()}")
    return results
