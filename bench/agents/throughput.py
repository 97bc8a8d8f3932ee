"""(c) Trivial executions completed per second by ``agents-worker`` processes on PostgreSQL
(the server with ``AGENTS_EMBEDDED_WORKER=false``): ``N`` runs submitted without waiting, the
clock stopped when the list says all are completed; against the same number of ``python
main.py`` runs directly, as many at a time as the workers' slots."""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from pathlib import Path
from typing import Literal

from bench.agents.report import Report, Verdict, say
from bench.agents.services import BenchError, worker_fleet
from bench.agents.trivial_agent import create_agent, direct_runs_per_second
from generated.agents.client import ServiceClient

__all__ = ["ListedStatus", "bench_throughput", "completed_per_second"]

DEADLINE_S = 600.0
POLL_S = 0.05

ListedStatus = Literal[
    "created",
    "pending",
    "running",
    "waiting",
    "finalizing",
    "completed",
    "failed",
    "cancelled",
    "rejected",
]
"""A status the executions lists filter on (agents' and workflows' alike)."""


def completed_per_second(
    submit: Callable[[int], object], listed: Callable[[list[ListedStatus]], int], count: int
) -> tuple[float, float]:
    """``submit(n)`` for ``n`` in ``range(count)``, then wait until ``listed(["completed"])``
    (how many executions the list shows in those statuses) reaches ``count``: (executions/s,
    seconds to submit)."""
    started = time.perf_counter()
    for n in range(count):
        submit(n)
    submitted = time.perf_counter() - started
    while (done := listed(["completed"])) < count:
        if listed(["failed", "cancelled", "rejected"]):
            raise BenchError(f"some executions did not complete ({done} of {count} completed)")
        if time.perf_counter() - started > DEADLINE_S:
            raise BenchError(f"only {done} of {count} executions completed in {DEADLINE_S:.0f} s")
        time.sleep(POLL_S)
    return count / (time.perf_counter() - started), submitted


def _agent_runs_per_second(client: ServiceClient, slug: str, count: int) -> tuple[float, float]:
    return completed_per_second(
        lambda n: client.agents.run(slug, {"input": {"n": n}}),
        lambda statuses: client.agents.executions.list(slug, status=statuses, limit=1).total,
        count,
    )


def bench_throughput(args: argparse.Namespace, tmp: Path) -> Report:
    """Part (c); PostgreSQL must be reachable."""
    slots = args.workers * args.worker_concurrency
    say(
        f"(c) {args.submissions} trivial runs with {args.workers} agents-worker processes "
        f"({args.worker_concurrency} executions each) on PostgreSQL"
    )
    with worker_fleet(args.workers, args.worker_concurrency, tmp) as client:
        warmup = create_agent(client, "warmup")
        _agent_runs_per_second(client, warmup, slots)
        slug = create_agent(client, "throughput")
        rate, submitted = _agent_runs_per_second(client, slug, args.submissions)
    direct_root = tmp / "direct-throughput"
    direct_root.mkdir()
    direct = direct_runs_per_second(direct_root, args.submissions, slots)
    say(
        f"  {rate:.1f} executions/s (submitting took {submitted:.1f} s) | python main.py "
        f"directly, {slots} at a time: {direct:.1f} runs/s"
    )
    figures = {"executions_per_s": rate, "submit_s": submitted, "direct_runs_per_s": direct}
    return Report(
        figures,
        [
            Verdict(f"(c) executions/s, {args.workers} workers", rate, "1/s"),
            Verdict(f"(c) python main.py/s, {slots} at a time", direct, "1/s"),
            Verdict("(c) executions/s / direct", rate / direct, "x"),
            Verdict("(c) runs submitted/s (POST, no wait)", args.submissions / submitted, "1/s"),
        ],
    )
