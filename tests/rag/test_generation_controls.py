"""/generate's decoding controls over the real stack: temperature, top_p, stop and seed reach
the model (seeded answers repeat, stop sequences cut), defaults are today's greedy answers,
and values out of bounds are 422s in the API's error shape."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests.rag.test_http import sse_frames

PROMPT: dict[str, Any] = {
    "question": "Tell me a long story",
    "context": "",
    "use_knowledge_base": False,
    "num_tokens": 40,
}


async def answer(client: httpx.AsyncClient, **controls: Any) -> tuple[str, str]:
    """The answer's text and finish reason."""
    response = await client.post(
        "/generate", json={**PROMPT, **controls}, headers={"accept": "text/event-stream"}
    )
    assert response.status_code == 200, response.text
    *deltas, (event, done) = sse_frames(response.text)
    assert event == "done"
    return "".join(data["delta"] for _, data in deltas), done["finish_reason"]


async def test_the_defaults_are_greedy_and_explicit_defaults_change_nothing(
    client: httpx.AsyncClient,
) -> None:
    default = await answer(client)
    assert default == await answer(client)
    assert default == await answer(client, temperature=0, top_p=1, stop=[], seed=None)
    assert default == await answer(client, seed=3)  # a seed alone samples nothing


async def test_seeded_sampling_repeats_and_differs_by_seed(client: httpx.AsyncClient) -> None:
    greedy, _ = await answer(client)
    first, _ = await answer(client, temperature=1.5, seed=1)
    assert first == (await answer(client, temperature=1.5, seed=1))[0]
    assert first != (await answer(client, temperature=1.5, seed=2))[0]
    assert first != greedy


async def test_a_stop_sequence_cuts_the_answer(client: httpx.AsyncClient) -> None:
    full, reason = await answer(client)
    assert reason == "length"
    stop = full[10:13]
    text, reason = await answer(client, stop=[stop])
    assert (text, reason) == (full[: full.index(stop)], "stop")
    plain = await client.post("/generate", json={**PROMPT, "stop": [stop]})
    assert plain.text == text


@pytest.mark.parametrize(
    ("controls", "loc", "kind"),
    [
        ({"temperature": -0.5}, ["body", "temperature"], "greater_than_equal"),
        ({"temperature": 2.5}, ["body", "temperature"], "less_than_equal"),
        ({"temperature": "hot"}, ["body", "temperature"], "float_type"),
        ({"top_p": 0}, ["body", "top_p"], "greater_than"),
        ({"top_p": 1.01}, ["body", "top_p"], "less_than_equal"),
        ({"stop": ["a", "b", "c", "d", "e"]}, ["body", "stop"], "too_long"),
        ({"stop": [""]}, ["body", "stop", 0], "string_too_short"),
        ({"stop": ["x" * 65]}, ["body", "stop", 0], "string_too_long"),
        ({"stop": "END"}, ["body", "stop"], "list_type"),
        ({"seed": -1}, ["body", "seed"], "greater_than_equal"),
        ({"seed": 2**32}, ["body", "seed"], "less_than_equal"),
        ({"seed": 1.5}, ["body", "seed"], "int_type"),
    ],
)
async def test_controls_out_of_bounds_are_422(
    client: httpx.AsyncClient, controls: dict[str, Any], loc: list[Any], kind: str
) -> None:
    response = await client.post("/generate", json={**PROMPT, **controls})
    assert response.status_code == 422, response.text
    [detail] = response.json()["detail"]
    assert (detail["loc"], detail["type"]) == (loc, kind)
