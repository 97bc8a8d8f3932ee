"""The agents service, measured as real processes on loopback, each figure with its baseline.

(a) ``GET /agents/{id}/executions`` with three filters and a sort over 100k executions of one
    agent on PostgreSQL (p50, p99), against the same SQL statements run directly.
(b) A trivial agent run from ``POST …/run`` to ``completed`` on the embedded default (SQLite,
    the server's own worker), waiting in the request and polling (p50, p99), against ``python
    main.py`` run directly.
(c) Trivial executions completed per second by two ``agents-worker`` processes on PostgreSQL,
    against direct ``python main.py`` runs as many at a time.

Run ``python -m bench.agents --help`` for the options.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from bench.agents.listing import bench_listing
from bench.agents.report import Part, run_parts
from bench.agents.run_latency import bench_run_latency
from bench.agents.services import postgres_unreachable_reason
from bench.agents.throughput import bench_throughput

PARTS: dict[str, Part] = {
    "list": bench_listing,
    "run": bench_run_latency,
    "workers": bench_throughput,
}
NEEDS_POSTGRES = {"list", "workers"}


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    """The options; ``--quick`` shrinks every size that was not given."""
    parser = argparse.ArgumentParser(
        prog="python -m bench.agents", description=(__doc__ or "").split("\n")[0]
    )
    parser.add_argument("--parts", default="list,run,workers", help="which parts to run")
    parser.add_argument("--quick", action="store_true", help="smaller sizes everywhere")
    parser.add_argument("--executions", type=int, help="(a) executions stored (default 100000)")
    parser.add_argument("--list-requests", type=int, help="(a) requests per case (default 300)")
    parser.add_argument(
        "--since-days",
        type=int,
        default=30,
        help="(a) createdAfter: this many days ago (the seed spans 90)",
    )
    parser.add_argument(
        "--no-explain",
        dest="explain",
        action="store_false",
        help="(a) do not print the EXPLAIN ANALYZE of the list's statements",
    )
    parser.add_argument("--runs", type=int, help="(b) runs per way (default 50)")
    parser.add_argument(
        "--poll-interval", type=float, default=0.01, help="(b) seconds between GETs while polling"
    )
    parser.add_argument("--submissions", type=int, help="(c) runs submitted (default 200)")
    parser.add_argument("--workers", type=int, default=2, help="(c) agents-worker processes")
    parser.add_argument(
        "--worker-concurrency", type=int, default=2, help="(c) executions each worker runs at once"
    )
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    args = parser.parse_args(argv)
    quick = args.quick
    args.executions = args.executions or (20_000 if quick else 100_000)
    args.list_requests = args.list_requests or (50 if quick else 300)
    args.runs = args.runs or (10 if quick else 50)
    args.submissions = args.submissions or (40 if quick else 200)
    args.part_list = [part for part in args.parts.split(",") if part]
    unknown = set(args.part_list) - set(PARTS)
    if unknown:
        parser.error(f"unknown parts: {', '.join(sorted(unknown))} (known: {', '.join(PARTS)})")
    if (
        min(
            args.executions,
            args.list_requests,
            args.runs,
            args.submissions,
            args.workers,
            args.worker_concurrency,
        )
        < 1
    ):
        parser.error("sizes must be at least 1")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    """Run the chosen parts, print the table; 1 when a part could not run."""
    args = parse_args(argv)

    def postgres_problem() -> str | None:
        return postgres_unreachable_reason() if NEEDS_POSTGRES & set(args.part_list) else None

    return run_parts("bench.agents", args, PARTS, postgres_problem)


if __name__ == "__main__":
    sys.exit(main())
