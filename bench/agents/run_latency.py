"""(b) A trivial agent run from ``POST /agents/{id}/run`` to ``completed`` on the embedded
default (SQLite, the server's own worker, the bubblewrap sandbox): with ``wait_for_completion``
(one request), and ``POST`` then ``GET`` polling; against ``python main.py`` run directly as a
subprocess, and against the same server without the sandbox (``AGENTS_SANDBOX=none``)."""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path
from typing import Any

from bench.agents.report import Report, Verdict, percentile, say
from bench.agents.services import BenchError, running_service, service_env
from bench.agents.trivial_agent import create_agent, direct_run_seconds
from generated.agents.client import ServiceClient

__all__ = ["RUN_P50_TARGET_MS", "bench_run_latency"]

RUN_P50_TARGET_MS = 250.0
SANDBOX_RATIO_TARGET = 1.3
"""Sandboxed over unsandboxed p50 (wait_for_completion): the sandbox's set-up must not
dominate a trivial run."""
WARMUP_RUNS = 3
WAIT_SECONDS = 60
TERMINAL = {"completed", "failed", "cancelled", "rejected"}


def _check(n: int, status: str, output: Any) -> None:
    if status != "completed" or output != {"ok": True, "n": n}:
        raise BenchError(f"run {n} ended {status} with output {output!r}")


def waited_run_seconds(client: ServiceClient, slug: str, n: int) -> float:
    """Seconds of one ``POST …/run?wait_for_completion`` answered with the completed run."""
    started = time.perf_counter()
    run = client.agents.run(slug, {"input": {"n": n}}, wait_for_completion=WAIT_SECONDS)
    elapsed = time.perf_counter() - started
    _check(n, run.status.value, run.output)
    return elapsed


def polled_run_seconds(client: ServiceClient, slug: str, n: int, interval: float) -> float:
    """Seconds from ``POST …/run`` until ``GET`` (every ``interval`` s) reads it ended."""
    started = time.perf_counter()
    run = client.agents.run(slug, {"input": {"n": n}})
    while True:
        execution = client.agents.executions.get(run.execution_id).execution
        if execution.status.value in TERMINAL:
            break
        if time.perf_counter() - started > WAIT_SECONDS:
            raise BenchError(f"run {n} still {execution.status.value} after {WAIT_SECONDS} s")
        time.sleep(interval)
    elapsed = time.perf_counter() - started
    _check(n, execution.status.value, execution.output)
    return elapsed


def bench_run_latency(args: argparse.Namespace, tmp: Path) -> Report:
    """Part (b): the three ways take turns, sample by sample, on the same machine."""
    say(
        f"(b) trivial agent run to completed on the embedded default (SQLite), {args.runs} "
        f"runs per way, polling every {args.poll_interval * 1000:.0f} ms; the same server "
        "without the sandbox alongside"
    )
    direct_root = tmp / "direct"
    direct_root.mkdir()
    samples: dict[str, list[float]] = {"wait": [], "poll": [], "unsandboxed": [], "direct": []}
    env = service_env(tmp / "embedded", None)
    unsandboxed_env = service_env(tmp / "unsandboxed", None, AGENTS_SANDBOX="none")
    with (
        running_service(env, tmp) as service,
        running_service(unsandboxed_env, tmp) as unsandboxed,
        service.client() as client,
        unsandboxed.client() as unsandboxed_client,
    ):
        slug = create_agent(client, "latency")
        unsandboxed_slug = create_agent(unsandboxed_client, "latency")
        for n in range(-WARMUP_RUNS, args.runs):
            timings = {
                "wait": waited_run_seconds(client, slug, n),
                "poll": polled_run_seconds(client, slug, n, args.poll_interval),
                "unsandboxed": waited_run_seconds(unsandboxed_client, unsandboxed_slug, n),
                "direct": direct_run_seconds(direct_root, n),
            }
            if n >= 0:
                for way, seconds in timings.items():
                    samples[way].append(seconds * 1000)
    figures = {
        f"{way}_{name}_ms": value
        for way, values in samples.items()
        for name, value in (("p50", statistics.median(values)), ("p99", percentile(values, 0.99)))
    }
    say(
        f"  POST wait_for_completion p50 {figures['wait_p50_ms']:.0f} p99 "
        f"{figures['wait_p99_ms']:.0f} ms | POST+poll p50 {figures['poll_p50_ms']:.0f} p99 "
        f"{figures['poll_p99_ms']:.0f} ms | unsandboxed wait_for_completion p50 "
        f"{figures['unsandboxed_p50_ms']:.0f} p99 {figures['unsandboxed_p99_ms']:.0f} ms | "
        f"python main.py directly p50 {figures['direct_p50_ms']:.0f} p99 "
        f"{figures['direct_p99_ms']:.0f} ms"
    )
    target = f"<= {RUN_P50_TARGET_MS:.0f} ms"
    verdicts = []
    for way, label in (("wait", "wait_for_completion"), ("poll", "POST+poll")):
        p50 = figures[f"{way}_p50_ms"]
        verdicts += [
            Verdict(f"(b) run {label} p50", p50, "ms", target, p50 <= RUN_P50_TARGET_MS),
            Verdict(f"(b) run {label} p99", figures[f"{way}_p99_ms"], "ms"),
            Verdict(f"(b) run {label} p50/direct", p50 / figures["direct_p50_ms"], "x"),
        ]
    ratio = figures["wait_p50_ms"] / figures["unsandboxed_p50_ms"]
    verdicts += [
        Verdict(
            "(b) run unsandboxed (AGENTS_SANDBOX=none) p50", figures["unsandboxed_p50_ms"], "ms"
        ),
        Verdict(
            "(b) run sandboxed/unsandboxed p50",
            ratio,
            "x",
            f"<= {SANDBOX_RATIO_TARGET:g}",
            ratio <= SANDBOX_RATIO_TARGET,
        ),
        Verdict("(b) python main.py direct p50", figures["direct_p50_ms"], "ms"),
    ]
    return Report(figures, verdicts)
