"""A tiny random BERT cross-encoder for tests, saved the way a real one is distributed: built
in a second, without network. Its word-piece vocabulary is a few hundred lowercase words and
letters, so any English text tokenizes. Its scores mean nothing; they are good for checking
plumbing (pairing, order, batching, truncation), not relevance."""

from __future__ import annotations

import string
from pathlib import Path

import torch
from transformers import BertConfig, BertForSequenceClassification, BertTokenizer

from handlers.rag.model_loading import model_loading

__all__ = ["WINDOW", "build_tiny_cross_encoder"]

WINDOW = 128
_SEED = 4321
_WORDS = [
    "the",
    "a",
    "of",
    "and",
    "to",
    "in",
    "is",
    "for",
    "on",
    "with",
    "what",
    "how",
    "when",
    "where",
    "who",
    "why",
    "which",
    "river",
    "mountain",
    "paris",
    "france",
    "capital",
    "city",
    "population",
    "people",
    "live",
    "berlin",
    "germany",
    "refund",
    "policy",
    "return",
    "days",
    "purchase",
    "support",
    "team",
    "email",
    "phone",
    "cat",
    "dog",
    "weather",
    "rain",
    "sun",
    "moon",
    "planet",
    "water",
]


def build_tiny_cross_encoder(directory: Path, *, labels: int = 1) -> Path:
    """Saves a tiny ``BertForSequenceClassification`` with ``labels`` outputs and its tokenizer
    to ``directory`` and returns it. Deterministic: the same files every time."""
    directory.mkdir(parents=True, exist_ok=True)
    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    pieces = list(string.ascii_lowercase + string.digits + string.punctuation)
    vocabulary = specials + _WORDS + pieces + [f"##{piece}" for piece in pieces]
    tokenizer = BertTokenizer(
        vocab={piece: index for index, piece in enumerate(vocabulary)}, model_max_length=WINDOW
    )
    config = BertConfig(
        vocab_size=len(vocabulary),
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=WINDOW,
        initializer_range=0.2,  # wide random weights: passages get distinct scores
    )
    config.num_labels = labels
    with model_loading(), torch.random.fork_rng(devices=[]):
        torch.manual_seed(_SEED)
        model = BertForSequenceClassification(config)
    model.save_pretrained(directory)
    tokenizer.save_pretrained(directory)
    return directory
