"""(d) Trivial executions completed per second by 1, 2 and 4 ``agents-worker`` processes on
PostgreSQL (the server with ``AGENTS_EMBEDDED_WORKER=false``), against the same number of
``python main.py`` runs directly, as many at a time as the workers have slots.

For each worker count: the workers start and run a warm-up round. Then, round after round
(``N`` runs split over 4 rounds): the workers are paused (SIGSTOP); the round's runs are
submitted and checked (every one 202, stored, pending); the workers are released together
(SIGCONT) and the clock runs from that moment until the database says all of them are
completed (polled every 10 ms, directly, so the server is not loaded by the polling); then the
same number of direct runs, timed too. Ours and the bare program take turns so that a change of
the machine's load hits both. The submissions are not on the clock: (c) measures them. Every
run's output is checked, and the executions list of the API must agree.

:func:`completed_per_second` (submissions on the clock, workers running) is the way the
workflows bench measures.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

from bench.agents.executions_table import ExecutionsTable, executions_table
from bench.agents.load import Driver, running_driver
from bench.agents.report import Report, Verdict, say
from bench.agents.services import (
    AgentsService,
    BenchError,
    ServerProcess,
    pause,
    resume,
    running_service,
    running_workers,
    service_env,
    temporary_database,
)
from bench.agents.submit import submit_runs
from bench.agents.trivial_agent import create_agent, direct_run_seconds, direct_runs_per_second

__all__ = [
    "RATIO_TARGET",
    "TARGET_WORKERS",
    "ListedStatus",
    "bench_worker_curve",
    "completed_per_second",
]

DEADLINE_S = 600.0
POLL_S = 0.05
TABLE_POLL_S = 0.01
RATIO_TARGET = 0.7
TARGET_WORKERS = 2
"""The target: executions/s at least 0.7 x the bare program's rate, with 2 workers."""
WARMUP_ROUNDS = 2
"""Warm-up runs per slot before the workers are paused."""
FAILED = ("failed", "cancelled", "rejected")

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


def wait_completed(table: ExecutionsTable, slug: str, count: int, since: float) -> float:
    """Poll the table until ``count`` executions of ``slug`` are completed: the perf_counter
    time at which it saw them (a failed, cancelled or rejected one raises)."""
    while True:
        statuses = table.status_counts(slug)
        now = time.perf_counter()
        if statuses["completed"] >= count:
            return now
        if any(statuses[status] for status in FAILED):
            errors = {row.error for row in table.rows(slug).values() if row.status in FAILED}
            raise BenchError(f"executions of {slug} did not complete: {statuses}; {errors}")
        if now - since > DEADLINE_S:
            raise BenchError(f"{slug}: {statuses} after {DEADLINE_S:.0f} s")
        time.sleep(TABLE_POLL_S)


@dataclass(frozen=True)
class CurvePoint:
    """The figures of one worker count."""

    workers: int
    slots: int
    executions_per_s: float
    direct_per_s: float
    in_worker_p50_ms: float
    first_completed_ms: float
    """From the release to the first execution completed (the database's ``completed_at``),
    median over the rounds."""
    paused_submit_per_s: float
    round_rates: list[float]
    direct_round_rates: list[float]

    @property
    def ratio(self) -> float:
        return self.executions_per_s / self.direct_per_s


def _check_outputs(
    table: ExecutionsTable, slug: str, ids: list[str]
) -> tuple[list[float], datetime]:
    """Every run ``n`` completed with output ``{"ok": true, "n": n}``: each one's seconds in a
    worker (``completed_at - started_at``) and the first ``completed_at``."""
    rows = table.rows(slug)
    seconds, completed = [], []
    for n, execution_id in enumerate(ids):
        row = rows[execution_id]
        if row.status != "completed" or row.output != {"ok": True, "n": n}:
            raise BenchError(f"run {n} ({execution_id}) ended {row.status}: {row.output!r}")
        if row.started_at is None or row.completed_at is None:
            raise BenchError(f"run {n} ({execution_id}) completed without its times")
        seconds.append((row.completed_at - row.started_at).total_seconds())
        completed.append(row.completed_at)
    return seconds, min(completed)


@dataclass(frozen=True)
class ReleasedRound:
    """One round of queued runs executed by released workers."""

    seconds: float
    in_worker_s: list[float]
    first_completed_ms: float
    submitted_per_s: float


def released_round(
    service: AgentsService,
    driver: Driver,
    table: ExecutionsTable,
    processes: list[ServerProcess],
    slug: str,
    count: int,
) -> ReleasedRound:
    """``count`` runs of ``slug`` queued while ``processes`` (the workers) are paused, then
    executed once they are released: the seconds from the release until all are completed."""
    pause(processes)
    try:
        drive, ids = submit_runs(driver, service.api_key, slug, count, table, pending=True)
    finally:
        released, released_at = time.perf_counter(), datetime.now(UTC)
        resume(processes)
    done = wait_completed(table, slug, count, released)
    with service.client() as client:
        listed = client.agents.executions.list(slug, status=["completed"], limit=1).total
    if listed != count:
        raise BenchError(f"the list shows {listed} completed executions of {slug}, not {count}")
    in_worker, first = _check_outputs(table, slug, ids)
    first_ms = (first - released_at).total_seconds() * 1000
    return ReleasedRound(done - released, in_worker, first_ms, drive.rate)


def direct_seconds(root: Path, count: int, parallel: int) -> float:
    """Seconds of ``count`` direct runs, ``parallel`` at a time."""
    return count / direct_runs_per_second(root, count, parallel)


def round_sizes(count: int, rounds: int) -> list[int]:
    """``count`` runs split over ``rounds`` rounds (at most one per run)."""
    rounds = min(rounds, count)
    return [count // rounds + (1 if index < count % rounds else 0) for index in range(rounds)]


def curve_point(
    service: AgentsService,
    driver: Driver,
    table: ExecutionsTable,
    args: argparse.Namespace,
    workers: int,
    tmp: Path,
) -> CurvePoint:
    """Executions/s of ``workers`` warmed-up workers released on ``args.worker_runs`` queued
    runs, and the bare program's rate at the same parallelism; the runs are split over
    ``args.worker_rounds`` rounds, ours and direct taking turns, so that a change of the
    machine's load hits both."""
    count, slots = args.worker_runs, workers * args.worker_concurrency
    direct_root = tmp / f"direct-{workers}"
    direct_root.mkdir()
    rounds: list[ReleasedRound] = []
    direct: list[float] = []
    sizes = round_sizes(count, args.worker_rounds)
    with running_workers(service.env, workers, tmp) as processes, service.client() as client:
        warmup = create_agent(client, f"warmup-{workers}")
        submit_runs(driver, service.api_key, warmup, slots * WARMUP_ROUNDS, table, pending=False)
        wait_completed(table, warmup, slots * WARMUP_ROUNDS, time.perf_counter())
        for n in range(slots):
            direct_run_seconds(direct_root, n)  # warm-up, as the workers had
        for index, size in enumerate(sizes):
            slug = create_agent(client, f"workers-{workers}-{index}")
            rounds.append(released_round(service, driver, table, processes, slug, size))
            pause(processes)  # idle anyway; paused so that nothing of theirs runs meanwhile
            try:
                direct.append(direct_seconds(direct_root, size, slots))
            finally:
                resume(processes)
    return CurvePoint(
        workers,
        slots,
        count / sum(r.seconds for r in rounds),
        count / sum(direct),
        statistics.median(s for r in rounds for s in r.in_worker_s) * 1000,
        statistics.median(r.first_completed_ms for r in rounds),
        statistics.median(r.submitted_per_s for r in rounds),
        [size / r.seconds for size, r in zip(sizes, rounds, strict=True)],
        [size / seconds for size, seconds in zip(sizes, direct, strict=True)],
    )


def bench_worker_curve(args: argparse.Namespace, tmp: Path) -> Report:
    """Part (d); PostgreSQL must be reachable."""
    concurrency = args.worker_concurrency
    say(
        f"(d) {args.worker_runs} queued trivial runs (in {args.worker_rounds} rounds) executed "
        f"by {', '.join(map(str, args.worker_counts))} agents-worker processes ({concurrency} "
        "executions each) on PostgreSQL, released together after a warm-up; against python "
        "main.py directly, as many at a time as the workers have slots, round for round"
    )
    points: list[CurvePoint] = []
    with temporary_database() as url:
        env = service_env(
            tmp / "workers",
            url,
            AGENTS_EMBEDDED_WORKER="false",
            AGENTS_WORKER_CONCURRENCY=str(concurrency),
        )
        with (
            running_service(env, tmp) as service,
            running_driver(service.url, args.clients) as driver,
            executions_table(url) as table,
        ):
            for workers in args.worker_counts:
                point = curve_point(service, driver, table, args, workers, tmp)
                points.append(point)
    say(
        f"  {'workers':>7}  {'slots':>5}  {'executions/s':>12}  {'python main.py/s':>16}  "
        f"{'ratio':>5}  {'in worker p50':>13}  {'first done':>10}  {'submitted (paused)':>18}"
    )
    for p in points:
        say(
            f"  {p.workers:>7}  {p.slots:>5}  {p.executions_per_s:>12.1f}  "
            f"{p.direct_per_s:>16.1f}  {p.ratio:>5.2f}  {p.in_worker_p50_ms:>10.0f} ms  "
            f"{p.first_completed_ms:>7.0f} ms  {p.paused_submit_per_s:>16.1f}/s"
        )
    say(f"  spread over {len(points[0].round_rates)} rounds (executions/s | direct runs/s):")
    for p in points:
        say(
            f"  {p.workers} worker{'s' if p.workers > 1 else ''}: "
            f"{min(p.round_rates):.1f} to {max(p.round_rates):.1f} | "
            f"{min(p.direct_round_rates):.1f} to {max(p.direct_round_rates):.1f}"
        )
    verdicts = []
    for p in points:
        judged = p.workers == TARGET_WORKERS
        plural = "s" if p.workers > 1 else ""
        verdicts += [
            Verdict(f"(d) executions/s, {p.workers} worker{plural}", p.executions_per_s, "1/s"),
            Verdict(f"(d) python main.py/s, {p.slots} at a time", p.direct_per_s, "1/s"),
            Verdict(
                f"(d) executions/s / direct, {p.workers} worker{plural}",
                p.ratio,
                "x",
                f">= {RATIO_TARGET:g}" if judged else None,
                p.ratio >= RATIO_TARGET if judged else None,
            ),
        ]
    figures = {
        "worker_concurrency": concurrency,
        "runs": args.worker_runs,
        "rounds": args.worker_rounds,
        "curve": [
            {
                "workers": p.workers,
                "slots": p.slots,
                "executions_per_s": p.executions_per_s,
                "direct_runs_per_s": p.direct_per_s,
                "ratio": p.ratio,
                "in_worker_p50_ms": p.in_worker_p50_ms,
                "first_completed_ms": p.first_completed_ms,
                "paused_submit_per_s": p.paused_submit_per_s,
                "round_rates": p.round_rates,
                "direct_round_rates": p.direct_round_rates,
            }
            for p in points
        ],
    }
    return Report(figures, verdicts)
