"""The prompts: grounded on numbered sources within a token budget, or a plain conversation."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from transformers import AutoTokenizer, PreTrainedTokenizerBase

from handlers.rag.documents import Chunk, SearchHit, content_hash
from handlers.rag.generation.base import ChatMessage
from handlers.rag.generation.prompt import (
    NO_DOCUMENTS_ANSWER,
    conversation_messages,
    grounded_messages,
    prompt_budget,
)

QUESTION = "What is the refund policy for annual plans?"


@pytest.fixture(scope="module")
def tokenizer(tiny_model: Path) -> PreTrainedTokenizerBase:
    loaded: PreTrainedTokenizerBase = AutoTokenizer.from_pretrained(
        tiny_model, local_files_only=True
    )
    return loaded


def hit(text: str, score: float, filename: str = "policy.pdf", page: int | None = 1) -> SearchHit:
    chunk = Chunk("doc-1", filename, 0, page, text, content_hash(text))
    return SearchHit(chunk, score)


def tokens_of(tokenizer: PreTrainedTokenizerBase, messages: list[ChatMessage]) -> int:
    """The prompt's tokens as the model sees them, chat template included."""
    conversation = [{"role": m.role, "content": m.content} for m in messages]
    text = tokenizer.apply_chat_template(conversation, add_generation_prompt=True, tokenize=False)
    assert isinstance(text, str)
    return len(tokenizer.encode(text, verbose=False))


def count_with(tokenizer: PreTrainedTokenizerBase) -> Callable[[str], int]:
    return lambda text: len(tokenizer.encode(text, verbose=False))


HITS = [
    hit("Annual plans can be refunded within 30 days of purchase.", 0.9, page=3),
    hit("Monthly plans are not refunded. " * 3, 0.8, filename="faq.txt", page=None),
    hit("Refunds are paid to the original payment method within a week. " * 2, 0.7, page=4),
    hit("Support answers by email.", 0.6, filename="support.docx", page=None),
]


def test_sources_are_numbered_best_first_with_file_and_page(
    tokenizer: PreTrainedTokenizerBase,
) -> None:
    count = count_with(tokenizer)
    messages, used = grounded_messages(QUESTION, HITS, budget_tokens=10_000, count_tokens=count)
    assert used == HITS
    system, user = messages
    assert (system.role, user) == ("system", ChatMessage("user", QUESTION))
    assert "[1] (policy.pdf, page 3) Annual plans can be refunded" in system.content
    assert "[2] (faq.txt) Monthly plans" in system.content
    assert "[3] (policy.pdf, page 4) Refunds are paid" in system.content
    assert "[4] (support.docx) Support answers by email." in system.content
    order = [system.content.index(f"[{n}] (") for n in range(1, 5)]
    assert order == sorted(order)
    # the instructions: only the sources, cite by number, say when it is not known
    assert "only the numbered sources" in system.content
    assert "[1] or [2]" in system.content
    assert "do not know" in system.content


def test_the_whole_prompt_stays_within_the_budget(tokenizer: PreTrainedTokenizerBase) -> None:
    count = count_with(tokenizer)
    bare, _ = grounded_messages(QUESTION, [], budget_tokens=0, count_tokens=count)
    seen: set[int] = set()
    for budget in range(tokens_of(tokenizer, bare), 600, 7):
        messages, used = grounded_messages(QUESTION, HITS, budget_tokens=budget, count_tokens=count)
        assert sum(count(m.content) for m in messages) < budget, budget
        seen.add(len(used))
    assert seen == {0, 1, 2, 3, 4}  # from nothing fitting to everything fitting


def test_the_templated_prompt_and_the_answer_fit_the_context_window(
    tokenizer: PreTrainedTokenizerBase,
) -> None:
    """With the budget from prompt_budget, the margin covers the chat template's tokens."""
    window = int(tokenizer.model_max_length)
    grounded = 0
    for max_new_tokens in range(1, window, 13):
        budget = prompt_budget(window, max_new_tokens)
        messages, used = grounded_messages(
            QUESTION, HITS * 10, budget_tokens=budget, count_tokens=count_with(tokenizer)
        )
        if used:  # (without sources the prompt cannot shrink further)
            grounded += 1
            assert tokens_of(tokenizer, messages) + max_new_tokens <= window, max_new_tokens
    assert grounded > 10


def test_a_hit_too_large_is_skipped_and_smaller_later_ones_still_fit(
    tokenizer: PreTrainedTokenizerBase,
) -> None:
    count = count_with(tokenizer)
    small_first = hit("Refunds take a week.", 0.9)
    huge = hit("The terms and conditions apply. " * 60, 0.8, filename="terms.pdf")
    small_last = hit("Annual plans are refundable.", 0.7, filename="faq.txt", page=None)
    hits = [small_first, huge, small_last]
    messages, used = grounded_messages(QUESTION, hits, budget_tokens=300, count_tokens=count)
    assert used == [small_first, small_last]
    assert "[2] (faq.txt) Annual plans are refundable." in messages[0].content
    assert "terms.pdf" not in messages[0].content


def test_no_source_fits_a_tiny_budget(tokenizer: PreTrainedTokenizerBase) -> None:
    messages, used = grounded_messages(
        QUESTION, HITS, budget_tokens=10, count_tokens=count_with(tokenizer)
    )
    assert used == []
    assert "(no sources)" in messages[0].content
    assert messages[1] == ChatMessage("user", QUESTION)


def test_conversation_gives_the_context_as_earlier_conversation() -> None:
    system, user = conversation_messages(QUESTION, "We talked about the annual plan.")
    assert user == ChatMessage("user", QUESTION)
    assert system.role == "system"
    assert system.content.endswith("\nWe talked about the annual plan.")


@pytest.mark.parametrize("context", ["", "  \n"])
def test_an_empty_context_is_left_out(context: str) -> None:
    system, user = conversation_messages(QUESTION, context)
    assert "context" not in system.content.lower()
    assert user == ChatMessage("user", QUESTION)


def test_the_budget_leaves_room_for_the_answer_and_a_margin() -> None:
    assert prompt_budget(8192, 50) < 8192 - 50
    assert prompt_budget(8192, 50) > 7500
    assert prompt_budget(8192, 1024) == prompt_budget(8192, 50) - 974
    assert prompt_budget(512, 50) > 300
    assert prompt_budget(512, 1024) == 0


def test_the_no_documents_answer_says_how_to_fix_it() -> None:
    assert "/uploadDocument" in NO_DOCUMENTS_ANSWER
    assert "no documents in the knowledge base" in NO_DOCUMENTS_ANSWER
    assert "nothing relevant was found" in NO_DOCUMENTS_ANSWER
