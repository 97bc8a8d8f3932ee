"""Helpers shared by the webrest test modules: in-process clients, raw ASGI calls and a real
uvicorn server on the loopback interface."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import Any

import httpx
import uvicorn
from starlette.types import ASGIApp, Message

from webrest import Application, RestApi

__all__ = ["Served", "asgi_call", "client", "mount", "serve"]


def mount(*resources: object, **options: Any) -> Application:
    """An application serving ``resources`` from one :class:`RestApi` at the root."""
    return Application({"/": RestApi(*resources, **options)})


@asynccontextmanager
async def client(app: ASGIApp) -> AsyncIterator[httpx.AsyncClient]:
    """An ``httpx.AsyncClient`` calling ``app`` in-process."""
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://test") as http:
        yield http


async def asgi_call(
    app: ASGIApp,
    method: str,
    path: str,
    *,
    headers: list[tuple[bytes, bytes]] | None = None,
    body: bytes = b"",
    query: bytes = b"",
) -> list[Message]:
    """Call ``app`` with one request and return every message it sent, in order."""
    scope: dict[str, Any] = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": method,
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "root_path": "",
        "query_string": query,
        "headers": headers or [],
        "server": ("test", 80),
        "client": ("127.0.0.1", 1234),
    }
    pending = [{"type": "http.request", "body": body, "more_body": False}]
    sent: list[Message] = []

    async def receive() -> Message:
        if pending:
            return pending.pop(0)
        return {"type": "http.disconnect"}

    async def send(message: Message) -> None:
        sent.append(message)

    await app(scope, receive, send)
    return sent


class Served:
    """A uvicorn server running an app in a thread; ``url`` is its base address."""

    def __init__(self, server: uvicorn.Server, thread: threading.Thread, port: int) -> None:
        self.server = server
        self.thread = thread
        self.url = f"http://127.0.0.1:{port}"


@contextmanager
def serve(app: ASGIApp, *, lifespan: str = "off", timeout: float = 10.0) -> Iterator[Served]:
    """Run ``app`` under uvicorn on 127.0.0.1 (a free port) until the block ends."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    config = uvicorn.Config(
        app,
        host="127.0.0.1",
        port=port,
        lifespan=lifespan,  # type: ignore[arg-type]
        ws="none",
        log_level="warning",
        access_log=False,
        timeout_graceful_shutdown=5,
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + timeout
        while not server.started:
            if not thread.is_alive():
                raise RuntimeError("uvicorn exited before it started")
            if time.monotonic() > deadline:
                raise TimeoutError("uvicorn did not start in time")
            time.sleep(0.01)
        yield Served(server, thread, port)
    finally:
        server.should_exit = True
        thread.join(timeout)
        sock.close()
        assert not thread.is_alive(), "uvicorn did not stop"
