"""What runs the embedding network: torch, or ONNX Runtime on the same network exported once.

Both take the tokenizer's numpy arrays and give the last hidden states as a numpy array, so
pooling is the same whichever runs. ONNX Runtime computes the same vectors (to about 1e-7)
about three times faster than torch's eager mode for a query of a few tokens on a CPU (3.3
against 10.6 ms per query on 2 cores; ``make bench-rag`` reports the search latency), because
it runs a fused graph instead of dispatching some 300 small operators one by one.

The export (``torch.onnx.export`` tracing the transformers model) is cached on disk, named by
a digest of the model's files and the exporter's version, and written atomically, so the
first start of a model pays it (about 1.5 s for all-MiniLM-L6-v2) and later starts load the
file. The network is traced with eager attention: the SDPA path decides at trace time whether
a mask is needed and would bake that decision into the graph, which breaks padded batches.
"""

from __future__ import annotations

import hashlib
import os
import uuid
import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import torch
from transformers import PreTrainedModel, PreTrainedTokenizerBase

from handlers.rag.model_loading import add_file_fingerprint

__all__ = [
    "EXPORT_VERSION",
    "EncoderRuntime",
    "OnnxEncoder",
    "TorchEncoder",
    "export_onnx",
    "onnx_cache_path",
]

EXPORT_VERSION = 1
"""Part of the cache key: raised when the export itself changes."""
_OPSET = 17
_WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth")
# A padded pair: the traced graph must take the attention mask into account.
_EXAMPLE_TEXTS = ("a short text", "a longer text, so that the first one of the pair is padded")


class EncoderRuntime(Protocol):
    """Runs the network on tokenized input (the tokenizer's ``return_tensors="np"`` arrays)."""

    @property
    def name(self) -> str:
        """``torch`` or ``onnxruntime``, for logs."""
        ...

    def last_hidden_state(self, encoded: Mapping[str, np.ndarray]) -> np.ndarray:
        """Shape (texts, tokens, hidden), float32."""
        ...


class TorchEncoder:
    """The transformers model run by torch in inference mode."""

    name = "torch"

    def __init__(self, network: torch.nn.Module) -> None:
        self._network = network

    def last_hidden_state(self, encoded: Mapping[str, np.ndarray]) -> np.ndarray:
        inputs = {key: torch.from_numpy(value) for key, value in encoded.items()}
        with torch.inference_mode():
            hidden = self._network(**inputs).last_hidden_state
        return np.asarray(hidden.to(torch.float32).numpy())


class OnnxEncoder:
    """An exported network run by ONNX Runtime on the CPU.

    Its threads sleep between runs instead of spinning (spinning threads would take the CPU
    from the vector store's search that follows a query's embedding)."""

    name = "onnxruntime"

    def __init__(self, path: Path, *, threads: int | None = None) -> None:
        import onnxruntime

        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = threads or 0  # 0: one per physical core
        options.inter_op_num_threads = 1
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_ALL
        options.log_severity_level = 3  # errors only: no notes on the graph's optimisation
        self._session = onnxruntime.InferenceSession(
            str(path), options, providers=["CPUExecutionProvider"]
        )
        self.input_names = tuple(node.name for node in self._session.get_inputs())

    def last_hidden_state(self, encoded: Mapping[str, np.ndarray]) -> np.ndarray:
        missing = [name for name in self.input_names if name not in encoded]
        if missing:
            raise ValueError(f"the exported network needs the inputs {missing}")
        feeds = {name: encoded[name].astype(np.int64, copy=False) for name in self.input_names}
        (hidden,) = self._session.run(["last_hidden_state"], feeds)
        return np.asarray(hidden, dtype=np.float32)


def onnx_cache_path(model_dir: Path, cache_dir: Path) -> Path:
    """Where the export of the model in ``model_dir`` is kept: named by the directory and a
    digest of its configuration, its weight files (name, size and first megabyte), torch's
    version and :data:`EXPORT_VERSION`, so a changed model or exporter gets a new file."""
    digest = hashlib.sha256(f"{EXPORT_VERSION} {_OPSET} {torch.__version__}".encode())
    config = model_dir / "config.json"
    if config.is_file():
        digest.update(config.read_bytes())
    for weights in sorted(p for p in model_dir.iterdir() if p.suffix in _WEIGHT_SUFFIXES):
        digest.update(weights.name.encode())
        add_file_fingerprint(digest, weights)
    return cache_dir / f"embedding-{model_dir.name}-{digest.hexdigest()[:16]}.onnx"


def export_onnx(
    network: PreTrainedModel, tokenizer: PreTrainedTokenizerBase, target: Path
) -> Sequence[str]:
    """Exports ``network`` to ``target`` (written to a temporary sibling, then renamed into
    place) with dynamic batch and sequence axes; the names of its inputs. Blocking.

    Raises ``RuntimeError`` for a network the exporter cannot trace."""
    example = tokenizer(list(_EXAMPLE_TEXTS), padding=True, return_tensors="pt")
    names = [name for name in tokenizer.model_input_names if name in example]
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.parent / f".{target.name}.{uuid.uuid4().hex}.partial"
    attention = network.config._attn_implementation
    try:
        network.set_attn_implementation("eager")
        with warnings.catch_warnings(), torch.inference_mode(False), torch.no_grad():
            warnings.simplefilter("ignore")  # tracer notes on Python-side shape checks
            torch.onnx.export(
                _LastHiddenState(network, names),
                tuple(example[name] for name in names),
                str(partial),
                input_names=names,
                output_names=["last_hidden_state"],
                dynamic_axes={
                    name: {0: "texts", 1: "tokens"} for name in [*names, "last_hidden_state"]
                },
                opset_version=_OPSET,
                dynamo=False,
            )
        os.replace(partial, target)
    except Exception as error:
        raise RuntimeError(f"cannot export the embedding model to ONNX: {error}") from error
    finally:
        network.set_attn_implementation(attention)
        partial.unlink(missing_ok=True)
    return names


class _LastHiddenState(torch.nn.Module):
    """The network with positional inputs (the exporter's calling convention) and one output."""

    def __init__(self, network: torch.nn.Module, names: Sequence[str]) -> None:
        super().__init__()
        self.network = network
        self.names = list(names)

    def forward(self, *inputs: torch.Tensor) -> Any:
        return self.network(**dict(zip(self.names, inputs, strict=True))).last_hidden_state
