"""Ingestion jobs: files accepted at once, ingested in the background, looked up by id.

``POST /ingestionJobs`` hands its files to :meth:`IngestionJobs.submit`, which spools them
to ``<directory>/<job id>/`` with the job's record (``job.json``) and answers at once; worker
tasks then ingest the files one by one, in the order they came, through
:meth:`RagService.ingest_spooled` (the same extraction, chunking, embedding and store write as
``/uploadDocument``). What is bounded, and how:

- **Work**: at most ``concurrency`` files are ingested at once, over all jobs (a worker task
  each); the embedder runs their chunks below queries in priority.
- **Queue**: the files waiting or running, over all jobs, are at most ``queue_files`` and
  ``queue_bytes``; a job that would exceed either is refused (:class:`QueueFull`, a 429 with
  ``Retry-After``) and nothing of it is kept. An empty queue accepts any one job, so a job
  larger than the bounds alone is not refused forever.
- **Files per job**: at most :data:`MAX_JOB_FILES`.
- **History**: a finished job is kept ``retention_seconds`` after it finished, and at most
  ``max_finished`` finished jobs (the most recent); its spooled files are removed as soon as
  each file is stored or refused, so a finished job is only its small record.

Nothing is lost on failure or restart: a job exists only once its files and record are on
disk (written to ``<id>.partial/`` and renamed), the record is rewritten atomically when a
file starts or ends, and a new runner over the same directory resumes every unfinished job
from its spooled files (a file that was running is ingested again from the start; storing
it again replaces the same-named document, as any upload does). A file that cannot be
ingested fails alone, with the message ``/uploadDocument`` gives in its 422 or 413.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import json
import logging
import os
import shutil
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO, Literal

import anyio.to_thread

from handlers.rag.components import NotReady
from handlers.rag.metadata import (
    DEFAULT_COLLECTION,
    MetadataValue,
    check_collection,
    check_metadata,
)
from handlers.rag.service import RagService, UploadRejected, UploadTooLarge, stored_filename

__all__ = [
    "MAX_JOB_FILES",
    "FileState",
    "IngestionJobs",
    "Job",
    "JobFile",
    "JobOptions",
    "JobState",
    "NewFile",
    "QueueFull",
    "SpoolFailed",
]

log = logging.getLogger("rag.jobs")

MAX_JOB_FILES = 32
"""Files one job (one request) may carry."""
MAX_FINISHED_JOBS = 1000
"""Finished jobs kept at most (the most recent), whatever their age."""
RETRY_AFTER_SECONDS = 10
"""What a refused job's ``Retry-After`` says."""
CLOSE_GRACE_SECONDS = 30.0
"""How long closing waits for the files being ingested to stop (a parse runs to its end)."""
NOT_READY_RETRY_SECONDS = 5.0
"""How long a file waits before trying again when a component failed to load."""
RECORD = "job.json"
_PARTIAL = ".partial"
_COPY_BUFFER = 1024 * 1024

FileState = Literal["queued", "running", "stored", "failed"]
JobState = Literal["queued", "running", "succeeded", "partly_failed", "failed"]
_FINISHED: frozenset[str] = frozenset({"stored", "failed"})


class QueueFull(Exception):
    """The job would exceed the ingestion queue's bounds; nothing of it was kept."""

    def __init__(self, files: int, size: int) -> None:
        super().__init__(
            f"The ingestion queue is full ({files} files, {size} bytes at most): retry later"
        )
        self.retry_after = RETRY_AFTER_SECONDS


class SpoolFailed(Exception):
    """The job's files could not be written to disk (full, not writable); nothing was kept."""


@dataclass(frozen=True, slots=True)
class NewFile:
    """One file of a job being submitted: its uploaded name, its data (read from its current
    position), its size in bytes."""

    uploaded_name: str | None
    data: BinaryIO
    size: int


@dataclass(frozen=True, slots=True)
class JobOptions:
    """Where jobs are kept and their bounds (the settings ``RAG_INGEST_*``)."""

    directory: Path
    concurrency: int = 1
    queue_files: int = 100
    queue_bytes: int = 1024 * 1024 * 1024
    retention_seconds: float = 86_400.0
    max_finished: int = MAX_FINISHED_JOBS


@dataclass(slots=True)
class JobFile:
    """One file of a job: its stored name, size, spooled copy and outcome."""

    filename: str
    bytes: int
    spool: str
    """The spooled copy's name in the job's directory."""
    state: FileState = "queued"
    chunks_done: int = 0
    chunks_total: int | None = None
    document_id: str | None = None
    error: str | None = None

    @property
    def finished(self) -> bool:
        return self.state in _FINISHED


@dataclass(slots=True)
class Job:
    """An ingestion job; its state and totals are derived from its files."""

    job_id: str
    created_at: datetime.datetime
    files: list[JobFile]
    collection: str = DEFAULT_COLLECTION
    """The collection its files are stored in."""
    metadata: dict[str, MetadataValue] = field(default_factory=dict)
    """The metadata each of its documents carries."""
    started_at: datetime.datetime | None = None
    finished_at: datetime.datetime | None = None
    dirty: bool = field(default=False, repr=False)
    """Changed since its record was last written."""
    _saving: asyncio.Lock = field(default_factory=asyncio.Lock, repr=False)

    @property
    def state(self) -> JobState:
        states = [entry.state for entry in self.files]
        if all(state == "queued" for state in states):
            return "queued"
        if not all(state in _FINISHED for state in states):
            return "running"
        stored = states.count("stored")
        if stored == len(states):
            return "succeeded"
        return "failed" if stored == 0 else "partly_failed"

    @property
    def finished(self) -> bool:
        return all(entry.finished for entry in self.files)

    @property
    def chunks_done(self) -> int:
        return sum(entry.chunks_done for entry in self.files)

    @property
    def chunks_total(self) -> int | None:
        """Chunks of all files, once every file is chunked (a failed one counts those done)."""
        total = 0
        for entry in self.files:
            if entry.chunks_total is not None and entry.state != "failed":
                total += entry.chunks_total
            elif entry.state == "failed":
                total += entry.chunks_done
            else:
                return None
        return total

    @property
    def error(self) -> str | None:
        failed = sum(entry.state == "failed" for entry in self.files)
        if failed == 0:
            return None
        return f"{failed} of {len(self.files)} files could not be stored"

    def record(self) -> dict[str, Any]:
        """What ``job.json`` holds."""
        return {
            "job_id": self.job_id,
            "created_at": self.created_at.isoformat(),
            "started_at": _iso(self.started_at),
            "finished_at": _iso(self.finished_at),
            "collection": self.collection,
            "metadata": self.metadata,
            "files": [
                {
                    "filename": entry.filename,
                    "bytes": entry.bytes,
                    "spool": entry.spool,
                    "state": entry.state,
                    "chunks_done": entry.chunks_done,
                    "chunks_total": entry.chunks_total,
                    "document_id": entry.document_id,
                    "error": entry.error,
                }
                for entry in self.files
            ],
        }

    @classmethod
    def from_record(cls, data: dict[str, Any]) -> Job:
        """The job of a ``job.json``; KeyError, TypeError or ValueError when it is not one."""
        files = [
            JobFile(
                filename=str(item["filename"]),
                bytes=int(item["bytes"]),
                spool=_spool_name(item["spool"]),
                state=_file_state(item["state"]),
                chunks_done=int(item["chunks_done"]),
                chunks_total=None if item["chunks_total"] is None else int(item["chunks_total"]),
                document_id=None if item["document_id"] is None else str(item["document_id"]),
                error=None if item["error"] is None else str(item["error"]),
            )
            for item in data["files"]
        ]
        if not files:
            raise ValueError("a job without files")
        return cls(
            job_id=str(data["job_id"]),
            created_at=_parse_time(data["created_at"]),
            started_at=None if data["started_at"] is None else _parse_time(data["started_at"]),
            finished_at=None if data["finished_at"] is None else _parse_time(data["finished_at"]),
            files=files,
            # records written before collections: the default one, no metadata
            collection=check_collection(str(data.get("collection", DEFAULT_COLLECTION))),
            metadata=check_metadata(data.get("metadata", {})),
        )


class IngestionJobs:
    """Accepts ingestion jobs, runs them with bounded work and queue, keeps their records.

    Starts (recovering the jobs on disk, starting its workers) at its first use or at
    :meth:`start`; :meth:`close` stops the workers, leaving unfinished jobs to the next runner.
    """

    def __init__(self, service: RagService, options: JobOptions) -> None:
        self.service = service
        self.options = options
        self._jobs: dict[str, Job] = {}  # by creation, oldest first
        self._queue: asyncio.Queue[tuple[Job, int]] = asyncio.Queue()
        self._waiting_files = 0
        self._waiting_bytes = 0
        self._workers: list[asyncio.Task[None]] = []
        self._starting: asyncio.Lock | None = None
        self._started = False
        self.ingesting = 0
        """Files being ingested now (never more than ``options.concurrency``)."""

    # -- lifecycle ----------------------------------------------------------------------------

    async def start(self) -> None:
        """Recover the jobs on disk and start the workers (idempotent)."""
        if self._started:
            return
        if self._starting is None:
            self._starting = asyncio.Lock()
        async with self._starting:
            if self._started:
                return
            jobs = await anyio.to_thread.run_sync(_recover, self.options.directory)
            for job in sorted(jobs, key=lambda job: job.created_at):
                self._add(job)
            resumed = [job for job in self._jobs.values() if not job.finished]
            if resumed:
                log.info(
                    "ingestion jobs resumed jobs=%d files=%d",
                    len(resumed),
                    sum(not entry.finished for job in resumed for entry in job.files),
                )
            await self._prune()
            self._workers = [
                asyncio.get_running_loop().create_task(self._work(), name=f"rag-ingest-{n}")
                for n in range(self.options.concurrency)
            ]
            self._started = True

    async def close(self) -> None:
        """Stop the workers (a file being ingested stops at its next step, waiting at most
        :data:`CLOSE_GRACE_SECONDS`); unfinished jobs stay on disk for the next runner."""
        workers, self._workers = self._workers, []
        for worker in workers:
            worker.cancel()
        if workers:
            await asyncio.wait(workers, timeout=CLOSE_GRACE_SECONDS)
        for job in self._jobs.values():
            if job.dirty:  # a file put back in the queue, or a last write cut short
                await self._save_quietly(job)
        self._jobs.clear()
        self._queue = asyncio.Queue()
        self._waiting_files = self._waiting_bytes = 0
        self._started = False

    # -- the API ------------------------------------------------------------------------------

    async def submit(
        self,
        files: Sequence[NewFile],
        *,
        collection: str = DEFAULT_COLLECTION,
        metadata: Mapping[str, MetadataValue] | None = None,
    ) -> Job:
        """Spool ``files`` as a new job and queue them, to be stored in ``collection`` with
        ``metadata`` (both checked by the caller); the job (state ``queued``).

        QueueFull when the queue has no room for them; SpoolFailed when the disk refused them.
        """
        if not 1 <= len(files) <= MAX_JOB_FILES:
            raise ValueError(f"a job has 1 to {MAX_JOB_FILES} files")
        await self.start()
        await self._prune()
        size = sum(item.size for item in files)
        if self._waiting_files and (
            self._waiting_files + len(files) > self.options.queue_files
            or self._waiting_bytes + size > self.options.queue_bytes
        ):
            raise QueueFull(self.options.queue_files, self.options.queue_bytes)
        self._waiting_files += len(files)  # reserved while spooling
        self._waiting_bytes += size
        job = Job(
            job_id=str(uuid.uuid4()),
            created_at=datetime.datetime.now(datetime.UTC),
            files=[
                JobFile(filename=stored_filename(item.uploaded_name), bytes=item.size, spool="")
                for item in files
            ],
            collection=collection,
            metadata=dict(metadata or {}),
        )
        for index, entry in enumerate(job.files):
            entry.spool = f"{index}.upload"
        try:
            await anyio.to_thread.run_sync(
                _spool, self.options.directory, job, [item.data for item in files]
            )
        except BaseException as error:
            self._waiting_files -= len(files)
            self._waiting_bytes -= size
            if isinstance(error, OSError):
                log.error("cannot spool an ingestion job: %s", error)
                raise SpoolFailed(str(error)) from None
            raise
        self._jobs[job.job_id] = job
        for index in range(len(job.files)):
            self._queue.put_nowait((job, index))
        log.info(
            "ingestion job accepted job=%s files=%d bytes=%d queued_files=%d",
            job.job_id,
            len(job.files),
            size,
            self._waiting_files,
        )
        return job

    async def get(self, job_id: str) -> Job | None:
        """The job, or None when unknown (or finished and no longer kept)."""
        await self.start()
        job = self._jobs.get(job_id)
        if job is None or self._expired(job, time.time()):
            return None
        return job

    async def recent(self, limit: int) -> list[Job]:
        """At most ``limit`` jobs, newest first."""
        await self.start()
        now = time.time()
        kept = [job for job in reversed(self._jobs.values()) if not self._expired(job, now)]
        return kept[:limit]

    # -- the work -----------------------------------------------------------------------------

    def _add(self, job: Job) -> None:
        self._jobs[job.job_id] = job
        for index, entry in enumerate(job.files):
            if entry.finished:
                continue
            if entry.state == "running":  # interrupted: again from the start
                entry.state, entry.chunks_done, entry.chunks_total = "queued", 0, None
            self._waiting_files += 1
            self._waiting_bytes += entry.bytes
            self._queue.put_nowait((job, index))

    async def _work(self) -> None:
        while True:
            job, index = await self._queue.get()
            try:
                await self._ingest(job, index)
            except Exception:  # a bug here must not end the worker (its file is recorded)
                log.exception("ingestion job worker error job=%s", job.job_id)

    async def _ingest(self, job: Job, index: int) -> None:
        entry = job.files[index]
        entry.state = "running"
        job.dirty = True
        if job.started_at is None:
            job.started_at = datetime.datetime.now(datetime.UTC)
        self.ingesting += 1
        started = time.perf_counter()
        try:
            await self._save_quietly(job)
            log.info(
                "ingestion job file started job=%s file=%d/%d filename=%s bytes=%d",
                job.job_id,
                index + 1,
                len(job.files),
                entry.filename,
                entry.bytes,
            )
            await self._ingest_file(job, entry)
        except asyncio.CancelledError:
            entry.state, entry.chunks_done, entry.chunks_total = "queued", 0, None
            job.dirty = True
            raise
        finally:
            self.ingesting -= 1
        self._waiting_files -= 1
        self._waiting_bytes -= entry.bytes
        with contextlib.suppress(OSError):
            (self._job_dir(job) / entry.spool).unlink(missing_ok=True)
        log.info(
            "ingestion job file %s job=%s file=%d/%d filename=%s chunks=%d seconds=%.3f%s",
            entry.state,
            job.job_id,
            index + 1,
            len(job.files),
            entry.filename,
            entry.chunks_done,
            time.perf_counter() - started,
            f" error={entry.error!r}" if entry.error else "",
        )
        job.dirty = True
        if job.finished:
            job.finished_at = datetime.datetime.now(datetime.UTC)
            assert job.started_at is not None
            log.info(
                "ingestion job finished job=%s state=%s files=%d chunks=%d seconds=%.3f",
                job.job_id,
                job.state,
                len(job.files),
                job.chunks_done,
                (job.finished_at - job.started_at).total_seconds(),
            )
        await self._save_quietly(job)
        if job.finished:
            await self._prune()

    async def _ingest_file(self, job: Job, entry: JobFile) -> None:
        """Ingest one file, recording its outcome in ``entry`` (never raises but for a
        cancellation)."""

        def progress(done: int, total: int) -> None:
            entry.chunks_done, entry.chunks_total = done, total

        path = self._job_dir(job) / entry.spool
        while True:
            try:
                record = await self.service.ingest_spooled(
                    path,
                    entry.filename,
                    entry.bytes,
                    collection=job.collection,
                    metadata=job.metadata,
                    progress=progress,
                )
            except NotReady as error:  # models still loading: wait for them, keep the file
                log.warning("ingestion job %s waits: %s", job.job_id, error)
                states = await self.service.components.wait_ready()
                if "failed" in states.values():  # the server is stopping: do not spin
                    await asyncio.sleep(NOT_READY_RETRY_SECONDS)
                continue
            except (UploadRejected, UploadTooLarge) as error:
                entry.state = "failed"
                entry.error = error.message if isinstance(error, UploadRejected) else str(error)
                return
            except Exception as error:
                log.exception("ingestion job file failed job=%s", job.job_id)
                entry.state = "failed"
                entry.error = f"The file could not be stored: {type(error).__name__}"
                return
            entry.state, entry.document_id = "stored", record.document_id
            entry.chunks_done = entry.chunks_total = record.chunks
            return

    # -- records ------------------------------------------------------------------------------

    def _job_dir(self, job: Job) -> Path:
        return self.options.directory / job.job_id

    async def _save(self, job: Job) -> None:
        async with job._saving:  # the latest state is the one written last
            job.dirty = False
            try:
                await anyio.to_thread.run_sync(_write_record, self._job_dir(job), job.record())
            except BaseException:
                job.dirty = True
                raise

    async def _save_quietly(self, job: Job) -> None:
        """Save the record; a disk error is logged (the job goes on in memory; at worst a
        restart ingests a file again)."""
        try:
            await self._save(job)
        except OSError as error:
            log.error("cannot save ingestion job %s: %s", job.job_id, error)

    def _expired(self, job: Job, now: float) -> bool:
        finished = job.finished_at
        return (
            finished is not None
            and job.finished
            and now - finished.timestamp() > self.options.retention_seconds
        )

    async def _prune(self) -> None:
        """Forget (and remove from disk) finished jobs past their retention, and the oldest
        finished ones beyond ``max_finished``."""
        now = time.time()
        finished = [job for job in self._jobs.values() if job.finished]
        surplus = len(finished) - self.options.max_finished
        doomed = [
            job
            for position, job in enumerate(finished)
            if position < surplus or self._expired(job, now)
        ]
        for job in doomed:
            del self._jobs[job.job_id]
        if doomed:
            directories = [self._job_dir(job) for job in doomed]
            await anyio.to_thread.run_sync(_remove_all, directories)


# -- disk -------------------------------------------------------------------------------------


def _spool(directory: Path, job: Job, sources: list[BinaryIO]) -> None:
    """Blocking: the job's files and record in ``<id>.partial/``, then renamed to ``<id>/``,
    so that a job directory without ``.partial`` is always complete."""
    partial = directory / f"{job.job_id}{_PARTIAL}"
    try:
        partial.mkdir(parents=True)
        for entry, source in zip(job.files, sources, strict=True):
            with (partial / entry.spool).open("wb") as out:
                shutil.copyfileobj(source, out, _COPY_BUFFER)
                out.flush()
                os.fsync(out.fileno())
        _write_record(partial, job.record())
        partial.rename(directory / job.job_id)
        _fsync_directory(directory)
    except BaseException:
        shutil.rmtree(partial, ignore_errors=True)
        raise


def _write_record(directory: Path, record: dict[str, Any]) -> None:
    """Blocking: ``job.json`` replaced atomically (a temporary file, synced, renamed)."""
    target = directory / RECORD
    temporary = directory / f".{RECORD}.{uuid.uuid4().hex}"
    try:
        with temporary.open("w", encoding="utf-8") as out:
            json.dump(record, out, ensure_ascii=False)
            out.flush()
            os.fsync(out.fileno())
        os.replace(temporary, target)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise


def _fsync_directory(directory: Path) -> None:
    with contextlib.suppress(OSError):
        fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def _recover(directory: Path) -> list[Job]:
    """Blocking: the jobs recorded under ``directory``. Incomplete submissions
    (``.partial``) are removed; a directory whose record cannot be read is left alone, with
    a warning."""
    directory.mkdir(parents=True, exist_ok=True)
    jobs: list[Job] = []
    for child in directory.iterdir():
        if not child.is_dir():
            continue
        if child.name.endswith(_PARTIAL):
            shutil.rmtree(child, ignore_errors=True)
            continue
        try:
            data = json.loads((child / RECORD).read_text(encoding="utf-8"))
            job = Job.from_record(data)
            if job.job_id != child.name:
                raise ValueError(f"the record names job {job.job_id}")
        except (OSError, ValueError, KeyError, TypeError) as error:
            log.warning("ignoring ingestion job directory %s: %s", child, error)
            continue
        jobs.append(job)
    return jobs


def _remove_all(directories: list[Path]) -> None:
    for path in directories:
        shutil.rmtree(path, ignore_errors=True)


def _iso(value: datetime.datetime | None) -> str | None:
    return None if value is None else value.isoformat()


def _parse_time(value: object) -> datetime.datetime:
    parsed = datetime.datetime.fromisoformat(str(value))
    if parsed.tzinfo is None:
        raise ValueError(f"a time without a zone: {value!r}")
    return parsed


def _file_state(value: object) -> FileState:
    if value in ("queued", "running", "stored", "failed"):
        return value
    raise ValueError(f"unknown file state {value!r}")


def _spool_name(value: object) -> str:
    """A spooled file's name: a plain name inside the job directory, never a path."""
    name = str(value)
    if not name or name != Path(name).name or name.startswith("."):
        raise ValueError(f"bad spool name {name!r}")
    return name
