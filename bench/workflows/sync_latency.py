"""(b) The three-step workflow run with ``wait_for_completion`` on the embedded default
(SQLite, the server's own worker): the latency from ``POST /workflows/{id}/run`` to the 201
answer with a terminal status, against the sum of the run's steps' own run times (each
step's ``completedAt - startedAt``, read back with ``includeSteps=true``) in the same run;
and the engine run directly in this process, taking turns with the service run by run."""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

from bench.agents.report import Report, Verdict, percentile, say
from bench.agents.services import BenchError, running_service, service_env
from bench.workflows.workflow import (
    TERMINAL,
    EngineDirect,
    check_result,
    create_workflow,
    seconds_between,
    step_seconds,
)
from generated.agents import models
from generated.agents.client import ServiceClient

__all__ = ["bench_sync_latency"]

WARMUP_RUNS = 3
WAIT_SECONDS = 60


def _status(answer: models.RunWorkflowResponse) -> str | None:
    status = answer.status
    root = status.root if isinstance(status, models.Status) else status
    return root.value if isinstance(root, models.StatusEnum) else None


def waited_run(client: ServiceClient, slug: str, n: int) -> dict[str, float]:
    """One ``POST …/run?wait_for_completion`` and what the service recorded of it, in
    seconds: ``latency`` (POST to answer), ``steps`` (sum of the steps' own run times),
    ``engine`` (the execution's ``startedAt`` to ``completedAt``), ``server`` (its
    ``createdAt`` to ``completedAt``)."""
    started = time.perf_counter()
    answer = client.workflows.run(slug, {"input": {"n": n}}, wait_for_completion=WAIT_SECONDS)
    latency = time.perf_counter() - started
    status = _status(answer)
    if status not in TERMINAL:
        raise BenchError(f"run {n} answered with status {status} after {latency:.1f} s")
    check_result(n, status, answer.result, answer.error)
    got = client.workflows.executions.get(answer.execution_id, include_steps=True).root
    if not isinstance(got, models.WorkflowExecutionStatusResponse):
        raise BenchError(f"execution {answer.execution_id} came back without its steps")
    return {
        "latency": latency,
        "steps": sum(step_seconds(got.steps)),
        "engine": seconds_between(got.started_at, got.completed_at),
        "server": seconds_between(got.created_at, got.completed_at),
    }


def bench_sync_latency(args: argparse.Namespace, tmp: Path) -> Report:
    """Part (b): service and direct engine take turns, run by run, on the same machine."""
    say(
        f"(b) three-step workflow with wait_for_completion on the embedded default (SQLite), "
        f"{args.runs} runs"
    )
    samples: dict[str, list[float]] = {
        name: [] for name in ("latency", "steps", "engine", "server", "direct", "direct_steps")
    }
    overhead: list[float] = []
    env = service_env(tmp / "embedded", None)
    with (
        running_service(env, tmp) as service,
        service.client() as client,
        EngineDirect() as direct_engine,
    ):
        slug = create_workflow(client, "bench-sync")
        for n in range(-WARMUP_RUNS, args.runs):
            timings = waited_run(client, slug, n)
            timings["direct"], timings["direct_steps"] = direct_engine.run_seconds(n)
            if n >= 0:
                for name, seconds in timings.items():
                    samples[name].append(seconds * 1000)
                overhead.append((timings["latency"] - timings["steps"]) * 1000)
    p50 = {name: statistics.median(values) for name, values in samples.items()}
    latency_p99 = percentile(samples["latency"], 0.99)
    overhead_p50 = statistics.median(overhead)
    ratio = p50["latency"] / p50["steps"] if p50["steps"] > 0 else float("inf")
    say(
        f"  POST wait_for_completion p50 {p50['latency']:.1f} p99 {latency_p99:.1f} ms | "
        f"sum of its 3 steps' run times p50 {p50['steps']:.2f} ms | overhead p50 "
        f"{overhead_p50:.1f} ms | execution started->completed p50 {p50['engine']:.1f} ms, "
        f"created->completed p50 {p50['server']:.1f} ms | engine directly p50 "
        f"{p50['direct']:.2f} ms (steps {p50['direct_steps']:.3f} ms)"
    )
    figures = {
        "latency_p50_ms": p50["latency"],
        "latency_p99_ms": latency_p99,
        "steps_sum_p50_ms": p50["steps"],
        "overhead_p50_ms": overhead_p50,
        "latency_over_steps": ratio,
        "execution_run_p50_ms": p50["engine"],
        "execution_created_to_completed_p50_ms": p50["server"],
        "direct_p50_ms": p50["direct"],
        "direct_steps_sum_p50_ms": p50["direct_steps"],
    }
    return Report(
        figures,
        [
            Verdict("(b) sync run latency p50", p50["latency"], "ms"),
            Verdict("(b) sync run latency p99", latency_p99, "ms"),
            Verdict("(b) sum of step run times p50", p50["steps"], "ms"),
            Verdict("(b) latency - step sum p50", overhead_p50, "ms"),
            Verdict("(b) latency p50 / step sum p50", ratio, "x"),
            Verdict("(b) execution started->completed p50", p50["engine"], "ms"),
            Verdict("(b) execution created->completed p50", p50["server"], "ms"),
            Verdict("(b) engine directly p50", p50["direct"], "ms"),
            Verdict("(b) latency p50 / engine directly", p50["latency"] / p50["direct"], "x"),
        ],
    )
