"""Precompiled statements give what SQLAlchemy gives, on both databases: parameters through
the column types (aware times, JSON with None as SQL NULL), rows, counts, several inserts."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta, timezone

import pytest
from sqlalchemy import (
    JSON,
    Column,
    Integer,
    MetaData,
    String,
    Table,
    bindparam,
    insert,
    select,
    update,
)
from sqlalchemy.orm import Session

from handlers.agents.storage.database import Database
from handlers.agents.storage.precompiled import Precompiled
from handlers.agents.storage.schema import UtcDateTime
from tests.agents.support import Storage

METADATA = MetaData()
ROWS = Table(
    "precompiled_rows",
    METADATA,
    Column("id", String(16), primary_key=True),
    Column("n", Integer),
    Column("at", UtcDateTime()),
    Column("doc", JSON(none_as_null=True)),
)
INSERT = Precompiled(insert(ROWS))
BY_ID = Precompiled(select(ROWS.c.n, ROWS.c.at, ROWS.c.doc).where(ROWS.c.id == bindparam("row_id")))
BUMP = Precompiled(update(ROWS).where(ROWS.c.n >= bindparam("least")).values(n=ROWS.c.n + 1))


@pytest.fixture
def database(new_storage: Callable[[], Storage]) -> Iterator[Database]:
    database = Database(new_storage().database_url)
    METADATA.create_all(database.engine)
    yield database
    database.dispose()


def test_rows_counts_and_inserts_match_sqlalchemy(database: Database) -> None:
    moment = datetime(2026, 11, 26, 12, 0, tzinfo=timezone(timedelta(hours=2)))
    rows = [
        {"id": "a", "n": 1, "at": moment, "doc": {"k": [1, "x", None]}},
        {"id": "b", "n": 5, "at": None, "doc": None},
    ]
    database.write_sync(lambda session: INSERT.many(session, rows))
    a = database.read_sync(lambda session: BY_ID.rows(session, {"row_id": "a"}))
    assert a == [(1, moment.astimezone(UTC), {"k": [1, "x", None]})]
    assert a[0][1].utcoffset() == timedelta(0)
    b = database.read_sync(lambda session: BY_ID.rows(session, {"row_id": "b"}))
    assert b == [(5, None, None)]
    # None in a JSON column is SQL NULL, as SQLAlchemy stores it
    nulls = database.read_sync(
        lambda session: session.execute(select(ROWS.c.id).where(ROWS.c.doc.is_(None))).all()
    )
    assert [row[0] for row in nulls] == ["b"]
    assert database.read_sync(lambda session: BY_ID.rows(session, {"row_id": "zz"})) == []
    assert database.write_sync(lambda session: BUMP.count(session, {"least": 2})) == 1
    assert database.write_sync(lambda session: BUMP.count(session, {"least": 100})) == 0
    assert database.read_sync(lambda session: BY_ID.rows(session, {"row_id": "b"}))[0][0] == 6


def test_a_failed_transaction_rolls_back_its_precompiled_statements(database: Database) -> None:
    def insert_then_fail(session: Session) -> None:
        INSERT.rows(session, {"id": "c", "n": 1, "at": None, "doc": None})
        raise RuntimeError("rolled back")

    with pytest.raises(RuntimeError):
        database.write_sync(insert_then_fail)
    assert database.read_sync(lambda session: BY_ID.rows(session, {"row_id": "c"})) == []
