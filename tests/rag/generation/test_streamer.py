"""TextDeltaStreamer: token ids in, whole characters out (its hold-back logic, token by token)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from transformers import AutoTokenizer, PreTrainedTokenizerBase

from handlers.rag.generation.streamer import TextDeltaStreamer


@pytest.fixture(scope="module")
def tokenizer(tiny_model: Path) -> PreTrainedTokenizerBase:
    loaded: PreTrainedTokenizerBase = AutoTokenizer.from_pretrained(
        tiny_model, local_files_only=True
    )
    return loaded


def stream_ids(tokenizer: PreTrainedTokenizerBase, ids: list[int]) -> list[str]:
    """The deltas a streamer emits for ``ids`` generated one at a time after a prompt."""
    deltas: list[str] = []

    def decode(generated: list[int]) -> str:
        text = tokenizer.decode(generated, skip_special_tokens=True)
        assert isinstance(text, str)
        return text

    streamer = TextDeltaStreamer(decode, deltas.append)
    streamer.put(torch.tensor([tokenizer.encode("prompt")]))  # skipped, as generate() sends it
    for token in ids:
        streamer.put(torch.tensor([token]))
    streamer.end()
    assert streamer.generated == ids
    return deltas


def test_a_character_split_across_tokens_is_held_back_until_whole(
    tokenizer: PreTrainedTokenizerBase,
) -> None:
    rocket = tokenizer.encode("🚀")
    assert len(rocket) == 3  # four UTF-8 bytes in three byte-level tokens
    ids = tokenizer.encode("a") + rocket + tokenizer.encode("b")
    assert stream_ids(tokenizer, ids) == ["a", "🚀", "b"]


def test_every_delta_is_whole_characters(tokenizer: PreTrainedTokenizerBase) -> None:
    text = "Le café, 中文 и 🙂🚀 ok"
    ids = tokenizer.encode(text)
    deltas = stream_ids(tokenizer, ids)
    assert "".join(deltas) == text
    assert not [delta for delta in deltas if "\ufffd" in delta or not delta]


def test_invalid_bytes_are_emitted_as_replacement_characters(
    tokenizer: PreTrainedTokenizerBase,
) -> None:
    lead, _, continuation = tokenizer.encode("🚀")
    ids = [*tokenizer.encode("a"), continuation, *tokenizer.encode("b"), lead]
    deltas = stream_ids(tokenizer, ids)
    # a lone continuation byte is no character: it goes out with the next one; a sequence
    # cut off by the end of generation goes out at the end
    assert deltas == ["a", "\ufffdb", "\ufffd"]
    assert "".join(deltas) == tokenizer.decode(ids)


def test_special_tokens_are_not_emitted(tokenizer: PreTrainedTokenizerBase) -> None:
    eos = tokenizer.eos_token_id
    assert isinstance(eos, int)
    deltas = stream_ids(tokenizer, [*tokenizer.encode("hi there"), eos])
    assert "".join(deltas) == "hi there"
    assert len(deltas) == len(tokenizer.encode("hi there"))  # none for end-of-sequence
