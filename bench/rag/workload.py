"""What the rag benchmark sends: English-like documents, search queries and questions,
generated from a fixed seed so that every run (and both sides of a comparison) sees the same."""

from __future__ import annotations

import random

__all__ = ["QUESTION", "documents", "queries"]

_WORDS = (  # noqa: SIM905 - a paragraph of words reads better than a list
    "account annual answer apply approval audit balance billing budget cancel charge "
    "claim client contract cost coverage credit customer data deadline delivery deposit "
    "discount document employee energy estimate expense fee file finance form grant "
    "hardware holiday insurance invoice item leave license limit loan maintenance manager "
    "meeting member monthly network notice office order owner payment period permit plan "
    "policy premium price process product project purchase quarter rate receipt record "
    "refund renewal report request revenue review risk salary schedule security server "
    "service shipping software staff storage subscription supplier support system tax team "
    "term ticket training transfer travel update upgrade user vendor warranty year"
).split()
_GLUE = ("the", "a", "of", "to", "and", "in", "for", "is", "are", "be", "with", "on", "by")

QUESTION = "What is the refund policy for annual plans?"


def _sentence(rng: random.Random) -> str:
    words = [rng.choice(_WORDS if rng.random() < 0.6 else _GLUE) for _ in range(rng.randint(8, 20))]
    return " ".join(words).capitalize() + "."


def _paragraph(rng: random.Random) -> str:
    return " ".join(_sentence(rng) for _ in range(rng.randint(3, 7)))


def documents(count: int, words_each: int, seed: int = 7) -> list[tuple[str, bytes]]:
    """``count`` plain-text documents (name, UTF-8 bytes) of about ``words_each`` words."""
    rng = random.Random(seed)
    out = []
    for index in range(count):
        paragraphs: list[str] = []
        words = 0
        while words < words_each:
            paragraph = _paragraph(rng)
            paragraphs.append(paragraph)
            words += paragraph.count(" ") + 1
        out.append((f"bench-{index:04d}.txt", "\n\n".join(paragraphs).encode()))
    return out


def queries(count: int, seed: int = 11) -> list[str]:
    """Short search texts (3 to 6 words)."""
    rng = random.Random(seed)
    return [" ".join(rng.choice(_WORDS) for _ in range(rng.randint(3, 6))) for _ in range(count)]
