"""The rag service against its own components called directly, in the same run.

(a) Ingestion: chunks per second through ``POST /uploadDocument`` on a real ``rag-server``
    process, against the raw embedder (``TransformersEmbedder.embed``) encoding exactly the same
    chunks in this process.
(b) Search: ``POST /documentSearch`` latency (p50, p99, sequential requests) over a synthetic
    corpus of 10k and 100k chunks written straight into LanceDB, against the query embedding
    plus ``LanceDbStore.search`` called in this process.
(c) Generation: time to the first byte of ``POST /generate`` (no retrieval), against the first
    delta of the same generator loaded in this process with the same prompt.
(d) Retrieval quality (``--quality DIR``): a dataset in the BEIR layout uploaded through
    ``POST /uploadDocument``, its queries searched through ``POST /documentSearch``; nDCG@10,
    Recall@10 and Recall@100 per search mode (``bench/rag/quality.py``).
(f) Search during ingestion (part ``ingesting``): ``POST /documentSearch`` p50/p99 while a 5 MB
    Markdown document (1 MB with ``--quick``) is being ingested, beside idle search in the same
    run (target: p99 <= 2 x idle).
(g) Store size: after the ingestion part, once the server's store upkeep has run, the LanceDB
    directory's bytes on disk per byte of live chunk data (their Arrow size).

Run ``python -m bench.rag --help`` for the options.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncGenerator, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import httpx

from bench.percentiles import percentile
from bench.rag import quality, search_under_ingestion, workload
from bench.rag.servers import BenchError, base_url, rag_server, wait_ready
from bench.ratelimit.servers import ServerProcess
from handlers.rag.stores.upkeep import UPKEEP_DELAY, VERSION_RETENTION, disk_usage

# Nothing may reach a model hub (as the server does).
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"

INGEST_RATIO_TARGET = 0.85
SEARCH_P50_TARGET_MS = 15.0
TTFB_RATIO_TARGET = 1.15
STORE_SIZE_TARGET = 3.0  # bytes on disk per byte of live chunk data, once upkeep has run
UPKEEP_ALLOWANCE_S = 2.0  # the store's index upkeep after a round of uploads takes < 0.2 s
SMOLLM2 = "SmolLM2-135M-Instruct"
RERANK_GAIN_TARGET = 0.02  # nDCG@10 the reranker adds to hybrid search on the dataset


@dataclass(frozen=True)
class Verdict:
    name: str
    value: float
    target: str
    passed: bool


@dataclass
class Report:
    figures: dict[str, Any]
    verdicts: list[Verdict]


def say(text: str) -> None:
    print(text, flush=True)


@contextmanager
def running(data_dir: Path, llm_model: str, log_dir: Path) -> Iterator[ServerProcess]:
    """A rag-server on ``data_dir``, ready (models loaded); stopped afterwards."""
    log = (log_dir / f"server-{time.monotonic_ns()}.log").open("w+b")
    server = rag_server(data_dir, llm_model, log)
    try:
        server.start()
        seconds = wait_ready(server)
        say(f"  rag-server ready on {base_url(server)} after {seconds:.1f} s")
        yield server
    finally:
        server.stop()
        log.close()


def share_models(data_dir: Path, models: Path) -> Path:
    """``data_dir`` whose generator cache is ``models`` (the model converts once per run)."""
    data_dir.mkdir(parents=True, exist_ok=True)
    link = data_dir / "models"
    if not link.exists():
        link.symlink_to(models, target_is_directory=True)
    return data_dir


# --------------------------------------------------------------------------- (a) ingestion


def chunk_texts(docs: list[tuple[str, bytes]], tmp: Path, tokenizer: Any) -> list[str]:
    """The chunks the service makes of ``docs`` (same extraction, chunker and settings)."""
    from handlers.rag.ingest.chunking import chunk_pages
    from handlers.rag.ingest.extract import extract_document

    texts: list[str] = []
    for name, data in docs:
        path = tmp / name
        path.write_bytes(data)
        pages = extract_document(path, name).pages
        texts += [piece.text for piece in chunk_pages(pages, tokenizer, 200, 40)]
        path.unlink()
    return texts


async def upload_all(url: str, docs: list[tuple[str, bytes]], concurrency: int) -> int:
    """Upload every document (``concurrency`` at a time); the chunks stored."""
    done = 0
    chunks = 0
    step = max(1, len(docs) // 4)
    semaphore = asyncio.Semaphore(concurrency)
    async with httpx.AsyncClient(base_url=url, timeout=600) as client:

        async def one(name: str, data: bytes) -> None:
            nonlocal done, chunks
            async with semaphore:
                response = await client.post("/uploadDocument", files={"file": (name, data)})
            if response.status_code != 200:
                raise BenchError(f"upload of {name}: {response.status_code} {response.text}")
            chunks += response.json()["chunks"]
            done += 1
            if done % step == 0 or done == len(docs):
                say(f"    uploaded {done}/{len(docs)} documents, {chunks} chunks")

        await asyncio.gather(*(one(name, data) for name, data in docs))
    return chunks


async def bench_ingestion(args: argparse.Namespace, tmp: Path, models: Path) -> Report:
    from handlers.rag.ingest.embedder import TransformersEmbedder, load_model

    docs = workload.documents(args.docs, args.words)
    say(f"(a) ingestion: {len(docs)} documents of ~{args.words} words, {args.rounds} round(s)")
    loaded = load_model("all-MiniLM-L6-v2")
    texts = chunk_texts(docs, tmp, loaded.tokenizer)
    say(f"  {len(texts)} chunks of <= 200 tokens")
    raw_rates: list[float] = []
    ours_rates: list[float] = []
    data_dir = share_models(tmp / "ingest", models)
    with running(data_dir, args.llm_model, tmp) as server:
        url = base_url(server)
        await upload_all(url, workload.documents(1, 300, seed=99), 1)  # warm-up
        embedder = TransformersEmbedder(loaded)
        try:
            await embedder.embed(texts[:64])  # warm-up
            for round_number in range(1, args.rounds + 1):
                started = time.perf_counter()
                await embedder.embed(texts)
                raw_rates.append(len(texts) / (time.perf_counter() - started))
                say(f"  round {round_number}: raw embedder {raw_rates[-1]:.1f} chunks/s")
                named = [(f"r{round_number}-{name}", data) for name, data in docs]
                started = time.perf_counter()
                stored = await upload_all(url, named, args.concurrency)
                ours_rates.append(stored / (time.perf_counter() - started))
                if stored != len(texts):
                    raise BenchError(f"the service stored {stored} chunks, not {len(texts)}")
                say(f"  round {round_number}: /uploadDocument {ours_rates[-1]:.1f} chunks/s")
                # the store's index upkeep runs once uploads pause; let it finish before
                # the baseline's next turn on the same CPUs
                await asyncio.sleep(UPKEEP_DELAY + UPKEEP_ALLOWANCE_S)
            store = await store_size(data_dir / "lancedb")
        finally:
            await embedder.close()
    raw, ours = statistics.median(raw_rates), statistics.median(ours_rates)
    ratio = ours / raw
    figures = {"chunks": len(texts), "raw_chunks_per_s": raw, "ours_chunks_per_s": ours, **store}
    verdict = Verdict(
        "ingestion ours/raw", ratio, f">= {INGEST_RATIO_TARGET}", ratio >= INGEST_RATIO_TARGET
    )
    per_byte = store["store_bytes_per_live_byte"]
    size_verdict = Verdict(
        "store bytes/live chunk byte",
        per_byte,
        f"<= {STORE_SIZE_TARGET:.0f}",
        per_byte <= STORE_SIZE_TARGET,
    )
    return Report(figures, [verdict, size_verdict])


async def store_size(directory: Path) -> dict[str, float]:
    """(g): the server's LanceDB directory once its upkeep has run (the follow-up round comes
    the retention after the last write), against the Arrow size of the chunks it holds (all
    live then: upkeep removes the rows of replaced and deleted documents)."""
    import lancedb

    wait = VERSION_RETENTION + UPKEEP_DELAY + UPKEEP_ALLOWANCE_S
    say(f"(g) store size: waiting {wait:.0f} s for the store's upkeep to run once more")
    await asyncio.sleep(wait)
    used = disk_usage([directory])
    connection = await lancedb.connect_async(directory)
    table = await connection.open_table("chunks")
    live = (await table.query().to_arrow()).nbytes
    table.close()  # type: ignore[no-untyped-call]
    connection.close()  # type: ignore[no-untyped-call]
    say(f"  {used.bytes} bytes in {used.files} files for {live} bytes of live chunks")
    return {
        "store_bytes": used.bytes,
        "store_files": used.files,
        "live_chunk_bytes": live,
        "store_bytes_per_live_byte": used.bytes / live,
    }


# --------------------------------------------------------------------------- (b) search


async def write_corpus(directory: Path, size: int) -> float:
    """``size`` synthetic chunks written straight into LanceDB; the seconds it took."""
    from handlers.rag.documents import DocumentRecord
    from handlers.rag.stores.lancedb_store import LanceDbStore
    from tests.rag.stores.corpus import synthetic_chunks

    chunks, vectors = synthetic_chunks(size, 384, 3)
    started = time.perf_counter()
    store = LanceDbStore(directory, 384)
    await store.open()
    try:
        by_document: dict[str, list[int]] = {}
        for row, chunk in enumerate(chunks):
            by_document.setdefault(chunk.document_id, []).append(row)
        now = datetime.datetime.now(datetime.UTC)
        for number, (document_id, rows) in enumerate(by_document.items(), 1):
            record = DocumentRecord(document_id, chunks[rows[0]].filename, len(rows), now)
            await store.replace_document(record, [chunks[r] for r in rows], vectors[rows])
            if number % max(1, len(by_document) // 4) == 0:
                say(f"    wrote {number}/{len(by_document)} documents")
        # the index refresh and the vector index build run in the background; closing would
        # cancel them (redone by the server while it is measured), so they finish here
        await store.wait_idle()
    finally:
        await store.close()
    return time.perf_counter() - started


async def timed_queries(url: str, queries: list[str], warmup: int) -> list[float]:
    latencies = []
    async with httpx.AsyncClient(base_url=url, timeout=60) as client:
        for index, query in enumerate(queries):
            started = time.perf_counter()
            response = await client.post("/documentSearch", json={"content": query})
            elapsed = time.perf_counter() - started
            if response.status_code != 200 or len(response.json()) != 4:
                raise BenchError(f"/documentSearch: {response.status_code} {response.text[:200]}")
            if index >= warmup:
                latencies.append(elapsed * 1000)
    return latencies


async def direct_queries(directory: Path, queries: list[str], warmup: int) -> list[float]:
    from handlers.rag.ingest.embedder import TransformersEmbedder
    from handlers.rag.stores.lancedb_store import LanceDbStore

    embedder = TransformersEmbedder.load("all-MiniLM-L6-v2")
    store = LanceDbStore(directory, 384)
    await store.open()
    latencies = []
    try:
        for index, query in enumerate(queries):
            started = time.perf_counter()
            vector = (await embedder.embed([query]))[0]
            hits = await store.search(query, vector, 4)
            elapsed = time.perf_counter() - started
            if len(hits) != 4:
                raise BenchError(f"direct search found {len(hits)} hits")
            if index >= warmup:
                latencies.append(elapsed * 1000)
    finally:
        await store.close()
        await embedder.close()
    return latencies


async def bench_search(args: argparse.Namespace, tmp: Path, models: Path) -> Report:
    queries = workload.queries(args.queries + args.warmup_queries)
    figures: dict[str, Any] = {}
    verdicts = []
    for size in args.sizes:
        say(f"(b) search over {size} chunks: {args.queries} sequential queries (num_docs 4)")
        data_dir = share_models(tmp / f"search-{size}", models)
        seconds = await write_corpus(data_dir / "lancedb", size)
        say(f"  corpus written in {seconds:.1f} s")
        with running(data_dir, args.llm_model, tmp) as server:
            ours = await timed_queries(base_url(server), queries, args.warmup_queries)
        direct = await direct_queries(data_dir / "lancedb", queries, args.warmup_queries)
        row = {
            "http_p50_ms": statistics.median(ours),
            "http_p99_ms": percentile(ours, 0.99),
            "direct_p50_ms": statistics.median(direct),
            "direct_p99_ms": percentile(direct, 0.99),
        }
        figures[str(size)] = row
        say(
            f"  /documentSearch p50 {row['http_p50_ms']:.1f} p99 {row['http_p99_ms']:.1f} ms | "
            f"embed+store.search p50 {row['direct_p50_ms']:.1f} p99 {row['direct_p99_ms']:.1f} ms"
        )
        if size >= 100_000:
            p50 = row["http_p50_ms"]
            target = f"<= {SEARCH_P50_TARGET_MS:.0f} ms"
            verdicts.append(
                Verdict(f"search p50 at {size}", p50, target, p50 <= SEARCH_P50_TARGET_MS)
            )
    return Report(figures, verdicts)


async def bench_search_during_ingestion(
    args: argparse.Namespace, tmp: Path, models: Path
) -> Report:
    size = 1_000_000 if args.quick else 5_000_000
    say(f"(f) search while a {size / 1e6:.0f} MB Markdown document is ingested, beside idle search")
    with running(share_models(tmp / "search-ingesting", models), args.llm_model, tmp) as server:
        async with httpx.AsyncClient(base_url=base_url(server), timeout=60) as client:
            row = await search_under_ingestion.measure(client, document_bytes=size, say=say)
    say(f"  {row.summary()}")
    target = f"<= {search_under_ingestion.P99_RATIO_TARGET:.0f}"
    return Report(
        row.figures(), [Verdict("search p99 ingesting/idle", row.p99_ratio, target, row.passed)]
    )


# --------------------------------------------------------------------------- (c) generation


async def bench_generation(args: argparse.Namespace, tmp: Path, models: Path) -> Report:
    from handlers.rag.generation.local import LocalGenerator
    from handlers.rag.generation.prompt import conversation_messages

    say(f"(c) /generate time to first byte, {args.samples} samples, model {args.llm_model}")
    data_dir = share_models(tmp / "generate", models)
    prompt = {
        "question": workload.QUESTION,
        "context": "",
        "use_knowledge_base": False,
        "num_tokens": 16,
    }
    messages = conversation_messages(workload.QUESTION, "")
    ours: list[float] = []
    direct: list[float] = []
    with running(data_dir, args.llm_model, tmp) as server:
        generator = LocalGenerator.load(args.llm_model, cache_dir=models)
        try:
            async with httpx.AsyncClient(base_url=base_url(server), timeout=120) as client:
                for sample in range(-2, args.samples):  # two warm-up samples each
                    started = time.perf_counter()
                    async with client.stream("POST", "/generate", json=prompt) as response:
                        first = await anext(response.aiter_raw())
                    http_s = time.perf_counter() - started
                    started = time.perf_counter()
                    stream = generator.stream(messages, 16)
                    assert isinstance(stream, AsyncGenerator)  # closed right after its first delta
                    delta = await anext(stream)
                    direct_s = time.perf_counter() - started
                    await stream.aclose()
                    if not first or not isinstance(delta, str):
                        raise BenchError("an answer started without text")
                    if sample >= 0:
                        ours.append(http_s * 1000)
                        direct.append(direct_s * 1000)
                        say(f"  sample {sample + 1}: /generate {http_s * 1000:.0f} ms, "
                            f"generator {direct_s * 1000:.0f} ms")  # fmt: skip
        finally:
            await generator.close()
    http_ms, direct_ms = statistics.median(ours), statistics.median(direct)
    ratio = http_ms / direct_ms
    figures = {"http_ttfb_ms": http_ms, "direct_ttfb_ms": direct_ms}
    verdict = Verdict(
        "TTFB /generate/direct", ratio, f"<= {TTFB_RATIO_TARGET}", ratio <= TTFB_RATIO_TARGET
    )
    return Report(figures, [verdict])


# --------------------------------------------------------------------------- (d) quality


async def bench_quality(args: argparse.Namespace, tmp: Path, models: Path) -> Report:
    """(d): the dataset in ``args.quality`` through a fresh server (a tiny generator: nothing
    is generated), every search mode in turn."""
    from tests.rag.tiny_models import build_tiny_causal_lm

    dataset = quality.load_beir(args.quality)
    say(
        f"(d) retrieval quality on {args.quality}: {len(dataset.corpus)} documents, "
        f"{len(dataset.evaluated_queries())} evaluated queries"
    )
    tiny = str(build_tiny_causal_lm(tmp / "quality-lm"))
    with running(share_models(tmp / "quality", models), tiny, tmp) as server:
        url = base_url(server)
        upload = await quality.upload_documents(url, dataset, upload_all, args.concurrency, say)
        # the store folds new rows into its indexes once uploads pause: search what it serves
        await asyncio.sleep(UPKEEP_DELAY + UPKEEP_ALLOWANCE_S)
        results = await quality.evaluate(url, dataset, say)
    modes = {result.name: result for result in results}
    figures = {"upload": upload, "modes": {name: r.figures() for name, r in modes.items()}}
    verdicts = []
    hybrid, reranked = modes.get("hybrid"), modes.get("hybrid+rerank")
    if hybrid and reranked and hybrid.supported and reranked.supported:
        gain = reranked.ndcg_10 - hybrid.ndcg_10
        target = f">= {RERANK_GAIN_TARGET}"
        verdicts.append(Verdict("reranker nDCG@10 gain", gain, target, gain >= RERANK_GAIN_TARGET))
    return Report(figures, verdicts)


# --------------------------------------------------------------------------- main


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.rag", description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer documents, queries, samples")
    parser.add_argument("--tiny", action="store_true", help="a tiny generator instead of SmolLM2")
    parser.add_argument(
        "--parts",
        default="ingest,search,ingesting,generate",
        help="which parts to run (of ingest, search, ingesting, generate, quality)",
    )
    parser.add_argument("--docs", type=int, help="documents uploaded per round (default 24)")
    parser.add_argument("--words", type=int, default=1500, help="words per document")
    parser.add_argument("--concurrency", type=int, default=4, help="uploads in flight")
    parser.add_argument("--rounds", type=int, help="ingestion rounds (default 2)")
    parser.add_argument("--sizes", default="10000,100000", help="corpus sizes for search")
    parser.add_argument("--queries", type=int, help="measured queries per size (default 200)")
    parser.add_argument("--samples", type=int, help="TTFB samples (default 10)")
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    parser.add_argument(
        "--quality",
        type=Path,
        metavar="DIR",
        help="(d) retrieval quality on the BEIR-layout dataset in DIR (e.g. bench/rag/"
        "quality_data); runs only this part unless --parts names others and 'quality'",
    )
    args = parser.parse_args(argv)
    quick = args.quick
    args.docs = args.docs or (8 if quick else 24)
    args.rounds = args.rounds or (1 if quick else 2)
    args.queries = args.queries or (50 if quick else 200)
    args.warmup_queries = 10
    args.samples = args.samples or (4 if quick else 10)
    args.sizes = [int(size) for size in args.sizes.split(",") if size]
    args.part_list = [part for part in args.parts.split(",") if part]
    if args.quality is not None and "quality" not in args.part_list:
        args.part_list = ["quality"]
    if "quality" in args.part_list and args.quality is None:
        parser.error("part quality needs --quality DIR")
    unknown = set(args.part_list) - {"ingest", "search", "ingesting", "generate", "quality"}
    if unknown:
        parser.error(f"unknown parts: {', '.join(sorted(unknown))}")
    return args


async def run(args: argparse.Namespace, tmp: Path) -> dict[str, Report]:
    models = tmp / "models"
    models.mkdir()
    if args.tiny:
        from tests.rag.tiny_models import build_tiny_causal_lm

        args.llm_model = str(build_tiny_causal_lm(tmp / "tiny-lm"))
    else:
        args.llm_model = SMOLLM2
    parts = {
        "ingest": bench_ingestion,
        "search": bench_search,
        "ingesting": bench_search_during_ingestion,
        "generate": bench_generation,
        "quality": bench_quality,
    }
    return {name: await parts[name](args, tmp, models) for name in args.part_list}


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    say(
        f"bench.rag: {', '.join(args.part_list)}; {'quick' if args.quick else 'full'} run; "
        f"{os.cpu_count()} CPUs; Python {platform.python_version()}"
    )
    try:
        with tempfile.TemporaryDirectory(prefix="bench-rag-") as tmp:
            reports = asyncio.run(run(args, Path(tmp)))
    except BenchError as error:
        print(f"FAILED: {error}", file=sys.stderr)
        return 1
    say("")
    verdicts = [v for report in reports.values() for v in report.verdicts]
    for v in verdicts:
        say(f"{v.name:<28} {v.value:8.2f}  target {v.target:<10} {'PASS' if v.passed else 'FAIL'}")
    passed = sum(v.passed for v in verdicts)
    say(f"\ntargets: {passed} PASS, {len(verdicts) - passed} FAIL")
    if args.json is not None:
        doc = {name: {"figures": r.figures, "targets": [asdict(v) for v in r.verdicts]}
               for name, r in reports.items()}  # fmt: skip
        args.json.write_text(json.dumps(doc, indent=2) + "\n")
        say(f"results written to {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
