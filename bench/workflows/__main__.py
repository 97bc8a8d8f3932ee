"""The agents service's workflows as real processes on loopback, each figure with a baseline.

(a) A three-step workflow (trivial transform steps in a chain): executions completed per
    second by two ``agents-worker`` processes on PostgreSQL, against the same runs of the
    engine directly in this process.
(b) The same workflow run with ``wait_for_completion`` on the embedded default (SQLite, the
    server's own worker): latency from ``POST`` to the answer (p50, p99), against the sum of
    the run's steps' own run times in the same run, and the engine run directly.

Run ``python -m bench.workflows --help`` for the options.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from bench.agents.report import Part, run_parts
from bench.agents.services import postgres_unreachable_reason
from bench.workflows.sync_latency import bench_sync_latency
from bench.workflows.throughput import bench_throughput

PARTS: dict[str, Part] = {
    "throughput": bench_throughput,
    "sync": bench_sync_latency,
}
NEEDS_POSTGRES = {"throughput"}


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    """The options; ``--quick`` shrinks every size that was not given."""
    parser = argparse.ArgumentParser(
        prog="python -m bench.workflows", description=(__doc__ or "").split("\n")[0]
    )
    parser.add_argument("--parts", default="throughput,sync", help="which parts to run")
    parser.add_argument("--quick", action="store_true", help="smaller sizes everywhere")
    parser.add_argument("--submissions", type=int, help="(a) runs submitted (default 200)")
    parser.add_argument("--workers", type=int, default=2, help="(a) agents-worker processes")
    parser.add_argument(
        "--worker-concurrency", type=int, default=2, help="(a) executions each worker runs at once"
    )
    parser.add_argument("--runs", type=int, help="(b) measured runs (default 50)")
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    args = parser.parse_args(argv)
    quick = args.quick
    args.submissions = args.submissions or (40 if quick else 200)
    args.runs = args.runs or (10 if quick else 50)
    args.part_list = [part for part in args.parts.split(",") if part]
    unknown = set(args.part_list) - set(PARTS)
    if unknown:
        parser.error(f"unknown parts: {', '.join(sorted(unknown))} (known: {', '.join(PARTS)})")
    if min(args.submissions, args.runs, args.workers, args.worker_concurrency) < 1:
        parser.error("sizes must be at least 1")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    """Run the chosen parts, print the table; 1 when a part could not run."""
    args = parse_args(argv)

    def postgres_problem() -> str | None:
        return postgres_unreachable_reason() if NEEDS_POSTGRES & set(args.part_list) else None

    return run_parts("bench.workflows", args, PARTS, postgres_problem)


if __name__ == "__main__":
    sys.exit(main())
