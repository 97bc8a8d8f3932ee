"""One transformers model load at a time in this process, and how the caches of converted
models (the dequantised GGUF, the ONNX export) recognise a model file.

``from_pretrained`` (and building a model from its config) is not thread-safe in transformers
5: while it runs it swaps process-wide state and puts back what it found when it is done:
``PreTrainedModel.tie_weights`` becomes a no-op, the ``torch.nn.init`` functions are
replaced, torch's default dtype changes. Two loads overlapping in different threads restore
each other's swapped-in state, which then stays for good: every later model keeps untied
weights (a tied ``lm_head`` stays random, or on the meta device and cannot be saved). The
service loads its embedder and its generator in parallel worker threads, and a stopped server
leaves a loading thread to finish on its own, so every load holds :data:`MODEL_LOAD_LOCK`.

Importing is not safe in parallel either: two threads importing modules that import each other
(``accelerate.state`` and ``accelerate.utils``, reached from both the embedder's and the
generator's modules) each hold one module's import lock and wait for the other's; Python breaks
that deadlock by handing one thread the other's *partially initialised* module, and the import
fails (``cannot import name 'AcceleratorState' from partially initialized module
'accelerate.state'``). :func:`import_serially` imports such modules one thread at a time, so the
service imports its model libraries that way before its parallel loads.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Protocol

import transformers

__all__ = [
    "IMPORT_LOCK",
    "MODEL_LOAD_LOCK",
    "add_file_fingerprint",
    "import_serially",
    "model_loading",
]

_FINGERPRINT_BYTES = 1024 * 1024

MODEL_LOAD_LOCK = threading.Lock()
"""Held while transformers loads or builds a model (see the module's docstring)."""

IMPORT_LOCK = threading.RLock()
"""Held by :func:`import_serially` while it imports (re-entrant: an import may import more)."""


def import_serially(*modules: str, optional: bool = False) -> None:
    """Imports ``modules`` in order, holding :data:`IMPORT_LOCK`, so that no two threads that
    import through this function race on the same half-imported modules (see the module's
    docstring). ``optional``: modules that are not installed are skipped. Blocking."""
    with IMPORT_LOCK:
        for name in modules:
            if optional and importlib.util.find_spec(name.split(".", 1)[0]) is None:
                continue
            importlib.import_module(name)


@contextlib.contextmanager
def model_loading() -> Iterator[None]:
    """Holds :data:`MODEL_LOAD_LOCK`, with transformers' progress bars off (they would
    interleave with the log lines). Blocking: call it from a worker thread."""
    with MODEL_LOAD_LOCK:
        enabled = transformers.utils.logging.is_progress_bar_enabled()
        transformers.utils.logging.disable_progress_bar()  # type: ignore[no-untyped-call]
        try:
            yield
        finally:
            if enabled:
                transformers.utils.logging.enable_progress_bar()  # type: ignore[no-untyped-call]


class _Digest(Protocol):
    def update(self, data: bytes, /) -> None: ...


def add_file_fingerprint(digest: _Digest, path: Path) -> None:
    """Adds what identifies a model file to a cache key's ``digest``: its first megabyte and
    its size (hashing gigabytes of weights at every start would take seconds)."""
    with path.open("rb") as file:
        digest.update(file.read(_FINGERPRINT_BYTES))
    digest.update(str(path.stat().st_size).encode())
