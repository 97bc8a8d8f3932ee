"""The interface every generator implements (local transformers model, OpenAI-compatible API)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from typing import Literal, Protocol

__all__ = ["ChatMessage", "Finish", "GenerationError", "Generator"]


@dataclass(frozen=True, slots=True)
class ChatMessage:
    role: Literal["system", "user", "assistant"]
    content: str


@dataclass(frozen=True, slots=True)
class Finish:
    """The last item of a stream: why generation ended."""

    reason: Literal["stop", "length"]


class GenerationError(Exception):
    """Generation failed (model error, endpoint unreachable or answering an error)."""


class Generator(Protocol):
    """Streams a chat completion as text deltas, then one :class:`Finish`.

    Deltas are whole characters (never a partial UTF-8 sequence). Closing the iterator early
    (``aclose()``, as when the client disconnects) stops the generation promptly and frees
    its resources. Blocking model work never runs on the event loop.
    """

    @property
    def context_window(self) -> int:
        """Tokens the model accepts, prompt and answer together."""
        ...

    def count_tokens(self, text: str) -> int:
        """Tokens ``text`` takes in this model's prompt (an estimate for remote models)."""
        ...

    def stream(
        self, messages: Sequence[ChatMessage], max_new_tokens: int
    ) -> AsyncIterator[str | Finish]: ...

    async def close(self) -> None: ...
