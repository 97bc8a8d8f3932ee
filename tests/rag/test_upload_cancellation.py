"""A client that disconnects from a synchronous ``/uploadDocument`` after sending its file,
before the answer, gets its upload cancelled: nothing stored, one INFO line. Driven at the
ASGI level (the request's body, then ``http.disconnect``) over the real stack, with the
embedder held at its gate so that the client leaves while the document is being ingested."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import MutableMapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from handlers.rag.documents import Chunk, DocumentRecord
from handlers.rag.ingest.embedder import LoadedModel
from handlers.rag.stores.base import Vectors
from handlers.rag.stores.lancedb_store import LanceDbStore
from tests.rag.polling import wait_until
from tests.rag.stack import RagStack, build_stack
from tests.rag.test_ingestion_jobs import WORDS, GatedEmbedder, gated_stack
from tests.rag.test_stored_names import BOUNDARY, multipart

CANCELLED_LINE = (
    "client disconnected before the answer: POST /uploadDocument cancelled (filename=notes.txt)"
)


async def call_upload(
    stack: RagStack,
    embedder: GatedEmbedder,
    *,
    leave: bool,
    leave_when: Any = None,
    left: asyncio.Event | None = None,
) -> list[MutableMapping[str, Any]]:
    """POST /uploadDocument straight to the application; with ``leave``, the client
    disconnects once the document's chunks have reached the embedder (or once
    ``leave_when()`` is true). The messages sent."""
    if left is None:
        left = asyncio.Event()
    if leave_when is None:
        leave_when = lambda: embedder.in_flight > 0  # noqa: E731
    body = multipart(b"notes.txt", (WORDS * 20).encode())
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": "/uploadDocument",
        "raw_path": b"/uploadDocument",
        "query_string": b"",
        "root_path": "",
        "headers": [
            (b"host", b"rag.test"),
            (b"content-type", f"multipart/form-data; boundary={BOUNDARY}".encode()),
            (b"content-length", str(len(body)).encode()),
        ],
        "client": ("127.0.0.1", 40000),
        "server": ("rag.test", 80),
    }
    sent: list[MutableMapping[str, Any]] = []
    body_sent = False
    answered = asyncio.Event()

    async def receive() -> dict[str, Any]:
        nonlocal body_sent
        if not body_sent:
            body_sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        if leave and leave_when():
            left.set()
            return {"type": "http.disconnect"}
        await answered.wait()  # a client still there: nothing more until the answer
        return {"type": "http.disconnect"}

    async def send(message: MutableMapping[str, Any]) -> None:
        sent.append(message)
        if message["type"] == "http.response.body" and not message.get("more_body"):
            answered.set()

    await asyncio.wait_for(stack.app(scope, receive, send), 60)
    return sent


async def test_a_client_leaving_a_synchronous_upload_cancels_it(
    tmp_path: Path, minilm: LoadedModel, tiny_model: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    stack, embedder = gated_stack(tmp_path / "data", minilm, tiny_model)
    await embedder.close_gate()
    try:
        await call_upload(stack, embedder, leave=True)
        assert embedder.arrived >= 1 and embedder.in_flight == 0  # reached, then cancelled
        await embedder.open_gate()
        messages = [r.getMessage() for r in caplog.records]
        assert CANCELLED_LINE in messages
        assert not any("before the end of the request body" in m for m in messages)
        assert not any(m.startswith("stored document") for m in messages)
        assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == []
        assert await stack.service.list_documents() == []
        assert list((stack.data_dir / "uploads").iterdir()) == []  # its spooled copy too
    finally:
        await embedder.open_gate()
        await stack.close()


async def test_a_client_that_stays_gets_its_upload_stored(
    tmp_path: Path, minilm: LoadedModel, tiny_model: Path
) -> None:
    """The same upload, the client waiting: stored and answered (the test above can fail)."""
    stack, embedder = gated_stack(tmp_path / "data", minilm, tiny_model)
    await embedder.close_gate()
    try:
        calling = asyncio.ensure_future(call_upload(stack, embedder, leave=False))
        await wait_until(lambda: embedder.in_flight > 0)
        await asyncio.sleep(0.6)  # a few polls of the client while the ingestion waits
        await embedder.open_gate()
        sent = await calling
        assert sent[0]["status"] == 200
        [document] = await stack.service.list_documents()
        assert document.filename == "notes.txt"
    finally:
        await embedder.open_gate()
        await stack.close()


class GatedStore(LanceDbStore):
    """The real LanceDB store; a document's write waits until the test lets it go."""

    def __init__(self, directory: Path, dimension: int) -> None:
        super().__init__(directory, dimension)
        self.writing = False
        self.release = asyncio.Event()

    async def replace_document(
        self, document: DocumentRecord, chunks: Sequence[Chunk], vectors: Vectors
    ) -> list[str]:
        self.writing = True
        await self.release.wait()
        return await super().replace_document(document, chunks, vectors)


async def test_a_store_write_under_way_when_the_client_leaves_completes(
    tmp_path: Path, minilm: LoadedModel, tiny_model: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    stores: list[GatedStore] = []

    def gated_store(directory: Path, dimension: int) -> GatedStore:
        stores.append(GatedStore(directory, dimension))
        return stores[-1]

    embedder = GatedEmbedder(minilm)
    stack = build_stack(
        tmp_path / "data",
        minilm=minilm,
        generator_model=tiny_model,
        embedder_loader=lambda: embedder,
        store_factory=gated_store,
    )
    try:
        left = asyncio.Event()
        calling = asyncio.ensure_future(
            call_upload(
                stack, embedder, leave=True, leave_when=lambda: stores[0].writing, left=left
            )
        )
        await asyncio.wait_for(left.wait(), 30)  # the client left while the write waits
        await asyncio.sleep(0.1)  # the upload is cancelled meanwhile
        assert CANCELLED_LINE not in [r.getMessage() for r in caplog.records]
        stores[0].release.set()
        await calling
        assert CANCELLED_LINE in [r.getMessage() for r in caplog.records]
        [document] = await stack.service.list_documents()  # the write completed
        assert document.filename == "notes.txt"
        assert any(
            r.getMessage().startswith("stored document filename=notes.txt") for r in caplog.records
        )
    finally:
        if stores:
            stores[0].release.set()
        await stack.close()
