"""Generation controls on the tiny random model: seeded sampling (reproducible, private to each
request), nucleus sampling, stop sequences cut before the stop text; greedy stays the default."""

from __future__ import annotations

import asyncio

import pytest

from handlers.rag.generation.base import GREEDY, Finish, Sampling
from handlers.rag.generation.stop_sequences import StopSequences
from tests.rag.generation.steering import SteeredGenerator
from tests.rag.generation.test_local import MESSAGES, collect, reference_ids

TOKENS = 40
HOT = 1.5  # flattens the tiny model's distribution: sampled answers differ early


async def text_of(generator: SteeredGenerator, sampling: Sampling = GREEDY) -> tuple[str, Finish]:
    deltas, finish = await collect(generator.stream(MESSAGES, TOKENS, sampling))
    return "".join(deltas), finish


async def test_the_default_is_greedy_decoding(generator: SteeredGenerator) -> None:
    greedy = generator.tokenizer.decode(reference_ids(generator, TOKENS), skip_special_tokens=True)
    assert (await text_of(generator))[0] == greedy
    assert (await text_of(generator, Sampling(seed=7, top_p=0.5)))[0] == greedy  # both unused


async def test_the_same_seed_gives_the_same_answer_and_other_seeds_others(
    generator: SteeredGenerator,
) -> None:
    first, _ = await text_of(generator, Sampling(temperature=HOT, seed=1))
    again, _ = await text_of(generator, Sampling(temperature=HOT, seed=1))
    others = {(await text_of(generator, Sampling(temperature=HOT, seed=s)))[0] for s in (2, 3)}
    greedy, _ = await text_of(generator)
    assert first == again
    assert first not in others and len(others) == 2
    assert greedy not in {first, *others}


async def test_concurrent_requests_do_not_disturb_each_others_seeds(
    pair_generator: SteeredGenerator,
) -> None:
    """Each request draws from its own random stream: two at once, with their own seeds,
    answer as each does alone."""
    samplings = [Sampling(temperature=HOT, seed=11), Sampling(temperature=HOT, seed=12)]
    alone = [(await text_of(pair_generator, sampling))[0] for sampling in samplings]
    together = await asyncio.gather(*(text_of(pair_generator, s) for s in samplings))
    assert [text for text, _ in together] == alone
    assert pair_generator.peak_active == 2


async def test_a_tiny_nucleus_leaves_only_the_most_likely_token(
    generator: SteeredGenerator,
) -> None:
    greedy, _ = await text_of(generator)
    narrow = Sampling(temperature=HOT, top_p=1e-6, seed=5)
    assert (await text_of(generator, narrow))[0] == greedy
    assert (await text_of(generator, Sampling(temperature=HOT, seed=5)))[0] != greedy


async def test_a_stop_sequence_ends_the_answer_before_it(generator: SteeredGenerator) -> None:
    full, full_finish = await text_of(generator)
    assert full_finish == Finish("length")
    stop = full[len(full) // 2 : len(full) // 2 + 3]
    assert len(stop) == 3
    text, finish = await text_of(generator, Sampling(stop=(stop, "never in the answer")))
    assert text == full[: full.index(stop)]
    assert finish == Finish("stop")
    assert stop not in text


async def test_text_that_only_starts_like_a_stop_sequence_is_sent_at_the_end(
    generator: SteeredGenerator,
) -> None:
    full, _ = await text_of(generator)
    almost = full[-2:] + "\x00"  # the answer ends with the first two of its characters
    text, finish = await text_of(generator, Sampling(stop=(almost,)))
    assert (text, finish) == (full, Finish("length"))


def test_stop_sequences_hold_back_possible_beginnings_only() -> None:
    stops = StopSequences(["END", "\n\n"])
    assert stops.feed("The answer E") == "The answer "
    assert stops.feed("N") == ""
    assert stops.feed("X and\n") == "ENX and"
    assert stops.feed("\nmore") == ""
    assert stops.stopped
    assert stops.feed("later") == ""
    assert stops.flush() == ""


def test_the_earliest_stop_sequence_wins_and_flush_returns_what_was_held() -> None:
    stops = StopSequences(["cd", "abc"])
    assert stops.feed("xxabcd") == "xx"
    unstopped = StopSequences(["abc"])
    assert unstopped.feed("xab") == "x"
    assert unstopped.flush() == "ab"


@pytest.mark.parametrize(
    "options",
    [
        {"temperature": -0.1},
        {"temperature": 2.01},
        {"top_p": 0.0},
        {"top_p": 1.5},
        {"stop": ("a", "b", "c", "d", "e")},
        {"stop": ("",)},
        {"stop": ("x" * 65,)},
        {"seed": -1},
        {"seed": 2**32},
    ],
)
def test_sampling_out_of_bounds_is_refused(options: dict[str, object]) -> None:
    with pytest.raises(ValueError):
        Sampling(**options)  # type: ignore[arg-type]


async def test_a_vanishing_temperature_decodes_greedily(generator: SteeredGenerator) -> None:
    """Dividing by 1e-300 would overflow to infinities: such temperatures are greedy."""
    greedy, _ = await text_of(generator)
    assert (await text_of(generator, Sampling(temperature=1e-300, seed=1)))[0] == greedy
    assert Sampling(temperature=0.0009).greedy and not Sampling(temperature=0.001).greedy
