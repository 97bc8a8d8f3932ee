"""Many executions of one agent written straight into its database with SQL bulk inserts
through the service's models (``handlers/agents/storage/schema.py``): a realistic mix of statuses,
batches, example names and feedback, spread over ``days`` days, deterministic (fixed seed)."""

from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import partial
from typing import Any

from sqlalchemy import insert, text
from sqlalchemy.orm import Session

from handlers.agents.storage.database import Database
from handlers.agents.storage.schema import Base, Execution, ExecutionFeedback, utc_now

__all__ = ["SeedShape", "SeededRows", "seed_executions", "vacuum_analyze"]

CHUNK = 5000
STATUSES = (("completed", 0.75), ("failed", 0.15), ("cancelled", 0.10))
RATINGS = (("pass", 0.60), ("fail", 0.25), ("partial", 0.10), (None, 0.05))
TRIAGE = (("open", 0.5), ("resolved", 0.3), ("ignored", 0.2))


@dataclass(frozen=True)
class SeedShape:
    """How the seeded executions look."""

    count: int = 100_000
    days: int = 90
    batched_fraction: float = 0.4
    batch_size: int = 500
    feedback_fraction: float = 0.2


@dataclass(frozen=True)
class SeededRows:
    """What was written: counts, the time span and the newest batch (a filter value)."""

    executions: int
    feedback: int
    oldest: datetime
    newest: datetime
    newest_batch: str


def _pick(rng: random.Random, weighted: tuple[tuple[Any, float], ...]) -> Any:
    values, weights = zip(*weighted, strict=True)
    return rng.choices(values, weights)[0]


def _rows(
    agent_id: str, shape: SeedShape, now: datetime
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    rng = random.Random(7)
    span = timedelta(days=shape.days)
    step = span / shape.count
    executions: list[dict[str, Any]] = []
    feedback: list[dict[str, Any]] = []
    batch: str | None = None
    batched = False
    for i in range(shape.count):
        created = now - span + step * i
        if i % shape.batch_size == 0:
            batch = f"batch-{i // shape.batch_size:04d}"
            batched = rng.random() < shape.batched_fraction
        status = _pick(rng, STATUSES)
        duration_ms = rng.randint(200, 20_000)
        started = created + timedelta(milliseconds=300)
        completed = started + timedelta(milliseconds=duration_ms)
        execution_id = f"aex_seed{i:08d}"
        executions.append({
            "id": execution_id, "agent_id": agent_id, "status": status,
            "batch_id": batch if batched else None,
            "example_name": f"example-{i % shape.batch_size:03d}" if batched else None,
            "input": {"n": i}, "run_metadata": {"batchId": batch} if batched else None,
            "config_snapshot": {"entrypoint": ["python", "main.py"], "timeoutSeconds": 60},
            "output": {"ok": True, "n": i} if status == "completed" else None,
            "schema_valid": None, "error": "exit status 1" if status == "failed" else None,
            "created_at": created, "started_at": started, "completed_at": completed,
            "duration_ms": duration_ms, "worker_id": "bench-seed:1", "attempt": 1,
        })  # fmt: skip
        if rng.random() < shape.feedback_fraction:
            triage = _pick(rng, TRIAGE)
            feedback.append({
                "execution_id": execution_id, "agent_id": agent_id,
                "body": f"review of run {i}", "rating": _pick(rng, RATINGS), "status": triage,
                "created_at": completed, "created_by": "bench", "updated_at": completed,
                "resolved_at": completed if triage == "resolved" else None,
                "resolved_by": "bench" if triage == "resolved" else None,
            })  # fmt: skip
    return executions, feedback


def _insert(session: Session, table: type[Base], rows: list[dict[str, Any]]) -> None:
    session.execute(insert(table), rows)


def seed_executions(database: Database, agent_id: str, shape: SeedShape) -> SeededRows:
    """Write ``shape.count`` executions (and their feedback) of ``agent_id``, in chunks."""
    now = utc_now()
    executions, feedback = _rows(agent_id, shape, now)
    for table, rows in ((Execution, executions), (ExecutionFeedback, feedback)):
        for start in range(0, len(rows), CHUNK):
            database.write_sync(partial(_insert, table=table, rows=rows[start : start + CHUNK]))
    batches = [row["batch_id"] for row in executions if row["batch_id"] is not None]
    return SeededRows(
        len(executions),
        len(feedback),
        executions[0]["created_at"],
        executions[-1]["created_at"],
        batches[-1] if batches else "",
    )


def vacuum_analyze(database: Database) -> None:
    """``VACUUM ANALYZE`` the seeded tables: fresh statistics and visibility map, as a database
    that has been running a while has (autovacuum)."""
    with database.engine.connect() as connection:
        connection = connection.execution_options(isolation_level="AUTOCOMMIT")
        for table in ("executions", "execution_feedback"):
            connection.execute(text(f"VACUUM ANALYZE {table}"))
