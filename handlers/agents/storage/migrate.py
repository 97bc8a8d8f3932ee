"""Applying the Alembic migrations programmatically (no ``alembic.ini`` needed).

``agents-server`` and ``agents-admin`` call :func:`upgrade` before anything else, so a new
database gets the schema and an old one is brought up to date; the schema never comes from
``create_all``.
"""

from __future__ import annotations

import logging
from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory

from handlers.agents.settings import Settings
from handlers.agents.storage.database import Database

__all__ = ["current_revision", "downgrade", "head_revision", "open_database", "upgrade"]

log = logging.getLogger("agents.migrate")

SCRIPT_LOCATION = Path(__file__).with_name("migrations")


def _config() -> Config:
    config = Config()
    config.set_main_option("script_location", str(SCRIPT_LOCATION))
    return config


def head_revision() -> str:
    """The newest revision of the migrations."""
    head = ScriptDirectory.from_config(_config()).get_current_head()
    assert head is not None
    return head


def current_revision(database: Database) -> str | None:
    """The revision the database is at (``None``: no schema yet)."""
    with database.engine.connect() as connection:
        return MigrationContext.configure(connection).get_current_revision()


def upgrade(database: Database, revision: str = "head") -> None:
    """Bring the database's schema to ``revision`` (default: the newest)."""
    before = current_revision(database)
    config = _config()
    with database.write_engine.connect() as connection:
        config.attributes["connection"] = connection
        command.upgrade(config, revision)
    after = current_revision(database)
    if after != before:
        log.info("database schema migrated from %s to %s", before or "empty", after)


def downgrade(database: Database, revision: str = "base") -> None:
    """Take the schema back to ``revision`` (``base``: no tables)."""
    config = _config()
    with database.write_engine.connect() as connection:
        config.attributes["connection"] = connection
        command.downgrade(config, revision)


def open_database(settings: Settings) -> Database:
    """The database the settings name, its schema migrated to the newest revision."""
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    database = Database(settings.effective_database_url)
    try:
        upgrade(database)
    except BaseException:
        database.dispose()
        raise
    return database
