"""The embedded vector store: LanceDB tables in a local directory, hybrid search by RRF.

Readers never see a half-written document. LanceDB has no multi-table transactions, so the
set of live documents (:mod:`handlers.rag.stores.consistency`) decides what a search may
return: new chunk rows are written first, then the document row, then the new live set is
published, and only then are the rows of replaced documents deleted. Rows of ids that are not
live (left by a crash between those steps) are removed at :meth:`LanceDbStore.open`.

The store uses LanceDB's asynchronous API: its work runs on LanceDB's own runtime threads,
never on the event loop. Upkeep (full-text index refresh, compaction of small fragments,
pruning of table versions older than the retention, the vector index once the table is large)
runs in rounds in one background task, scheduled by :mod:`handlers.rag.stores.upkeep` (after
a pause in writes or a number of them, at most every ``upkeep_interval`` seconds, and once
more a retention after the writes stop, so that the store shrinks back without a later
write). Rows not yet in an index are searched exhaustively, so a write is found at once
either way. Each round logs one INFO line: what it compacted and removed, the bytes and files
on disk before and after.

Upkeep never blocks reads, and loses no write. LanceDB commits are optimistic: appends
commit on top of a compaction, so a round after appends only runs beside writes. A delete
pre-empts a concurrent compaction ("retryable commit conflict"), whose rewritten copy then
stays on disk unreferenced, and a stream of deletes could starve upkeep: a round after
deletions (and a retried one) holds the write lock instead, where writes wait for it (it then
also removes unreferenced files; see ``_optimize``). Pruning removes the files of old
versions, which a search that started on such a version may still be reading: a search that
fails while an upkeep round overlapped it is run again on the current version (at most
``SEARCH_ATTEMPTS`` times); the latest version is never pruned.

Search issues a cosine query and a BM25 query concurrently and fuses them here; filtering
out non-live rows afterwards measured faster than a ``document_id IN (...)`` filter in the
queries (100k rows: BM25 3.0 vs 10.6 ms, cosine 125 vs 146 ms without an index).

Collections and metadata filters run inside both queries as LanceDB pre-filters
(:mod:`handlers.rag.stores.lancedb_where`) on indexed chunk columns: ``collection`` (BITMAP)
and ``meta_terms`` (LABEL_LIST, the document's metadata as typed terms). A range is looked up
as the terms of the live values within it (:mod:`handlers.rag.stores.filtering`); measured at
100k chunks with the vector index, p50 of a collection + term filter: cosine 8.5-10.4 ms and
BM25 3.1-4.0 ms against 8.9-11.4 and 2.5-3.0 ms unfiltered, where the same range read from the
``meta_numbers`` map column took 19.3 and 15.5 ms. An indexed cosine query whose pre-filter
leaves too few rows in the probed partitions is run again exactly (``bypass_vector_index``),
so a filtered search returns ``limit`` hits whenever that many chunks match.

Stores written before collections existed are migrated at open: the missing columns are
added (``collection`` = ``default``, metadata empty) and the indexes built.
"""

from __future__ import annotations

import asyncio
import datetime
import json
import logging
import time
from collections.abc import Collection, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import lancedb
import numpy as np
import pyarrow as pa  # type: ignore[import-untyped]
from lancedb.index import FTS, Bitmap, IvfSq, LabelList
from lancedb.query import AsyncFTSQuery, AsyncVectorQuery
from lancedb.table import AsyncTable

from handlers.rag.documents import Chunk, DocumentRecord, SearchHit
from handlers.rag.filters import Filter
from handlers.rag.metadata import (
    DEFAULT_COLLECTION,
    Metadata,
    check_collection,
    check_metadata,
    metadata_json,
    metadata_numbers,
    metadata_terms,
)
from handlers.rag.stores.base import SearchMode, StoreError, Vectors
from handlers.rag.stores.consistency import (
    LiveDocuments,
    check_document,
    check_query,
    newest_first,
    recover_live,
    with_document,
    without_document,
)
from handlers.rag.stores.filtering import RANGE_TERMS_MAX, NumericValues, resolve_ranges
from handlers.rag.stores.lancedb_where import quote, where_sql
from handlers.rag.stores.upkeep import (
    UPKEEP_DELAY,
    UPKEEP_INTERVAL,
    UPKEEP_WRITES,
    VERSION_RETENTION,
    DiskUsage,
    UpkeepPolicy,
    UpkeepScheduler,
    disk_usage,
)
from handlers.rag.worker_threads import WorkerThreads

if TYPE_CHECKING:
    from lancedb._lancedb import OptimizeStats

__all__ = [
    "INDEX_THRESHOLD",
    "SEARCH_ATTEMPTS",
    "LanceDbStore",
    "reciprocal_rank_fusion",
]

log = logging.getLogger(__name__)

RRF_K = 60
CANDIDATES = 10  # per ranked list at least: fusion needs more than the final few
VECTOR_INDEX = "vector_idx"  # LanceDB's name for the index on the vector column
INDEX_THRESHOLD = 5_000  # rows from which the vector index beats an exact scan (see __init__)
REFINE_FACTOR = 2  # indexed queries re-rank this many times the rows wanted on full vectors
MAX_VECTOR_DELTAS = 2  # rebuild the vector index once optimize has appended more parts
SEARCH_ATTEMPTS = 3  # runs of a search whose files an overlapping upkeep round pruned
MIN_CLEANUP_AGE = datetime.timedelta(milliseconds=1)  # LanceDB warns about 0 (see _optimize)
FOLLOW_UP_MARGIN = 1.0  # seconds past the retention before the follow-up round
_CHUNK_COLUMNS = [
    "text",
    "document_id",
    "filename",
    "position",
    "page",
    "content_hash",
    "collection",
]
_SCALAR_INDEXES: dict[str, Bitmap | LabelList] = {"collection": Bitmap(), "meta_terms": LabelList()}
# Columns added since the first schema, with what rows written before get (an SQL expression,
# or None: null), in schema order.
_ADDED_CHUNK_COLUMNS: dict[str, str | None] = {
    "collection": quote(DEFAULT_COLLECTION),
    "meta_terms": None,
    "meta_numbers": None,
}
_ADDED_DOCUMENT_COLUMNS: dict[str, str | None] = {
    "collection": quote(DEFAULT_COLLECTION),
    "metadata": quote("{}"),
}


def reciprocal_rank_fusion(
    rankings: Sequence[Sequence[tuple[str, int]]], k: int = RRF_K
) -> dict[tuple[str, int], float]:
    """Each key's fused score, the sum over rankings of 1 / (k + rank), rank 1-based."""
    scores: dict[tuple[str, int], float] = {}
    for ranking in rankings:
        for rank, key in enumerate(ranking, 1):
            scores[key] = scores.get(key, 0.0) + 1.0 / (k + rank)
    return scores


class LanceDbStore:
    """Chunks and documents in the LanceDB tables ``<table_prefix>chunks`` and
    ``<table_prefix>documents`` under ``directory``.

    ``index_threshold``: once the chunks table holds this many rows, an approximate nearest
    neighbour index (IVF_SQ, cosine) is built in the background; rows written after it are
    searched exhaustively until the next background refresh folds them in. An exact scan
    costs about 0.5 µs a row (384 dimensions: 2.4 ms at 2k rows, 6 ms at 10k, 15 ms at 30k,
    37 ms at 100k) and an indexed query about 2 ms up to 10k rows and 5 ms at 100k, so the
    default index comes early. Indexed queries fetch ``REFINE_FACTOR`` times the rows wanted
    from the scalar-quantised index and re-rank them on the stored vectors: recall@10 against
    an exact search on random unit vectors (the hardest case for quantisation) goes from
    0.96-0.98 to 1.0 for 0.4-0.9 ms.

    Upkeep (see the module docstring): a round starts ``maintenance_delay`` seconds after the
    last write or as soon as ``maintenance_writes`` writes wait, at most every
    ``upkeep_interval`` seconds; it removes table versions older than ``version_retention``
    seconds (the latest one always stays).
    """

    def __init__(
        self,
        directory: Path,
        dimension: int,
        *,
        index_threshold: int = INDEX_THRESHOLD,
        table_prefix: str = "",
        maintenance_delay: float = UPKEEP_DELAY,
        maintenance_writes: int = UPKEEP_WRITES,
        upkeep_interval: float = UPKEEP_INTERVAL,
        version_retention: float = VERSION_RETENTION,
    ) -> None:
        if dimension < 1:
            raise ValueError(f"dimension must be positive, got {dimension}")
        if index_threshold < 1:
            raise ValueError(f"index_threshold must be positive, got {index_threshold}")
        policy = UpkeepPolicy(
            retention=version_retention,
            writes=maintenance_writes,
            delay=maintenance_delay,
            interval=upkeep_interval,
        )
        if table_prefix and not table_prefix.replace("_", "").replace("-", "").isalnum():
            raise ValueError(f"table_prefix may hold letters, digits, _ and -: {table_prefix!r}")
        self.directory = directory
        self.dimension = dimension
        self.index_threshold = index_threshold
        self.upkeep_policy = policy
        self.chunks_table = f"{table_prefix}chunks"
        self.documents_table = f"{table_prefix}documents"
        self._chunk_schema = pa.schema(
            [
                pa.field("vector", pa.list_(pa.float32(), dimension), nullable=False),
                pa.field("text", pa.string(), nullable=False),
                pa.field("document_id", pa.string(), nullable=False),
                pa.field("filename", pa.string(), nullable=False),
                pa.field("position", pa.int64(), nullable=False),
                pa.field("page", pa.int64(), nullable=True),
                pa.field("content_hash", pa.string(), nullable=False),
                pa.field("collection", pa.string(), nullable=False),
                pa.field("meta_terms", pa.list_(pa.string()), nullable=True),
                pa.field("meta_numbers", pa.map_(pa.string(), pa.float64()), nullable=True),
            ]
        )
        self._document_schema = pa.schema(
            [
                pa.field("document_id", pa.string(), nullable=False),
                pa.field("filename", pa.string(), nullable=False),
                pa.field("chunks", pa.int64(), nullable=False),
                pa.field("uploaded_at", pa.timestamp("us", tz="UTC"), nullable=False),
                pa.field("collection", pa.string(), nullable=False),
                pa.field("metadata", pa.string(), nullable=False),
            ]
        )
        self._connection: lancedb.AsyncConnection | None = None
        self._chunks: AsyncTable | None = None
        self._documents: AsyncTable | None = None
        self._live = LiveDocuments()
        self._garbage: set[str] = set()  # ids no longer live whose rows may remain
        self._write_lock = asyncio.Lock()
        self._open_lock = asyncio.Lock()
        self._upkeep = UpkeepScheduler(self._upkeep_round, policy, f"lancedb {directory}")
        self._upkeep_threads: WorkerThreads | None = None  # walks the directory for its sizes
        self._optimizing = 0  # odd while an optimize runs: +1 when it starts, +1 when it ends
        self._deleted = False  # rows were deleted since the last upkeep round started
        self._vector_indexed = False
        self._numbers = NumericValues()

    # -- lifecycle ------------------------------------------------------------------------------

    async def open(self) -> None:
        """Creates or opens the tables and recovers from an interrupted write. Idempotent."""
        async with self._open_lock:
            if self._connection is not None:
                return
            try:
                await self._open()
            except StoreError:
                raise
            except Exception as error:
                raise StoreError(f"cannot open LanceDB at {self.directory}: {error}") from error

    async def _open(self) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        connection = await lancedb.connect_async(self.directory)
        try:
            chunks = await _open_or_create(connection, self.chunks_table, self._chunk_schema)
            documents = await _open_or_create(
                connection, self.documents_table, self._document_schema
            )
            for table, schema, added in (
                (chunks, self._chunk_schema, _ADDED_CHUNK_COLUMNS),
                (documents, self._document_schema, _ADDED_DOCUMENT_COLUMNS),
            ):
                await self._migrate(table, schema, added)
                if not (stored := await table.schema()).equals(schema):
                    raise StoreError(
                        f"LanceDB table {table.name} at {self.directory} has the schema "
                        f"{stored}, not the one of this store (vectors of dimension "
                        f"{self.dimension})"
                    )
            indices = await chunks.list_indices()
            if not any(index.columns == ["text"] for index in indices):
                await chunks.create_index("text", config=FTS())
            for column, config in _SCALAR_INDEXES.items():
                if not any(index.columns == [column] for index in indices):
                    await chunks.create_index(column, config=config)
            live = await self._recover(chunks, documents)
            rows = await chunks.count_rows()
            old_versions = any(
                [len(await t.list_versions()) > 1 for t in (chunks, documents)]  # type: ignore[no-untyped-call]
            )
        except BaseException:
            connection.close()  # type: ignore[no-untyped-call]
            raise
        self._vector_indexed = any(index.columns == ["vector"] for index in indices)
        self._live = LiveDocuments(live)
        self._connection, self._chunks, self._documents = connection, chunks, documents
        self._upkeep_threads = WorkerThreads(1, "lancedb-upkeep")
        # a fresh scheduler: the one of an earlier close() stays stopped
        self._upkeep = UpkeepScheduler(
            self._upkeep_round, self.upkeep_policy, f"lancedb {self.directory}"
        )
        # An earlier process may have stopped before folding its last rows into the indexes,
        # building the vector index, or removing the versions its last writes superseded.
        if (
            any(index.num_unindexed_rows for index in indices)
            or (not self._vector_indexed and rows >= self.index_threshold)
            or old_versions
        ):
            self._upkeep.wrote()
        log.info(
            "lancedb open directory=%s documents=%d vector_index=%s",
            self.directory,
            len(live),
            self._vector_indexed,
        )

    async def _migrate(
        self, table: AsyncTable, schema: pa.Schema, added: dict[str, str | None]
    ) -> None:
        """Adds the columns of ``added`` that a table written by an earlier version lacks:
        rows written before get the expression's value (their collection: the default one)
        or null (no metadata)."""
        present = set((await table.schema()).names)
        missing = [name for name in added if name not in present]
        if not missing:
            return
        for name in missing:
            expression = added[name]
            if expression is None:
                await table.add_columns(schema.field(name))
            else:
                await table.add_columns({name: expression})
        log.warning(
            "lancedb migrated table=%s directory=%s added_columns=%s",
            table.name,
            self.directory,
            ",".join(missing),
        )

    async def _recover(
        self, chunks: AsyncTable, documents: AsyncTable
    ) -> dict[str, DocumentRecord]:
        """The live documents (see :func:`recover_live`); removes every other row."""
        rows = (await documents.query().to_arrow()).to_pylist()
        chunk_ids = await chunks.query().select(["document_id"]).to_arrow()
        counts = chunk_ids.group_by("document_id").aggregate([("document_id", "count")])
        stored: dict[str, int] = dict(
            zip(
                counts.column("document_id").to_pylist(),
                counts.column("document_id_count").to_pylist(),
                strict=True,
            )
        )
        records = [
            DocumentRecord(
                row["document_id"],
                row["filename"],
                row["chunks"],
                row["uploaded_at"],
                row["collection"],
                _stored_metadata(row["metadata"]),
            )
            for row in rows
        ]
        live = recover_live(records, stored)
        stale_documents = {row["document_id"] for row in rows} - live.keys()
        stale_chunks = stored.keys() - live.keys()
        if stale_documents:
            await documents.delete(_in_list("document_id", stale_documents))
        if stale_chunks:
            await chunks.delete(_in_list("document_id", stale_chunks))
        if stale_documents or stale_chunks:
            log.warning(
                "lancedb recovered removed_documents=%d removed_chunk_sets=%d",
                len(stale_documents),
                len(stale_chunks),
            )
        return live

    async def close(self) -> None:
        """Stops upkeep (a round in progress finishes first, up to
        :data:`~handlers.rag.stores.upkeep.STOP_GRACE`; what it leaves undone, such as an
        index build, is redone after the next open) and closes the connection."""
        await self._upkeep.stop()
        async with self._write_lock:
            threads, self._upkeep_threads = self._upkeep_threads, None
            if threads is not None:
                await threads.close()
            if self._connection is not None:
                for table in (self._chunks, self._documents):
                    if table is not None:
                        table.close()  # type: ignore[no-untyped-call]
                self._connection.close()  # type: ignore[no-untyped-call]
            self._connection = self._chunks = self._documents = None

    async def wait_idle(self) -> None:
        """Runs the upkeep the writes so far wait for (index refresh, compaction, pruning,
        vector index build) now, without its delay, and waits until it is done. The follow-up
        round that removes versions once they are older than the retention is not waited
        for."""
        await self._upkeep.wait_idle()

    def _chunks_table(self) -> AsyncTable:
        if self._chunks is None:
            raise StoreError("the LanceDB store is not open")
        return self._chunks

    def _documents_table(self) -> AsyncTable:
        if self._documents is None:
            raise StoreError("the LanceDB store is not open")
        return self._documents

    # -- writes ---------------------------------------------------------------------------------

    async def replace_document(
        self, document: DocumentRecord, chunks: Sequence[Chunk], vectors: Vectors
    ) -> list[str]:
        """Stores ``document`` and its chunks, then removes earlier documents of its filename."""
        rows = self._chunk_rows(document, chunks, vectors)
        chunk_table, document_table = self._chunks_table(), self._documents_table()
        async with self._write_lock:
            if document.document_id in self._live.documents:
                raise ValueError(f"document {document.document_id} is already stored")
            try:
                if rows.num_rows:
                    await chunk_table.add(rows)
                await document_table.add(self._document_row(document))
            except Exception as error:
                await self._delete_rows([document.document_id])
                raise StoreError(f"cannot store {document.filename}: {error}") from error
            live, replaced = with_document(self._live.documents, document)
            await self._live.publish(live)
            await self._delete_rows(replaced)
            self._upkeep.wrote()
        return replaced

    async def delete_document(self, document_id: str) -> bool:
        """Removes the document and its chunks; False when no document has this id."""
        self._chunks_table()
        async with self._write_lock:
            if document_id not in self._live.documents:
                return False
            await self._live.publish(without_document(self._live.documents, document_id))
            await self._delete_rows([document_id])
            self._upkeep.wrote()
        return True

    async def _delete_rows(self, document_ids: Collection[str]) -> None:
        """Deletes the rows of ids that are not live, document rows first (so that a crash in
        between leaves only orphaned chunks). A failure leaves rows no reader sees: they are
        logged, and retried by the next upkeep round and at the next open."""
        if not document_ids:
            return
        where = _in_list("document_id", document_ids)
        self._deleted = True  # the next upkeep round runs exclusively (see _optimize)
        try:
            await self._documents_table().delete(where)
            await self._chunks_table().delete(where)
        except Exception as error:
            self._garbage.update(document_ids)
            log.warning("lancedb delete failed documents=%d error=%s", len(document_ids), error)

    def _chunk_rows(
        self, document: DocumentRecord, chunks: Sequence[Chunk], vectors: Vectors
    ) -> pa.Table:
        check_document(document, chunks, vectors, self.dimension)
        flat = pa.array(np.ascontiguousarray(vectors, dtype=np.float32).reshape(-1))
        columns: dict[str, Any] = {
            "vector": pa.FixedSizeListArray.from_arrays(flat, self.dimension),
            "text": [c.text for c in chunks],
            "document_id": [c.document_id for c in chunks],
            "filename": [c.filename for c in chunks],
            "position": [c.position for c in chunks],
            "page": [c.page for c in chunks],
            "content_hash": [c.content_hash for c in chunks],
            "collection": [document.collection] * len(chunks),
            "meta_terms": [metadata_terms(document.metadata)] * len(chunks),
            "meta_numbers": [list(metadata_numbers(document.metadata).items())] * len(chunks),
        }
        return pa.table(columns, schema=self._chunk_schema)

    def _document_row(self, document: DocumentRecord) -> pa.Table:
        row = {
            "document_id": [document.document_id],
            "filename": [document.filename],
            "chunks": [document.chunks],
            "uploaded_at": [document.uploaded_at.astimezone(datetime.UTC)],
            "collection": [document.collection],
            "metadata": [metadata_json(document.metadata)],
        }
        return pa.table(row, schema=self._document_schema)

    # -- upkeep ---------------------------------------------------------------------------------

    async def _upkeep_round(self, writes: int) -> float | None:
        """Retries failed deletions, compacts both tables, prunes their versions older than
        the retention, folds new rows into the indexes, and builds the vector index once the
        table is large enough (rebuilds it once optimize has split it into too many parts).
        Logs one INFO line. Returns when a follow-up round should remove what this one had to
        keep (None when it changed nothing)."""
        chunk_table, document_table = self._chunks_table(), self._documents_table()
        started = time.perf_counter()
        before = await self._disk_usage()
        if garbage := set(self._garbage):
            self._garbage -= garbage
            await self._delete_rows(garbage)
        exclusive, self._deleted = self._deleted or not writes, False
        compacted = written = versions_removed = bytes_removed = 0
        for table in (chunk_table, document_table):
            stats = await self._optimize(table, exclusive=exclusive)
            compacted += stats.compaction.fragments_removed
            written += stats.compaction.fragments_added
            versions_removed += stats.prune.old_versions_removed
            bytes_removed += stats.prune.bytes_removed
        if self._vector_indexed:
            index = await chunk_table.index_stats(VECTOR_INDEX)
            parts = (index.num_indices or 1) if index is not None else 1
            if parts > MAX_VECTOR_DELTAS:
                await self._build_vector_index(chunk_table, f"{parts} parts")
        elif await chunk_table.count_rows() >= self.index_threshold:
            await self._build_vector_index(chunk_table, "threshold reached")
        after = await self._disk_usage()
        log.info(
            "lancedb upkeep writes=%d fragments_compacted=%d fragments_written=%d "
            "versions_removed=%d bytes_removed=%d bytes_before=%d bytes_after=%d "
            "files_before=%d files_after=%d seconds=%.2f",
            writes,
            compacted,
            written,
            versions_removed,
            bytes_removed,
            before.bytes,
            after.bytes,
            before.files,
            after.files,
            time.perf_counter() - started,
        )
        if writes or compacted:
            return self.upkeep_policy.retention + FOLLOW_UP_MARGIN
        return None

    async def _optimize(self, table: AsyncTable, *, exclusive: bool) -> OptimizeStats:
        """``table.optimize``, pruning versions older than the retention.

        ``exclusive`` (deletions since the last round, or a follow-up round): it runs holding
        the write lock, and also removes files no version refers to (LanceDB keeps those 7
        days by default: the rewritten copies of a compaction whose commit a delete
        pre-empted, what a crashed process left) -- safe there, since no write of this store
        is in progress and the store is the directory's only writer. Otherwise it runs beside
        writes (appends commit on top of a compaction); a compaction that a delete pre-empted
        anyway ("retryable commit conflict") is run again exclusively.

        A retention of 0 is passed as 1 ms: LanceDB warns at 0 that readers and writers of
        older versions fail, which holds for other processes only (see the module
        docstring); the warning would repeat every round."""
        older_than = max(datetime.timedelta(seconds=self.upkeep_policy.retention), MIN_CLEANUP_AGE)
        if not exclusive:
            try:
                return await self._counted_optimize(table, older_than, delete_unverified=False)
            except Exception as error:
                if "commit conflict" not in str(error).lower():
                    raise
                log.info("lancedb upkeep compaction pre-empted by a delete table=%s", table.name)
        async with self._write_lock:
            return await self._counted_optimize(table, older_than, delete_unverified=True)

    async def _counted_optimize(
        self, table: AsyncTable, older_than: datetime.timedelta, *, delete_unverified: bool
    ) -> OptimizeStats:
        """``optimize`` with ``_optimizing`` odd while it runs (see :meth:`search`)."""
        self._optimizing += 1
        try:
            return await table.optimize(
                cleanup_older_than=older_than, delete_unverified=delete_unverified
            )
        finally:
            self._optimizing += 1

    async def _disk_usage(self) -> DiskUsage:
        """Bytes and files of this store's two tables, measured in the upkeep thread."""
        threads = self._upkeep_threads
        if threads is None:
            raise StoreError("the LanceDB store is not open")
        paths = [
            self.directory / f"{name}.lance" for name in (self.chunks_table, self.documents_table)
        ]
        return await threads.run(disk_usage, paths)

    async def _build_vector_index(self, table: AsyncTable, reason: str) -> None:
        """IVF_SQ measured best here at 100k x 384 (build 1-2 s, recall@10 0.96 on random
        vectors at 4.4 ms, 1.0 at 5.3 ms with the refine step; IVF_HNSW_SQ: build 40 s,
        recall 0.3, and no merging of the parts that optimize appends)."""
        rows = await table.count_rows()
        log.info("lancedb vector index build started rows=%d reason=%s", rows, reason)
        started = time.perf_counter()
        config = IvfSq(distance_type="cosine")
        # create_index accepts IvfSq (lancedb 0.40 checks for it) but its annotation omits it.
        await table.create_index("vector", config=config, replace=True)  # type: ignore[arg-type]
        self._vector_indexed = True
        log.info(
            "lancedb vector index build finished rows=%d seconds=%.1f",
            rows,
            time.perf_counter() - started,
        )

    # -- reads ----------------------------------------------------------------------------------

    async def search(
        self,
        text: str,
        vector: Vectors,
        limit: int,
        *,
        collection: str = DEFAULT_COLLECTION,
        where: Filter | None = None,
        mode: SearchMode = "hybrid",
    ) -> list[SearchHit]:
        """At most ``limit`` live chunks of ``collection`` satisfying ``where``, best first,
        by reciprocal rank fusion of a cosine ranking and a BM25 ranking (queried
        concurrently; ``mode`` ``vector`` or ``text``: that ranking alone); ties go to the
        closer vector. The collection and filter are both queries' pre-filter.

        Chunks found by BM25 alone rank below every chunk of the cosine ranking in similarity,
        so they need no vector of their own for the tie-break."""
        query = check_query(vector, limit, self.dimension)
        check_collection(collection)
        table = self._chunks_table()
        if not self._live.documents:
            return []
        wanted = max(limit, CANDIDATES)
        async with self._live.reading() as live:
            condition = where
            if condition is not None:
                condition = resolve_ranges(
                    condition, live, collection, self._numbers, RANGE_TERMS_MAX
                )
            sql = where_sql(collection, condition)
            by_vector_query = (
                table.vector_search(query)
                .distance_type("cosine")
                .refine_factor(REFINE_FACTOR)
                .where(sql)
                .select([*_CHUNK_COLUMNS, "_distance"])
            )
            by_text_query = (
                table.query()
                .nearest_to_text(text, columns="text")
                .where(sql)
                .select([*_CHUNK_COLUMNS, "_score"])
            )
            for attempt in range(1, SEARCH_ATTEMPTS + 1):
                optimizing = self._optimizing
                try:
                    by_vector, by_text = await asyncio.gather(
                        _nothing()
                        if mode == "text"
                        else _live_rows(
                            by_vector_query, live, wanted, exact_when_short=self._vector_indexed
                        ),
                        _nothing() if mode == "vector" else _live_rows(by_text_query, live, wanted),
                    )
                    break
                except Exception as error:
                    # an upkeep round overlapped: it may have pruned the files read
                    overlapped = optimizing % 2 or self._optimizing != optimizing
                    if not overlapped or attempt == SEARCH_ATTEMPTS:
                        raise StoreError(f"search failed: {error}") from error
                    log.debug("lancedb search retried attempt=%d error=%s", attempt, error)
        similarity = {_key(row): 1.0 - row["_distance"] for row in by_vector}
        rows = {_key(row): row for row in (*by_text, *by_vector)}
        fused = reciprocal_rank_fusion([[_key(r) for r in by_vector], [_key(r) for r in by_text]])
        best = sorted(fused, key=lambda key: (fused[key], similarity.get(key, -2.0)), reverse=True)
        return [
            SearchHit(_chunk(rows[key], live[key[0]].metadata), fused[key]) for key in best[:limit]
        ]

    async def list_documents(self, collection: str | None = None) -> list[DocumentRecord]:
        """Every live document (of ``collection``, or all), most recently uploaded first."""
        self._chunks_table()
        return newest_first(self._live.documents, collection)

    async def count_chunks(self) -> int:
        """The number of chunks of live documents."""
        self._chunks_table()
        return sum(record.chunks for record in self._live.documents.values())


async def _open_or_create(
    connection: lancedb.AsyncConnection, name: str, schema: pa.Schema
) -> AsyncTable:
    try:
        return await connection.open_table(name)
    except ValueError:  # not found
        return await connection.create_table(name, schema=schema, exist_ok=True)


async def _nothing() -> list[dict[str, Any]]:
    return []


async def _live_rows(
    query: AsyncVectorQuery | AsyncFTSQuery,
    live: Collection[str],
    wanted: int,
    *,
    exact_when_short: bool = False,
) -> list[dict[str, Any]]:
    """The best ``wanted`` rows of live documents, in the query's order; fetches more while
    rows of documents being replaced or deleted right now crowd them out.
    ``exact_when_short`` (a vector query): fewer rows than asked for may only mean that the
    pre-filter left too few in the partitions the index probed, so the query is run again
    as an exact scan of the rows that pass the filter."""
    fetch = wanted
    while True:
        rows = await query.limit(fetch).to_list()
        if len(rows) < fetch and exact_when_short and isinstance(query, AsyncVectorQuery):
            exact_when_short = False
            query = query.bypass_vector_index()
            rows = await query.limit(fetch).to_list()
        found = [row for row in rows if row["document_id"] in live]
        if len(found) >= wanted or len(rows) < fetch:
            return found[:wanted]
        fetch *= 4


def _chunk(row: dict[str, Any], metadata: Metadata) -> Chunk:
    return Chunk(**{column: row[column] for column in _CHUNK_COLUMNS}, metadata=metadata)


def _stored_metadata(text: str | None) -> dict[str, Any]:
    """A document row's metadata (checked as it was at upload; null in a migrated row)."""
    if not text:
        return {}
    parsed: dict[str, Any] = check_metadata(json.loads(text))
    return parsed


def _in_list(column: str, values: Collection[str]) -> str:
    return f"{column} IN ({', '.join(quote(v) for v in sorted(values))})"


def _key(row: dict[str, Any]) -> tuple[str, int]:
    return row["document_id"], row["position"]
