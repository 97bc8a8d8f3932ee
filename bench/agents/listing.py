"""(a) The executions list of one agent with three filters and a sort, over many executions on
PostgreSQL: latency of ``GET /agents/{id}/executions`` through the generated client against
the same SQL statements the service runs, executed directly; and their ``EXPLAIN ANALYZE``."""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from sqlalchemy import event
from sqlalchemy.orm import Session

from bench.agents.report import Report, Verdict, percentile, say
from bench.agents.seed import SeedShape, seed_executions, vacuum_analyze
from bench.agents.services import BenchError, running_service, service_env, temporary_database
from bench.agents.trivial_agent import create_agent
from generated.agents.client import ServiceClient
from handlers.agents.api.execution_list import ExecutionListQuery, list_executions
from handlers.agents.domain.keys import Principal, authenticate
from handlers.agents.storage.database import Database
from handlers.agents.storage.migrate import upgrade
from handlers.agents.storage.schema import utc_now

__all__ = ["LIST_P50_TARGET_MS", "bench_listing"]

LIST_P50_TARGET_MS = 30.0
WARMUP_REQUESTS = 20


@dataclass(frozen=True)
class ListCase:
    """One list request: its filters, sort and page, named as both the client's and
    :class:`ExecutionListQuery`'s keyword arguments."""

    name: str
    parameters: dict[str, Any]

    def describe(self) -> str:
        shown = {
            k: (v.date().isoformat() if isinstance(v, datetime) else v)
            for k, v in self.parameters.items()
        }
        return ", ".join(f"{k}={v}" for k, v in shown.items())


def list_cases(since: datetime, batch: str) -> list[ListCase]:
    """The measured requests: status, a creation bound and a feedback rating (the target's
    figure), and status, a creation bound and a batch; both newest first, 50 a page."""
    page = {"sort": "createdAt", "order": "desc", "limit": 50}
    common = {"status": ["completed"], "created_after": since}
    return [
        ListCase("rating", {**common, "feedback_rating": "fail", **page}),
        ListCase("batch", {**common, "batch_id": batch, **page}),
    ]


def timed_requests(client: ServiceClient, slug: str, case: ListCase, count: int) -> list[float]:
    """Milliseconds of ``count`` sequential list requests (after the warm-up ones)."""
    latencies = []
    for index in range(-WARMUP_REQUESTS, count):
        started = time.perf_counter()
        page = client.agents.executions.list(slug, **case.parameters)
        elapsed = time.perf_counter() - started
        if not page.executions:
            raise BenchError(f"the {case.name} list found nothing ({case.describe()})")
        if index >= 0:
            latencies.append(elapsed * 1000)
    return latencies


@dataclass
class Statement:
    sql: str
    parameters: Any


def captured_statements(
    database: Database, principal: Principal, slug: str, case: ListCase
) -> list[Statement]:
    """The SQL statements the service's list runs for ``case`` (its own code, in-process)."""
    statements: list[Statement] = []

    def record(_conn: Any, _cursor: Any, sql: str, parameters: Any, *_: Any) -> None:
        statements.append(Statement(sql, parameters))

    query = ExecutionListQuery(**case.parameters)
    event.listen(database.engine, "before_cursor_execute", record)
    try:
        asyncio.run(list_executions(database, principal, slug, query))
    finally:
        event.remove(database.engine, "before_cursor_execute", record)
    return [s for s in statements if s.sql.lstrip().upper().startswith("SELECT")]


def timed_sql(database: Database, statements: list[Statement], count: int) -> list[float]:
    """Milliseconds of running ``statements`` in one read transaction, ``count`` times."""
    latencies = []
    with database.engine.connect() as connection:
        for index in range(-WARMUP_REQUESTS, count):
            started = time.perf_counter()
            with connection.begin():
                for statement in statements:
                    connection.exec_driver_sql(statement.sql, statement.parameters).fetchall()
            if index >= 0:
                latencies.append((time.perf_counter() - started) * 1000)
    return latencies


def explain(database: Database, statements: list[Statement]) -> list[str]:
    """``EXPLAIN (ANALYZE, BUFFERS)`` of the statements that read ``executions``."""
    lines = []
    with database.engine.connect() as connection:
        for statement in statements:
            if "FROM executions" not in statement.sql:
                continue
            plan = connection.exec_driver_sql(
                "EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) " + statement.sql, statement.parameters
            ).scalars()
            lines.append("  -- " + " ".join(statement.sql.split())[:160] + " …")
            lines += [f"  {line}" for line in plan]
    return lines


def _measure(
    case: ListCase,
    client: ServiceClient,
    database: Database,
    principal: Principal,
    slug: str,
    args: argparse.Namespace,
) -> tuple[dict[str, float], list[str]]:
    http = timed_requests(client, slug, case, args.list_requests)
    statements = captured_statements(database, principal, slug, case)
    direct = timed_sql(database, statements, args.list_requests)
    row = {
        "http_p50_ms": statistics.median(http),
        "http_p99_ms": percentile(http, 0.99),
        "sql_p50_ms": statistics.median(direct),
        "sql_p99_ms": percentile(direct, 0.99),
        "statements": float(len(statements)),
    }
    say(
        f"  {case.name}: GET p50 {row['http_p50_ms']:.1f} p99 {row['http_p99_ms']:.1f} ms | "
        f"its {len(statements)} SQL statements directly p50 {row['sql_p50_ms']:.1f} "
        f"p99 {row['sql_p99_ms']:.1f} ms"
    )
    return row, explain(database, statements) if args.explain else []


def bench_listing(args: argparse.Namespace, tmp: Path) -> Report:
    """Part (a); PostgreSQL must be reachable."""
    shape = SeedShape(count=args.executions)
    say(
        f"(a) executions list at {shape.count} executions on PostgreSQL, "
        f"{args.list_requests} sequential requests per case"
    )
    report = Report()
    with temporary_database() as url:
        database = Database(url)
        try:
            upgrade(database)
            env = service_env(tmp / "listing", url, AGENTS_EMBEDDED_WORKER="false")
            with running_service(env, tmp) as service, service.client() as client:
                slug = create_agent(client, "list")
                agent_id = client.agents.get(slug).agent.id
                started = time.perf_counter()
                seeded = seed_executions(database, agent_id, shape)
                vacuum_analyze(database)
                say(
                    f"  seeded {seeded.executions} executions and {seeded.feedback} feedback "
                    f"rows in {time.perf_counter() - started:.1f} s (bulk inserts, VACUUM "
                    f"ANALYZE)"
                )
                principal = _principal(database, service.api_key)
                since = utc_now() - timedelta(days=args.since_days)
                plans: list[str] = []
                for case in list_cases(since, seeded.newest_batch):
                    say(f"  case {case.name}: {case.describe()}")
                    row, plan = _measure(case, client, database, principal, slug, args)
                    report.figures[case.name] = row
                    if plan:
                        plans += [f"  case {case.name}:", *plan]
                    p50 = row["http_p50_ms"]
                    target = f"<= {LIST_P50_TARGET_MS:.0f} ms"
                    report.verdicts += [
                        Verdict(
                            f"(a) list [{case.name}] p50",
                            p50,
                            "ms",
                            target,
                            p50 <= LIST_P50_TARGET_MS,
                        ),
                        Verdict(f"(a) list [{case.name}] p99", row["http_p99_ms"], "ms"),
                        Verdict(
                            f"(a) list [{case.name}] p50 GET/SQL", p50 / row["sql_p50_ms"], "x"
                        ),
                    ]
                if plans:
                    say("  EXPLAIN (ANALYZE, BUFFERS) of the list's statements:")
                    for line in plans:
                        say(line)
        finally:
            database.dispose()
    return report


def _principal(database: Database, api_key: str) -> Principal:
    def find(session: Session) -> Principal | None:
        return authenticate(session, api_key)

    principal = database.read_sync(find)
    if principal is None:
        raise BenchError("the benchmark's key does not authenticate")
    return principal
