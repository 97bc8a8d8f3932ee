"""A ``site`` per store backend (LanceDB on a temporary directory always; Weaviate when
WEAVIATE_URL is set) that opens stores over the same data, so that tests can reopen it."""

from __future__ import annotations

import os
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from handlers.rag.stores.base import VectorStore
from handlers.rag.stores.lancedb_store import LanceDbStore

DIMENSION = 16


@dataclass
class StoreSite:
    """Opens stores of one backend over the same data; closes them all at the end."""

    backend: str
    build: Callable[[], VectorStore]
    opened: list[VectorStore] = field(default_factory=list)

    async def open(self) -> VectorStore:
        store = self.build()
        await store.open()
        self.opened.append(store)
        return store

    async def close(self) -> None:
        for store in self.opened:
            await store.close()


def _weaviate_site(url: str) -> tuple[StoreSite, Callable[[], Awaitable[None]]]:
    from handlers.rag.stores.weaviate_store import WeaviateStore

    collection = f"Test{uuid.uuid4().hex[:12]}"
    grpc_port = int(os.environ.get("WEAVIATE_GRPC_PORT", "50051"))
    api_key = os.environ.get("WEAVIATE_API_KEY") or None

    def build() -> VectorStore:
        return WeaviateStore(
            url, DIMENSION, collection=collection, grpc_port=grpc_port, api_key=api_key
        )

    async def drop() -> None:
        store = WeaviateStore(
            url, DIMENSION, collection=collection, grpc_port=grpc_port, api_key=api_key
        )
        await store.drop()

    return StoreSite("weaviate", build), drop


@pytest.fixture(params=["lancedb", "weaviate"])
async def site(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[StoreSite]:
    if request.param == "lancedb":
        lancedb_site = StoreSite("lancedb", lambda: LanceDbStore(tmp_path / "lancedb", DIMENSION))
        yield lancedb_site
        await lancedb_site.close()
        return
    url = os.environ.get("WEAVIATE_URL")
    if not url:
        pytest.skip("WEAVIATE_URL is not set")
    weaviate_site, drop = _weaviate_site(url)
    try:
        yield weaviate_site
    finally:
        await weaviate_site.close()
        await drop()


@pytest.fixture
async def store(site: StoreSite) -> VectorStore:
    return await site.open()
