"""The messages given to the model: a prompt grounded on retrieved chunks, or a plain
conversation; and how many prompt tokens a model's context window leaves room for."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from handlers.rag.documents import SearchHit
from handlers.rag.generation.base import ChatMessage

__all__ = [
    "NO_DOCUMENTS_ANSWER",
    "conversation_messages",
    "format_source",
    "grounded_messages",
    "prompt_budget",
]

# The answer when retrieval finds nothing, which happens when the knowledge base is empty.
NO_DOCUMENTS_ANSWER = (
    "There are no documents in the knowledge base, so nothing relevant was found to answer "
    "from. Upload documents with /uploadDocument and ask again."
)

GROUNDED_INSTRUCTIONS = (
    "You answer questions using only the numbered sources below. "
    "Cite every source you use by its number in square brackets, like [1] or [2]. "
    "If the sources do not contain the answer, say that you do not know; "
    "do not make up an answer."
)
CONVERSATION_INSTRUCTIONS = (
    "You are a helpful, respectful and honest assistant. "
    "Answer as helpfully as possible, and say so when you do not know."
)
# Tokens the chat template adds around each message (role markers, separators): an allowance,
# since the exact number depends on the model's template.
_MESSAGE_OVERHEAD_TOKENS = 8
_MIN_SAFETY_MARGIN_TOKENS = 32


def prompt_budget(context_window: int, max_new_tokens: int) -> int:
    """Tokens the prompt may take: the window less the answer's tokens and a safety margin
    (for template tokens and estimated counts). Zero when the answer alone fills the window."""
    margin = _MIN_SAFETY_MARGIN_TOKENS + context_window // 50
    return max(0, context_window - max_new_tokens - margin)


def format_source(number: int, hit: SearchHit) -> str:
    """One numbered source block: ``[n] (filename, page p) text`` (no page for formats
    without pages)."""
    chunk = hit.chunk
    where = chunk.filename if chunk.page is None else f"{chunk.filename}, page {chunk.page}"
    return f"[{number}] ({where}) {chunk.text}"


def grounded_messages(
    question: str,
    hits: Sequence[SearchHit],
    *,
    budget_tokens: int,
    count_tokens: Callable[[str], int],
) -> tuple[list[ChatMessage], list[SearchHit]]:
    """A system message with the instructions and numbered sources, then the question.

    ``hits`` (best first, as searches return them) are taken in order while the whole
    prompt, as counted by ``count_tokens`` plus a per-message allowance, stays within
    ``budget_tokens``; a hit that does not fit is skipped and later, smaller ones may still
    fit. Returns the messages and the hits used, in the order of their numbers ([1] first)."""
    fixed = count_tokens(question) + 2 * _MESSAGE_OVERHEAD_TOKENS
    used: list[SearchHit] = []
    blocks: list[str] = []
    system = _grounded_system(blocks)
    for hit in hits:
        block = format_source(len(blocks) + 1, hit)
        candidate = _grounded_system([*blocks, block])
        if fixed + count_tokens(candidate) <= budget_tokens:
            blocks.append(block)
            used.append(hit)
            system = candidate
    return [ChatMessage("system", system), ChatMessage("user", question)], used


def conversation_messages(question: str, context: str) -> list[ChatMessage]:
    """Messages without retrieval: ``context`` (when not blank) is given to the model as the
    conversation so far, then the question."""
    system = CONVERSATION_INSTRUCTIONS
    if context.strip():
        system = f"{system}\n\nContext from the conversation so far:\n{context}"
    return [ChatMessage("system", system), ChatMessage("user", question)]


def _grounded_system(blocks: Sequence[str]) -> str:
    sources = "\n\n".join(blocks) if blocks else "(no sources)"
    return f"{GROUNDED_INSTRUCTIONS}\n\nSources:\n\n{sources}"
