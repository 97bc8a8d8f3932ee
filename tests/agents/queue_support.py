"""Test support of the queue tests (idempotency keys, retries, concurrency limits, priorities):
raw HTTP calls that show the response headers, manifests and interval arithmetic."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from datetime import datetime
from typing import Any, TypeVar

import httpx

from generated.agents import models
from generated.agents.client import ServiceClient
from tests.agents.support import RunningServer

REPLAYED = "Idempotent-Replayed"

ENTRYPOINT = ["python", "main.py"]

T = TypeVar("T")


@contextmanager
def raw_client(server: RunningServer, api_key: str) -> Iterator[httpx.Client]:
    """Plain HTTP to ``server`` as ``api_key`` (to see statuses, bodies and headers as sent)."""
    with httpx.Client(
        base_url=server.url, headers={"authorization": f"Bearer {api_key}"}, timeout=30.0
    ) as client:
        yield client


def config(**fields: Any) -> dict[str, Any]:
    """An agent manifest running ``main.py`` with ``fields`` added."""
    return {"entrypoint": ENTRYPOINT, **fields}


def no_jitter_retries(
    max_attempts: int,
    initial_seconds: float,
    *,
    factor: float = 2.0,
    max_seconds: float = 5.0,
    retry_on: list[str] | None = None,
) -> dict[str, Any]:
    """A manifest's ``retries`` with a deterministic backoff (``jitter: none``)."""
    retries: dict[str, Any] = {
        "maxAttempts": max_attempts,
        "backoff": {
            "initialSeconds": initial_seconds,
            "factor": factor,
            "maxSeconds": max_seconds,
            "jitter": "none",
        },
    }
    if retry_on is not None:
        retries["retryOn"] = retry_on
    return retries


def poll(
    read: Callable[[], T], done: Callable[[T], bool], timeout: float, what: str, every: float = 0.05
) -> T:
    """``read()`` until ``done`` holds for its value (fails after ``timeout`` seconds)."""
    deadline = time.monotonic() + timeout
    while True:
        value = read()
        if done(value):
            return value
        assert time.monotonic() < deadline, f"{what}: still {value!r} after {timeout} s"
        time.sleep(every)


def execution(
    client: ServiceClient, execution_id: str, attempts: bool = False
) -> models.AgentExecutionSummary:
    """One execution (with its attempts when ``attempts``)."""
    include: list[Any] | None = ["attempts"] if attempts else None
    return client.agents.executions.get(execution_id, include=include).execution


def executions(
    client: ServiceClient, agent: str, attempts: bool = False
) -> list[models.AgentExecutionSummary]:
    """Every execution of ``agent`` (at most 200), newest first."""
    include: list[Any] | None = ["attempts"] if attempts else None
    return client.agents.executions.list(agent, include=include, limit=200).executions


def attempts_of(summary: models.AgentExecutionSummary) -> list[models.ExecutionAttempt]:
    """The execution's attempts (asked for with ``include=attempts``)."""
    attempts = summary.attempts
    assert isinstance(attempts, list), f"no attempts on {summary.id}"
    return attempts


def max_overlap(intervals: Iterable[tuple[datetime, datetime]]) -> int:
    """How many of the half-open intervals [start, end) overlap at most at one instant."""
    spans = list(intervals)
    events = sorted(
        [(start, 1) for start, _ in spans] + [(end, -1) for _, end in spans],
        key=lambda event: (event[0], event[1]),  # an end before a start at the same instant
    )
    deepest = depth = 0
    for _, step in events:
        depth += step
        deepest = max(deepest, depth)
    return deepest


def status_of(summary: models.AgentExecutionSummary) -> str:
    return str(summary.status.value)
