"""Settings of ``agents-server``, ``agents-worker`` and ``agents-admin``, from the environment.

One field per variable (``handlers.common.settings``: the same model as the other services);
``docs/settings.md`` lists them all, generated from these fields. An invalid value stops the
program with one line naming the variable and what it accepts (exit status 2).
"""

from __future__ import annotations

import math
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal

from pydantic import BeforeValidator, Field, model_validator
from pydantic_settings import NoDecode, SettingsConfigDict

from handlers.agents.egress import EgressPolicy
from handlers.common.settings import Flag, ServiceSettings, SettingsError

__all__ = [
    "DEFAULT_MAX_REQUEST_BYTES",
    "SANDBOX_MODES",
    "RequestRate",
    "SandboxMode",
    "Settings",
    "SettingsError",
]

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


# -- value formats (each raises ValueError("expected …")) ----------------------------------------


def _integer(low: int, high: int) -> BeforeValidator:
    def parse(value: object) -> object:
        if not isinstance(value, str):
            return value
        try:
            number = int(value.strip(), 10)
        except ValueError:
            number = low - 1
        if not low <= number <= high:
            raise ValueError(f"expected an integer from {low} to {high}")
        return number

    return BeforeValidator(parse)


def _seconds(value: object) -> object:
    if not isinstance(value, str):
        return value
    try:
        number = float(value)
    except ValueError:
        number = math.nan
    if not 0.05 <= number <= 86400:
        raise ValueError("expected seconds from 0.05 to 86400")
    return number


def _size(low: int, high: int) -> BeforeValidator:
    def parse(value: object) -> object:
        if not isinstance(value, str):
            return value
        match = _SIZE.match(value.lower())
        size = 0 if match is None else int(match[1]) * _SIZE_UNITS[match[2] or "b"]
        if not low <= size <= high:
            raise ValueError(
                f"expected a size from {_show_size(low)} to {_show_size(high)} (bytes, or a "
                "number with KiB, MiB or GiB)"
            )
        return size

    return BeforeValidator(parse)


def _show_size(size: int) -> str:
    for unit, factor in (("GiB", 1024 * MIB), ("MiB", MIB), ("KiB", 1024)):
        if size % factor == 0:
            return f"{size // factor}{unit}"
    return str(size)


def _sandbox(value: object) -> object:
    if not isinstance(value, str):
        return value
    text = value.strip().lower()
    if text not in SANDBOX_MODES:
        raise ValueError("expected bwrap or none")
    return text


def _database_url(value: object) -> object:
    if isinstance(value, str) and not value.startswith(("sqlite", "postgresql")):
        raise ValueError("expected a sqlite:/// or postgresql:// URL")
    return value


def _egress(value: object) -> object:
    if not isinstance(value, str):
        return value
    text = value.strip()
    if text == "*":
        return EgressPolicy.allow_all()
    try:
        return EgressPolicy.parse(text.split(","))
    except ValueError as error:
        raise ValueError(
            f"{error}; expected host names, IP addresses or networks separated by commas "
            "(e.g. billing.internal,10.20.0.0/16), or *"
        ) from None


def _rate(value: object) -> object:
    if not isinstance(value, str):
        return value
    text = value.strip()
    if text.lower() in ("off", "none", "0"):
        return None
    try:
        return RequestRate.parse(text)
    except ValueError:
        units = "|".join(RATE_UNITS)
        raise ValueError(f"expected off or <requests>/<{units}>, e.g. 600/minute") from None


def _address(value: object) -> object:
    if not isinstance(value, str):
        return value
    text = value.strip()
    host, _, port = text.rpartition(":")
    if not host or not port.isdigit() or not 1 <= int(port) <= 65535:
        raise ValueError("expected host:port")
    return text


def _domain(value: object) -> object:
    if isinstance(value, str) and (len(value.strip()) > 1024 or not value.strip().isprintable()):
        raise ValueError("expected printable text (at most 1024)")
    return value.strip() if isinstance(value, str) else value


def _port(value: object) -> object:
    if not isinstance(value, str):
        return value
    try:
        port = int(value, 10)
    except ValueError:
        port = -1
    if not 0 <= port <= 65535:
        raise ValueError("expected 0 to 65535")
    return port


def _variable(name: str, description: str, **extra: Any) -> Any:
    """A field read from ``name``, described for ``docs/settings.md``."""
    return Field(validation_alias=name, description=description, **extra)


Seconds = Annotated[float, BeforeValidator(_seconds)]


class Settings(ServiceSettings):
    """Where the service listens and keeps its data, how it runs executions."""

    model_config = SettingsConfigDict(arbitrary_types_allowed=True)
    program: ClassVar[str] = "agents"

    host: str = _variable("AGENTS_HOST", "address the HTTP server binds", default="127.0.0.1")
    port: Annotated[int, BeforeValidator(_port)] = _variable(
        "AGENTS_PORT", "its port (`0`: any free port; the startup line shows the URL)", default=8090
    )
    docs_enabled: Flag = _variable(
        "AGENTS_DOCS_ENABLED",
        "serve Swagger UI over the API's OpenAPI document at `/docs`",
        default=True,
    )
    data_dir: Path = _variable(
        "AGENTS_DATA_DIR",
        "blobs (`blobs/`) and, by default, the SQLite database",
        default=Path(".data/agents"),
    )
    database_url: Annotated[str | None, BeforeValidator(_database_url)] = _variable(
        "AGENTS_DATABASE_URL",
        "SQLAlchemy URL; unset: `sqlite:///<AGENTS_DATA_DIR>/agents.db`; "
        "`postgresql://user@host/db` uses psycopg 3",
        default=None,
    )
    worker_concurrency: Annotated[int, _integer(1, 256)] = _variable(
        "AGENTS_WORKER_CONCURRENCY",
        "executions a worker (or the server's own) runs at once (1 to 256)",
        default=2,
    )
    embedded_worker: Flag = _variable(
        "AGENTS_EMBEDDED_WORKER", "whether `agents-server` runs executions itself", default=True
    )
    server_processes: Annotated[int, _integer(1, 64)] = _variable(
        "AGENTS_SERVER_PROCESSES",
        "processes `agents-server` serves the API with (1 to 64), sharing its port and the "
        "database; each runs its own worker slots (`AGENTS_WORKER_CONCURRENCY` each) unless "
        "`AGENTS_EMBEDDED_WORKER=false`. More than one is meant for PostgreSQL (with SQLite "
        "they contend for its one writer)",
        default=1,
    )
    heartbeat_seconds: Seconds = _variable(
        "AGENTS_HEARTBEAT_SECONDS",
        "how often a worker renews its lease on a running execution (0.05 to 86400 s)",
        default=5.0,
    )
    stale_after_seconds: Seconds = _variable(
        "AGENTS_STALE_AFTER_SECONDS",
        "a lease not renewed this long means the worker is lost (longer than the heartbeat)",
        default=30.0,
    )
    max_attempts: Annotated[int, _integer(1, 100)] = _variable(
        "AGENTS_MAX_ATTEMPTS",
        "runs of one execution before a lost worker fails it (1 to 100)",
        default=2,
    )
    cancel_poll_seconds: Seconds = _variable(
        "AGENTS_CANCEL_POLL_SECONDS", "how often a worker reads the cancellation flag", default=1.0
    )
    run_path: str | None = _variable(
        "AGENTS_RUN_PATH",
        "`PATH` of agent programs",
        default=None,
        json_schema_extra={
            "default_text": "sandboxed: `/usr/local/bin:/usr/bin:/bin`; with "
            "`AGENTS_SANDBOX=none`, the service interpreter's folder before it"
        },
    )
    sandbox: Annotated[SandboxMode, BeforeValidator(_sandbox)] = _variable(
        "AGENTS_SANDBOX",
        "`bwrap`: every agent program runs isolated; `none`: unisolated, for trusted "
        "single-user development only",
        default="bwrap",
    )
    sandbox_uid: Annotated[int, _integer(1, 4294967294)] = _variable(
        "AGENTS_SANDBOX_UID", "the host user agent programs run as when the service is root",
        default=NOBODY,
    )  # fmt: skip
    sandbox_gid: Annotated[int, _integer(1, 4294967294)] = _variable(
        "AGENTS_SANDBOX_GID", "the host group agent programs run as when the service is root",
        default=NOBODY,
    )  # fmt: skip
    run_max_memory_bytes: Annotated[int, _size(1024, 64 * 1024 * MIB)] = _variable(
        "AGENTS_RUN_MAX_MEMORY",
        "address space of each process of a run (bytes, or with KiB, MiB, GiB)",
        default=2 * 1024 * MIB,
        json_schema_extra={"default_text": "`2GiB`"},
    )
    run_max_cpu_seconds: Annotated[int | None, _integer(1, 86400)] = _variable(
        "AGENTS_RUN_MAX_CPU_SECONDS",
        "CPU time of each process of a run, in seconds (1 to 86400)",
        default=None,
        json_schema_extra={"default_text": "the manifest's `timeoutSeconds`"},
    )
    run_max_processes: Annotated[int, _integer(8, 65536)] = _variable(
        "AGENTS_RUN_MAX_PROCESSES", "processes and threads of a run at once (8 to 65536)",
        default=256,
    )  # fmt: skip
    run_max_file_bytes: Annotated[int, _size(1024, 64 * 1024 * MIB)] = _variable(
        "AGENTS_RUN_MAX_FILE_SIZE",
        "largest file a run may write (bytes, or with KiB, MiB, GiB)",
        default=50_000_000,
    )
    run_max_open_files: Annotated[int, _integer(16, 1048576)] = _variable(
        "AGENTS_RUN_MAX_OPEN_FILES", "open files of each process of a run (16 to 1048576)",
        default=1024,
    )  # fmt: skip
    egress: Annotated[EgressPolicy, NoDecode, BeforeValidator(_egress)] = _variable(
        "AGENTS_EGRESS_ALLOW",
        "non-public destinations workflow `http` steps and `outbound` agents may reach: host "
        "names, addresses and networks, comma-separated; `*` turns the egress guard off",
        default_factory=EgressPolicy,
        json_schema_extra={"default_text": "empty: public addresses only"},
    )
    max_request_bytes: Annotated[int, _size(1024, 64 * 1024 * MIB)] = _variable(
        "AGENTS_MAX_REQUEST_BODY",
        "largest request body (bytes, or with KiB, MiB, GiB); larger: 413",
        default=DEFAULT_MAX_REQUEST_BYTES,
        json_schema_extra={"default_text": "`51MiB`"},
    )
    rate_limit: Annotated[RequestRate | None, NoDecode, BeforeValidator(_rate)] = _variable(
        "AGENTS_RATE_LIMIT",
        "requests per API key, `<count>/<second|minute|hour|day>` (e.g. `600/minute`), "
        "decided in process; `off`: not limited",
        default=None,
        json_schema_extra={"default_text": "`off`"},
    )
    ratelimit_grpc: Annotated[str | None, BeforeValidator(_address)] = _variable(
        "AGENTS_RATELIMIT_GRPC",
        "`host:port` of a `ratelimit` service (gRPC) that decides instead",
        default=None,
    )
    ratelimit_domain: Annotated[str, BeforeValidator(_domain)] = _variable(
        "AGENTS_RATELIMIT_DOMAIN", "the rate limit domain of the requests", default="agents"
    )
    # -- webhooks (handlers/agents/README.md, "Webhooks") --
    webhook_retry_base_seconds: Seconds = _variable(
        "AGENTS_WEBHOOK_RETRY_BASE",
        "seconds: the longest wait before a failed webhook delivery's first retry; each next "
        "one's is 6 times longer, up to `AGENTS_WEBHOOK_RETRY_CAP` (each wait is drawn from "
        "the upper half of its longest)",
        default=5.0,
    )
    webhook_retry_cap_seconds: Seconds = _variable(
        "AGENTS_WEBHOOK_RETRY_CAP",
        "seconds: the longest wait between two attempts of a webhook delivery (12 hours)",
        default=43200.0,
    )
    webhook_max_attempts: Annotated[int, _integer(1, 100)] = _variable(
        "AGENTS_WEBHOOK_MAX_ATTEMPTS",
        "attempts of a webhook delivery before it is `failed` (1 to 100)",
        default=10,
    )
    webhook_timeout_seconds: Seconds = _variable(
        "AGENTS_WEBHOOK_TIMEOUT",
        "seconds a webhook delivery attempt may take, from connecting to the answer's status",
        default=10.0,
    )

    @model_validator(mode="after")
    def _stale_after_heartbeat(self) -> Settings:
        if self.stale_after_seconds <= self.heartbeat_seconds:
            raise ValueError(
                f"AGENTS_STALE_AFTER_SECONDS={self.stale_after_seconds:g} is invalid: it must be "
                f"longer than AGENTS_HEARTBEAT_SECONDS={self.heartbeat_seconds:g}"
            )
        return self

    @property
    def effective_run_path(self) -> str:
        """``AGENTS_RUN_PATH``, or the default of the sandbox mode."""
        if self.run_path is not None:
            return self.run_path
        return SYSTEM_RUN_PATH if self.sandbox == "bwrap" else UNSANDBOXED_RUN_PATH

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
