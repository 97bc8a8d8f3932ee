"""A vector store on a Weaviate server: one collection of chunks (vectors given, no
vectorizer) and ``<collection>Records`` of documents; Weaviate's own hybrid search.

Weaviate has no transactions either, so the scheme of :mod:`handlers.rag.stores.consistency`
applies: new rows are written, the live set is swapped, then the replaced rows are deleted;
searches keep only chunks of live documents.

Store upkeep (:mod:`handlers.rag.stores.upkeep`) has nothing to do here: Weaviate keeps no
table versions, and the server itself reclaims what deletions leave (it compacts its LSM
segments in the background and removes deleted objects from the HNSW graph every
``cleanupIntervalSeconds``, 300 s by default), so the RAG_STORE_* upkeep settings do not apply.
What the client side could leave behind, the objects of a failed deletion, is retried at the
next write and at the next open (:meth:`WeaviateStore._delete_rows`).

Collections and metadata filters are Weaviate ``where`` filters of the hybrid query
(:mod:`handlers.rag.stores.weaviate_where`) on the chunk properties ``collection`` and
``meta_terms`` (filterable, not searchable: BM25 never matches them); ranges are looked up as
the terms of the live values within them (:mod:`handlers.rag.stores.filtering`). Documents keep
their metadata as JSON text (``metadata``) in the records collection. Collections created
before these properties existed get them at open, and every object without a collection is
given the default one (and empty metadata).
"""

from __future__ import annotations

import asyncio
import datetime
import json
import logging
import uuid
from collections.abc import Collection, Mapping, Sequence
from typing import Any
from urllib.parse import urlsplit

import weaviate
from weaviate.classes.aggregate import GroupByAggregate
from weaviate.classes.config import Configure, DataType, Property, Tokenization
from weaviate.classes.data import DataObject
from weaviate.classes.query import Filter, HybridFusion, MetadataQuery
from weaviate.client import WeaviateAsyncClient
from weaviate.collections.collection.async_ import CollectionAsync

from handlers.rag.documents import Chunk, DocumentRecord, SearchHit
from handlers.rag.filters import Filter as MetadataFilter
from handlers.rag.metadata import (
    DEFAULT_COLLECTION,
    Metadata,
    check_collection,
    check_metadata,
    metadata_json,
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
from handlers.rag.stores.filtering import NumericValues, resolve_ranges
from handlers.rag.stores.weaviate_where import weaviate_where

__all__ = ["WeaviateStore"]

log = logging.getLogger(__name__)

HYBRID_ALPHA = 0.5  # equal weight to BM25 and vector similarity
MODE_ALPHA: dict[SearchMode, float] = {"hybrid": HYBRID_ALPHA, "vector": 1.0, "text": 0.0}
_COLLECTION_PROPERTY = Property(
    name="collection",
    data_type=DataType.TEXT,
    tokenization=Tokenization.FIELD,
    index_searchable=False,
)
"""A chunk's and a document record's collection: filtered on whole, never searched."""
_ADDED_CHUNK_PROPERTIES = [
    _COLLECTION_PROPERTY,
    Property(
        name="meta_terms",
        data_type=DataType.TEXT_ARRAY,
        tokenization=Tokenization.FIELD,
        index_searchable=False,
    ),
]
_ADDED_RECORD_PROPERTIES = [
    _COLLECTION_PROPERTY,
    Property(
        name="metadata",
        data_type=DataType.TEXT,
        index_searchable=False,
        index_filterable=False,
    ),
]
INSERT_BATCH = 1_000  # objects per insert_many request
MAX_DOCUMENTS = 1_000_000  # group-by limit when counting chunks per document at open


class WeaviateStore:
    """Chunks in the Weaviate collection ``collection`` of the server at ``url``."""

    def __init__(
        self,
        url: str,
        dimension: int,
        *,
        collection: str = "Documents",
        grpc_port: int = 50051,
        api_key: str | None = None,
    ) -> None:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"WEAVIATE_URL must be an http(s) URL, got {url!r}")
        if dimension < 1:
            raise ValueError(f"dimension must be positive, got {dimension}")
        if not collection[:1].isupper() or not collection.isalnum():
            raise ValueError(f"collection must be alphanumeric and capitalised: {collection!r}")
        self.url = url
        self.dimension = dimension
        self.collection = collection
        self.records_collection = f"{collection}Records"
        secure = parts.scheme == "https"
        self._client: WeaviateAsyncClient = weaviate.use_async_with_custom(
            http_host=parts.hostname,
            http_port=parts.port or (443 if secure else 80),
            http_secure=secure,
            grpc_host=parts.hostname,
            grpc_port=grpc_port,
            grpc_secure=secure,
            auth_credentials=weaviate.auth.AuthApiKey(api_key) if api_key else None,
        )
        self._live = LiveDocuments()
        self._garbage: set[str] = set()  # ids no longer live whose rows may remain
        self._write_lock = asyncio.Lock()
        self._open_lock = asyncio.Lock()
        self._opened = False
        self._numbers = NumericValues()

    async def open(self) -> None:
        """Connects, creates the collections when missing, loads the documents. Idempotent."""
        async with self._open_lock:
            if self._opened:
                return
            try:
                await self._client.connect()
                await self._create_collections()
                self._live = LiveDocuments(await self._recover())
            except Exception as error:
                await self._client.close()
                raise StoreError(f"cannot open Weaviate at {self.url}: {error}") from error
            self._opened = True
            log.info(
                "weaviate open collection=%s documents=%d",
                self.collection,
                len(self._live.documents),
            )

    async def _create_collections(self) -> None:
        collections = self._client.collections
        if not await collections.exists(self.collection):
            await collections.create(
                self.collection,
                vector_config=Configure.Vectors.self_provided(
                    vector_index_config=Configure.VectorIndex.hnsw(
                        distance_metric=weaviate.classes.config.VectorDistances.COSINE
                    )
                ),
                properties=[
                    Property(name="text", data_type=DataType.TEXT),
                    *(
                        Property(
                            name=name, data_type=DataType.TEXT, tokenization=Tokenization.FIELD
                        )
                        for name in ("document_id", "filename", "content_hash")
                    ),
                    Property(name="position", data_type=DataType.INT),
                    Property(name="page", data_type=DataType.INT),
                    *_ADDED_CHUNK_PROPERTIES,
                ],
            )
        if not await collections.exists(self.records_collection):
            await collections.create(
                self.records_collection,
                vector_config=Configure.Vectors.self_provided(),
                properties=[
                    Property(
                        name="document_id", data_type=DataType.TEXT, tokenization=Tokenization.FIELD
                    ),
                    Property(
                        name="filename", data_type=DataType.TEXT, tokenization=Tokenization.FIELD
                    ),
                    Property(name="chunks", data_type=DataType.INT),
                    Property(name="uploaded_at", data_type=DataType.DATE),
                    *_ADDED_RECORD_PROPERTIES,
                ],
            )
        await self._migrate(self._chunks(), _ADDED_CHUNK_PROPERTIES, {"meta_terms": []})
        await self._migrate(self._records(), _ADDED_RECORD_PROPERTIES, {"metadata": "{}"})

    async def _migrate(
        self,
        collection: CollectionAsync[Any, Any],
        added: list[Property],
        empty: dict[str, Any],
    ) -> None:
        """Adds the properties of ``added`` a collection created by an earlier version lacks,
        and gives its objects the default collection and ``empty`` metadata."""
        config = await collection.config.get()
        present = {prop.name for prop in config.properties}
        missing = [prop for prop in added if prop.name not in present]
        if not missing:
            return
        for prop in missing:
            await collection.config.add_property(prop)
        migrated = 0
        async for item in collection.iterator():
            if item.properties.get("collection") is None:
                values = {"collection": DEFAULT_COLLECTION, **empty}
                await collection.data.update(uuid=item.uuid, properties=values)
                migrated += 1
        log.warning(
            "weaviate migrated collection=%s added_properties=%s objects=%d",
            collection.name,
            ",".join(prop.name for prop in missing),
            migrated,
        )

    async def _recover(self) -> dict[str, DocumentRecord]:
        """The live documents (see :func:`recover_live`); deletes every other object."""
        records: list[DocumentRecord] = []
        async for item in self._records().iterator():
            p = item.properties
            records.append(
                DocumentRecord(
                    str(p["document_id"]),
                    str(p["filename"]),
                    _int(p["chunks"]),
                    _date(p),
                    str(p.get("collection") or DEFAULT_COLLECTION),
                    _stored_metadata(p.get("metadata")),
                )
            )
        groups = await self._chunks().aggregate.over_all(
            group_by=GroupByAggregate(prop="document_id", limit=MAX_DOCUMENTS), total_count=True
        )
        stored = {str(group.grouped_by.value): group.total_count or 0 for group in groups.groups}
        live = recover_live(records, stored)
        stale = ({r.document_id for r in records} | stored.keys()) - live.keys()
        if stale:
            await self._delete_rows(stale)
            log.warning("weaviate recovered removed_documents=%d", len(stale))
        return live

    async def close(self) -> None:
        """Closes the connection."""
        await self._client.close()
        self._opened = False

    async def drop(self) -> None:
        """Deletes both collections with everything in them (for tests and teardown)."""
        await self._client.connect()
        await self._client.collections.delete([self.collection, self.records_collection])
        await self._client.close()

    def _chunks(self) -> CollectionAsync[Any, Any]:
        return self._client.collections.use(self.collection)

    def _records(self) -> CollectionAsync[Any, Any]:
        return self._client.collections.use(self.records_collection)

    def _require_open(self) -> None:
        if not self._opened:
            raise StoreError("the Weaviate store is not open")

    # -- writes ---------------------------------------------------------------------------------

    async def replace_document(
        self, document: DocumentRecord, chunks: Sequence[Chunk], vectors: Vectors
    ) -> list[str]:
        """Stores ``document`` and its chunks, then removes earlier documents of its filename."""
        self._require_open()
        objects = self._chunk_objects(document, chunks, vectors)
        chunks_collection = self._chunks()
        async with self._write_lock:
            if document.document_id in self._live.documents:
                raise ValueError(f"document {document.document_id} is already stored")
            try:
                for start in range(0, len(objects), INSERT_BATCH):
                    result = await chunks_collection.data.insert_many(
                        objects[start : start + INSERT_BATCH]
                    )
                    if result.has_errors:
                        raise StoreError(next(iter(result.errors.values())).message)
                await self._records().data.insert(
                    {
                        "document_id": document.document_id,
                        "filename": document.filename,
                        "chunks": document.chunks,
                        "uploaded_at": document.uploaded_at.astimezone(datetime.UTC),
                        "collection": document.collection,
                        "metadata": metadata_json(document.metadata),
                    },
                    uuid=_record_uuid(document.document_id),
                )
            except Exception as error:
                await self._delete_rows([document.document_id])
                raise StoreError(f"cannot store {document.filename}: {error}") from error
            live, replaced = with_document(self._live.documents, document)
            await self._live.publish(live)
            await self._delete_rows([*replaced, *self._garbage])
        return replaced

    async def delete_document(self, document_id: str) -> bool:
        """Removes the document and its chunks; False when no document has this id."""
        self._require_open()
        async with self._write_lock:
            if document_id not in self._live.documents:
                return False
            await self._live.publish(without_document(self._live.documents, document_id))
            await self._delete_rows([document_id, *self._garbage])
        return True

    async def _delete_rows(self, document_ids: Collection[str]) -> None:
        """Deletes the objects of ids that are not live, records first (so that a crash in
        between leaves only orphaned chunks). A failure leaves objects no reader sees: they
        are logged, and retried on the next write and at the next open."""
        if not document_ids:
            return
        where = Filter.by_property("document_id").contains_any(sorted(document_ids))
        try:
            for collection in (self._records(), self._chunks()):
                # One request deletes at most the server's QUERY_MAXIMUM_RESULTS objects.
                while (await collection.data.delete_many(where=where)).successful:
                    pass
        except Exception as error:
            self._garbage.update(document_ids)
            log.warning("weaviate delete failed documents=%d error=%s", len(document_ids), error)
        else:
            self._garbage.difference_update(document_ids)

    def _chunk_objects(
        self, document: DocumentRecord, chunks: Sequence[Chunk], vectors: Vectors
    ) -> list[DataObject[dict[str, Any], None]]:
        check_document(document, chunks, vectors, self.dimension)
        terms = metadata_terms(document.metadata)
        objects = []
        for chunk, vector in zip(chunks, vectors, strict=True):
            properties = {
                "text": chunk.text,
                "document_id": chunk.document_id,
                "filename": chunk.filename,
                "position": chunk.position,
                "page": chunk.page,
                "content_hash": chunk.content_hash,
                "collection": document.collection,
                "meta_terms": terms,
            }
            objects.append(DataObject(properties=properties, vector=vector.tolist()))
        return objects

    # -- reads ----------------------------------------------------------------------------------

    async def search(
        self,
        text: str,
        vector: Vectors,
        limit: int,
        *,
        collection: str = DEFAULT_COLLECTION,
        where: MetadataFilter | None = None,
        mode: SearchMode = "hybrid",
    ) -> list[SearchHit]:
        """At most ``limit`` live chunks of ``collection`` satisfying ``where``, best first,
        by Weaviate's hybrid search (BM25 and cosine, relative score fusion, alpha 0.5;
        ``mode`` ``vector``: alpha 1, ``text``: alpha 0), the filter applied inside it."""
        self._require_open()
        query = check_query(vector, limit, self.dimension)
        check_collection(collection)
        if not self._live.documents:
            return []
        async with self._live.reading() as live:
            condition = where
            if condition is not None:
                condition = resolve_ranges(condition, live, collection, self._numbers, None)
            filters = weaviate_where(collection, condition)
            return await self._live_hits(text, query, limit, live, filters, MODE_ALPHA[mode])

    async def _live_hits(
        self,
        text: str,
        query: Vectors,
        limit: int,
        live: Mapping[str, DocumentRecord],
        filters: Any,
        alpha: float,
    ) -> list[SearchHit]:
        fetch = limit
        while True:
            try:
                result = await self._chunks().query.hybrid(
                    query=text if text.strip() else None,
                    vector=query.tolist(),
                    alpha=alpha,
                    fusion_type=HybridFusion.RELATIVE_SCORE,
                    limit=fetch,
                    filters=filters,
                    return_metadata=MetadataQuery(score=True),
                )
            except Exception as error:
                raise StoreError(f"search failed: {error}") from error
            hits = [
                SearchHit(
                    _chunk(item.properties, live[str(item.properties["document_id"])].metadata),
                    float(item.metadata.score or 0.0),
                )
                for item in result.objects
                if item.properties["document_id"] in live
            ]
            # Objects of documents being replaced or deleted right now may crowd out hits.
            if len(hits) >= limit or len(result.objects) < fetch:
                return hits[:limit]
            fetch *= 4

    async def list_documents(self, collection: str | None = None) -> list[DocumentRecord]:
        """Every live document (of ``collection``, or all), most recently uploaded first."""
        self._require_open()
        return newest_first(self._live.documents, collection)

    async def count_chunks(self) -> int:
        """The number of chunks of live documents."""
        self._require_open()
        return sum(record.chunks for record in self._live.documents.values())


def _record_uuid(document_id: str) -> uuid.UUID:
    return uuid.uuid5(uuid.NAMESPACE_URL, f"rag-document:{document_id}")


def _stored_metadata(text: object) -> dict[str, Any]:
    """A record's metadata (checked as it was at upload; absent in a migrated record)."""
    if not isinstance(text, str) or not text:
        return {}
    parsed: dict[str, Any] = check_metadata(json.loads(text))
    return parsed


def _chunk(properties: dict[str, Any], metadata: Metadata) -> Chunk:
    page = properties.get("page")
    return Chunk(
        document_id=str(properties["document_id"]),
        filename=str(properties["filename"]),
        position=_int(properties["position"]),
        page=None if page is None else _int(page),
        text=str(properties["text"]),
        content_hash=str(properties["content_hash"]),
        collection=str(properties.get("collection") or DEFAULT_COLLECTION),
        metadata=metadata,
    )


def _int(value: object) -> int:
    if not isinstance(value, int | float):
        raise StoreError(f"Weaviate returned {value!r} where a number was stored")
    return int(value)


def _date(properties: dict[str, Any]) -> datetime.datetime:
    value = properties["uploaded_at"]
    if not isinstance(value, datetime.datetime):
        raise StoreError(f"Weaviate returned {value!r} where a date was stored")
    return value.astimezone(datetime.UTC)
