"""(f) Search while a large document is ingested, beside idle search in the same run.

One round: ``idle`` sequential ``POST /documentSearch`` requests on a quiet service, then the
same requests, paced the same way, for as long as one ``POST /uploadDocument`` of a large
Markdown document (5 MB by default: about 6,000 chunks of 200 tokens) runs, then ``idle``
requests again once it has finished and the store's upkeep after that large write (folding
7,900 rows into its indexes) has had ``settle_s`` to run. Idle figures pool the requests
before and after, so a machine whose load drifts during the run (a shared one) weighs on both
sides alike; each side's p99 is reported too. Every
request must find ``num_docs`` hits: a small corpus is uploaded first, and the large document
replaces itself from round to round (same file name).

The target is search p99 during ingestion within 2 x the idle p99 (issue 24, item 3): the
embedder runs an upload's chunks as background work in slices of one chunk, after any waiting
query (:mod:`handlers.rag.ingest.embedder`).

``bench.rag`` runs :func:`measure` against its ``rag-server``; the function takes any
``httpx.AsyncClient`` whose base URL is the service, so the same round runs in-process too.
"""

from __future__ import annotations

import asyncio
import random
import statistics
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import httpx

from bench.percentiles import percentile as nearest_rank
from bench.rag import workload
from bench.ratelimit.servers import BenchError

__all__ = [
    "DOCUMENT_NAME",
    "P99_RATIO_TARGET",
    "SearchUnderIngestion",
    "large_markdown",
    "measure",
]

P99_RATIO_TARGET = 2.0
"""Search p99 while ingesting, at most this multiple of the idle p99."""
DOCUMENT_NAME = "bench-large.md"
NUM_DOCS = 4
_SECTION_WORDS = 400
_CORPUS_DOCS = 4


@dataclass
class SearchUnderIngestion:
    """Latencies (ms) of the searches of one run, and the ingestions they ran beside."""

    document_bytes: int
    idle_ms: list[float] = field(default_factory=list)
    idle_before_ms: list[float] = field(default_factory=list)
    idle_after_ms: list[float] = field(default_factory=list)
    ingesting_ms: list[float] = field(default_factory=list)
    ingesting_at_s: list[float] = field(default_factory=list)
    """When each search of ``ingesting_ms`` started, in seconds since its upload started."""
    ingest_s: list[float] = field(default_factory=list)
    chunks: int = 0

    @property
    def p99_ratio(self) -> float:
        return percentile(self.ingesting_ms, 0.99) / percentile(self.idle_ms, 0.99)

    @property
    def passed(self) -> bool:
        return self.p99_ratio <= P99_RATIO_TARGET

    def figures(self) -> dict[str, Any]:
        return {
            "document_bytes": self.document_bytes,
            "chunks": self.chunks,
            "ingest_s": statistics.median(self.ingest_s),
            "idle_searches": len(self.idle_ms),
            "idle_p50_ms": statistics.median(self.idle_ms),
            "idle_p99_ms": percentile(self.idle_ms, 0.99),
            "idle_before_p99_ms": percentile(self.idle_before_ms, 0.99),
            "idle_after_p99_ms": percentile(self.idle_after_ms, 0.99),
            "ingesting_searches": len(self.ingesting_ms),
            "ingesting_p50_ms": statistics.median(self.ingesting_ms),
            "ingesting_p99_ms": percentile(self.ingesting_ms, 0.99),
            "p99_ratio": self.p99_ratio,
        }

    def summary(self) -> str:
        f = self.figures()
        return (
            f"idle p50 {f['idle_p50_ms']:.1f} p99 {f['idle_p99_ms']:.1f} ms "
            f"({f['idle_searches']}) | ingesting p50 {f['ingesting_p50_ms']:.1f} "
            f"p99 {f['ingesting_p99_ms']:.1f} ms ({f['ingesting_searches']}) | "
            f"p99 ratio {f['p99_ratio']:.2f} | {f['chunks']} chunks in {f['ingest_s']:.1f} s"
        )


def percentile(values: Sequence[float], fraction: float) -> float:
    """:func:`bench.percentiles.percentile`, refusing a row without searches."""
    if not values:
        raise BenchError("no searches were measured")
    return nearest_rank(values, fraction)


def large_markdown(size_bytes: int, seed: int = 5) -> bytes:
    """A Markdown document of about ``size_bytes`` (UTF-8): sections of English-like words
    under headings, from a fixed seed."""
    rng = random.Random(seed)
    parts: list[str] = ["# Benchmark handbook\n"]
    written = len(parts[0])
    section = 0
    while written < size_bytes:
        section += 1
        ((_, body),) = workload.documents(1, _SECTION_WORDS, seed=rng.randrange(1 << 30))
        text = f"\n## Section {section}\n\n{body.decode()}\n"
        parts.append(text)
        written += len(text.encode())
    return "".join(parts).encode()


async def measure(
    client: httpx.AsyncClient,
    *,
    document_bytes: int = 5_000_000,
    rounds: int = 1,
    idle_searches: int = 100,
    interval_s: float = 0.05,
    warmup: int = 10,
    settle_s: float = 15.0,
    say: Callable[[str], None] = print,
) -> SearchUnderIngestion:
    """Runs ``rounds`` rounds (idle, ingesting, idle) against the service at ``client``'s base
    URL; searches are sequential, ``interval_s`` apart; the idle searches after an ingestion
    start ``settle_s`` after it."""
    document = large_markdown(document_bytes)
    result = SearchUnderIngestion(len(document))
    for name, data in workload.documents(_CORPUS_DOCS, 300, seed=41):
        await upload(client, name, data)
    queries = _endless(workload.queries(997, seed=17))
    for _ in range(warmup):
        await search(client, next(queries))
    for number in range(1, rounds + 1):
        idle_before = await searches(client, queries, idle_searches, interval_s)
        started = time.perf_counter()
        uploading = asyncio.create_task(upload(client, DOCUMENT_NAME, document))
        ingesting: list[float] = []
        while not uploading.done():
            result.ingesting_at_s.append(time.perf_counter() - started)
            ingesting.append(await search(client, next(queries)))
            await asyncio.wait({uploading}, timeout=interval_s)
        result.chunks = await uploading
        result.ingest_s.append(time.perf_counter() - started)
        await asyncio.sleep(settle_s)
        idle_after = await searches(client, queries, idle_searches, interval_s)
        result.idle_ms += idle_before + idle_after
        result.idle_before_ms += idle_before
        result.idle_after_ms += idle_after
        result.ingesting_ms += ingesting
        say(
            f"  round {number}: {result.chunks} chunks in {result.ingest_s[-1]:.1f} s; search "
            f"idle p99 {percentile(idle_before, 0.99):.1f} ms before, "
            f"{percentile(idle_after, 0.99):.1f} ms after; ingesting p50 "
            f"{statistics.median(ingesting):.1f} p99 {percentile(ingesting, 0.99):.1f} ms "
            f"({len(ingesting)} searches)"
        )
    return result


async def searches(
    client: httpx.AsyncClient, queries: Iterator[str], count: int, interval_s: float
) -> list[float]:
    """``count`` sequential searches, ``interval_s`` apart; their latencies in ms."""
    latencies = []
    for _ in range(count):
        latencies.append(await search(client, next(queries)))
        await asyncio.sleep(interval_s)
    return latencies


async def search(client: httpx.AsyncClient, query: str) -> float:
    """One ``POST /documentSearch``; its latency in ms."""
    started = time.perf_counter()
    response = await client.post("/documentSearch", json={"content": query, "num_docs": NUM_DOCS})
    elapsed = (time.perf_counter() - started) * 1000
    if response.status_code != 200 or len(response.json()) != NUM_DOCS:
        raise BenchError(f"/documentSearch: {response.status_code} {response.text[:200]}")
    return elapsed


async def upload(client: httpx.AsyncClient, name: str, data: bytes) -> int:
    """One ``POST /uploadDocument``; the chunks stored."""
    response = await client.post("/uploadDocument", files={"file": (name, data)}, timeout=3600)
    if response.status_code != 200:
        raise BenchError(f"upload of {name}: {response.status_code} {response.text[:200]}")
    chunks: int = response.json()["chunks"]
    return chunks


def _endless(items: list[str]) -> Iterator[str]:
    while True:
        yield from items
