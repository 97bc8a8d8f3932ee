"""What an agent's manifest says about running its executions: retries and concurrency groups.

* **Retries** (``retries``): up to ``maxAttempts`` attempts for the outcomes in ``retryOn``
  (``failed``, ``timeout``, ``worker_lost``; default all). After attempt n the execution waits
  ``min(initialSeconds * factor ** (n - 1), maxSeconds)`` (all of it with ``jitter: none``, a
  uniformly random part of it with ``full``, the default), ``pending`` with ``not_before`` set.
* **Concurrency** (``concurrency``): at most ``limit`` executions of the agent run at once per
  value of ``key``, an expression of the workflow language over the input, named ``inputs`` as
  in workflows (``${{ inputs.customer }}``), evaluated when the run is submitted; the group is
  ``<agent id>:<value>`` (the value as text, JSON when it is not text, at most 200
  characters). The workers' claim enforces it (``execution/leases.py``).
"""

from __future__ import annotations

import json
import random
from collections.abc import Mapping
from typing import Any

from generated.agents import models
from handlers.agents.workflows.expressions import ExpressionError
from handlers.agents.workflows.limits import LimitError
from handlers.agents.workflows.templates import RenderError, compile_string, render
from webrest import BadRequest, ErrorDetail

__all__ = [
    "MAX_GROUP_CHARS",
    "RETRYABLE",
    "concurrency_group",
    "normalize_concurrency",
    "normalize_retries",
    "retry_delay",
]

RETRYABLE = ("failed", "timeout", "worker_lost")
DEFAULT_BACKOFF: dict[str, Any] = {
    "initialSeconds": 1.0,
    "factor": 2.0,
    "maxSeconds": 300.0,
    "jitter": "full",
}
MAX_GROUP_CHARS = 200

Field = tuple[str | int, ...]


def _invalid(field: Field, message: str) -> BadRequest:
    return BadRequest(message, [ErrorDetail(field, message, "value_error")])


def normalize_retries(retries: object, field: Field) -> dict[str, Any] | None:
    """The stored form of a manifest's ``retries`` (every field present), or ``None``; a
    ``retryOn`` naming an outcome twice is a 400 (the spec's ``uniqueItems``)."""
    if not isinstance(retries, models.AgentRetries):
        return None
    backoff = dict(DEFAULT_BACKOFF)
    given = retries.backoff
    if isinstance(given, models.RetryBackoff):
        backoff.update(
            {
                "initialSeconds": float(given.initial_seconds),
                "factor": float(given.factor),
                "maxSeconds": float(given.max_seconds),
                "jitter": models.Jitter(given.jitter).value,
            }
        )
    retry_on = list(RETRYABLE)
    if isinstance(retries.retry_on, list):
        retry_on = [models.RetryOnEnum(item).value for item in retries.retry_on]
        if len(set(retry_on)) != len(retry_on):
            raise _invalid((*field, "retries", "retryOn"), "retryOn names an outcome twice")
    return {"maxAttempts": retries.max_attempts, "retryOn": retry_on, "backoff": backoff}


def normalize_concurrency(concurrency: object, field: Field) -> dict[str, Any] | None:
    """The stored form of a manifest's ``concurrency``, its ``key`` compiled to check it (a
    400 naming ``<field>.concurrency.key`` when it is not a valid template)."""
    if not isinstance(concurrency, models.AgentConcurrency):
        return None
    key = concurrency.key if isinstance(concurrency.key, str) else None
    if key is not None:
        try:
            compile_string(key)
        except ExpressionError as error:
            raise _invalid(
                (*field, "concurrency", "key"),
                f"Not a valid expression at offset {error.offset}: {error.message}",
            ) from None
    return {"limit": concurrency.limit} if key is None else {"limit": concurrency.limit, "key": key}


def retry_delay(
    config: Mapping[str, Any],
    outcome: str,
    attempt: int,
    rng: random.Random | None = None,
) -> float | None:
    """Seconds to wait before attempt ``attempt + 1`` of an execution whose attempt
    ``attempt`` ended with ``outcome``; ``None`` when the manifest retries no more."""
    retries = config.get("retries")
    if not isinstance(retries, dict) or outcome not in retries.get("retryOn", RETRYABLE):
        return None
    if attempt >= int(retries.get("maxAttempts", 1)):
        return None
    backoff = {**DEFAULT_BACKOFF, **(retries.get("backoff") or {})}
    nominal = min(
        float(backoff["initialSeconds"]) * float(backoff["factor"]) ** (attempt - 1),
        float(backoff["maxSeconds"]),
    )
    if backoff["jitter"] == "full":
        return (rng or random).uniform(0.0, nominal)
    return nominal


def concurrency_group(
    agent_id: str, config: Mapping[str, Any], input_json: Mapping[str, Any], field: Field
) -> tuple[str, int] | None:
    """The concurrency group and limit of a run of ``agent_id`` with ``input_json``, or
    ``None`` without a limit. CPU-bound (an expression, bounded in time): call it from a
    worker thread. A failing expression is a 400 naming ``<field>.input``."""
    concurrency = config.get("concurrency")
    if not isinstance(concurrency, dict):
        return None
    limit = int(concurrency["limit"])
    key = concurrency.get("key")
    if not isinstance(key, str):
        return f"{agent_id}:", limit
    try:
        value = render(compile_string(key), {"inputs": dict(input_json)})
    except (ExpressionError, RenderError, LimitError) as error:
        raise _invalid(
            (*field, "input"), f"The concurrency key cannot be computed: {error}"
        ) from None
    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True, default=str)
    if len(text) > MAX_GROUP_CHARS:
        raise _invalid(
            (*field, "input"),
            f"The concurrency key's value has {len(text)} characters (at most {MAX_GROUP_CHARS})",
        )
    return f"{agent_id}:{text}", limit
