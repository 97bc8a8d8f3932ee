"""Settings of ``agents-server`` and ``agents-admin``, read from the environment.

| variable | default | meaning |
|---|---|---|
| ``AGENTS_HOST`` | ``127.0.0.1`` | address the HTTP server binds |
| ``AGENTS_PORT`` | ``8090`` | its port (``0``: any free port) |
| ``AGENTS_DATA_DIR`` | ``./.data/agents`` | blobs and, by default, the SQLite database |
| ``AGENTS_DATABASE_URL`` | unset | SQLAlchemy URL; unset: ``sqlite:///<data dir>/agents.db`` |
| ``LOG_LEVEL`` | ``INFO`` | ``DEBUG``, ``INFO``, ``WARNING`` or ``ERROR`` |

An invalid value raises :class:`SettingsError` naming the variable and what it accepts.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Settings", "SettingsError"]

_LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR")


class SettingsError(ValueError):
    """A setting has a value the service cannot use."""


@dataclass(frozen=True)
class Settings:
    """Where the service listens and keeps its data."""

    host: str = "127.0.0.1"
    port: int = 8090
    data_dir: Path = Path(".data/agents")
    database_url: str | None = None
    log_level: str = "INFO"

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Settings:
        """The settings the environment (``os.environ`` by default) gives."""
        env = os.environ if env is None else env
        port_text = env.get("AGENTS_PORT", "") or "8090"
        try:
            port = int(port_text, 10)
        except ValueError:
            port = -1
        if not 0 <= port <= 65535:
            raise SettingsError(f"AGENTS_PORT={port_text!r} is invalid: expected 0 to 65535")
        level = (env.get("LOG_LEVEL", "") or "INFO").upper()
        if level == "WARN":
            level = "WARNING"
        if level not in _LOG_LEVELS:
            accepted = ", ".join(_LOG_LEVELS)
            raise SettingsError(f"LOG_LEVEL={env['LOG_LEVEL']!r} is invalid: expected {accepted}")
        host = env.get("AGENTS_HOST", "") or "127.0.0.1"
        data_dir = Path(env.get("AGENTS_DATA_DIR", "") or ".data/agents")
        database_url = env.get("AGENTS_DATABASE_URL", "") or None
        if database_url is not None and not database_url.startswith(("sqlite", "postgresql")):
            raise SettingsError(
                f"AGENTS_DATABASE_URL={database_url!r} is invalid: expected a sqlite:/// or "
                "postgresql:// URL"
            )
        return cls(host, port, data_dir, database_url, level)

    @property
    def effective_database_url(self) -> str:
        """``AGENTS_DATABASE_URL``, or the SQLite file in the data directory."""
        if self.database_url is not None:
            return self.database_url
        return f"sqlite:///{(self.data_dir / 'agents.db').resolve()}"

    @property
    def blob_dir(self) -> Path:
        """Where file contents are stored, by SHA-256."""
        return self.data_dir / "blobs"
