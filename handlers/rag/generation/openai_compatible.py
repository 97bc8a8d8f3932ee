"""Answers from an OpenAI-compatible chat completions endpoint (vLLM, llama.cpp server, Ollama,
NVIDIA NIM), streamed with Server-Sent Events."""

from __future__ import annotations

import json
import logging
import math
from collections.abc import AsyncIterator, Sequence
from typing import Any, Literal

import httpx

from handlers.rag.generation.base import GREEDY, ChatMessage, Finish, GenerationError, Sampling

__all__ = ["OpenAICompatibleGenerator", "chat_completions_url"]

log = logging.getLogger("rag.generation")

_ERROR_BODY_CHARS = 200


def chat_completions_url(base_url: str) -> str:
    """``{base_url}/chat/completions`` when ``base_url`` ends with ``/v1``, else
    ``{base_url}/v1/chat/completions``."""
    base = base_url.rstrip("/")
    return f"{base}/chat/completions" if base.endswith("/v1") else f"{base}/v1/chat/completions"


class OpenAICompatibleGenerator:
    """Streams chat completions from ``POST .../v1/chat/completions`` with ``stream: true``.

    Closing a stream early closes its HTTP response, so the server sees the disconnect and can
    stop generating. Sampling is the endpoint's: ``temperature`` and ``top_p`` are always sent
    (0, the default, asks for greedy decoding, as the local model does), ``stop`` and ``seed``
    when given. ``context_window`` is the served model's, as configured (the endpoint does
    not say)."""

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api_key: str | None = None,
        context_window: int = 8192,
        timeout: float = 60.0,
    ) -> None:
        if not base_url.startswith(("http://", "https://")):
            raise ValueError(f"the endpoint URL must start with http:// or https://: {base_url!r}")
        if not model:
            raise ValueError("the endpoint's model name must not be empty")
        if context_window < 1:
            raise ValueError(f"context_window must be at least 1, got {context_window}")
        if timeout <= 0:
            raise ValueError(f"timeout must be positive, got {timeout}")
        self.url = chat_completions_url(base_url)
        self.model = model
        self._context_window = context_window
        self._timeout = timeout
        headers = {"Accept": "text/event-stream"}
        if api_key:
            headers["Authorization"] = f"Bearer {api_key}"
        self._client = httpx.AsyncClient(headers=headers, timeout=httpx.Timeout(timeout))

    @property
    def context_window(self) -> int:
        return self._context_window

    def count_tokens(self, text: str) -> int:
        """An estimate (the endpoint's tokenizer is not at hand): about four ASCII characters
        per token, and one token for every other character (CJK text, emoji), rounded up."""
        ascii_chars = sum(1 for char in text if char.isascii())
        return math.ceil(ascii_chars / 4) + (len(text) - ascii_chars)

    async def stream(
        self, messages: Sequence[ChatMessage], max_new_tokens: int, sampling: Sampling = GREEDY
    ) -> AsyncIterator[str | Finish]:
        if max_new_tokens < 1:
            raise ValueError(f"max_new_tokens must be at least 1, got {max_new_tokens}")
        body: dict[str, object] = {
            "model": self.model,
            "messages": [{"role": m.role, "content": m.content} for m in messages],
            "max_tokens": max_new_tokens,
            "stream": True,
            "temperature": sampling.temperature,
            "top_p": sampling.top_p,
        }
        if sampling.stop:
            body["stop"] = list(sampling.stop)
        if sampling.seed is not None:
            body["seed"] = sampling.seed
        try:
            async with self._client.stream("POST", self.url, json=body) as response:
                if not response.is_success:
                    raise GenerationError(await self._error(response))
                reason: Literal["stop", "length"] | None = None
                done = False
                async for line in response.aiter_lines():
                    data = _sse_data(line)
                    if data is None:
                        continue
                    if data == "[DONE]":
                        done = True
                        break
                    content, finish_reason = self._parse_chunk(data)
                    if content:
                        yield content
                    if finish_reason is not None:
                        reason = "length" if finish_reason == "length" else "stop"
                if not done and reason is None:
                    raise GenerationError(f"{self.url} ended the stream before it was complete")
                yield Finish(reason or "stop")
        except httpx.TimeoutException as exc:
            raise GenerationError(
                f"{self.url} did not answer within {self._timeout:g} s ({type(exc).__name__})"
            ) from exc
        except httpx.HTTPError as exc:
            raise GenerationError(
                f"cannot reach {self.url}: {str(exc) or type(exc).__name__}"
            ) from exc

    async def close(self) -> None:
        await self._client.aclose()

    async def _error(self, response: httpx.Response) -> str:
        body = (await response.aread()).decode("utf-8", errors="replace")
        return f"{self.url} answered {response.status_code}: {body[:_ERROR_BODY_CHARS]}"

    def _parse_chunk(self, data: str) -> tuple[str, str | None]:
        """The text delta and the finish reason (None while not finished) of one chunk."""
        try:
            chunk: Any = json.loads(data)
        except json.JSONDecodeError as exc:
            raise GenerationError(f"{self.url} sent a malformed event: {data[:80]!r}") from exc
        if not isinstance(chunk, dict):
            raise GenerationError(f"{self.url} sent a malformed event: {data[:80]!r}")
        if "error" in chunk:  # vLLM reports errors after the stream started this way
            raise GenerationError(f"{self.url} failed: {str(chunk['error'])[:_ERROR_BODY_CHARS]}")
        choices = chunk.get("choices")
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
            return "", None  # e.g. a final usage-only chunk
        choice = choices[0]
        delta = choice.get("delta")
        content = delta.get("content") if isinstance(delta, dict) else None
        finish_reason = choice.get("finish_reason")
        return (
            content if isinstance(content, str) else "",
            finish_reason if isinstance(finish_reason, str) and finish_reason else None,
        )


def _sse_data(line: str) -> str | None:
    """The payload of a ``data:`` line; None for other lines (comments, event names, blanks)."""
    if not line.startswith("data:"):
        return None
    return line[5:].strip()
