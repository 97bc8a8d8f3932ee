"""A LocalGenerator whose decoding a test can steer: force given tokens, slow each token down,
hold generations at a gate, fail on purpose; and which counts what its workers do."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field

import torch
from transformers import LogitsProcessor, LogitsProcessorList
from transformers.generation.streamers import BaseStreamer

from handlers.rag.generation.base import GREEDY, Sampling
from handlers.rag.generation.local import LocalGenerator

__all__ = ["SteeredGenerator", "Steering"]

GATE_TIMEOUT_S = 30.0  # a test that forgets to open its gate fails instead of hanging


@dataclass
class Steering(LogitsProcessor):
    """Applied before each new token is chosen. ``step`` counts the tokens generated so far,
    taken from the prompt length ``prompt_tokens`` the test gives."""

    prompt_tokens: int
    forced: list[int] = field(default_factory=list)
    then_force: int | None = None  # forced after ``forced`` ran out (e.g. end-of-sequence)
    seconds_per_token: float = 0.0
    gate_at_step: int | None = None
    fail_at_step: int | None = None
    gate: threading.Event = field(default_factory=threading.Event)
    calls: int = 0
    waiting_at_gate: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def __call__(self, input_ids: torch.Tensor, scores: torch.Tensor) -> torch.Tensor:
        step = input_ids.shape[1] - self.prompt_tokens
        with self._lock:
            self.calls += 1
        if step == self.fail_at_step:
            raise RuntimeError("steered failure")
        if step == self.gate_at_step:
            self._wait_at_gate()
        if self.seconds_per_token:
            time.sleep(self.seconds_per_token)  # stands for a slower model
        token = self.forced[step] if step < len(self.forced) else self.then_force
        if token is None:
            return scores
        steered = torch.full_like(scores, float("-inf"))
        steered[:, token] = 0.0
        return steered

    def _wait_at_gate(self) -> None:
        with self._lock:
            self.waiting_at_gate += 1
        try:
            if not self.gate.wait(GATE_TIMEOUT_S):
                raise RuntimeError("the test never opened the gate")
        finally:
            with self._lock:
                self.waiting_at_gate -= 1


class SteeredGenerator(LocalGenerator):
    """Decodes with :attr:`steering` when set; counts generations running in its workers."""

    steering: Steering | None = None

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.active = 0
        self.peak_active = 0
        self.finished = 0
        self._count_lock = threading.Lock()

    def _logits_processor(self) -> LogitsProcessorList | None:
        return None if self.steering is None else LogitsProcessorList([self.steering])

    def _generate(
        self,
        prompt: list[int],
        max_new_tokens: int,
        streamer: BaseStreamer,
        stop: threading.Event,
        sampling: Sampling = GREEDY,
    ) -> None:
        with self._count_lock:
            self.active += 1
            self.peak_active = max(self.peak_active, self.active)
        try:
            super()._generate(prompt, max_new_tokens, streamer, stop, sampling)
        finally:
            with self._count_lock:
                self.active -= 1
                self.finished += 1
