"""(c) Runs accepted per second: ``POST /api/v1/agents/{id}/run`` with a JSON input and without
waiting, from several concurrent clients, to an ``agents-server`` on PostgreSQL with
``AGENTS_EMBEDDED_WORKER=false`` and no ``agents-worker`` running, so that nothing executes
meanwhile and the figure is the API's own. Every answer must be 202 and the database must hold
exactly the accepted executions, pending, afterwards. Against the driver's own ceiling: the
same requests without an API key, answered 401 by the same server before any database work."""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

from bench.agents.executions_table import ExecutionsTable, executions_table
from bench.agents.load import Drive, Driver, running_driver
from bench.agents.report import Report, Verdict, say
from bench.agents.services import (
    BenchError,
    running_service,
    server_processes_variable,
    service_env,
    temporary_database,
)
from bench.agents.trivial_agent import create_agent

__all__ = ["ACCEPTED_TARGET_PER_S", "bench_submit", "run_body", "submit_runs"]

ACCEPTED_TARGET_PER_S = 200.0
WARMUP_SUBMISSIONS = 100


def run_body(n: int) -> bytes:
    """The JSON body of run ``n``: a small input (the trivial agent echoes ``n``)."""
    payload = {"input": {"n": n, "customer": "ACME", "invoiceNumber": f"INV-{n:06d}"}}
    return json.dumps(payload).encode()


def run_path(slug: str) -> str:
    return f"/api/v1/agents/{slug}/run"


def submit_runs(
    driver: Driver,
    api_key: str,
    slug: str,
    count: int,
    table: ExecutionsTable,
    *,
    pending: bool,
) -> tuple[Drive, list[str]]:
    """``count`` runs of ``slug`` (run ``n`` with :func:`run_body` ``(n)``), checked: every
    answer 202 with its own execution id, and the database holding exactly those executions of
    ``slug`` (all ``pending`` when ``pending``: no worker took any). The drive and the execution
    ids in run order."""
    path = run_path(slug)
    drive = driver.drive(
        "POST", path, count, run_body, {"Authorization": f"Bearer {api_key}"}, keep_bodies=True
    )
    drive.expect(202, f"POST {path}")
    ids = [json.loads(body)["executionId"] for body in drive.bodies]
    if len(set(ids)) != count:
        raise BenchError(f"{count} runs accepted under {len(set(ids))} distinct execution ids")
    stored = table.rows(slug)
    lost, extra = set(ids) - set(stored), set(stored) - set(ids)
    if lost or extra:
        raise BenchError(
            f"{count} runs of {slug} accepted, the database holds {len(stored)} executions: "
            f"{len(lost)} accepted ones missing, {len(extra)} unknown ones"
        )
    if pending:
        other = {row.status for row in stored.values()} - {"pending"}
        if other:
            statuses = table.status_counts(slug)
            raise BenchError(
                f"with no worker running, executions of {slug} are not all pending: {statuses}"
            )
    return drive, ids


def bench_submit(args: argparse.Namespace, tmp: Path) -> Report:
    """Part (c); PostgreSQL must be reachable."""
    variable = server_processes_variable()
    if variable is None:
        processes, how = 1, "handlers/agents/settings.py has no server processes setting"
    else:
        processes = args.server_processes or os.cpu_count() or 1
        how = f"{variable}={processes}"
    count, clients = args.submissions, args.clients
    say(
        f"(c) {count} runs submitted (POST …/run, JSON input, no wait) by {clients} concurrent "
        f"clients to agents-server on PostgreSQL with AGENTS_EMBEDDED_WORKER=false and no "
        f"agents-worker; {processes} server process{'es' if processes > 1 else ''} ({how})"
    )
    settings = {"AGENTS_EMBEDDED_WORKER": "false"}
    if variable is not None:
        settings[variable] = str(processes)
    with temporary_database() as url:
        env = service_env(tmp / "submit", url, **settings)
        with (
            running_service(env, tmp) as service,
            service.client() as client,
            running_driver(service.url, clients) as driver,
            executions_table(url) as table,
        ):
            warmup, slug = create_agent(client, "submit-warmup"), create_agent(client, "submit")
            path = run_path(slug)
            driver.drive("POST", path, WARMUP_SUBMISSIONS, run_body, {}).expect(401, "warm-up")
            submit_runs(driver, service.api_key, warmup, WARMUP_SUBMISSIONS, table, pending=True)
            before = driver.drive("POST", path, count, run_body, {})
            before.expect(401, f"POST {path} without a key")
            ours, _ = submit_runs(driver, service.api_key, slug, count, table, pending=True)
            after = driver.drive("POST", path, count, run_body, {})
            after.expect(401, f"POST {path} without a key")
    ceiling = min(before, after, key=lambda drive: drive.rate)
    ratio = ours.rate / ceiling.rate
    say(
        f"  accepted {ours.rate:.1f} runs/s, p50 {ours.p50_ms:.1f} ms p99 {ours.p99_ms:.1f} ms, "
        f"all {count} answered 202 and stored pending (driver CPU "
        f"{ours.cpu_us_per_request:.0f} µs/request) | driver ceiling, the same POST answered "
        f"401: {before.rate:.0f} then {after.rate:.0f} req/s, p50 {ceiling.p50_ms:.1f} ms "
        f"(driver CPU {ceiling.cpu_us_per_request:.0f} µs/request) | accepted/ceiling "
        f"{ratio:.3f}"
    )
    if ratio > 0.5:
        say("  note: the figure is within 2x of the driver's ceiling: the driver may bound it")
    figures = {
        "server_processes": processes,
        "server_processes_setting": variable,
        "clients": clients,
        "submissions": count,
        "accepted_per_s": ours.rate,
        "accepted_p50_ms": ours.p50_ms,
        "accepted_p99_ms": ours.p99_ms,
        "accepted_driver_cpu_us": ours.cpu_us_per_request,
        "ceiling_per_s": [before.rate, after.rate],
        "ceiling_p50_ms": ceiling.p50_ms,
        "ceiling_driver_cpu_us": ceiling.cpu_us_per_request,
    }
    target = f">= {ACCEPTED_TARGET_PER_S:.0f}"
    return Report(
        figures,
        [
            Verdict(
                f"(c) runs accepted/s ({clients} clients, {processes} server proc.)",
                ours.rate,
                "1/s",
                target,
                ours.rate >= ACCEPTED_TARGET_PER_S,
            ),
            Verdict("(c) POST …/run p50", ours.p50_ms, "ms"),
            Verdict("(c) POST …/run p99", ours.p99_ms, "ms"),
            Verdict("(c) driver ceiling (same POST, 401)", ceiling.rate, "1/s"),
            Verdict("(c) accepted / driver ceiling", ratio, "x"),
        ],
    )
