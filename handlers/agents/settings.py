"""Settings of ``agents-server`` and ``agents-admin``, read from the environment.

| variable | default | meaning |
|---|---|---|
| ``AGENTS_HOST`` | ``127.0.0.1`` | address the HTTP server binds |
| ``AGENTS_PORT`` | ``8090`` | its port (``0``: any free port) |
| ``AGENTS_DATA_DIR`` | ``./.data/agents`` | blobs and, by default, the SQLite database |
| ``AGENTS_DATABASE_URL`` | unset | SQLAlchemy URL; unset: ``sqlite:///<data dir>/agents.db`` |
| ``LOG_LEVEL`` | ``INFO`` | ``DEBUG``, ``INFO``, ``WARNING`` or ``ERROR`` |
| ``AGENTS_WORKER_CONCURRENCY`` | ``2`` | executions a worker (or the server) runs at once |
| ``AGENTS_EMBEDDED_WORKER`` | ``true`` | whether ``agents-server`` runs executions itself |
| ``AGENTS_HEARTBEAT_SECONDS`` | ``5`` | how often a worker renews its lease |
| ``AGENTS_STALE_AFTER_SECONDS`` | ``30`` | a lease older than this means the worker is lost |
| ``AGENTS_MAX_ATTEMPTS`` | ``2`` | runs of one execution before a lost worker fails it |
| ``AGENTS_CANCEL_POLL_SECONDS`` | ``1`` | how often a worker checks for a cancel request |
| ``AGENTS_SANDBOX`` | ``bwrap`` | ``bwrap`` (isolated) or ``none`` (unisolated: development) |
| ``AGENTS_SANDBOX_UID`` / ``_GID`` | ``65534`` | the sandbox's user and group when run as root |
| ``AGENTS_RUN_MAX_MEMORY`` | ``2GiB`` | address space of each process of a run |
| ``AGENTS_RUN_MAX_CPU_SECONDS`` | the run's timeout | CPU time of each process of a run |
| ``AGENTS_RUN_MAX_PROCESSES`` | ``256`` | processes (and threads) of a run at once |
| ``AGENTS_RUN_MAX_FILE_SIZE`` | ``50000000`` | largest file a run may write |
| ``AGENTS_RUN_MAX_OPEN_FILES`` | ``1024`` | open files of each process of a run |
| ``AGENTS_EGRESS_ALLOW`` | empty | non-public hosts and networks egress may reach (``*``: all) |
| ``AGENTS_RUN_PATH`` | see below | ``PATH`` of agent programs |
| ``AGENTS_MAX_REQUEST_BODY`` | ``51MiB`` | largest request body (bytes or KiB, MiB, GiB) |
| ``AGENTS_RATE_LIMIT`` | ``off`` | requests per API key, ``<count>/<second|minute|hour|day>`` |
| ``AGENTS_RATELIMIT_GRPC`` | unset | ``host:port`` of a ratelimit service deciding instead |
| ``AGENTS_RATELIMIT_DOMAIN`` | ``agents`` | the rate limit domain of the requests |

``AGENTS_RUN_PATH`` defaults to ``/usr/local/bin:/usr/bin:/bin`` in the sandbox (where
``python`` is the system's ``python3``); with ``AGENTS_SANDBOX=none`` to the service
interpreter's folder first, so ``python`` in an agent's entrypoint is that interpreter.

``AGENTS_MAX_REQUEST_BODY`` defaults to the largest expected file (50 MiB) plus 1 MiB for the
multipart framing and the other fields of the request.

An invalid value raises :class:`SettingsError` naming the variable and what it accepts.
"""

from __future__ import annotations

import math
import os
import re
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from handlers.agents.egress import EgressPolicy

__all__ = [
    "DEFAULT_MAX_REQUEST_BYTES",
    "SANDBOX_MODES",
    "RequestRate",
    "SandboxMode",
    "Settings",
    "SettingsError",
]

_LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR")
SYSTEM_RUN_PATH = "/usr/local/bin:/usr/bin:/bin"
"""``PATH`` of sandboxed agent programs: the system's interpreters (``python`` is ``python3``)."""
UNSANDBOXED_RUN_PATH = f"{Path(sys.executable).parent}:{SYSTEM_RUN_PATH}"
"""Unsandboxed agent programs find ``python`` (the service's own interpreter) first."""

SandboxMode = Literal["bwrap", "none"]
SANDBOX_MODES: tuple[SandboxMode, ...] = ("bwrap", "none")
NOBODY = 65534

MIB = 1024 * 1024
DEFAULT_MAX_REQUEST_BYTES = 51 * MIB
"""An expected file of the spec's 50 MiB, with room for the multipart framing around it."""

RATE_UNITS = ("second", "minute", "hour", "day")
_RATE = re.compile(r"^\s*(\d{1,10})\s*/\s*([a-z]+?)s?\s*$")
_SIZE = re.compile(r"^\s*(\d{1,15})\s*(b|kib|mib|gib)?\s*$")
_SIZE_UNITS = {"b": 1, "kib": 1024, "mib": MIB, "gib": 1024 * MIB}


class SettingsError(ValueError):
    """A setting has a value the service cannot use."""


@dataclass(frozen=True)
class RequestRate:
    """A request rate limit: ``requests`` per ``unit`` (one of :data:`RATE_UNITS`)."""

    requests: int
    unit: str

    def __str__(self) -> str:
        return f"{self.requests}/{self.unit}"

    @classmethod
    def parse(cls, text: str) -> RequestRate:
        """``600/minute`` (also ``600/minutes``); raises :class:`ValueError`."""
        match = _RATE.match(text.lower())
        if match is None or match[2] not in RATE_UNITS or not 1 <= int(match[1]) <= 4294967295:
            raise ValueError(text)
        return cls(int(match[1]), match[2])


@dataclass(frozen=True)
class Settings:
    """Where the service listens and keeps its data."""

    host: str = "127.0.0.1"
    port: int = 8090
    data_dir: Path = Path(".data/agents")
    database_url: str | None = None
    log_level: str = "INFO"
    worker_concurrency: int = 2
    embedded_worker: bool = True
    heartbeat_seconds: float = 5.0
    stale_after_seconds: float = 30.0
    max_attempts: int = 2
    cancel_poll_seconds: float = 1.0
    run_path: str | None = None
    """``PATH`` of agent programs; None: :attr:`effective_run_path` picks by sandbox mode."""
    sandbox: SandboxMode = "bwrap"
    sandbox_uid: int = NOBODY
    sandbox_gid: int = NOBODY
    run_max_memory_bytes: int = 2 * 1024 * MIB
    run_max_cpu_seconds: int | None = None
    """None: each run's own timeout."""
    run_max_processes: int = 256
    run_max_file_bytes: int = 50_000_000
    run_max_open_files: int = 1024
    egress: EgressPolicy = field(default_factory=EgressPolicy)
    max_request_bytes: int = DEFAULT_MAX_REQUEST_BYTES
    rate_limit: RequestRate | None = None
    """``None``: requests are not limited (unless ``ratelimit_grpc`` names a service)."""
    ratelimit_grpc: str | None = None
    ratelimit_domain: str = "agents"

    def __post_init__(self) -> None:
        if self.stale_after_seconds <= self.heartbeat_seconds:
            raise SettingsError(
                f"AGENTS_STALE_AFTER_SECONDS={self.stale_after_seconds:g} is invalid: it must be "
                f"longer than AGENTS_HEARTBEAT_SECONDS={self.heartbeat_seconds:g}"
            )

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
        return cls(
            host,
            port,
            data_dir,
            database_url,
            level,
            worker_concurrency=_integer(env, "AGENTS_WORKER_CONCURRENCY", 2, 1, 256),
            embedded_worker=_boolean(env, "AGENTS_EMBEDDED_WORKER", True),
            heartbeat_seconds=_seconds(env, "AGENTS_HEARTBEAT_SECONDS", 5.0),
            stale_after_seconds=_seconds(env, "AGENTS_STALE_AFTER_SECONDS", 30.0),
            max_attempts=_integer(env, "AGENTS_MAX_ATTEMPTS", 2, 1, 100),
            cancel_poll_seconds=_seconds(env, "AGENTS_CANCEL_POLL_SECONDS", 1.0),
            run_path=env.get("AGENTS_RUN_PATH", "") or None,
            sandbox=_sandbox(env, "AGENTS_SANDBOX"),
            sandbox_uid=_integer(env, "AGENTS_SANDBOX_UID", NOBODY, 1, 4294967294),
            sandbox_gid=_integer(env, "AGENTS_SANDBOX_GID", NOBODY, 1, 4294967294),
            run_max_memory_bytes=_size(env, "AGENTS_RUN_MAX_MEMORY", 2 * 1024 * MIB),
            run_max_cpu_seconds=_optional_integer(env, "AGENTS_RUN_MAX_CPU_SECONDS", 1, 86400),
            run_max_processes=_integer(env, "AGENTS_RUN_MAX_PROCESSES", 256, 8, 65536),
            run_max_file_bytes=_size(env, "AGENTS_RUN_MAX_FILE_SIZE", 50_000_000),
            run_max_open_files=_integer(env, "AGENTS_RUN_MAX_OPEN_FILES", 1024, 16, 1048576),
            egress=_egress(env, "AGENTS_EGRESS_ALLOW"),
            max_request_bytes=_size(env, "AGENTS_MAX_REQUEST_BODY", DEFAULT_MAX_REQUEST_BYTES),
            rate_limit=_rate(env, "AGENTS_RATE_LIMIT"),
            ratelimit_grpc=_address(env, "AGENTS_RATELIMIT_GRPC"),
            ratelimit_domain=_domain(env, "AGENTS_RATELIMIT_DOMAIN"),
        )

    @property
    def effective_database_url(self) -> str:
        """``AGENTS_DATABASE_URL``, or the SQLite file in the data directory."""
        if self.database_url is not None:
            return self.database_url
        return f"sqlite:///{(self.data_dir / 'agents.db').resolve()}"

    @property
    def effective_run_path(self) -> str:
        """``AGENTS_RUN_PATH``, or the default of the sandbox mode."""
        if self.run_path is not None:
            return self.run_path
        return SYSTEM_RUN_PATH if self.sandbox == "bwrap" else UNSANDBOXED_RUN_PATH

    @property
    def blob_dir(self) -> Path:
        """Where file contents are stored, by SHA-256."""
        return self.data_dir / "blobs"


def _integer(env: Mapping[str, str], name: str, default: int, low: int, high: int) -> int:
    text = env.get(name, "")
    if not text:
        return default
    try:
        value = int(text, 10)
    except ValueError:
        value = low - 1
    if not low <= value <= high:
        raise SettingsError(f"{name}={text!r} is invalid: expected an integer from {low} to {high}")
    return value


def _optional_integer(env: Mapping[str, str], name: str, low: int, high: int) -> int | None:
    if not env.get(name, "").strip():
        return None
    return _integer(env, name, low, low, high)


def _sandbox(env: Mapping[str, str], name: str) -> SandboxMode:
    text = env.get(name, "").strip().lower() or "bwrap"
    for mode in SANDBOX_MODES:
        if text == mode:
            return mode
    raise SettingsError(f"{name}={env[name]!r} is invalid: expected bwrap or none")


def _egress(env: Mapping[str, str], name: str) -> EgressPolicy:
    text = env.get(name, "").strip()
    if text == "*":
        return EgressPolicy.allow_all()
    try:
        return EgressPolicy.parse(text.split(","))
    except ValueError as error:
        raise SettingsError(
            f"{name}={text!r} is invalid: {error}; expected host names, IP addresses or "
            "networks separated by commas (e.g. billing.internal,10.20.0.0/16), or *"
        ) from None


def _seconds(env: Mapping[str, str], name: str, default: float) -> float:
    text = env.get(name, "")
    if not text:
        return default
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not 0.05 <= value <= 86400:
        raise SettingsError(f"{name}={text!r} is invalid: expected seconds from 0.05 to 86400")
    return value


def _boolean(env: Mapping[str, str], name: str, default: bool) -> bool:
    text = env.get(name, "").strip().lower()
    if not text:
        return default
    if text in ("1", "true", "yes", "on"):
        return True
    if text in ("0", "false", "no", "off"):
        return False
    raise SettingsError(f"{name}={env[name]!r} is invalid: expected true or false")


def _size(env: Mapping[str, str], name: str, default: int) -> int:
    text = env.get(name, "")
    if not text:
        return default
    match = _SIZE.match(text.lower())
    value = 0 if match is None else int(match[1]) * _SIZE_UNITS[match[2] or "b"]
    if not 1024 <= value <= 64 * 1024 * MIB:
        raise SettingsError(
            f"{name}={text!r} is invalid: expected a size from 1KiB to 64GiB "
            "(bytes, or a number with KiB, MiB or GiB)"
        )
    return value


def _rate(env: Mapping[str, str], name: str) -> RequestRate | None:
    text = env.get(name, "").strip()
    if not text or text.lower() in ("off", "none", "0"):
        return None
    try:
        return RequestRate.parse(text)
    except ValueError:
        units = "|".join(RATE_UNITS)
        raise SettingsError(
            f"{name}={text!r} is invalid: expected off or <requests>/<{units}>, e.g. 600/minute"
        ) from None


def _address(env: Mapping[str, str], name: str) -> str | None:
    text = env.get(name, "").strip()
    if not text:
        return None
    host, _, port = text.rpartition(":")
    if not host or not port.isdigit() or not 1 <= int(port) <= 65535:
        raise SettingsError(f"{name}={text!r} is invalid: expected host:port")
    return text


def _domain(env: Mapping[str, str], name: str) -> str:
    text = env.get(name, "").strip() or "agents"
    if len(text) > 1024 or not text.isprintable():
        raise SettingsError(f"{name}={text!r} is invalid: expected printable text (at most 1024)")
    return text
