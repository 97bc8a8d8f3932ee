"""Token-aware chunking: pages are cut into overlapping pieces that fit the embedder's window.

Chunks are measured with the embedder's own (fast) tokenizer and cut at the character offsets
it reports, so each chunk's text is an exact substring of its page.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from enum import IntEnum

from transformers import PreTrainedTokenizerBase

from handlers.rag.ingest.base import PageText

__all__ = ["ChunkText", "chunk_pages", "max_chunk_tokens"]

_MIN_CHUNK_TOKENS = 16
# A chunk's end is looked for in this last fraction of its window.
_BOUNDARY_SEARCH_FRACTION = 0.5
# Sentence punctuation, then any closing quotes (straight or U+201D, U+2019) or brackets.
_SENTENCE_END = re.compile(r"""[.!?\u2026][\"'\u201d\u2019)\]]*\Z""")
_PARAGRAPH_BREAK = re.compile(r"\n[^\S\n]*\n")


@dataclass(frozen=True, slots=True)
class ChunkText:
    """One chunk: its page (as in PageText), 0-based position in the document, exact text."""

    page: int | None
    position: int
    text: str


class _Boundary(IntEnum):
    """How good a place between two tokens is to end a chunk (higher is better)."""

    NONE = 0  # inside a word
    WORD = 1
    LINE = 2
    SENTENCE = 3
    PARAGRAPH = 4


def max_chunk_tokens(embedder_window: int, tokenizer: PreTrainedTokenizerBase | None = None) -> int:
    """The largest chunk (in tokens without special tokens) that fits an embedder's window:
    the window minus the special tokens the tokenizer adds ([CLS] and [SEP] when no tokenizer
    is given, as for BERT-style models such as all-MiniLM-L6-v2: 256 -> 254)."""
    special = 2 if tokenizer is None else tokenizer.num_special_tokens_to_add(pair=False)
    if embedder_window - special < _MIN_CHUNK_TOKENS:
        raise ValueError(
            f"embedder_window {embedder_window} leaves fewer than {_MIN_CHUNK_TOKENS} tokens "
            f"after {special} special tokens"
        )
    return embedder_window - special


def chunk_pages(
    pages: Sequence[PageText],
    tokenizer: PreTrainedTokenizerBase,
    chunk_tokens: int,
    overlap_tokens: int,
) -> list[ChunkText]:
    """Cuts each page into chunks of at most ``chunk_tokens`` tokens (special tokens not
    counted). Consecutive chunks of a page share about ``overlap_tokens`` tokens. A chunk ends
    preferably at a paragraph break, else a sentence end, a line break, a word boundary (in the
    last half of its window); chunks never span pages; positions run 0.. across the document."""
    _validate(tokenizer, chunk_tokens, overlap_tokens)
    chunks: list[ChunkText] = []
    for page in pages:
        for text in _PageChunker(page.text, tokenizer, chunk_tokens, overlap_tokens).chunks():
            chunks.append(ChunkText(page=page.page, position=len(chunks), text=text))
    return chunks


def _validate(tokenizer: PreTrainedTokenizerBase, chunk_tokens: int, overlap_tokens: int) -> None:
    if chunk_tokens < _MIN_CHUNK_TOKENS:
        raise ValueError(f"chunk_tokens must be at least {_MIN_CHUNK_TOKENS}, got {chunk_tokens}")
    if not 0 <= overlap_tokens < chunk_tokens / 2:
        raise ValueError(
            f"overlap_tokens must be >= 0 and less than half of chunk_tokens ({chunk_tokens}), "
            f"got {overlap_tokens}"
        )
    if not tokenizer.is_fast:
        raise ValueError("chunking needs a fast tokenizer (one that reports character offsets)")


class _PageChunker:
    def __init__(
        self, text: str, tokenizer: PreTrainedTokenizerBase, chunk_tokens: int, overlap: int
    ) -> None:
        self._text = text
        self._tokenizer = tokenizer
        self._chunk_tokens = chunk_tokens
        self._overlap = overlap
        encoding = tokenizer(
            text, add_special_tokens=False, return_offsets_mapping=True, verbose=False
        )
        # Tokens that cover no characters (none in WordPiece) cannot anchor a cut.
        self._offsets: list[tuple[int, int]] = [
            (start, end) for start, end in encoding["offset_mapping"] if end > start
        ]

    def chunks(self) -> list[str]:
        texts: list[str] = []
        count = len(self._offsets)
        start = 0
        while start < count:
            end = self._fitting_end(start, self._chunk_end(start))
            texts.append(self._slice(start, end))
            if end >= count:
                break
            start = self._next_start(start, end)
        return texts

    def _chunk_end(self, start: int) -> int:
        """Exclusive token index where the chunk starting at ``start`` ends."""
        limit = start + self._chunk_tokens
        if limit >= len(self._offsets):
            return len(self._offsets)
        earliest = start + max(1, int(self._chunk_tokens * (1 - _BOUNDARY_SEARCH_FRACTION)))
        best_end, best = limit, _Boundary.NONE
        for end in range(limit, earliest - 1, -1):
            boundary = self._boundary_before(end)
            if boundary > best:
                best_end, best = end, boundary
                if best == _Boundary.PARAGRAPH:
                    break
        return best_end

    def _boundary_before(self, index: int) -> _Boundary:
        """The kind of boundary between token ``index - 1`` and token ``index``."""
        previous_end = self._offsets[index - 1][1]
        gap = self._text[previous_end : self._offsets[index][0]]
        if not any(char.isspace() for char in gap):
            return _Boundary.NONE
        if _PARAGRAPH_BREAK.search(gap):
            return _Boundary.PARAGRAPH
        if _SENTENCE_END.search(self._text, max(0, previous_end - 8), previous_end):
            return _Boundary.SENTENCE
        return _Boundary.LINE if "\n" in gap else _Boundary.WORD

    def _next_start(self, start: int, end: int) -> int:
        """First token of the next chunk: about ``overlap`` tokens before ``end``, moved to the
        best boundary (paragraph, sentence, line) within a quarter of the overlap, else to the
        nearest word start, so the overlap does not begin inside a word."""
        if self._overlap == 0:
            return end
        target = max(start + 1, end - self._overlap)
        slack = self._overlap // 4
        nearby = range(max(start + 1, target - slack), min(end, target + slack + 1))
        best = max(
            nearby,
            key=lambda index: (self._boundary_before(index), -abs(index - target), index),
            default=target,
        )
        if self._boundary_before(best) > _Boundary.WORD:
            return best
        for distance in range(end - start):
            # On a tie the later start wins: less repeated text.
            for index in (target + distance, target - distance):
                if start < index < end and self._boundary_before(index) > _Boundary.NONE:
                    return index
        return target

    def _fitting_end(self, start: int, end: int) -> int:
        """Shrinks ``end`` until the chunk re-tokenises within the limit: a piece cut inside a
        word can tokenise into more tokens on its own than it had in context."""
        while end - start > 1 and self._count(self._slice(start, end)) > self._chunk_tokens:
            end -= 1
        return end

    def _slice(self, start: int, end: int) -> str:
        return self._text[self._offsets[start][0] : self._offsets[end - 1][1]]

    def _count(self, text: str) -> int:
        ids = self._tokenizer(text, add_special_tokens=False, verbose=False)["input_ids"]
        return len(ids)
