"""Readiness, persistence and failures of the service over the real components."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

from handlers.common.settings import SettingsError
from handlers.rag.generation.base import Generator
from handlers.rag.generation.local import LocalGenerator
from handlers.rag.ingest.embedder import LoadedModel, TransformersEmbedder
from handlers.rag.stores.base import Vectors
from tests.rag.stack import RagStack, build_stack

TEXT = "Annual plans can be refunded in full within 30 days of purchase."
PROMPT = {"question": "Refunds?", "context": "", "use_knowledge_base": False, "num_tokens": 2}


def client_of(stack: RagStack) -> httpx.AsyncClient:
    transport = httpx.ASGITransport(app=stack.app)
    return httpx.AsyncClient(transport=transport, base_url="http://rag.test")


def held_back(load: Callable[[], Generator]) -> tuple[threading.Event, Callable[[], Generator]]:
    """A real loader that waits for the returned event before it loads."""
    release = threading.Event()

    def loader() -> Generator:
        if not release.wait(30):
            raise TimeoutError("the test never released the loader")
        return load()

    return release, loader


async def poll_health(
    client: httpx.AsyncClient, until: Callable[[dict[str, Any]], bool]
) -> httpx.Response:
    """/health's answer once its body satisfies ``until`` (or after 30 s)."""
    deadline = time.monotonic() + 30
    while True:
        response = await client.get("/health")
        if until(response.json()) or time.monotonic() > deadline:
            return response
        await asyncio.sleep(0.02)


def settled(body: dict[str, Any]) -> bool:
    return bool(body["status"] != "loading")


async def test_documents_survive_a_restart(
    tmp_path: Path, minilm: LoadedModel, tiny_model: Path
) -> None:
    first = build_stack(tmp_path / "data", minilm=minilm, generator_model=tiny_model)
    async with client_of(first) as client:
        response = await client.post("/uploadDocument", files={"file": ("a.txt", TEXT.encode())})
        stored = response.json()
    await first.close()

    second = build_stack(tmp_path / "data", minilm=minilm, generator_model=tiny_model)
    try:
        async with client_of(second) as client:
            listed = (await client.get("/documents")).json()
            assert [d["document_id"] for d in listed] == [stored["document_id"]]
            search = {"content": "refund within 30 days", "num_docs": 1}
            [hit] = (await client.post("/documentSearch", json=search)).json()
            assert (hit["document_id"], hit["source"]) == (stored["document_id"], "a.txt")
    finally:
        await second.close()


async def test_health_is_503_loading_until_every_component_is_ready(
    tmp_path: Path, minilm: LoadedModel, tiny_model: Path
) -> None:
    release, loader = held_back(
        lambda: LocalGenerator.load(str(tiny_model), cache_dir=tmp_path / "models")
    )
    stack = build_stack(
        tmp_path / "data", minilm=minilm, generator_model=tiny_model, generator_loader=loader
    )
    try:
        async with client_of(stack) as client:
            loading = await client.get("/health")
            assert loading.status_code == 503
            assert loading.json()["status"] == "loading"
            assert loading.json()["components"]["generator"] == "loading"
            # a request needing the generator waits for it instead of failing
            answer = asyncio.create_task(client.post("/generate", json=PROMPT))
            ready_but_generator = await poll_health(
                client, lambda body: body["components"]["store"] == "ready"
            )
            assert ready_but_generator.status_code == 503
            assert ready_but_generator.json()["components"] == {
                "embedder": "ready",
                "generator": "loading",
                "store": "ready",
            }
            assert not answer.done()
            release.set()
            ready = await poll_health(client, settled)
            assert ready.json() == {
                "status": "ready",
                "components": {"embedder": "ready", "generator": "ready", "store": "ready"},
            }
            assert (await answer).status_code == 200
    finally:
        release.set()
        await stack.close()


async def test_a_component_still_loading_after_the_timeout_gives_503(
    tmp_path: Path, minilm: LoadedModel, tiny_model: Path
) -> None:
    release, loader = held_back(
        lambda: LocalGenerator.load(str(tiny_model), cache_dir=tmp_path / "models")
    )
    stack = build_stack(
        tmp_path / "data", minilm=minilm, generator_model=tiny_model,
        generator_loader=loader, ready_timeout=0.3,
    )  # fmt: skip
    try:
        async with client_of(stack) as client:
            started = time.monotonic()
            response = await client.post("/generate", json=PROMPT)
            assert (response.status_code, response.json()) == (
                503,
                {"detail": "Service Unavailable"},
            )
            assert 0.3 <= time.monotonic() - started < 5
    finally:
        release.set()
        await stack.close()


async def test_a_failed_component_is_reported_and_refused_at_once(
    tmp_path: Path, minilm: LoadedModel, tiny_model: Path
) -> None:
    failures: list[tuple[str, BaseException]] = []

    def broken() -> Generator:
        return LocalGenerator.load(str(tmp_path / "no-such-model"), cache_dir=tmp_path / "m")

    stack = build_stack(
        tmp_path / "data", minilm=minilm, generator_model=tiny_model,
        generator_loader=broken, on_failure=lambda name, error: failures.append((name, error)),
    )  # fmt: skip
    try:
        async with client_of(stack) as client:
            health = await poll_health(client, settled)
            assert health.status_code == 503
            assert health.json()["status"] == "failed"
            assert health.json()["components"]["generator"] == "failed"
            assert [name for name, _ in failures] == ["generator"]
            response = await client.post("/generate", json=PROMPT)
            assert response.status_code == 503
            # what does not need the generator still works
            search = await client.post("/documentSearch", json={"content": "x"})
            assert (search.status_code, search.json()) == (200, [])
    finally:
        await stack.close()


async def test_chunks_larger_than_the_embedders_window_fail_the_embedder(
    tmp_path: Path, minilm: LoadedModel, tiny_model: Path
) -> None:
    failures: list[tuple[str, BaseException]] = []
    stack = build_stack(
        tmp_path / "data", minilm=minilm, generator_model=tiny_model, chunk_tokens=255,
        on_failure=lambda name, error: failures.append((name, error)),
    )  # fmt: skip
    try:
        states = await stack.components.wait_ready()
        assert states["embedder"] == "failed"
        assert states["store"] == "failed"
        [(name, error)] = failures
        assert name == "embedder"
        assert isinstance(error, SettingsError)
        assert "RAG_CHUNK_TOKENS=255" in str(error)
        assert "at most 254" in str(error)
    finally:
        await stack.close()


async def test_concurrent_uploads_are_all_stored(
    tmp_path: Path, minilm: LoadedModel, tiny_model: Path
) -> None:
    stack = build_stack(tmp_path / "data", minilm=minilm, generator_model=tiny_model)
    texts = {f"doc{n}.txt": f"Document {n}: {TEXT} " * (n + 1) for n in range(6)}
    try:
        async with client_of(stack) as client:
            responses = await asyncio.gather(
                *(
                    client.post("/uploadDocument", files={"file": (name, text.encode())})
                    for name, text in texts.items()
                )
            )
            assert all(r.status_code == 200 for r in responses)
            listed = (await client.get("/documents")).json()
            assert sorted(d["filename"] for d in listed) == sorted(texts)
            assert {r.json()["document_id"] for r in responses} == {
                d["document_id"] for d in listed
            }
    finally:
        await stack.close()


class FailingEmbedder(TransformersEmbedder):
    """The real embedder, failing every batch with a text containing ``POISON`` (stands for a
    model error halfway through a document's chunks)."""

    def _encode(self, texts: list[str]) -> Vectors:
        if any(POISON in text for text in texts):
            raise RuntimeError("the model failed on purpose")
        return super()._encode(texts)


POISON = "POISON"


async def test_a_failed_ingestion_keeps_the_earlier_version_whole(
    tmp_path: Path, minilm: LoadedModel, tiny_model: Path
) -> None:
    stack = build_stack(
        tmp_path / "data", minilm=minilm, generator_model=tiny_model, chunk_tokens=32,
        chunk_overlap_tokens=0, embedder_loader=lambda: FailingEmbedder(minilm, batch_size=2),
    )  # fmt: skip
    try:
        async with client_of(stack) as client:
            first = await client.post("/uploadDocument", files={"file": ("a.txt", TEXT.encode())})
            assert first.status_code == 200, first.text
            # many chunks, the poisoned one last: the batches before it embed fine
            replacement = f"{TEXT}\n\n" * 6 + f"{POISON} {TEXT}"
            failed = await client.post(
                "/uploadDocument", files={"file": ("a.txt", replacement.encode())}
            )
            assert failed.status_code == 500
            listed = (await client.get("/documents")).json()
            assert [(d["document_id"], d["chunks"]) for d in listed] == [
                (first.json()["document_id"], first.json()["chunks"])
            ]
            hits = (await client.post("/documentSearch", json={"content": TEXT})).json()
            assert {hit["document_id"] for hit in hits} == {first.json()["document_id"]}
    finally:
        await stack.close()
