"""Ingestion jobs over the real stack (MiniLM, LanceDB): files accepted at once, progress and
results per file, the queue and concurrency bounds, a restart that resumes from the spool, and
the API's errors. The embedder is the real one, instrumented: its background (ingestion)
calls can be held at a gate, so that tests see a job mid-way without timing anything."""

from __future__ import annotations

import asyncio
import io
import json
import logging
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

import httpx
import pytest

from handlers.rag.ingest.embedder import LoadedModel, TransformersEmbedder
from handlers.rag.ingestion_jobs import MAX_JOB_FILES, IngestionJobs, JobOptions, NewFile
from handlers.rag.service import EMBED_SLICE_CHUNKS
from handlers.rag.stores.base import Vectors
from tests.rag.polling import wait_until
from tests.rag.stack import RagStack, build_stack

WORDS = (
    "Annual plans can be refunded in full within thirty days of purchase. Parcels ship "
    "worldwide within five working days. Tomatoes need six hours of sunlight a day. "
)
UNSUPPORTED = (
    "Unsupported file type '.png'; supported: .csv, .docx, .htm, .html, .json, .markdown, "
    ".md, .pdf, .txt"
)


class GatedEmbedder(TransformersEmbedder):
    """The real embedder; each background (ingestion) call waits for a pass from the test
    (``let_through``) unless the gate is open, and the calls in flight are counted."""

    def __init__(self, model: LoadedModel) -> None:
        super().__init__(model)
        self.passes = 0
        self.open = True
        self.in_flight = 0
        self.most_in_flight = 0
        self.arrived = 0
        self._changed: asyncio.Condition | None = None

    def _condition(self) -> asyncio.Condition:
        if self._changed is None:
            self._changed = asyncio.Condition()
        return self._changed

    async def embed(self, texts: Sequence[str], *, background: bool = False) -> Vectors:
        if not background:
            return await super().embed(texts)
        self.arrived += 1
        self.in_flight += 1
        self.most_in_flight = max(self.most_in_flight, self.in_flight)
        try:
            changed = self._condition()
            async with changed:
                await changed.wait_for(lambda: self.open or self.passes > 0)
                if not self.open:
                    self.passes -= 1
            return await super().embed(texts, background=True)
        finally:
            self.in_flight -= 1

    async def let_through(self, calls: int = 1) -> None:
        changed = self._condition()
        async with changed:
            self.passes += calls
            changed.notify_all()

    async def close_gate(self) -> None:
        async with self._condition():
            self.open = False

    async def open_gate(self) -> None:
        changed = self._condition()
        async with changed:
            self.open = True
            changed.notify_all()


def gated_stack(
    data_dir: Path, minilm: LoadedModel, tiny_model: Path, **job_bounds: Any
) -> tuple[RagStack, GatedEmbedder]:
    embedder = GatedEmbedder(minilm)
    stack = build_stack(
        data_dir,
        minilm=minilm,
        generator_model=tiny_model,
        chunk_tokens=32,
        chunk_overlap_tokens=0,
        embedder_loader=lambda: embedder,
        job_options=JobOptions(directory=data_dir / "jobs", **job_bounds),
    )
    return stack, embedder


@pytest.fixture
async def gated(
    tmp_path: Path, minilm: LoadedModel, tiny_model: Path
) -> AsyncIterator[tuple[RagStack, GatedEmbedder]]:
    stack, embedder = gated_stack(tmp_path / "data", minilm, tiny_model)
    yield stack, embedder
    await embedder.open_gate()
    await stack.close()


def client_of(stack: RagStack) -> httpx.AsyncClient:
    transport = httpx.ASGITransport(app=stack.app)
    return httpx.AsyncClient(transport=transport, base_url="http://rag.test")


async def job_of(client: httpx.AsyncClient, job_id: str) -> dict[str, Any]:
    response = await client.get(f"/ingestionJobs/{job_id}")
    assert response.status_code == 200, response.text
    job: dict[str, Any] = response.json()
    return job


async def wait_for_job(
    client: httpx.AsyncClient, job_id: str, *states: str, seconds: float = 60.0
) -> dict[str, Any]:
    deadline = asyncio.get_running_loop().time() + seconds
    while True:
        job = await job_of(client, job_id)
        if job["state"] in states:
            return job
        assert asyncio.get_running_loop().time() < deadline, job
        await asyncio.sleep(0.01)


async def test_a_job_of_several_files_reports_progress_and_its_result(
    gated: tuple[RagStack, GatedEmbedder], caplog: pytest.LogCaptureFixture
) -> None:
    stack, embedder = gated
    caplog.set_level(logging.INFO, logger="rag")
    await embedder.close_gate()
    big = (WORDS * 200).encode()  # well over two slices of 32-token chunks
    files = {
        "file1": ("handbook.md", big),
        "file2": ("photo.png", b"\x89PNG not a document"),
        "file3": ("../notes.txt", b"Tomatoes need six hours of sunlight a day."),
    }
    async with client_of(stack) as client:
        accepted = await client.post("/ingestionJobs", files=files)
        assert accepted.status_code == 202, accepted.text
        job = accepted.json()
        assert job["state"] == "queued"
        assert [f["filename"] for f in job["files"]] == ["handbook.md", "photo.png", "notes.txt"]
        assert [f["state"] for f in job["files"]] == ["queued"] * 3
        assert job["files"][0]["bytes"] == len(big)
        job_id = job["job_id"]

        await wait_until(lambda: embedder.in_flight == 1)  # the first slice, at the gate
        running = await job_of(client, job_id)
        handbook = running["files"][0]
        assert running["state"] == "running" and handbook["state"] == "running"
        total = handbook["chunks_total"]
        assert total is not None and total > 2 * EMBED_SLICE_CHUNKS
        assert handbook["chunks_done"] == 0 and running["chunks_total"] is None

        await embedder.let_through(1)
        await wait_until(lambda: embedder.arrived == 2)  # the next slice, after the progress
        midway = await job_of(client, job_id)
        assert midway["files"][0]["chunks_done"] == EMBED_SLICE_CHUNKS
        assert midway["chunks_done"] == EMBED_SLICE_CHUNKS

        await embedder.open_gate()
        done = await wait_for_job(client, job_id, "succeeded", "partly_failed", "failed")
        stored = (await client.get("/documents")).json()
        listed = {document["filename"]: document["document_id"] for document in stored}

    assert done["state"] == "partly_failed"
    assert done["error"] == "1 of 3 files could not be stored"
    handbook, photo, notes = done["files"]
    assert handbook["state"] == "stored"
    assert handbook["chunks_done"] == handbook["chunks_total"] == total
    assert handbook["document_id"] == listed["handbook.md"]
    assert photo["state"] == "failed" and photo["error"] == UNSUPPORTED
    assert photo["document_id"] is None
    assert notes["state"] == "stored" and notes["document_id"] == listed["notes.txt"]
    assert done["chunks_done"] == done["chunks_total"] == total + notes["chunks_total"]
    assert done["started_at"] is not None and done["finished_at"] is not None
    assert sorted(listed) == ["handbook.md", "notes.txt"]
    messages = [record.getMessage() for record in caplog.records]
    assert f"ingestion job finished job={job_id} state=partly_failed files=3" in "\n".join(messages)
    # the spooled copies are gone once ingested; the record stays
    assert [p.name for p in (stack.data_dir / "jobs" / job_id).iterdir()] == ["job.json"]


async def test_the_same_file_refused_by_a_job_and_by_upload_document_says_the_same(
    gated: tuple[RagStack, GatedEmbedder],
) -> None:
    stack, _ = gated
    async with client_of(stack) as client:
        refused = await client.post("/uploadDocument", files={"file": ("photo.png", b"x")})
        assert refused.status_code == 422
        accepted = await client.post("/ingestionJobs", files={"a": ("photo.png", b"x")})
        done = await wait_for_job(client, accepted.json()["job_id"], "failed")
    assert refused.json()["detail"][0]["msg"] == f"Value error, {done['files'][0]['error']}"


async def test_a_job_beyond_the_queue_bounds_is_refused_with_429(
    tmp_path: Path, minilm: LoadedModel, tiny_model: Path
) -> None:
    stack, embedder = gated_stack(tmp_path / "data", minilm, tiny_model, queue_files=2)
    await embedder.close_gate()
    try:
        async with client_of(stack) as client:
            two = {"a": ("a.txt", WORDS.encode()), "b": ("b.txt", WORDS.encode())}
            first = await client.post("/ingestionJobs", files=two)
            assert first.status_code == 202, first.text
            refused = await client.post("/ingestionJobs", files={"c": ("c.txt", b"words")})
            assert refused.status_code == 429, refused.text
            assert refused.headers["retry-after"] == "10"
            assert refused.json() == {
                "detail": "The ingestion queue is full (2 files, 1073741824 bytes at most): "
                "retry later"
            }
            listed = (await client.get("/ingestionJobs")).json()
            assert [job["job_id"] for job in listed] == [first.json()["job_id"]]
            assert len(list((stack.data_dir / "jobs").iterdir())) == 1  # nothing kept

            await embedder.open_gate()
            await wait_for_job(client, first.json()["job_id"], "succeeded")
            again = await client.post("/ingestionJobs", files={"c": ("c.txt", b"words")})
            assert again.status_code == 202, again.text
    finally:
        await embedder.open_gate()
        await stack.close()


async def test_the_queue_bytes_bound_refuses_too(
    tmp_path: Path, minilm: LoadedModel, tiny_model: Path
) -> None:
    stack, embedder = gated_stack(tmp_path / "data", minilm, tiny_model, queue_bytes=1000)
    await embedder.close_gate()
    try:
        async with client_of(stack) as client:
            # an empty queue accepts any one job, even one larger than the bound alone
            first = await client.post("/ingestionJobs", files={"a": ("a.txt", b"x" * 5000)})
            assert first.status_code == 202, first.text
            refused = await client.post("/ingestionJobs", files={"b": ("b.txt", b"y")})
            assert refused.status_code == 429
    finally:
        await embedder.open_gate()
        await stack.close()


async def test_no_more_files_are_ingested_at_once_than_the_concurrency(
    tmp_path: Path, minilm: LoadedModel, tiny_model: Path
) -> None:
    stack, embedder = gated_stack(tmp_path / "data", minilm, tiny_model, concurrency=2)
    await embedder.close_gate()
    try:
        async with client_of(stack) as client:
            files = {f"f{n}": (f"{n}.txt", f"{n} {WORDS}".encode()) for n in range(5)}
            accepted = await client.post("/ingestionJobs", files=files)
            assert accepted.status_code == 202, accepted.text
            job_id = accepted.json()["job_id"]
            await wait_until(lambda: embedder.in_flight == 2)
            await asyncio.sleep(0.3)  # room for a third to start, were the bound broken
            assert embedder.in_flight == 2 and stack.jobs.ingesting == 2
            job = await job_of(client, job_id)
            assert [f["state"] for f in job["files"]] == ["running"] * 2 + ["queued"] * 3
            await embedder.open_gate()
            done = await wait_for_job(client, job_id, "succeeded")
        assert embedder.most_in_flight == 2
        assert all(f["state"] == "stored" for f in done["files"])
    finally:
        await embedder.open_gate()
        await stack.close()


async def test_a_restart_resumes_a_job_from_its_spooled_files(
    tmp_path: Path, minilm: LoadedModel, tiny_model: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="rag")
    stack, embedder = gated_stack(tmp_path / "data", minilm, tiny_model)
    options = stack.jobs.options
    await embedder.close_gate()
    try:
        runner = stack.jobs
        job = await runner.submit(
            [
                NewFile(name, io.BytesIO(WORDS.encode()), len(WORDS))
                for name in ("a.txt", "b.txt", "c.txt")
            ]
        )
        await wait_until(lambda: embedder.in_flight == 1)  # a.txt running, b and c queued
        await runner.close()  # the server stops mid-queue
        record = json.loads((options.directory / job.job_id / "job.json").read_text())
        assert [f["state"] for f in record["files"]] == ["queued"] * 3
        assert sorted(p.name for p in (options.directory / job.job_id).iterdir()) == [
            "0.upload",
            "1.upload",
            "2.upload",
            "job.json",
        ]
        (options.directory / "left-by-a-crash.partial").mkdir()  # a submission cut short
        assert await stack.service.list_documents() == []

        await embedder.open_gate()
        restarted = IngestionJobs(stack.service, options)
        try:
            resumed = await restarted.get(job.job_id)
            assert resumed is not None
            await wait_until(lambda: resumed.finished)
            assert resumed.state == "succeeded"
            documents = await stack.service.list_documents()
            assert sorted(d.filename for d in documents) == ["a.txt", "b.txt", "c.txt"]
            assert not (options.directory / "left-by-a-crash.partial").exists()
        finally:
            await restarted.close()

        again = IngestionJobs(stack.service, options)  # a finished job can still be looked up
        try:
            found = await again.get(job.job_id)
            assert found is not None and found.state == "succeeded"
            assert [f.document_id for f in found.files] == [f.document_id for f in resumed.files]
        finally:
            await again.close()
        assert "ingestion jobs resumed jobs=1 files=3" in [r.getMessage() for r in caplog.records]
    finally:
        await embedder.open_gate()
        await stack.close()


async def test_finished_jobs_are_forgotten_after_their_retention(
    tmp_path: Path, minilm: LoadedModel, tiny_model: Path
) -> None:
    stack, _ = gated_stack(tmp_path / "data", minilm, tiny_model, retention_seconds=0.0)
    try:
        job = await stack.jobs.submit([NewFile("a.txt", io.BytesIO(b"words"), 5)])
        await wait_until(lambda: job.finished)
        assert await stack.jobs.get(job.job_id) is None
        assert await stack.jobs.recent(10) == []
        await stack.jobs.submit([NewFile("b.txt", io.BytesIO(b"words"), 5)])
        assert not (stack.data_dir / "jobs" / job.job_id).exists()
    finally:
        await stack.close()


async def test_unknown_jobs_and_bad_requests(gated: tuple[RagStack, GatedEmbedder]) -> None:
    stack, _ = gated
    async with client_of(stack) as client:
        unknown = await client.get("/ingestionJobs/3f2b8c1e-5d4a-4f7e-9b0c-2a1d6e8f9a7b")
        assert unknown.status_code == 404 and unknown.json() == {"detail": "Not Found"}
        bad_id = await client.get("/ingestionJobs/" + "a" * 65)
        assert bad_id.status_code == 422

        no_file = await client.post("/ingestionJobs", files={}, data={"x": "y"})
        assert no_file.status_code == 422, no_file.text
        empty = await client.post(
            "/ingestionJobs",
            content=b"--b--\r\n",
            headers={"content-type": "multipart/form-data; boundary=b"},
        )
        assert empty.status_code == 422, empty.text
        assert empty.json()["detail"][0]["msg"] == (
            "Value error, at least one file part is required"
        )
        too_many = {f"f{n}": (f"{n}.txt", b"words") for n in range(MAX_JOB_FILES + 1)}
        refused = await client.post("/ingestionJobs", files=too_many)
        assert refused.status_code == 422
        assert refused.json()["detail"][0]["msg"] == (
            f"Value error, at most {MAX_JOB_FILES} files per job, got {MAX_JOB_FILES + 1}"
        )
        repeated = await client.post(
            "/ingestionJobs", files=[("file", ("a.txt", b"a")), ("file", ("b.txt", b"b"))]
        )
        assert repeated.status_code == 422, repeated.text
        assert (await client.get("/ingestionJobs")).json() == []
        limited = await client.get("/ingestionJobs", params={"limit": 0})
        assert limited.status_code == 422


async def test_progress_is_logged_while_a_document_is_embedded(
    gated: tuple[RagStack, GatedEmbedder],
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    stack, _ = gated
    monkeypatch.setattr("handlers.rag.service.PROGRESS_LOG_SECONDS", 0.0)  # every slice
    caplog.set_level(logging.INFO, logger="rag.service")
    async with client_of(stack) as client:
        response = await client.post(
            "/uploadDocument", files={"file": ("handbook.md", (WORDS * 200).encode())}
        )
    assert response.status_code == 200, response.text
    body = response.json()
    chunks = body["chunks"]
    progress = [
        r.getMessage() for r in caplog.records if r.getMessage().startswith("embedding document")
    ]
    done = range(EMBED_SLICE_CHUNKS, chunks, EMBED_SLICE_CHUNKS)  # not the last: "stored"
    assert progress == [
        f"embedding document filename=handbook.md id={body['document_id']} "
        f"chunks_done={n} chunks_total={chunks}"
        for n in done
    ]
    assert len(progress) >= 2
