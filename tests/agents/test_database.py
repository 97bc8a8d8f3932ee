"""The database wrapper: connections are closed, also those in use while it is disposed;
PostgreSQL connections idle for a while are pinged before use and replaced when dead."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from typing import Any

import psycopg
import pytest
from sqlalchemy import text
from sqlalchemy.engine import URL

from handlers.agents.execution.leases import claim_next
from handlers.agents.storage import database as storage_database
from handlers.agents.storage.database import Database
from handlers.agents.storage.migrate import upgrade
from tests.agents.support import Storage


def _closed(dbapi_connection: Any) -> bool:
    closed = getattr(dbapi_connection, "closed", None)  # psycopg
    if closed is not None:
        return bool(closed)
    try:
        dbapi_connection.execute("SELECT 1")  # sqlite3 has no `closed`
    except sqlite3.ProgrammingError:
        return True
    return False


def test_a_connection_in_use_while_disposing_is_closed_when_returned(
    new_storage: Callable[[], Storage],
) -> None:
    database = Database(new_storage().database_url)
    idle, in_use = database.engine.connect(), database.engine.connect()
    idle_dbapi = idle.connection.dbapi_connection
    in_use_dbapi = in_use.connection.dbapi_connection
    idle.close()
    assert in_use_dbapi is not None and not _closed(in_use_dbapi)

    database.dispose()
    assert _closed(idle_dbapi)
    assert not _closed(in_use_dbapi)  # a transaction may still be running on it
    in_use.close()
    assert _closed(in_use_dbapi)


def test_a_pooled_connection_the_server_closed_is_replaced_after_idling(
    new_storage: Callable[[], Storage], monkeypatch: pytest.MonkeyPatch
) -> None:
    database = Database(new_storage().database_url)
    if database.dialect != "postgresql":
        database.dispose()
        pytest.skip("SQLite has no server to close connections")
    monkeypatch.setattr(storage_database, "IDLE_PING_SECONDS", 0.0)
    try:
        pid = database.read_sync(lambda s: s.execute(text("SELECT pg_backend_pid()")).scalar())
        with psycopg.connect(psycopg_url(database.url), autocommit=True) as admin:
            admin.execute("SELECT pg_terminate_backend(%s)", (pid,))
        # the pooled connection is dead: the ping before use finds it and the pool replaces it
        again = database.read_sync(lambda s: s.execute(text("SELECT pg_backend_pid()")).scalar())
        assert again != pid
    finally:
        database.dispose()


def test_a_connection_handed_back_a_moment_ago_is_not_pinged(
    new_storage: Callable[[], Storage],
) -> None:
    database = Database(new_storage().database_url)
    if database.dialect != "postgresql":
        database.dispose()
        pytest.skip("the ping is PostgreSQL's")
    pings: list[object] = []
    original = database.engine.dialect.do_ping

    def counted(dbapi_connection: Any) -> bool:
        pings.append(dbapi_connection)
        return bool(original(dbapi_connection))

    database.engine.dialect.do_ping = counted  # type: ignore[method-assign]
    try:
        for _ in range(5):
            database.read_sync(lambda s: s.execute(text("SELECT 1")).scalar())
        assert pings == []
    finally:
        database.dispose()


def psycopg_url(url: URL) -> str:
    return url.set(drivername="postgresql").render_as_string(hide_password=False)


def test_claims_and_heartbeats_do_not_wait_for_the_disk_other_commits_do(
    new_storage: Callable[[], Storage],
) -> None:
    """A worker's claim (and heartbeat) sets ``synchronous_commit`` off for its own transaction
    only (PostgreSQL; nothing on SQLite): the next transaction, e.g. a submission, waits."""
    database = Database(new_storage().database_url)
    upgrade(database)
    postgres = database.engine.dialect.name == "postgresql"

    def claim_then_show(session: Any) -> str | None:
        assert claim_next(session, "w1") is None  # nothing queued
        return session.execute(text("SHOW synchronous_commit")).scalar() if postgres else None

    def show(session: Any) -> str | None:
        return session.execute(text("SHOW synchronous_commit")).scalar() if postgres else None

    try:
        assert database.write_sync(claim_then_show) == ("off" if postgres else None)
        assert database.write_sync(show) == ("on" if postgres else None)
    finally:
        database.dispose()
