"""OpenAICompatibleGenerator against a real local server streaming like vLLM."""

from __future__ import annotations

import asyncio
import socket
import time
from collections.abc import AsyncIterator

import pytest

from handlers.rag.generation.base import ChatMessage, Finish, GenerationError, Sampling
from handlers.rag.generation.openai_compatible import (
    OpenAICompatibleGenerator,
    chat_completions_url,
)
from tests.rag.generation.fake_openai import ERROR_BODY, SCRIPT, FakeOpenAI, serve_fake_openai

MESSAGES = [ChatMessage("system", "Be brief."), ChatMessage("user", "Hello?")]


@pytest.fixture
async def fake() -> AsyncIterator[tuple[str, FakeOpenAI]]:
    async with serve_fake_openai() as served:
        yield served


async def answer(generator: OpenAICompatibleGenerator, max_tokens: int = 7) -> list[str | Finish]:
    try:
        return [item async for item in generator.stream(MESSAGES, max_tokens)]
    finally:
        await generator.close()


async def test_streams_the_deltas_then_the_finish_reason(fake: tuple[str, FakeOpenAI]) -> None:
    url, record = fake
    items = await answer(OpenAICompatibleGenerator(f"{url}/v1", "script"))
    assert items == [*SCRIPT, Finish("stop")]
    [request] = record.requests
    assert request.path == "/v1/chat/completions"
    assert request.body == {
        "model": "script",
        "messages": [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "Hello?"},
        ],
        "max_tokens": 7,
        "stream": True,
        "temperature": 0.0,  # greedy, as the local model by default
        "top_p": 1.0,
    }
    assert "authorization" not in request.headers


async def test_sampling_and_stop_sequences_are_passed_on(fake: tuple[str, FakeOpenAI]) -> None:
    url, record = fake
    generator = OpenAICompatibleGenerator(url, "script")
    sampling = Sampling(temperature=0.7, top_p=0.9, stop=("\n\n", "END"), seed=42)
    try:
        items = [item async for item in generator.stream(MESSAGES, 5, sampling)]
    finally:
        await generator.close()
    assert items == [*SCRIPT, Finish("stop")]
    [request] = record.requests
    assert {key: request.body[key] for key in ("temperature", "top_p", "stop", "seed")} == {
        "temperature": 0.7,
        "top_p": 0.9,
        "stop": ["\n\n", "END"],
        "seed": 42,
    }


async def test_finish_reason_length_is_reported(fake: tuple[str, FakeOpenAI]) -> None:
    url, _ = fake
    items = await answer(OpenAICompatibleGenerator(url, "length"))
    assert items == [*SCRIPT, Finish("length")]


async def test_a_stream_without_done_ends_at_its_finish_reason(
    fake: tuple[str, FakeOpenAI],
) -> None:
    url, _ = fake
    assert (await answer(OpenAICompatibleGenerator(url, "no-done")))[-1] == Finish("stop")


async def test_the_api_key_is_sent_as_a_bearer_token(fake: tuple[str, FakeOpenAI]) -> None:
    url, record = fake
    await answer(OpenAICompatibleGenerator(url, "script", api_key="sk-test"))
    assert record.requests[0].headers["authorization"] == "Bearer sk-test"


@pytest.mark.parametrize(
    ("suffix", "path"),
    [
        ("", "/v1/chat/completions"),
        ("/", "/v1/chat/completions"),
        ("/v1", "/v1/chat/completions"),
        ("/v1/", "/v1/chat/completions"),
        ("/openai", "/openai/v1/chat/completions"),
        ("/openai/v1", "/openai/v1/chat/completions"),
    ],
)
async def test_the_v1_suffix_is_added_only_when_missing(
    fake: tuple[str, FakeOpenAI], suffix: str, path: str
) -> None:
    url, record = fake
    assert (await answer(OpenAICompatibleGenerator(url + suffix, "script")))[-1] == Finish("stop")
    assert [request.path for request in record.requests] == [path]
    assert chat_completions_url(url + suffix) == url + path


async def test_an_error_status_is_a_generation_error_with_the_body(
    fake: tuple[str, FakeOpenAI],
) -> None:
    url, _ = fake
    with pytest.raises(GenerationError) as raised:
        await answer(OpenAICompatibleGenerator(url, "error"))
    message = str(raised.value)
    assert f"{url}/v1/chat/completions answered 400: " in message
    assert message.endswith(ERROR_BODY[:200])


async def test_an_error_in_the_stream_is_a_generation_error(fake: tuple[str, FakeOpenAI]) -> None:
    url, _ = fake
    received: list[str | Finish] = []
    with pytest.raises(GenerationError, match="the engine died"):
        async for item in OpenAICompatibleGenerator(url, "midstream-error").stream(MESSAGES, 5):
            received.append(item)
    assert received == SCRIPT


async def test_a_stream_cut_short_is_a_generation_error(fake: tuple[str, FakeOpenAI]) -> None:
    url, _ = fake
    with pytest.raises(GenerationError, match="before it was complete"):
        await answer(OpenAICompatibleGenerator(url, "truncated"))


async def test_an_unreachable_endpoint_is_a_generation_error_naming_the_url() -> None:
    with socket.socket() as probe:  # a port that nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    url = f"http://127.0.0.1:{port}/v1"
    with pytest.raises(GenerationError, match=f"cannot reach {url}/chat/completions"):
        await answer(OpenAICompatibleGenerator(url, "script"))


async def test_an_endpoint_that_stops_answering_times_out(fake: tuple[str, FakeOpenAI]) -> None:
    url, record = fake
    started = time.monotonic()
    with pytest.raises(GenerationError, match=r"did not answer within 0\.3 s"):
        await answer(OpenAICompatibleGenerator(url, "stall", timeout=0.3))
    assert time.monotonic() - started < 5
    await asyncio.wait_for(record.disconnected.wait(), 10)


async def test_closing_the_stream_disconnects_from_the_endpoint(
    fake: tuple[str, FakeOpenAI],
) -> None:
    url, record = fake
    generator = OpenAICompatibleGenerator(url, "endless")
    stream = generator.stream(MESSAGES, 1000)
    assert await anext(stream) == "word "
    await stream.aclose()  # type: ignore[attr-defined]
    await asyncio.wait_for(record.disconnected.wait(), 10)  # the server saw the client go
    sent = record.chunks_sent
    assert sent < 100
    await generator.close()


async def test_counts_tokens_by_an_estimate() -> None:
    generator = OpenAICompatibleGenerator("http://127.0.0.1:9/v1", "m", context_window=4096)
    await generator.close()
    assert generator.context_window == 4096
    assert generator.count_tokens("") == 0
    assert generator.count_tokens("abcd") == 1
    assert generator.count_tokens("abcde") == 2
    assert generator.count_tokens("中文🚀") == 3  # one token per non-ASCII character


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"base_url": "localhost:8000"}, "http:// or https://"),
        ({"model": ""}, "model name"),
        ({"context_window": 0}, "context_window"),
        ({"timeout": 0}, "timeout"),
    ],
)
def test_bad_settings_are_refused(arguments: dict[str, object], message: str) -> None:
    settings: dict[str, object] = {"base_url": "http://127.0.0.1:9", "model": "m", **arguments}
    with pytest.raises(ValueError, match=message):
        OpenAICompatibleGenerator(**settings)  # type: ignore[arg-type]
