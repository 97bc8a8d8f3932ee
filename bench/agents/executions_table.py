"""The service's ``executions`` table read directly (psycopg, autocommit, outside the service):
what the submission figures check (every accepted run stored, pending) and what the workers
figures poll (how many completed) without loading the server they measure."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import psycopg

from bench.agents.services import BenchError, psycopg_url

__all__ = ["ExecutionRow", "ExecutionsTable", "executions_table"]


@dataclass(frozen=True)
class ExecutionRow:
    """What the bench reads of one execution."""

    id: str
    status: str
    output: Any
    error: str | None
    started_at: datetime | None
    completed_at: datetime | None


class ExecutionsTable:
    """The executions of agents, by the agent's slug."""

    def __init__(self, connection: psycopg.Connection[Any]) -> None:
        self._connection = connection
        self._agent_ids: dict[str, str] = {}

    def _agent_id(self, slug: str) -> str:
        if slug not in self._agent_ids:
            row = self._connection.execute("SELECT id FROM agents WHERE slug = %s", (slug,))
            found = row.fetchone()
            if found is None:
                raise BenchError(f"agent {slug} is not in the database")
            self._agent_ids[slug] = found[0]
        return self._agent_ids[slug]

    def status_counts(self, slug: str) -> Counter[str]:
        """How many executions of ``slug`` are in each status."""
        cursor = self._connection.execute(
            "SELECT status, count(*) FROM executions WHERE agent_id = %s GROUP BY status",
            (self._agent_id(slug),),
        )
        return Counter({status: count for status, count in cursor.fetchall()})

    def rows(self, slug: str) -> dict[str, ExecutionRow]:
        """Every execution of ``slug``, by id."""
        cursor = self._connection.execute(
            "SELECT id, status, output, error, started_at, completed_at FROM executions "
            "WHERE agent_id = %s",
            (self._agent_id(slug),),
        )
        return {row[0]: ExecutionRow(*row) for row in cursor.fetchall()}


@contextmanager
def executions_table(database_url: str) -> Iterator[ExecutionsTable]:
    """The executions table of the database at ``database_url`` (SQLAlchemy URL)."""
    with psycopg.connect(psycopg_url(database_url), autocommit=True) as connection:
        yield ExecutionsTable(connection)
