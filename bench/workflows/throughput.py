"""(a) Three-step workflow executions completed per second by ``agents-worker`` processes on
PostgreSQL (the server with ``AGENTS_EMBEDDED_WORKER=false``): ``N`` runs submitted without
waiting, the clock stopped when the executions list says all are completed; against the same
``N`` runs of the engine directly in this process, one after the other."""

from __future__ import annotations

import argparse
import statistics
from pathlib import Path
from typing import Any

from bench.agents.report import Report, Verdict, say
from bench.agents.services import BenchError, worker_fleet
from bench.agents.throughput import completed_per_second
from bench.workflows.workflow import EngineDirect, check_result, create_workflow, seconds_between
from generated.agents import models
from generated.agents.client import ServiceClient

__all__ = ["bench_throughput"]

PAGE = 100


def _workflow_runs_per_second(client: ServiceClient, slug: str, count: int) -> tuple[float, float]:
    return completed_per_second(
        lambda n: client.workflows.run(slug, {"input": {"n": n}}),
        lambda statuses: client.workflows.executions.list(slug, status=statuses, limit=1).total,
        count,
    )


def all_executions(client: ServiceClient, slug: str) -> list[models.ExecutionSummary]:
    """Every execution of ``slug``, page by page."""
    executions: list[models.ExecutionSummary] = []
    while True:
        page = client.workflows.executions.list(slug, limit=PAGE, offset=len(executions))
        executions += page.data
        if not page.data or len(executions) >= page.total:
            return executions


def worker_seconds(executions: list[models.ExecutionSummary]) -> list[float]:
    """Each execution's time in a worker (``completedAt - startedAt``), its result checked."""
    seconds = []
    for execution in executions:
        trigger: Any = execution.trigger_input
        n = trigger.get("n") if isinstance(trigger, dict) else None
        if not isinstance(n, int):
            raise BenchError(f"execution {execution.id} has trigger input {trigger!r}")
        check_result(n, execution.status.value, execution.result, execution.error)
        seconds.append(seconds_between(execution.started_at, execution.completed_at))
    return seconds


def bench_throughput(args: argparse.Namespace, tmp: Path) -> Report:
    """Part (a); PostgreSQL must be reachable."""
    slots = args.workers * args.worker_concurrency
    say(
        f"(a) {args.submissions} runs of a three-step workflow with {args.workers} agents-worker "
        f"processes ({args.worker_concurrency} executions each) on PostgreSQL"
    )
    with worker_fleet(args.workers, args.worker_concurrency, tmp) as client:
        warmup = create_workflow(client, "bench-warmup")
        _workflow_runs_per_second(client, warmup, slots)
        slug = create_workflow(client, "bench-throughput")
        rate, submitted = _workflow_runs_per_second(client, slug, args.submissions)
        in_worker = worker_seconds(all_executions(client, slug))
    if len(in_worker) != args.submissions:
        raise BenchError(f"{len(in_worker)} executions listed, {args.submissions} submitted")
    with EngineDirect() as direct_engine:
        direct_engine.runs_per_second(slots)  # warm-up
        direct = direct_engine.runs_per_second(args.submissions)
    worker_ms = statistics.median(in_worker) * 1000
    say(
        f"  {rate:.1f} executions/s, {1000 / rate:.1f} ms each (submitting took "
        f"{submitted:.1f} s; in a worker p50 {worker_ms:.1f} ms) | the engine directly, one "
        f"at a time: {direct:.0f} runs/s, {1000 / direct:.2f} ms each"
    )
    figures = {
        "executions_per_s": rate,
        "ms_per_execution": 1000 / rate,
        "submit_s": submitted,
        "worker_p50_ms": worker_ms,
        "direct_runs_per_s": direct,
        "direct_ms_per_run": 1000 / direct,
        "ms_per_execution_over_direct": direct / rate,
    }
    return Report(
        figures,
        [
            Verdict(f"(a) executions/s, {args.workers} workers", rate, "1/s"),
            Verdict("(a) wall ms per execution", 1000 / rate, "ms"),
            Verdict("(a) in a worker p50 (started->completed)", worker_ms, "ms"),
            Verdict("(a) engine directly, runs/s", direct, "1/s"),
            Verdict("(a) engine directly, ms per run", 1000 / direct, "ms"),
            Verdict("(a) ms per execution / engine directly", direct / rate, "x"),
            Verdict("(a) runs submitted/s (POST, no wait)", args.submissions / submitted, "1/s"),
        ],
    )
