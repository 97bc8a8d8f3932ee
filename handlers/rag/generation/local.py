"""Answers from a local transformers causal language model, streamed as they are generated.

The model runs in worker threads (at most ``max_concurrent`` generations at once); the text of
each new token reaches the event loop through a queue, in whole characters. Closing a stream
stops its generation at the next token, and so does a stop sequence
(:mod:`handlers.rag.generation.stop_sequences`). Decoding is greedy, or sampled from a random
stream private to the request (:mod:`handlers.rag.generation.sampling`), so concurrent
requests never disturb each other's seeds. Finding and loading the model (GGUF dequantisation
and its cache) is :mod:`handlers.rag.generation.model_files`; the token-to-text bridge is
:mod:`handlers.rag.generation.streamer`.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Literal

import jinja2
import torch
from transformers import (
    GenerationMixin,
    LogitsProcessorList,
    PreTrainedModel,
    PreTrainedTokenizerBase,
    StoppingCriteriaList,
)
from transformers.generation.streamers import BaseStreamer

from handlers.rag.generation.base import GREEDY, ChatMessage, Finish, GenerationError, Sampling
from handlers.rag.generation.model_files import (
    SMOLLM2_NAME,
    gguf_cache_path,
    load_causal_lm,
    resolve_model,
)
from handlers.rag.generation.sampling import SeededSampler
from handlers.rag.generation.stop_sequences import StopSequences
from handlers.rag.generation.streamer import StopWhenSet, TextDeltaStreamer
from handlers.rag.worker_threads import WorkerThreads

__all__ = [  # the model and streamer names stay importable from here
    "SMOLLM2_NAME",
    "LocalGenerator",
    "TextDeltaStreamer",
    "gguf_cache_path",
    "resolve_model",
]

log = logging.getLogger("rag.generation")

_END = object()


class LocalGenerator:
    """A transformers causal LM behind the :class:`~handlers.rag.generation.base.Generator`
    interface, greedy decoding or seeded sampling. Build it with :meth:`load`; ``model`` and
    ``tokenizer`` are the loaded transformers objects.

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
        self._workers = WorkerThreads(max_concurrent, "rag-generate")
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
        network, tokenizer, source = load_causal_lm(path, cache_dir)
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
        self, messages: Sequence[ChatMessage], max_new_tokens: int, sampling: Sampling = GREEDY
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
        stops = StopSequences(sampling.stop)

        def emit(delta: str) -> None:  # in the worker thread
            text = stops.feed(delta)
            if stops.stopped:
                stop.set()  # the generation ends after this token
            if not text:
                return
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
            work = self._workers.run(
                self._generate, prompt, min(max_new_tokens, room), streamer, stop, sampling
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
            held = stops.flush()  # the worker is done: text held back for a stop that never came
            if held:
                yield held
            generated = streamer.generated
            reason: Literal["stop", "length"] = (
                "stop"
                if stops.stopped or (generated and generated[-1] in self._eos_ids)
                else "length"
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
        await self._workers.close()

    def _logits_processor(self) -> LogitsProcessorList | None:
        """Steers decoding; none by default (subclasses, e.g. in tests, may add some)."""
        return None

    def _generate(
        self,
        prompt: list[int],
        max_new_tokens: int,
        streamer: BaseStreamer,
        stop: threading.Event,
        sampling: Sampling = GREEDY,
    ) -> None:
        """Blocking: runs in a worker thread; the streamer receives every token. Sampling
        draws the token in a logits processor of its own (after any steering), and
        ``generate()`` then takes it greedily."""
        model = self.model
        assert isinstance(model, GenerationMixin)
        input_ids = torch.tensor([prompt], dtype=torch.long)
        processors = self._logits_processor()
        if not sampling.greedy:
            processors = LogitsProcessorList([*(processors or []), SeededSampler(sampling)])
        with torch.inference_mode():
            model.generate(  # type: ignore[misc]  # transformers' self-Protocol misses attrs
                input_ids=input_ids,
                attention_mask=torch.ones_like(input_ids),
                max_new_tokens=max_new_tokens,
                do_sample=False,
                streamer=streamer,
                stopping_criteria=StoppingCriteriaList([StopWhenSet(stop)]),
                logits_processor=processors,
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
