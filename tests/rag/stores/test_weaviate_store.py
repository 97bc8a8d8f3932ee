"""What the Weaviate store checks without a server (the contract suite covers the rest when
WEAVIATE_URL is set)."""

from __future__ import annotations

import socket

import pytest

from handlers.rag.stores.base import StoreError
from handlers.rag.stores.weaviate_store import WeaviateStore


def unused_port() -> int:
    """A loopback port nobody listens on (the kernel will not hand it out again at once)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


def test_bad_settings_are_refused() -> None:
    with pytest.raises(ValueError, match="http"):
        WeaviateStore("grpc://localhost:8080", 8)
    with pytest.raises(ValueError, match="collection"):
        WeaviateStore("http://localhost:8080", 8, collection="lower-case")
    with pytest.raises(ValueError, match="dimension"):
        WeaviateStore("http://localhost:8080", 0)
    with pytest.raises(ValueError, match="port"):
        WeaviateStore("http://localhost:8080", 8, grpc_port=8080)


async def test_an_unreachable_server_is_a_store_error() -> None:
    http_port, grpc_port = unused_port(), unused_port()
    store = WeaviateStore(f"http://127.0.0.1:{http_port}", 8, grpc_port=grpc_port)

    with pytest.raises(StoreError, match="cannot open Weaviate"):
        await store.open()
    with pytest.raises(StoreError, match="not open"):
        await store.count_chunks()
