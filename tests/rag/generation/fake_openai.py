"""A real OpenAI-compatible chat completions server for tests, streaming like vLLM: the
request's ``model`` picks a scenario; every request, and any client disconnect, is recorded."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from handlers.rag.server import listening_socket

__all__ = ["ERROR_BODY", "SCRIPT", "FakeOpenAI", "serve_fake_openai"]

SCRIPT = ["Hel", "lo", ", wörld ", "中文🚀", "!"]
ERROR_BODY = json.dumps({"object": "error", "message": "bad request: " + "x" * 400, "code": 400})


@dataclass
class RecordedRequest:
    path: str
    headers: dict[str, str]
    body: Any


@dataclass
class FakeOpenAI:
    """What the server saw."""

    requests: list[RecordedRequest] = field(default_factory=list)
    disconnected: asyncio.Event = field(default_factory=asyncio.Event)
    chunks_sent: int = 0

    def app(self) -> Starlette:
        return Starlette(routes=[Route("/{path:path}", self._handle, methods=["POST"])])

    async def _handle(self, request: Request) -> Response:
        body = await request.json()
        self.requests.append(RecordedRequest(request.url.path, dict(request.headers), body))
        if not request.url.path.endswith("/v1/chat/completions"):
            return JSONResponse({"detail": "Not Found"}, status_code=404)
        scenario = body["model"]
        if scenario == "error":
            return Response(ERROR_BODY, status_code=400, media_type="application/json")
        return StreamingResponse(self._events(scenario), media_type="text/event-stream")

    async def _events(self, scenario: str) -> AsyncIterator[str]:
        try:
            yield _event({"role": "assistant", "content": ""}, None)
            if scenario == "stall":
                await asyncio.Event().wait()  # never answers further
            if scenario == "endless":
                while True:
                    self.chunks_sent += 1
                    yield _event({"content": "word "}, None)
                    await asyncio.sleep(0.01)  # paces the stream like a model would
            for text in SCRIPT:
                self.chunks_sent += 1
                yield _event({"content": text}, None)
            if scenario == "truncated":
                return
            if scenario == "midstream-error":
                yield f"data: {json.dumps({'error': {'message': 'the engine died'}})}\n\n"
                return
            yield _event({}, "length" if scenario == "length" else "stop")
            yield 'data: {"id": "chatcmpl-1", "choices": [], "usage": {"total_tokens": 9}}\n\n'
            if scenario != "no-done":
                yield "data: [DONE]\n\n"
        finally:
            if scenario in ("endless", "stall"):
                self.disconnected.set()


def _event(delta: dict[str, str], finish_reason: str | None) -> str:
    chunk = {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "model": "fake",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}],
    }
    return f"data: {json.dumps(chunk, ensure_ascii=False)}\n\n"


@contextlib.asynccontextmanager
async def serve_fake_openai() -> AsyncIterator[tuple[str, FakeOpenAI]]:
    """The fake served by uvicorn on an ephemeral loopback port, in this event loop; yields
    its base URL (without ``/v1``) and its record."""
    fake = FakeOpenAI()
    sock = listening_socket("127.0.0.1", 0)
    config = uvicorn.Config(fake.app(), lifespan="off", access_log=False, log_config=None)
    server = uvicorn.Server(config)
    config.load()
    server.lifespan = config.lifespan_class(config)
    await server.startup(sockets=[sock])
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}", fake
    finally:
        await asyncio.wait_for(server.shutdown(sockets=[sock]), 10)
        sock.close()
