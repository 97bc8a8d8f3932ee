"""The bridge between ``model.generate()`` and a stream of text: each new token's text in
whole characters, and a stop signal checked after every token."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import torch
from transformers import StoppingCriteria
from transformers.generation.streamers import BaseStreamer

__all__ = ["StopWhenSet", "TextDeltaStreamer"]

_REPLACEMENT = "\ufffd"


class TextDeltaStreamer(BaseStreamer):
    """Receives the ids ``generate()`` produces and emits the new text of each, in whole
    characters: text whose decoding ends in U+FFFD (a character split across tokens) is held
    back until a later token completes it, or until the end. The concatenated deltas equal the
    decoding of all generated ids. The first ``put()`` (the prompt) is skipped."""

    def __init__(
        self,
        decode: Callable[[list[int]], str],
        emit: Callable[[str], None],
        *,
        on_first_token: Callable[[], None] | None = None,
    ) -> None:
        self._decode = decode
        self._emit = emit
        self._on_first_token = on_first_token
        self._prompt_seen = False
        self._emitted = ""
        self.generated: list[int] = []

    def put(self, value: torch.Tensor) -> None:
        if not self._prompt_seen:
            self._prompt_seen = True
            return
        if not self.generated and self._on_first_token is not None:
            self._on_first_token()
        self.generated.extend(int(token) for token in value.reshape(-1).tolist())
        self._flush(final=False)

    def end(self) -> None:
        self._flush(final=True)

    def _flush(self, *, final: bool) -> None:
        text = self._decode(self.generated)
        if not final and text.endswith(_REPLACEMENT):
            return
        if text.startswith(self._emitted) and len(text) > len(self._emitted):
            delta = text[len(self._emitted) :]
            self._emitted = text
            self._emit(delta)


class StopWhenSet(StoppingCriteria):
    """Ends generation once ``event`` is set (checked after every token)."""

    def __init__(self, event: threading.Event) -> None:
        self._event = event

    def __call__(self, input_ids: torch.Tensor, scores: Any, **kwargs: Any) -> torch.Tensor:
        return torch.full((input_ids.shape[0],), self._event.is_set(), dtype=torch.bool)
