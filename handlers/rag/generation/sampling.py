"""Seeded sampling of the next token, private to one generation.

transformers' own sampling (``do_sample=True``) draws from torch's process-wide random stream,
which every concurrent generation shares: a seed set for one request would be disturbed by the
others, and setting it would disturb them. Here each generation has its own
``torch.Generator``; the sampler is a logits processor that draws the token and leaves it the
only possible one, so that ``generate()``'s greedy step picks exactly that token.
"""

from __future__ import annotations

import secrets

import torch
from transformers import LogitsProcessor

from handlers.rag.generation.base import Sampling

__all__ = ["SeededSampler"]


class SeededSampler(LogitsProcessor):
    """Draws each next token from ``softmax(scores / temperature)`` limited to the nucleus of
    probability ``top_p``, with a random stream of its own seeded by ``sampling.seed`` (a fresh
    random seed when None); returns scores where only the drawn token is possible."""

    def __init__(self, sampling: Sampling) -> None:
        if sampling.greedy:
            raise ValueError("greedy decoding draws nothing: use no sampler")
        self.temperature = sampling.temperature
        self.top_p = sampling.top_p
        self.seed = sampling.seed if sampling.seed is not None else secrets.randbits(64)
        self._random: torch.Generator | None = None

    def __call__(self, input_ids: torch.LongTensor, scores: torch.FloatTensor) -> torch.FloatTensor:
        probabilities = torch.softmax(scores.float() / self.temperature, dim=-1)
        if self.top_p < 1.0:
            probabilities = _nucleus(probabilities, self.top_p)
        chosen = torch.multinomial(probabilities, 1, generator=self._stream(scores.device))
        only = torch.full_like(scores, float("-inf"))
        return only.scatter(-1, chosen, 0.0)  # type: ignore[return-value]

    def _stream(self, device: torch.device) -> torch.Generator:
        if self._random is None:
            self._random = torch.Generator(device=device)
            self._random.manual_seed(self.seed)
        return self._random


def _nucleus(probabilities: torch.Tensor, top_p: float) -> torch.Tensor:
    """The probabilities of the smallest set of most likely tokens whose total reaches
    ``top_p`` (the most likely token always stays); the others zero."""
    ordered, order = torch.sort(probabilities, descending=True, dim=-1)
    before = ordered.cumsum(dim=-1) - ordered  # the mass of the more likely tokens
    ordered = ordered.masked_fill(before >= top_p, 0.0)
    return torch.zeros_like(probabilities).scatter(-1, order, ordered)
