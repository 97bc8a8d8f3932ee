"""Concurrency limits per key (``config.concurrency``): on PostgreSQL, 50 runs of one customer
and a few of another queued on a server without a worker, then drained by three
``agents-worker`` processes of two slots each; the database and the API are sampled all along
and the attempts checked afterwards: never more than 2 running for the customer, the other
customer not held up, every run completed. And the 400 of a key that cannot be computed."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from generated.agents import models
from generated.agents.client import ServiceClient, ServiceValidationError
from handlers.agents.execution.leases import ACTIVE
from handlers.agents.storage.schema import Execution
from tests.agents.queue_support import attempts_of, config, executions, max_overlap, status_of
from tests.agents.run_support import (
    TERMINAL,
    new_agent,
    tuned_server,
    wait_for,
    worker_processes,
)
from tests.agents.support import RunningServer, Storage

LIMIT = 2
BY_CUSTOMER = {"limit": LIMIT, "key": "${{ inputs.customer }}"}
ACME_RUNS = 50
OTHER_RUNS = 5
WORKERS = 3
SLOTS_PER_WORKER = 2
DRAIN_TIMEOUT_SECONDS = 150.0
WAITING_FOR_ACME = f"waiting for a concurrency slot: {LIMIT} of {LIMIT} running for 'acme'"


def _active_by_group(agent_id: str) -> Callable[[Session], tuple[Counter[str], int]]:
    """A read of the agent's active executions per group value, and how many have ended."""

    def read(session: Session) -> tuple[Counter[str], int]:
        rows = session.execute(
            select(Execution.concurrency_key, Execution.status, func.count())
            .where(Execution.agent_id == agent_id)
            .group_by(Execution.concurrency_key, Execution.status)
        ).all()
        active: Counter[str] = Counter()
        ended = 0
        for key, status, count in rows:
            if status in ACTIVE:
                active[str(key).split(":", 1)[1]] += int(count)
            elif status in TERMINAL:
                ended += int(count)
        return active, ended

    return read


class Samples:
    """What was seen while the queue drained: the most active executions per customer at once
    (database and API), and the pending reasons the API gave."""

    def __init__(self) -> None:
        self.database_peak: Counter[str] = Counter()
        self.api_peak: Counter[str] = Counter()
        self.reasons: dict[str, set[str]] = {"acme": set(), "other": set()}
        self.database_samples = 0
        self.api_samples = 0

    def from_database(self, active: Counter[str]) -> None:
        self.database_samples += 1
        for customer, count in active.items():
            self.database_peak[customer] = max(self.database_peak[customer], count)

    def from_api(self, client: ServiceClient, slug: str) -> None:
        self.api_samples += 1
        active = client.agents.executions.list(slug, status=list(ACTIVE), limit=200).executions
        running = Counter(_customer(e) for e in active)
        for customer, count in running.items():
            self.api_peak[customer] = max(self.api_peak[customer], count)
        waiting = client.agents.executions.list(slug, status=["pending"], limit=20).executions
        for execution in waiting:
            if execution.pending_reason is not None:
                self.reasons[_customer(execution)].add(execution.pending_reason)


def _customer(execution: models.AgentExecutionSummary) -> str:
    assert isinstance(execution.input, dict)
    return str(execution.input["customer"])


def _drain(server: RunningServer, client: ServiceClient, slug: str, total: int) -> Samples:
    """Sample the queue until ``total`` executions of the agent ended."""
    agent_id = client.agents.get(slug).agent.id
    read = _active_by_group(agent_id)
    samples = Samples()
    deadline = time.monotonic() + DRAIN_TIMEOUT_SECONDS
    while True:
        active, ended = server.server.database.read_sync(read)
        samples.from_database(active)
        if ended == total:
            return samples
        if samples.database_samples % 10 == 0:
            samples.from_api(client, slug)
        assert time.monotonic() < deadline, f"only {ended} of {total} ended"
        time.sleep(0.01)


def test_a_limit_of_two_per_customer_holds_across_three_workers(
    postgres_storage: Storage, tmp_path: Path
) -> None:
    storage = postgres_storage
    worker_env = {"AGENTS_WORKER_CONCURRENCY": str(SLOTS_PER_WORKER)}
    with (
        tuned_server(storage, embedded_worker=False) as server,
        server.client(server.key("admin", scope_all=True, can_create_agents=True)) as client,
    ):
        slug = new_agent(client, "limit", config=config(concurrency=BY_CUSTOMER))
        submitted: dict[str, list[str]] = {"acme": [], "other": []}
        for index in range(ACME_RUNS):
            run = client.agents.run(slug, {"input": {"customer": "acme", "sleep": 0.3,
                                                     "n": index}})  # fmt: skip
            submitted["acme"].append(run.execution_id)
        for index in range(OTHER_RUNS):
            run = client.agents.run(slug, {"input": {"customer": "other", "sleep": 0.3,
                                                     "n": index}})  # fmt: skip
            submitted["other"].append(run.execution_id)
        queued = executions(client, slug)
        assert {status_of(e) for e in queued} == {"pending"}
        assert {e.pending_reason for e in queued} == {None}  # nothing runs yet: no slot taken

        with worker_processes(storage, tmp_path, WORKERS, worker_env):
            samples = _drain(server, client, slug, ACME_RUNS + OTHER_RUNS)
        ended = {e.id: e for e in executions(client, slug, attempts=True)}

    # never more than 2 running per customer, as sampled in the database and through the API
    assert samples.database_peak["acme"] == LIMIT, samples.database_peak
    assert samples.database_peak["other"] <= LIMIT, samples.database_peak
    assert samples.api_samples > 0 and samples.api_peak["acme"] <= LIMIT, samples.api_peak
    # a waiting acme run names the limit; the reasons of other runs never name acme's
    assert samples.reasons["acme"] == {WAITING_FOR_ACME}, samples.reasons
    assert all("'other'" in reason for reason in samples.reasons["other"]), samples.reasons

    # every run completed, in one attempt
    assert len(ended) == ACME_RUNS + OTHER_RUNS
    assert Counter(status_of(e) for e in ended.values()) == {"completed": ACME_RUNS + OTHER_RUNS}
    for customer, ids in submitted.items():
        attempts = [attempts_of(ended[i]) for i in ids]
        assert all(len(a) == 1 and a[0].outcome.value == "completed" for a in attempts)
        spans = [(a[0].started_at, a[0].ended_at) for a in attempts]
        assert all(isinstance(start, datetime) for start, _ in spans)
        # the recorded attempts never overlap more than 2 deep
        depth = max_overlap((start, end) for start, end in spans if start is not None)
        assert depth <= LIMIT, (customer, depth)
    # every execution ran on one of the three competing workers (which ones took acme's slots
    # is up to the scheduler: one process may take them all, the limit holds either way)
    workers = {attempts_of(ended[i])[0].worker_id for i in submitted["acme"]}
    assert workers and all(isinstance(worker, str) for worker in workers), workers

    # acme's queue did not hold up the other customer's runs
    last_acme_start = max(_started(ended[i]) for i in submitted["acme"])
    assert all(_completed(ended[i]) < last_acme_start for i in submitted["other"])


def _started(execution: models.AgentExecutionSummary) -> datetime:
    assert isinstance(execution.started_at, datetime)
    return execution.started_at


def _completed(execution: models.AgentExecutionSummary) -> datetime:
    assert isinstance(execution.completed_at, datetime)
    return execution.completed_at


def test_a_key_that_cannot_be_computed_from_the_input_is_a_400(
    admin: ServiceClient, unique: str
) -> None:
    by_name = {"limit": 1, "key": "${{ inputs.customer.name }}"}
    slug = new_agent(admin, unique, config=config(concurrency=by_name))

    refused_inputs: list[dict[str, Any]] = [
        {"customer": "acme"},  # a string has no .name
        {"customer": {"name": "x" * 201}},  # a value longer than 200 characters
    ]
    for given in refused_inputs:
        with pytest.raises(ServiceValidationError) as refused:
            admin.agents.run(slug, {"input": given})
        issues = refused.value.envelope["issues"]
        assert [issue["field"] for issue in issues] == ["body.input"], issues
        assert "concurrency key" in issues[0]["message"]
    with pytest.raises(ServiceValidationError) as multipart:
        admin.agents.run(slug, {"input": {"customer": "acme"}}, files={"doc": b"x"})
    assert [i["field"] for i in multipart.value.envelope["issues"]] == ["body._json.input"]
    assert admin.agents.executions.list(slug).total == 0

    accepted = admin.agents.run(slug, {"input": {"customer": {"name": "acme"}}})
    shown = admin.agents.executions.get(accepted.execution_id).execution
    assert status_of(shown) in ("pending", "running", "finalizing", "completed")


def test_a_key_that_is_not_an_expression_is_refused_with_the_manifest(
    admin: ServiceClient, unique: str
) -> None:
    slug = f"limit-{unique}"
    with pytest.raises(ServiceValidationError) as refused:
        admin.agents.create({"name": slug, "slug": slug, "config": config(
            concurrency={"limit": 2, "key": "${{ inputs.customer "})})  # fmt: skip
    fields = [issue["field"] for issue in refused.value.envelope["issues"]]
    assert fields == ["body.config.concurrency.key"]
    with pytest.raises(ServiceValidationError):
        admin.agents.create({"name": slug, "slug": slug,
                             "config": config(concurrency={"limit": 0})})  # fmt: skip


def test_without_a_key_the_limit_holds_for_the_whole_agent(
    admin: ServiceClient, unique: str
) -> None:
    slug = new_agent(admin, unique, config=config(concurrency={"limit": 1}))
    first = admin.agents.run(slug, {"input": {"sleep": 30, "customer": "a"}})
    second = admin.agents.run(slug, {"input": {"customer": "b"}})
    try:
        deadline = time.monotonic() + 30
        while True:
            waiting = admin.agents.executions.get(second.execution_id).execution
            if waiting.pending_reason is not None:
                break
            assert status_of(waiting) == "pending", "the second run started beside the first"
            assert time.monotonic() < deadline, "no pending reason shown"
            time.sleep(0.05)
        assert waiting.pending_reason == "waiting for a concurrency slot: 1 of 1 running"
    finally:
        admin.agents.executions.cancel(first.execution_id)
    assert status_of(wait_for(admin, second.execution_id)) == "completed"
