"""The rag service without HTTP: ingestion, search and grounded generation.

Ingestion of one upload: the spooled file is copied to the data directory chunk by chunk,
text is extracted and cut into token-aware chunks (in worker threads), every chunk is embedded
(the embedder batches concurrent uploads and queries together), and only then is the document
written to the store, replacing any earlier document of the same filename in one step, so a
failure midway stores nothing.

Chunks are embedded at background priority (queries go first), :data:`EMBED_SLICE_CHUNKS` at a
time, so that progress (chunks done of the total) is reported after each slice: to the caller's
``progress`` callback (ingestion jobs keep it in the job) and in the log, one INFO line per
document at most every :data:`PROGRESS_LOG_SECONDS`. A caller that is cancelled (a client that
went away) stops the ingestion at its next step; the store write is the last step, and one
already under way completes (and is logged) before the cancellation goes on.
"""

from __future__ import annotations

import asyncio
import copy
import datetime
import logging
import re
import shutil
import time
import uuid
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import BinaryIO

import anyio.to_thread
import numpy as np
from transformers import PreTrainedTokenizerBase

from handlers.common.settings import SettingsError
from handlers.rag.api_keys import ApiKeys
from handlers.rag.components import Components, ComponentState
from handlers.rag.documents import Chunk, DocumentRecord, SearchHit, content_hash
from handlers.rag.filters import Filter
from handlers.rag.generation.base import GREEDY, Finish, Generator, Sampling
from handlers.rag.generation.prompt import (
    NO_DOCUMENTS_ANSWER,
    conversation_messages,
    grounded_messages,
    prompt_budget,
)
from handlers.rag.ingest.base import Embedder, ExtractionError
from handlers.rag.ingest.chunking import chunk_pages, max_chunk_tokens
from handlers.rag.ingest.extract import extract_document
from handlers.rag.ingest.parse_runner import ParseRunner
from handlers.rag.metadata import DEFAULT_COLLECTION, Metadata
from handlers.rag.stores.base import SearchMode, Vectors, VectorStore

__all__ = [
    "EMBED_SLICE_CHUNKS",
    "Answer",
    "Progress",
    "RagService",
    "ServiceOptions",
    "UploadRejected",
    "UploadTooLarge",
]

log = logging.getLogger("rag.service")

_COPY_BUFFER = 1024 * 1024
EMBED_SLICE_CHUNKS = 64
"""Chunks of one document embedded per call: progress is reported after each."""
PROGRESS_LOG_SECONDS = 5.0
"""Least seconds between two progress lines of one document in the log."""

Progress = Callable[[int, int], None]
"""Called with (chunks embedded, chunks in all) once the document is chunked and after each
slice of chunks embedded."""
_PATH_SEPARATORS = re.compile(r"[\\/]")
_CONTROL_CHARACTERS = re.compile(r"[\x00-\x1f\x7f-\x9f]")
"""Unicode's control characters (category Cc): C0 with NUL, tab and newlines; DEL; C1."""
MAX_FILENAME_CHARS = 255
_MAX_KEPT_SUFFIX_CHARS = 16


class UploadRejected(Exception):
    """The upload cannot be ingested (no file name, empty, unsupported, undecodable)."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class UploadTooLarge(Exception):
    """The file is larger than the upload limit."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"File exceeds the upload limit of {limit} bytes")
        self.limit = limit


@dataclass(frozen=True, slots=True)
class ServiceOptions:
    """What the service needs of the settings."""

    upload_dir: Path
    chunk_tokens: int = 200
    chunk_overlap_tokens: int = 40
    max_upload_bytes: int = 52_428_800
    retrieval_top_k: int = 8
    context_window: int | None = None
    """Caps the generator's own context window when set."""
    parse_runner: ParseRunner | None = None
    """Parses HTML, PDF and DOCX uploads in limited processes (the shared default when None)."""
    api_keys: ApiKeys | None = None
    """The API keys and the collections each may use; None: no keys needed."""


@dataclass(frozen=True, slots=True)
class Placement:
    """Where an upload's document goes: its collection, and the metadata it carries."""

    collection: str
    metadata: Metadata


@dataclass(frozen=True, slots=True)
class Answer:
    """A streamed answer: the chunks it is grounded on, and the generator's stream."""

    sources: list[SearchHit]
    stream: AsyncIterator[str | Finish]


def stored_filename(uploaded: str | None) -> str:
    """The name a document is stored under: the uploaded name's last path segment
    (``../a/b.pdf`` -> ``b.pdf``), without control characters (NUL, tabs, newlines, DEL, C1:
    they would end up in logs, file listings and other systems' strings), without surrounding
    blanks, and at most :data:`MAX_FILENAME_CHARS` characters (a longer one loses the end of
    its stem, keeping its extension, which chooses the format). Empty when nothing is left."""
    name = _CONTROL_CHARACTERS.sub("", _PATH_SEPARATORS.split(uploaded or "")[-1]).strip()
    if len(name) <= MAX_FILENAME_CHARS:
        return name
    suffix = PurePosixPath(name).suffix
    if len(suffix) > _MAX_KEPT_SUFFIX_CHARS:
        suffix = ""
    return name[: MAX_FILENAME_CHARS - len(suffix)].rstrip() + suffix


def check_chunk_window(embedder: Embedder, chunk_tokens: int) -> None:
    """SettingsError when chunks of ``chunk_tokens`` do not fit the embedder's window."""
    tokenizer = getattr(embedder, "tokenizer", None)
    fitting = max_chunk_tokens(
        embedder.max_tokens, tokenizer if isinstance(tokenizer, PreTrainedTokenizerBase) else None
    )
    if chunk_tokens > fitting:
        raise SettingsError(
            f"RAG_CHUNK_TOKENS={chunk_tokens} is invalid: expected at most {fitting}, what fits "
            f"the embedding model's window of {embedder.max_tokens} tokens"
        )


class RagService:
    """Upload, search, answer, list and delete over the loaded components."""

    def __init__(self, components: Components, options: ServiceOptions) -> None:
        self.components = components
        self.options = options
        self._chunk_tokenizer: PreTrainedTokenizerBase | None = None

    # -- documents -----------------------------------------------------------------------------

    def checked_filename(self, uploaded_name: str | None, size: int) -> str:
        """The stored name of an upload of ``size`` bytes; UploadRejected (no name left) or
        UploadTooLarge (over the upload limit) when it cannot be ingested."""
        filename = stored_filename(uploaded_name)
        if not filename:
            raise UploadRejected("The file has no name")
        if size > self.options.max_upload_bytes:
            raise UploadTooLarge(self.options.max_upload_bytes)
        return filename

    async def upload(
        self,
        file: BinaryIO,
        uploaded_name: str | None,
        size: int,
        *,
        collection: str = DEFAULT_COLLECTION,
        metadata: Metadata | None = None,
        progress: Progress | None = None,
    ) -> DocumentRecord:
        """Ingest one uploaded file (``file`` is read from its current position) into
        ``collection`` with ``metadata`` (checked by the caller): it is copied to the upload
        spool first, so that parsing reads a file of its own."""
        filename = self.checked_filename(uploaded_name, size)
        embedder = await self.components.embedder()
        store = await self.components.store()
        document_id = str(uuid.uuid4())
        self.options.upload_dir.mkdir(parents=True, exist_ok=True)
        spooled = self.options.upload_dir / f"{document_id}.upload"
        try:
            await anyio.to_thread.run_sync(_copy_to, file, spooled)
            return await self._ingest(
                spooled,
                filename,
                size,
                document_id,
                embedder,
                store,
                progress,
                Placement(collection, metadata or {}),
            )
        finally:
            spooled.unlink(missing_ok=True)

    async def ingest_spooled(
        self,
        path: Path,
        uploaded_name: str | None,
        size: int,
        *,
        collection: str = DEFAULT_COLLECTION,
        metadata: Metadata | None = None,
        progress: Progress | None = None,
    ) -> DocumentRecord:
        """Ingest a file of ``size`` bytes already on this server's disk (an ingestion job's
        spooled file, which the caller keeps or removes), stored under ``uploaded_name`` in
        ``collection`` with ``metadata`` as an upload would be."""
        filename = self.checked_filename(uploaded_name, size)
        embedder = await self.components.embedder()
        store = await self.components.store()
        return await self._ingest(
            path,
            filename,
            size,
            str(uuid.uuid4()),
            embedder,
            store,
            progress,
            Placement(collection, metadata or {}),
        )

    async def _ingest(
        self,
        path: Path,
        filename: str,
        size: int,
        document_id: str,
        embedder: Embedder,
        store: VectorStore,
        progress: Progress | None,
        placement: Placement,
    ) -> DocumentRecord:
        started = time.perf_counter()
        tokenizer = self._tokenizer_for_chunking(embedder)
        pages, texts = await anyio.to_thread.run_sync(
            self._extract_and_chunk, path, filename, tokenizer
        )
        chunks = [
            Chunk(
                document_id=document_id,
                filename=filename,
                position=position,
                page=page,
                text=text,
                content_hash=content_hash(text),
                collection=placement.collection,
                metadata=placement.metadata,
            )
            for position, (page, text) in enumerate(texts)
        ]
        vectors = await self._embed_chunks(embedder, chunks, filename, document_id, progress)
        record = DocumentRecord(
            document_id=document_id,
            filename=filename,
            chunks=len(chunks),
            uploaded_at=datetime.datetime.now(datetime.UTC),
            collection=placement.collection,
            metadata=placement.metadata,
        )
        # The last step, shielded: a caller cancelled while the write runs (a client that went
        # away) lets it complete, so the store and the log agree, then is cancelled.
        write = asyncio.ensure_future(store.replace_document(record, chunks, vectors))
        try:
            replaced = await asyncio.shield(write)
        except asyncio.CancelledError:
            replaced = await write
            self._log_stored(record, pages, size, started, replaced)
            raise
        self._log_stored(record, pages, size, started, replaced)
        return record

    async def _embed_chunks(
        self,
        embedder: Embedder,
        chunks: list[Chunk],
        filename: str,
        document_id: str,
        progress: Progress | None,
    ) -> Vectors:
        """The chunks' vectors, embedded at background priority a slice at a time, reporting
        progress after each slice (and one log line at most every few seconds)."""
        total = len(chunks)
        if progress is not None:
            progress(0, total)
        slices: list[Vectors] = []
        done = 0
        logged = time.monotonic()
        for start in range(0, total, EMBED_SLICE_CHUNKS):
            texts = [chunk.text for chunk in chunks[start : start + EMBED_SLICE_CHUNKS]]
            slices.append(await embedder.embed(texts, background=True))
            done += len(texts)
            if progress is not None:
                progress(done, total)
            now = time.monotonic()
            if done < total and now - logged >= PROGRESS_LOG_SECONDS:
                logged = now
                log.info(
                    "embedding document filename=%s id=%s chunks_done=%d chunks_total=%d",
                    filename,
                    document_id,
                    done,
                    total,
                )
        return np.concatenate(slices) if len(slices) != 1 else slices[0]

    @staticmethod
    def _log_stored(
        record: DocumentRecord, pages: int, size: int, started: float, replaced: list[str]
    ) -> None:
        log.info(
            "stored document filename=%s id=%s pages=%d chunks=%d bytes=%d seconds=%.3f%s",
            record.filename,
            record.document_id,
            pages,
            record.chunks,
            size,
            time.perf_counter() - started,
            f" replaced={','.join(replaced)}" if replaced else "",
        )

    def _tokenizer_for_chunking(self, embedder: Embedder) -> PreTrainedTokenizerBase:
        # A copy of its own: the embedder's worker thread changes its tokenizer's truncation and
        # padding settings per call, which a concurrent call from another thread cannot share.
        if self._chunk_tokenizer is None:
            tokenizer = getattr(embedder, "tokenizer", None)
            if not isinstance(tokenizer, PreTrainedTokenizerBase):
                raise TypeError("chunking needs the embedder's transformers tokenizer")
            self._chunk_tokenizer = copy.deepcopy(tokenizer)
        return self._chunk_tokenizer

    def _extract_and_chunk(
        self, path: Path, filename: str, tokenizer: PreTrainedTokenizerBase
    ) -> tuple[int, list[tuple[int | None, str]]]:
        """Blocking: (pages, [(page, chunk text), ...]); UploadRejected when nothing to store."""
        try:
            extracted = extract_document(path, filename, self.options.parse_runner)
        except ExtractionError as error:
            raise UploadRejected(error.message) from None
        pieces = chunk_pages(
            extracted.pages,
            tokenizer,
            self.options.chunk_tokens,
            self.options.chunk_overlap_tokens,
        )
        if not pieces:
            raise UploadRejected(f"'{filename}' contains no text")
        return len(extracted.pages), [(piece.page, piece.text) for piece in pieces]

    async def list_documents(self, collection: str | None = None) -> list[DocumentRecord]:
        """The stored documents of ``collection`` (None: of all), newest first."""
        store = await self.components.store()
        return await store.list_documents(collection)

    async def delete_document(self, document_id: str) -> bool:
        store = await self.components.store()
        deleted = await store.delete_document(document_id)
        if deleted:
            log.info("deleted document id=%s", document_id)
        return deleted

    # -- retrieval and generation ---------------------------------------------------------------

    async def search(
        self,
        text: str,
        limit: int,
        *,
        collection: str = DEFAULT_COLLECTION,
        where: Filter | None = None,
        mode: SearchMode = "hybrid",
    ) -> list[SearchHit]:
        """At most ``limit`` chunks of ``collection`` whose document satisfies ``where``,
        most similar to ``text`` (as ``mode`` ranks them), best first."""
        embedder = await self.components.embedder()
        store = await self.components.store()
        vectors = await embedder.embed([text])
        return await store.search(
            text, vectors[0], limit, collection=collection, where=where, mode=mode
        )

    async def answer(
        self,
        question: str,
        *,
        context: str,
        use_knowledge_base: bool,
        max_new_tokens: int,
        sampling: Sampling = GREEDY,
        collection: str = DEFAULT_COLLECTION,
        where: Filter | None = None,
        mode: SearchMode = "hybrid",
    ) -> Answer:
        """Retrieve (when asked: from ``collection``, the chunks whose document satisfies
        ``where``, ranked as ``mode`` says), build the prompt, and start streaming the answer,
        decoded as ``sampling`` says (greedy by default)."""
        generator = await self.components.generator()
        if not use_knowledge_base:
            messages = conversation_messages(question, context)
            return Answer([], generator.stream(messages, max_new_tokens, sampling))
        hits = await self.search(
            question,
            self.options.retrieval_top_k,
            collection=collection,
            where=where,
            mode=mode,
        )
        if not hits:
            return Answer([], _canned(NO_DOCUMENTS_ANSWER))
        budget = prompt_budget(self.context_window(generator), max_new_tokens)
        messages, used = grounded_messages(
            question, hits, budget_tokens=budget, count_tokens=generator.count_tokens
        )
        return Answer(list(used), generator.stream(messages, max_new_tokens, sampling))

    def context_window(self, generator: Generator) -> int:
        own = generator.context_window
        cap = self.options.context_window
        return own if cap is None else min(own, cap)

    def health(self) -> tuple[ComponentState, dict[str, ComponentState]]:
        """The overall state (ready only when every component is) and each component's; starts
        loading when nothing did yet (an application served without its lifespan)."""
        self.components.start()
        states = self.components.states()
        if all(state == "ready" for state in states.values()):
            return "ready", states
        if any(state == "failed" for state in states.values()):
            return "failed", states
        return "loading", states


async def _canned(text: str) -> AsyncIterator[str | Finish]:
    yield text
    yield Finish("stop")


def _copy_to(source: BinaryIO, target: Path) -> None:
    """Blocking: copy ``source`` to ``target`` a buffer at a time."""
    with target.open("wb") as out:
        shutil.copyfileobj(source, out, _COPY_BUFFER)
