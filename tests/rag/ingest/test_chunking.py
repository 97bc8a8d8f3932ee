"""Token-aware chunking with the real all-MiniLM-L6-v2 tokenizer."""

from __future__ import annotations

import itertools
import random
import re

import pytest
from transformers import PreTrainedTokenizerBase

from handlers.rag.ingest.base import PageText
from handlers.rag.ingest.chunking import ChunkText, chunk_pages, max_chunk_tokens

WORDS = [
    "river",
    "mountain",
    "library",
    "window",
    "garden",
    "teacher",
    "morning",
    "village",
    "country",
    "history",
    "question",
    "answer",
    "number",
    "system",
    "program",
    "problem",
    "company",
    "market",
    "science",
    "people",
    "quickly",
    "slowly",
    "carefully",
    "always",
    "never",
    "often",
    "bright",
    "quiet",
    "ancient",
    "modern",
]


def sentence(rng: random.Random) -> str:
    words = [rng.choice(WORDS) for _ in range(rng.randint(6, 14))]
    return " ".join(words).capitalize() + rng.choice([".", "!", "?"])


def paragraph(rng: random.Random, sentences: int) -> str:
    return " ".join(sentence(rng) for _ in range(sentences))


def tokens(tokenizer: PreTrainedTokenizerBase, text: str) -> int:
    return len(tokenizer(text, add_special_tokens=False)["input_ids"])


def spans(chunks: list[ChunkText], text: str) -> list[tuple[int, int]]:
    """Where each chunk lies in ``text``, searching forward (chunks come in reading order)."""
    found: list[tuple[int, int]] = []
    cursor = 0
    for chunk in chunks:
        start = text.find(chunk.text, cursor)
        assert start >= 0, f"chunk {chunk.position} is not a substring of its page"
        found.append((start, start + len(chunk.text)))
        cursor = start + 1
    return found


@pytest.fixture
def long_page() -> str:
    rng = random.Random(7)
    return "\n\n".join(paragraph(rng, rng.randint(1, 9)) for _ in range(40))


def test_every_chunk_fits_and_is_a_substring_of_its_page(
    tokenizer: PreTrainedTokenizerBase, long_page: str
) -> None:
    chunks = chunk_pages([PageText(None, long_page)], tokenizer, 200, 40)
    assert len(chunks) > 5
    assert all(tokens(tokenizer, chunk.text) <= 200 for chunk in chunks)
    located = spans(chunks, long_page)
    # Together the chunks cover every word of the page.
    assert located[0][0] == 0 and located[-1][1] == len(long_page)
    assert all(later[0] < earlier[1] for earlier, later in itertools.pairwise(located))


def test_consecutive_chunks_overlap_by_about_the_overlap(
    tokenizer: PreTrainedTokenizerBase, long_page: str
) -> None:
    chunks = chunk_pages([PageText(None, long_page)], tokenizer, 120, 30)
    located = spans(chunks, long_page)
    for (_, end), (next_start, _) in itertools.pairwise(located):
        shared = long_page[next_start:end]
        assert 20 <= tokens(tokenizer, shared) <= 40


def test_no_overlap_gives_adjacent_chunks(
    tokenizer: PreTrainedTokenizerBase, long_page: str
) -> None:
    chunks = chunk_pages([PageText(None, long_page)], tokenizer, 100, 0)
    located = spans(chunks, long_page)
    for (_, end), (next_start, _) in itertools.pairwise(located):
        assert next_start >= end and not long_page[end:next_start].strip()


def test_positions_are_continuous_across_pages_and_pages_recorded(
    tokenizer: PreTrainedTokenizerBase, long_page: str
) -> None:
    pages = [PageText(1, long_page), PageText(2, "  \n "), PageText(3, "A short last page.")]
    chunks = chunk_pages(pages, tokenizer, 200, 40)
    assert [chunk.position for chunk in chunks] == list(range(len(chunks)))
    assert {chunk.page for chunk in chunks[:-1]} == {1}  # the blank page gives no chunk
    assert chunks[-1] == ChunkText(page=3, position=len(chunks) - 1, text="A short last page.")
    assert all(chunk.text in long_page for chunk in chunks[:-1])


def test_chunks_never_span_pages(tokenizer: PreTrainedTokenizerBase) -> None:
    pages = [PageText(1, "End of page one."), PageText(2, "Start of page two.")]
    chunks = chunk_pages(pages, tokenizer, 200, 40)
    assert [(chunk.page, chunk.text) for chunk in chunks] == [
        (1, "End of page one."),
        (2, "Start of page two."),
    ]


def test_text_shorter_than_a_chunk_gives_one_chunk_without_outer_whitespace(
    tokenizer: PreTrainedTokenizerBase,
) -> None:
    chunks = chunk_pages([PageText(None, "\n\n  Hello there, world.  \n")], tokenizer, 200, 40)
    assert chunks == [ChunkText(page=None, position=0, text="Hello there, world.")]


def test_chunks_end_at_paragraph_breaks_when_there_is_one(
    tokenizer: PreTrainedTokenizerBase,
) -> None:
    rng = random.Random(3)
    page = "\n\n".join(paragraph(rng, 4) for _ in range(12))  # ~60-70 tokens each
    chunks = chunk_pages([PageText(None, page)], tokenizer, 200, 0)
    for _, end in spans(chunks, page)[:-1]:
        assert page[end : end + 2] == "\n\n"


def test_chunks_end_at_sentence_ends_without_paragraphs(
    tokenizer: PreTrainedTokenizerBase,
) -> None:
    page = paragraph(random.Random(4), 60)
    chunks = chunk_pages([PageText(None, page)], tokenizer, 100, 20)
    assert len(chunks) > 3
    assert all(chunk.text[-1] in ".!?" for chunk in chunks)


def test_chunks_end_and_start_at_word_boundaries_without_sentences(
    tokenizer: PreTrainedTokenizerBase,
) -> None:
    rng = random.Random(5)
    page = " ".join(rng.choice(WORDS) + rng.choice(["", "ing", "ness", "'s"]) for _ in range(900))
    chunks = chunk_pages([PageText(None, page)], tokenizer, 64, 16)
    assert len(chunks) > 10
    for start, end in spans(chunks, page):
        assert start == 0 or page[start - 1] == " "
        assert end == len(page) or page[end] == " "


def test_a_word_longer_than_a_chunk_is_cut_inside_and_still_fits(
    tokenizer: PreTrainedTokenizerBase,
) -> None:
    rng = random.Random(6)
    giant = "".join(rng.choice("bcdfghjklmnpqrstvwxz") for _ in range(90))
    page = f"before {giant} after."
    assert tokens(tokenizer, giant) > 16
    chunks = chunk_pages([PageText(None, page)], tokenizer, 16, 4)
    assert len(chunks) > 2
    assert all(tokens(tokenizer, chunk.text) <= 16 for chunk in chunks)
    assert all(chunk.text in page for chunk in chunks)
    assert chunks[-1].text.endswith("after.")


def test_lines_are_preferred_to_words_in_tabular_text(tokenizer: PreTrainedTokenizerBase) -> None:
    rows = [f"row {n}, alpha beta {n * 7}, gamma delta {n * 13}" for n in range(200)]
    page = "\n".join(rows)
    chunks = chunk_pages([PageText(None, page)], tokenizer, 100, 20)
    assert all(re.fullmatch(r"row \d+,.*\d", chunk.text, re.S) for chunk in chunks)


def test_empty_pages_give_no_chunks(tokenizer: PreTrainedTokenizerBase) -> None:
    assert chunk_pages([PageText(None, "")], tokenizer, 200, 40) == []
    assert chunk_pages([], tokenizer, 200, 40) == []


@pytest.mark.parametrize(
    ("chunk_tokens", "overlap_tokens", "message"),
    [
        (15, 0, "chunk_tokens must be at least 16, got 15"),
        (
            200,
            100,
            r"overlap_tokens must be >= 0 and less than half of chunk_tokens \(200\), got 100",
        ),
        (200, -1, r"overlap_tokens must be >= 0 .*got -1"),
    ],
)
def test_invalid_sizes_are_refused(
    tokenizer: PreTrainedTokenizerBase, chunk_tokens: int, overlap_tokens: int, message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        chunk_pages([PageText(None, "text")], tokenizer, chunk_tokens, overlap_tokens)


def test_max_chunk_tokens_leaves_room_for_special_tokens(
    tokenizer: PreTrainedTokenizerBase,
) -> None:
    assert max_chunk_tokens(256) == 254
    assert max_chunk_tokens(256, tokenizer) == 254
    with pytest.raises(ValueError, match="fewer than 16 tokens"):
        max_chunk_tokens(17)
