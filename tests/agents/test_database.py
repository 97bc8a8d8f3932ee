"""The database wrapper: connections are closed, also those in use while it is disposed."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from typing import Any

from handlers.agents.storage.database import Database
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
