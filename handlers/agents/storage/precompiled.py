"""Statements of a worker's every execution, compiled once and run on the driver's cursor.

A worker runs the same few statements for every execution it takes (the claim, the end, the
attempt and file rows). Through SQLAlchemy each costs about 100 µs of Python per execution
beyond the driver's own 50 (building parameters, the execution context, the result object); a
:class:`Precompiled` statement on PostgreSQL is compiled once, its parameters are converted by
the same column types SQLAlchemy would use (time zones, JSON), and it runs on the DBAPI cursor
of the transaction's own connection, in that transaction. On SQLite it runs through SQLAlchemy
as any statement (the embedded database is not the one tuned for throughput).

The statements stay SQLAlchemy Core objects: one definition for both databases, tested on
both. Rows are plain tuples; the statements' result columns are strings, numbers and JSON
(which psycopg decodes as SQLAlchemy would), never types with result processing of their own.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

from sqlalchemy import ClauseElement, Connection, CursorResult, Executable
from sqlalchemy.engine import Dialect
from sqlalchemy.orm import Session
from sqlalchemy.sql.compiler import Compiled

__all__ = ["Precompiled"]

Processor = Callable[[Any], Any] | None


@dataclass(frozen=True)
class _Plan:
    sql: str
    defaults: Mapping[str, Any]
    """Every parameter of the statement, with the value it has when none is given."""
    processors: Sequence[tuple[str, Callable[[Any], Any]]]


class Precompiled:
    """``statement``, run with :meth:`rows`, :meth:`count` or :meth:`many`."""

    def __init__(self, statement: Executable) -> None:
        self.statement = statement
        self._plans: dict[str, _Plan] = {}

    def rows(self, session: Session, parameters: Mapping[str, Any]) -> list[tuple[Any, ...]]:
        """The statement's rows (none for a statement that returns none)."""
        connection = session.connection()
        if connection.dialect.name != "postgresql":
            result = connection.execute(self.statement, dict(parameters))
            return [tuple(row) for row in result] if result.returns_rows else []
        with self._cursor(connection) as cursor:
            cursor.execute(self._plan(connection.dialect).sql,
                           self._bound(connection.dialect, parameters))  # fmt: skip
            return list(cursor.fetchall()) if cursor.description is not None else []

    def count(self, session: Session, parameters: Mapping[str, Any]) -> int:
        """Run the statement (an ``UPDATE`` or ``DELETE``): the rows it changed."""
        connection = session.connection()
        if connection.dialect.name != "postgresql":
            result = cast("CursorResult[Any]", connection.execute(self.statement, dict(parameters)))
            return result.rowcount
        with self._cursor(connection) as cursor:
            cursor.execute(self._plan(connection.dialect).sql,
                           self._bound(connection.dialect, parameters))  # fmt: skip
            return int(cursor.rowcount)

    def many(self, session: Session, rows: Sequence[Mapping[str, Any]]) -> None:
        """Run the statement (an ``INSERT``) once per parameter set of ``rows``."""
        if not rows:
            return
        connection = session.connection()
        if connection.dialect.name != "postgresql":
            connection.execute(self.statement, [dict(row) for row in rows])
            return
        dialect = connection.dialect
        with self._cursor(connection) as cursor:
            cursor.executemany(self._plan(dialect).sql, [self._bound(dialect, r) for r in rows])

    @staticmethod
    def _cursor(connection: Connection) -> contextlib.closing[Any]:
        """A cursor of the transaction's own DBAPI connection (psycopg)."""
        dbapi = connection.connection.dbapi_connection
        assert dbapi is not None
        return contextlib.closing(dbapi.cursor())

    def _bound(self, dialect: Dialect, parameters: Mapping[str, Any]) -> dict[str, Any]:
        plan = self._plan(dialect)
        bound = {**plan.defaults, **parameters}
        for name, process in plan.processors:
            bound[name] = process(bound[name])
        return bound

    def _plan(self, dialect: Dialect) -> _Plan:
        plan = self._plans.get(dialect.name)
        if plan is None:
            compiled: Compiled = cast(ClauseElement, self.statement).compile(dialect=dialect)
            names: Mapping[Any, str] = compiled.bind_names  # type: ignore[attr-defined]
            processors = []
            for bind, name in names.items():
                process = bind.type.dialect_impl(dialect).bind_processor(dialect)
                if process is not None:
                    processors.append((name, process))
            plan = _Plan(compiled.string, dict(compiled.params), tuple(processors))
            self._plans[dialect.name] = plan
        return plan
