"""The interface every generator implements (local transformers model, OpenAI-compatible API)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from typing import Literal, Protocol

__all__ = ["GREEDY", "ChatMessage", "Finish", "GenerationError", "Generator", "Sampling"]


@dataclass(frozen=True, slots=True)
class ChatMessage:
    role: Literal["system", "user", "assistant"]
    content: str


@dataclass(frozen=True, slots=True)
class Finish:
    """The last item of a stream: why generation ended."""

    reason: Literal["stop", "length"]


@dataclass(frozen=True, slots=True)
class Sampling:
    """How the next token is chosen, and where the answer stops.

    ``temperature`` 0 is greedy decoding (the most likely token; ``top_p`` and ``seed`` are
    then unused), and so is any below :data:`GREEDY_BELOW` (dividing by it would overflow,
    and the distribution is one token anyway); above, tokens are drawn from the scores
    divided by it, limited to the smallest set of most likely tokens whose probabilities
    reach ``top_p``, from a random stream seeded by ``seed`` (a fresh random seed when
    None). The answer ends before the first of the ``stop`` sequences, which is not part
    of it."""

    temperature: float = 0.0
    top_p: float = 1.0
    stop: tuple[str, ...] = ()
    seed: int | None = None

    def __post_init__(self) -> None:
        if not 0.0 <= self.temperature <= MAX_TEMPERATURE:
            raise ValueError(f"temperature must be within 0 and {MAX_TEMPERATURE}")
        if not 0.0 < self.top_p <= 1.0:
            raise ValueError("top_p must be above 0 and at most 1")
        if len(self.stop) > MAX_STOP_SEQUENCES or not all(
            0 < len(text) <= MAX_STOP_LENGTH for text in self.stop
        ):
            raise ValueError(
                f"stop takes at most {MAX_STOP_SEQUENCES} sequences of 1 to {MAX_STOP_LENGTH} "
                "characters"
            )
        if self.seed is not None and not 0 <= self.seed <= MAX_SEED:
            raise ValueError(f"seed must be within 0 and {MAX_SEED}")

    @property
    def greedy(self) -> bool:
        return self.temperature < GREEDY_BELOW


GREEDY_BELOW = 0.001
MAX_TEMPERATURE = 2.0
MAX_STOP_SEQUENCES = 4
MAX_STOP_LENGTH = 64
MAX_SEED = 2**32 - 1
"""The bounds of :class:`Sampling` (the API's, in specs/rag.openapi.yaml)."""

GREEDY = Sampling()
"""Greedy decoding, no stop sequences: the default."""


class GenerationError(Exception):
    """Generation failed (model error, endpoint unreachable or answering an error)."""


class Generator(Protocol):
    """Streams a chat completion as text deltas, then one :class:`Finish`.

    Deltas are whole characters (never a partial UTF-8 sequence). Closing the iterator early
    (``aclose()``, as when the client disconnects) stops the generation promptly and frees
    its resources. Blocking model work never runs on the event loop. ``sampling`` chooses
    greedy decoding (the default) or seeded sampling, and the stop sequences: a stream cut at
    one ends with ``Finish("stop")`` and never contains the stop sequence.
    """

    @property
    def context_window(self) -> int:
        """Tokens the model accepts, prompt and answer together."""
        ...

    def count_tokens(self, text: str) -> int:
        """Tokens ``text`` takes in this model's prompt (an estimate for remote models)."""
        ...

    def stream(
        self, messages: Sequence[ChatMessage], max_new_tokens: int, sampling: Sampling = GREEDY
    ) -> AsyncIterator[str | Finish]: ...

    async def close(self) -> None: ...
