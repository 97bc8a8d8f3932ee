"""/generate over a real uvicorn server on loopback: answers arrive as they are generated, in
whole UTF-8 characters, and a client that goes away stops the generation."""

from __future__ import annotations

import asyncio
import codecs
import json
import time
from collections.abc import AsyncIterator, Sequence
from pathlib import Path

import httpx

from handlers.rag.generation.base import GREEDY, ChatMessage, Finish, Generator, Sampling
from handlers.rag.generation.local import LocalGenerator
from handlers.rag.ingest.embedder import LoadedModel
from tests.rag.stack import build_stack, serve_on_loopback

DEADLINE_S = 10.0


class WatchedGenerator:
    """The real generator, noting when each of its streams is closed."""

    def __init__(self, inner: Generator) -> None:
        self.inner = inner
        self.started = 0
        self.closed: list[float] = []

    @property
    def context_window(self) -> int:
        return self.inner.context_window

    def count_tokens(self, text: str) -> int:
        return self.inner.count_tokens(text)

    async def stream(
        self, messages: Sequence[ChatMessage], max_new_tokens: int, sampling: Sampling = GREEDY
    ) -> AsyncIterator[str | Finish]:
        self.started += 1
        stream = self.inner.stream(messages, max_new_tokens, sampling)
        try:
            async for item in stream:
                yield item
        finally:
            await aclose(stream)
            self.closed.append(time.monotonic())

    async def close(self) -> None:
        await self.inner.close()


PROMPT = {"question": "Tell me a long story", "context": "", "use_knowledge_base": False}


async def test_a_disconnected_client_stops_the_generation(
    tmp_path: Path, minilm: LoadedModel, tiny_model: Path
) -> None:
    watched: list[WatchedGenerator] = []

    def load_generator() -> Generator:
        inner = LocalGenerator.load(str(tiny_model), cache_dir=tmp_path / "models")
        watched.append(WatchedGenerator(inner))
        return watched[0]

    stack = build_stack(
        tmp_path / "data", minilm=minilm, generator_model=tiny_model,
        generator_loader=load_generator,
    )  # fmt: skip
    async with serve_on_loopback(stack.app) as url, httpx.AsyncClient(base_url=url) as client:
        long_answer = {**PROMPT, "num_tokens": 1024}
        async with client.stream("POST", "/generate", json=long_answer) as response:
            assert response.status_code == 200
            first = await anext(response.aiter_raw())
            assert first
        disconnected = time.monotonic()
        generator = watched[0]
        while not generator.closed and time.monotonic() - disconnected < DEADLINE_S:
            await _tick()
        assert generator.closed, "the generation went on after the client disconnected"
        assert generator.closed[0] - disconnected < 2.0
        # the model's only slot is free again: the next answer starts at once
        started = time.monotonic()
        async with client.stream("POST", "/generate", json={**PROMPT, "num_tokens": 2}) as second:
            await second.aread()
        assert second.status_code == 200
        assert time.monotonic() - started < 3.0
    await stack.close()


async def test_streams_arrive_in_whole_characters(
    tmp_path: Path, minilm: LoadedModel, tiny_model: Path
) -> None:
    stack = build_stack(tmp_path / "data", minilm=minilm, generator_model=tiny_model)
    prompt = {**PROMPT, "num_tokens": 40}
    async with serve_on_loopback(stack.app) as url, httpx.AsyncClient(base_url=url) as client:
        async with client.stream("POST", "/generate", json=prompt) as response:
            assert response.headers["content-type"] == "text/plain; charset=utf-8"
            pieces = [chunk async for chunk in response.aiter_raw()]
        assert len(pieces) > 1  # streamed, not sent at the end
        for piece in pieces:
            piece.decode("utf-8")  # no chunk ends inside a character
        headers = {"accept": "text/event-stream"}
        async with client.stream("POST", "/generate", json=prompt, headers=headers) as response:
            assert response.headers["content-type"].startswith("text/event-stream")
            decoder = codecs.getincrementaldecoder("utf-8")()
            text = "".join([decoder.decode(chunk) async for chunk in response.aiter_raw()])
        frames = text.split("\n\n")
        assert frames[-1] == ""
        assert frames[-2].startswith("event: done\ndata: ")
        deltas = [json.loads(frame.removeprefix("data: "))["delta"] for frame in frames[:-2]]
        assert "".join(deltas)
        assert all(frame.startswith("data: {") for frame in frames[:-2])
    await stack.close()


async def aclose(stream: AsyncIterator[str | Finish]) -> None:
    close = getattr(stream, "aclose", None)
    if close is not None:
        await close()


async def _tick() -> None:
    await asyncio.sleep(0.01)
