"""A tiny random causal language model for tests: built in about a second, without network.

Its byte-level BPE tokenizer is trained on a few sentences (ASCII, accented Latin, Chinese and
emoji), so any text encodes, and characters it never saw are split into single-byte tokens. The
model's weights are random: its output is gibberish, good for testing plumbing (streaming,
token limits, framing), not content.
"""

from __future__ import annotations

from pathlib import Path

import torch
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast

from handlers.rag.model_loading import model_loading

__all__ = ["CHAT_TEMPLATE", "EOS_TOKEN", "PAD_TOKEN", "build_tiny_causal_lm"]

EOS_TOKEN = "<|endoftext|>"
PAD_TOKEN = "<|pad|>"
CHAT_TEMPLATE = (
    "{% for message in messages %}"
    "<|{{ message['role'] }}|>{{ message['content'] }}\n"
    "{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>{% endif %}"
)
_VOCAB_SIZE = 400
_CONTEXT = 512
_SEED = 1234
_SENTENCES = [
    "The refund policy allows returns within 30 days of purchase.",
    "Annual plans are billed once a year and can be cancelled at any time.",
    "Our support team answers questions by email and by phone.",
    "Le café est très apprécié à Montréal, même en été.",
    "中文文本也需要被正确地处理。",
    "Emoji such as 🙂 and 🚀 take four bytes each in UTF-8.",
    "system user assistant: answer the question using the sources [1] [2].",
]


def build_tiny_causal_lm(directory: Path) -> Path:
    """Saves a tiny GPT-2 model and its tokenizer (with a chat template) to ``directory`` and
    returns it. Deterministic: the same files every time."""
    directory.mkdir(parents=True, exist_ok=True)
    tokenizer = _train_tokenizer()
    config = GPT2Config(
        vocab_size=len(tokenizer),
        n_positions=_CONTEXT,
        n_embd=32,
        n_layer=2,
        n_head=2,
        bos_token_id=tokenizer.eos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )
    with model_loading(), torch.random.fork_rng(devices=[]):
        torch.manual_seed(_SEED)
        model = GPT2LMHeadModel(config)
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    model.save_pretrained(directory)
    tokenizer.save_pretrained(directory)
    return directory


def _train_tokenizer() -> PreTrainedTokenizerFast:
    backend = Tokenizer(models.BPE())
    backend.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    backend.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=_VOCAB_SIZE,
        special_tokens=[EOS_TOKEN, PAD_TOKEN],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    backend.train_from_iterator(_SENTENCES, trainer)
    tokenizer = PreTrainedTokenizerFast(  # type: ignore[no-untyped-call]
        tokenizer_object=backend,
        eos_token=EOS_TOKEN,
        pad_token=PAD_TOKEN,
        model_max_length=_CONTEXT,
        clean_up_tokenization_spaces=False,
    )
    tokenizer.chat_template = CHAT_TEMPLATE
    return tokenizer
