"""Loading the local causal LM: loads running in parallel threads (the server loads its
embedder and its generator at once) leave every model whole."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import torch
from transformers import PreTrainedModel

from handlers.rag.generation.model_files import load_causal_lm
from handlers.rag.ingest.embedder import load_model

PARALLEL_LOADS = 8


def lm_head_is_tied(model: PreTrainedModel) -> bool:
    head = model.get_output_embeddings()  # type: ignore[no-untyped-call]
    embeddings = model.get_input_embeddings()
    assert isinstance(head, torch.nn.Linear) and isinstance(embeddings, torch.nn.Embedding)
    return head.weight.data_ptr() == embeddings.weight.data_ptr()


def test_parallel_loads_keep_the_output_layer_tied(tiny_model: Path, tmp_path: Path) -> None:
    # transformers swaps process-wide state during a load (PreTrainedModel.tie_weights among
    # it); overlapping loads used to leave it swapped, so every later model lost its tying
    with ThreadPoolExecutor(4) as pool:
        embedders = [pool.submit(load_model, "all-MiniLM-L6-v2") for _ in range(2)]
        models = [pool.submit(load_causal_lm, tiny_model, tmp_path) for _ in range(PARALLEL_LOADS)]
        loaded = [future.result()[0] for future in models]
        for future in embedders:
            future.result()
    later, _, source = load_causal_lm(tiny_model, tmp_path)
    assert source == "directory"
    assert [lm_head_is_tied(model) for model in [*loaded, later]] == [True] * (PARALLEL_LOADS + 1)
