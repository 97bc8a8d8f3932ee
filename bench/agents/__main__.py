"""The agents service, measured as real processes on loopback, each figure with its baseline.

(a) ``GET /agents/{id}/executions`` with three filters and a sort over 100k executions of one
    agent on PostgreSQL (p50, p99), against the same SQL statements run directly.
(b) A trivial agent run from ``POST …/run`` to ``completed`` on the embedded default (SQLite,
    the server's own worker), waiting in the request and polling (p50, p99), against ``python
    main.py`` run directly.
(c) Runs accepted per second by ``POST …/run`` (JSON input, no wait) from concurrent clients on
    PostgreSQL with no worker consuming (p50, p99), against the driver's ceiling: the same
    requests answered 401 by the same server.
(d) Trivial executions completed per second by 1, 2 and 4 ``agents-worker`` processes on
    PostgreSQL, released on queued runs, against direct ``python main.py`` runs as many at a
    time as the workers have slots.

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
from bench.agents.submit import bench_submit
from bench.agents.throughput import bench_worker_curve

PARTS: dict[str, Part] = {
    "list": bench_listing,
    "run": bench_run_latency,
    "submit": bench_submit,
    "workers": bench_worker_curve,
}
NEEDS_POSTGRES = {"list", "submit", "workers"}


def _counts(text: str) -> list[int]:
    try:
        counts = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected numbers separated by commas: {text}") from None
    if not counts or min(counts) < 1:
        raise argparse.ArgumentTypeError(f"expected numbers of at least 1: {text}")
    return counts


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    """The options; ``--quick`` shrinks every size that was not given."""
    parser = argparse.ArgumentParser(
        prog="python -m bench.agents", description=(__doc__ or "").split("\n")[0]
    )
    parser.add_argument(
        "--parts", default=",".join(PARTS), help=f"which parts to run (of {','.join(PARTS)})"
    )
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
    parser.add_argument("--submissions", type=int, help="(c) runs submitted (default 1000)")
    parser.add_argument(
        "--clients", type=int, default=8, help="(c, d) concurrent client connections submitting"
    )
    parser.add_argument(
        "--server-processes",
        type=int,
        help="(c) agents-server processes when the server has such a setting (default: CPUs)",
    )
    parser.add_argument(
        "--worker-runs", type=int, help="(d) queued runs per worker count (default 200)"
    )
    parser.add_argument(
        "--worker-rounds",
        type=int,
        help="(d) rounds the runs are split over, ours and direct taking turns (default 4)",
    )
    parser.add_argument(
        "--worker-counts",
        type=_counts,
        default=[1, 2, 4],
        help="(d) agents-worker processes, one point of the curve each (default 1,2,4)",
    )
    parser.add_argument(
        "--worker-concurrency", type=int, default=2, help="(d) executions each worker runs at once"
    )
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    args = parser.parse_args(argv)
    quick = args.quick
    args.executions = args.executions or (20_000 if quick else 100_000)
    args.list_requests = args.list_requests or (50 if quick else 300)
    args.runs = args.runs or (10 if quick else 50)
    args.submissions = args.submissions or (200 if quick else 1000)
    args.worker_runs = args.worker_runs or (50 if quick else 200)
    args.worker_rounds = args.worker_rounds or (2 if quick else 4)
    args.part_list = [part for part in args.parts.split(",") if part]
    unknown = set(args.part_list) - set(PARTS)
    if unknown:
        parser.error(f"unknown parts: {', '.join(sorted(unknown))} (known: {', '.join(PARTS)})")
    sizes = [
        args.executions,
        args.list_requests,
        args.runs,
        args.submissions,
        args.clients,
        args.worker_runs,
        args.worker_rounds,
        args.worker_concurrency,
    ]
    if min(sizes) < 1 or (args.server_processes is not None and args.server_processes < 1):
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
