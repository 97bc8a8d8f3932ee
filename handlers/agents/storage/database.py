"""The service's database: a SQLAlchemy engine and transactions run in worker threads.

Why synchronous SQLAlchemy in threads, for both databases: one code path and one set of
queries for SQLite and PostgreSQL (aiosqlite is not available, and a second, async path for
PostgreSQL only would double what must be tested); the sync ORM is SQLAlchemy's most mature
API; and each unit of work is a short transaction, so a bounded thread pool (as many threads
as pooled connections) keeps the event loop free without a noticeable cost.

* SQLite (the default, a file): WAL journal, foreign keys on, a 30 s busy timeout. The driver's
  implicit transactions are turned off and every transaction begins explicitly: reads with
  ``BEGIN``, writes with ``BEGIN IMMEDIATE`` so that a write transaction holds the write lock
  from its first statement (two writers that both read first would otherwise fail with
  "database is locked" instead of waiting).
* PostgreSQL through psycopg 3 (``postgresql://`` URLs are read as ``postgresql+psycopg://``).
  Reads run in autocommit mode: at PostgreSQL's READ COMMITTED level every statement takes a
  snapshot of its own anyway, so a read "transaction" of several statements was never one
  consistent view; without ``BEGIN`` and ``COMMIT`` a read costs one round trip per statement
  and nothing else. Writes are real transactions.

Every call of :meth:`Database.read` / :meth:`Database.write` is one transaction: committed when
the function returns, rolled back when it raises.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from functools import partial
from typing import Any, TypeVar

import anyio
from sqlalchemy import Engine, create_engine, event
from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import DisconnectionError
from sqlalchemy.orm import Session, sessionmaker

__all__ = ["Database", "normalize_url"]

T = TypeVar("T")

POOL_SIZE = 8
_IMMEDIATE = "agents_begin_immediate"


def normalize_url(url: str | URL) -> URL:
    """The URL with the driver this service uses (psycopg 3 for PostgreSQL)."""
    parsed = make_url(url)
    if parsed.drivername in ("postgresql", "postgres"):
        parsed = parsed.set(drivername="postgresql+psycopg")
    return parsed


def _sqlite_engine(url: URL) -> Engine:
    engine = create_engine(
        url,
        connect_args={"check_same_thread": False, "timeout": 30, "isolation_level": None},
        pool_size=POOL_SIZE,
        max_overflow=0,
    )

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.execute("PRAGMA busy_timeout=30000")
        cursor.execute("PRAGMA synchronous=NORMAL")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(connection: Any) -> None:
        immediate = connection.get_execution_options().get(_IMMEDIATE, False)
        connection.exec_driver_sql("BEGIN IMMEDIATE" if immediate else "BEGIN")

    return engine


IDLE_PING_SECONDS = 1.0
"""A pooled PostgreSQL connection idle longer than this is pinged before use (and replaced
when the server closed it: a restart, an idle timeout)."""


def _ping_idle_connections(engine: Engine) -> None:
    """SQLAlchemy's ``pool_pre_ping``, for connections idle over :data:`IDLE_PING_SECONDS`
    only: a connection handed back a moment ago is not pinged (one round trip less per
    transaction of a busy worker; a server that went away in that moment fails the
    transaction, which the pool then discards, as any lost connection)."""

    @event.listens_for(engine, "checkin")
    def _on_checkin(_dbapi_connection: Any, record: Any) -> None:
        record.info["idle_since"] = time.monotonic()

    @event.listens_for(engine, "checkout")
    def _on_checkout(dbapi_connection: Any, record: Any, _proxy: Any) -> None:
        idle_since = record.info.get("idle_since")
        if idle_since is None or time.monotonic() - idle_since < IDLE_PING_SECONDS:
            return  # fresh, or just handed back
        try:
            alive = engine.dialect.do_ping(dbapi_connection)
        except Exception as error:
            raise DisconnectionError(f"pooled connection lost: {error}") from error
        if not alive:
            raise DisconnectionError("pooled connection lost")


class Database:
    """An engine and the two kinds of transaction the service runs."""

    def __init__(self, url: str | URL) -> None:
        self.url = normalize_url(url)
        if self.url.get_backend_name() == "sqlite":
            self.engine = _sqlite_engine(self.url)
        else:
            self.engine = create_engine(self.url, pool_size=POOL_SIZE, max_overflow=0)
            _ping_idle_connections(self.engine)
        self._disposed = False
        event.listen(self.engine, "checkin", self._close_after_dispose)
        self.write_engine = self.engine.execution_options(**{_IMMEDIATE: True})
        read_engine = (
            self.engine
            if self.dialect == "sqlite"  # a WAL read transaction is one snapshot: keep it
            else self.engine.execution_options(isolation_level="AUTOCOMMIT")
        )
        self._reads = sessionmaker(read_engine, expire_on_commit=False)
        self._writes = sessionmaker(self.write_engine, expire_on_commit=False)
        self._limiter = anyio.CapacityLimiter(POOL_SIZE)

    @property
    def dialect(self) -> str:
        """``sqlite`` or ``postgresql``."""
        return self.url.get_backend_name()

    def read_sync(self, work: Callable[[Session], T]) -> T:
        """Run ``work`` in a read transaction, in this thread."""
        with self._reads.begin() as session:
            return work(session)

    def write_sync(self, work: Callable[[Session], T]) -> T:
        """Run ``work`` in a write transaction, in this thread."""
        with self._writes.begin() as session:
            return work(session)

    async def read(self, work: Callable[[Session], T]) -> T:
        """Run ``work`` in a read transaction, in a worker thread."""
        return await anyio.to_thread.run_sync(partial(self.read_sync, work), limiter=self._limiter)

    async def write(self, work: Callable[[Session], T]) -> T:
        """Run ``work`` in a write transaction, in a worker thread."""
        return await anyio.to_thread.run_sync(partial(self.write_sync, work), limiter=self._limiter)

    def dispose(self) -> None:
        """Close every pooled connection, and each connection still in use once it is
        returned."""
        self._disposed = True
        self.engine.dispose()

    def _close_after_dispose(self, _dbapi_connection: Any, record: Any) -> None:
        # A connection in use while dispose() ran comes back to the discarded pool, which
        # would leave it open until the garbage collector finds it.
        if self._disposed:
            record.invalidate()

    def display_url(self) -> str:
        """The URL without its password, for logs."""
        return self.url.render_as_string(hide_password=True)
