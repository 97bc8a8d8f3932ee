"""Every setting of the service, read from the environment with its default.

:class:`Settings` is the service's :class:`~handlers.common.settings.ServiceSettings`: one field
per variable, named by its ``validation_alias``, its meaning the field's ``description`` (the
README's settings tables say the same). Names are the seed's (``KVSTORE_``, ``ALTCACHE_``,
``METRICSD``, ``TAGGED_METRICSD``, ``PULLMETRICS``); the upstream names (``REDIS_``,
``MEMCACHE_``, ``STATSD``, ``DOG_STATSD``, ``PROMETHEUS``, ``LocalCacheSizeInBytes``) are read as
aliases (``AliasChoices``) so an existing deployment's environment works unchanged. Where both
are set the seed's name wins; an empty variable counts as unset. Values are upstream's Go
formats: booleans as ``strconv.ParseBool`` (``1``, ``t``, ``T``, ``TRUE``, ``true``, ``True``,
``0``, ``f``, ...), durations as ``time.ParseDuration`` (``150us``, ``500ms``, ``1m30s``).

The rest of the service reads the structured objects built from the flat fields
(:attr:`Settings.kvstore`, :attr:`Settings.xds`, :attr:`Settings.stats`, ...). An invalid value
raises :class:`SettingsError` naming the variable and what it accepts (``KVSTORE_TIMEOUT='10'
is invalid: expected a duration ...``), as does a check of several variables together
(``GRPC_SERVER_USE_TLS=true needs GRPC_SERVER_TLS_CERT and GRPC_SERVER_TLS_KEY``); the server
stops on it with exit status 2.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Annotated, Any, ClassVar

from pydantic import AliasChoices, BeforeValidator, Field, model_validator
from pydantic_core import PydanticUndefined
from pydantic_settings import (
    BaseSettings,
    EnvSettingsSource,
    NoDecode,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
)

from handlers.common.settings import LogFormat, LogLevel, ServiceSettings, SettingsError

__all__ = [
    "BACKENDS",
    "STATS_SINKS",
    "AltCacheSettings",
    "GrpcTransportSettings",
    "KvStoreSettings",
    "ModeSettings",
    "Modes",
    "MogrifierSettings",
    "Settings",
    "SettingsError",
    "StatsSettings",
    "TracingSettings",
    "XdsSettings",
    "parse_bool",
    "parse_duration",
    "parse_grpc_headers",
    "parse_host_ports",
    "parse_listen_address",
    "parse_names",
    "parse_node_metadata",
    "parse_positive_number",
    "parse_srv_name",
    "parse_tags",
    "split_host_port",
]

BACKENDS = ("redis", "memcache", "memory")
STATS_SINKS = ("metricsd", "tagged_metricsd", "pullmetrics", "stdout", "none")

# --- value formats: each parser raises ValueError("<what it accepts>") ------------------------

_TRUE = {"1", "t", "T", "true", "TRUE", "True"}
_FALSE = {"0", "f", "F", "false", "FALSE", "False"}
_DURATION_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h)")
_DURATION_UNITS = {
    "ns": 1e-9,
    "us": 1e-6,
    "µs": 1e-6,
    "ms": 1e-3,
    "s": 1.0,
    "m": 60.0,
    "h": 3600.0,
}


def parse_bool(text: str) -> bool:
    """Go's ``strconv.ParseBool``."""
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    raise ValueError("true or false")


def parse_duration(text: str) -> float:
    """Go's ``time.ParseDuration`` (``10s``, ``1m30s``, ``150us``), in seconds."""
    body = text.strip()
    sign = -1.0 if body.startswith("-") else 1.0
    body = body.lstrip("+-")
    if body == "0":
        return 0.0
    position, total = 0, 0.0
    while position < len(body):
        match = _DURATION_PART.match(body, position)
        if match is None:
            raise ValueError("a duration such as 500ms, 10s, 1m30s or 1h")
        total += float(match.group(1)) * _DURATION_UNITS[match.group(2)]
        position = match.end()
    if not body:
        raise ValueError("a duration such as 500ms, 10s, 1m30s or 1h")
    return sign * total


_SRV_NAME = re.compile(r"^_(.+?)\._(.+?)\.(.+)$")
_METADATA_KEY = re.compile(r"[0-9a-z_.-]+")
_TEMPLATE_GROUP = re.compile(r"\$(\d+)")


def split_host_port(text: str) -> tuple[str, int]:
    """``host:port`` (``[v6]:port``) as a host and a port number."""
    host, sep, port = text.strip().rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"host:port, got {text.strip()!r}")
    return host.strip("[]"), int(port)


def parse_host_ports(text: str) -> tuple[str, ...]:
    """A comma-separated list of ``host:port`` (or unix socket paths, containing ``/``)."""
    items = tuple(item.strip() for item in text.split(","))
    for item in items:
        if "/" not in item:
            try:
                split_host_port(item)
            except ValueError:
                raise ValueError(
                    f"a comma-separated list of host:port, got the item {item!r}"
                ) from None
    return items


def parse_srv_name(text: str) -> str:
    """An SRV record name, ``_service._proto.name`` (empty: none)."""
    if text and _SRV_NAME.match(text) is None:
        raise ValueError("an SRV name such as _memcache._tcp.example.com")
    return text


def _parse_pairs(text: str, separator: str, *, empty_values: bool) -> tuple[tuple[str, str], ...]:
    """A comma-separated list of ``key<separator>value`` as (key, value) pairs in order."""
    pairs: list[tuple[str, str]] = []
    for item in text.split(","):
        if not item.strip():
            continue
        key, sep, value = item.partition(separator)
        if not sep or not key.strip() or not (empty_values or value.strip()):
            raise ValueError(
                f"a comma-separated list of key{separator}value, got the item {item.strip()!r}"
            )
        pairs.append((key.strip(), value.strip()))
    return tuple(pairs)


def parse_tags(text: str) -> tuple[tuple[str, str], ...]:
    """``k1:v1,k2:v2`` (EXTRA_TAGS, a mogrifier's TAGS) as (key, value) pairs in order."""
    return _parse_pairs(text, ":", empty_values=False)


def parse_node_metadata(text: str) -> tuple[tuple[str, str], ...]:
    """``k1=v1,k2=v2`` (CONFIG_GRPC_XDS_NODE_METADATA) as (key, value) pairs in order."""
    return _parse_pairs(text, "=", empty_values=True)


def parse_grpc_headers(text: str) -> tuple[tuple[str, str], ...]:
    """``k1:v1,k2:v2`` (CONFIG_GRPC_XDS_CLIENT_ADDITIONAL_HEADERS) as gRPC metadata, names
    lower-cased as gRPC sends them."""
    pairs: list[tuple[str, str]] = []
    for key, value in parse_tags(text):
        name = key.lower()
        if not _METADATA_KEY.fullmatch(name) or name.startswith("grpc-"):
            raise ValueError(
                f"header names of letters, digits, '_', '.', '-' not starting with grpc-, "
                f"got {key!r}"
            )
        if not name.endswith("-bin") and not all(" " <= char <= "~" for char in value):
            raise ValueError(f"printable ASCII header values, got {value!r} for {key!r}")
        pairs.append((name, value))
    return tuple(pairs)


def parse_positive_number(text: str) -> float:
    """A finite number above 0."""
    try:
        value = float(text)
    except ValueError:
        value = 0.0
    if not 0 < value < float("inf"):
        raise ValueError("a number above 0")
    return value


def parse_listen_address(text: str) -> tuple[str, int]:
    """``host:port`` or ``:port`` (every interface; port 0: any free port) as a host and a
    port number."""
    host, sep, port = text.strip().rpartition(":")
    if not sep or not port.isdigit() or int(port) > 65535:
        raise ValueError(f"host:port or :port, got {text.strip()!r}")
    return host.strip("[]") or "0.0.0.0", int(port)


def parse_names(text: str) -> tuple[str, ...]:
    """A comma-separated list of names (TAGGED_METRICSD_MOGRIFIERS)."""
    names = tuple(name.strip() for name in text.split(",") if name.strip())
    for name in names:
        if not re.fullmatch(r"[A-Za-z0-9_]+", name):
            raise ValueError(f"a comma-separated list of names (letters, digits, _), got {name!r}")
    return names


def _parsed(parse: Callable[[str], object]) -> BeforeValidator:
    """A validator reading a variable's text with ``parse`` (``expected <what it accepts>``);
    a value that is not text (a default, or a field given by name) is left to the type."""

    def validate(value: object) -> object:
        if not isinstance(value, str):
            return value
        try:
            return parse(value)
        except ValueError as error:
            raise ValueError(f"expected {error}") from None

    return BeforeValidator(validate)


def _integer(minimum: int = 0, maximum: int | None = None) -> BeforeValidator:
    def parse(text: str) -> int:
        try:
            value = int(text, 10)
        except ValueError:
            value = minimum - 1
        if value < minimum or (maximum is not None and value > maximum):
            upper = "" if maximum is None else f" and at most {maximum}"
            raise ValueError(f"an integer of at least {minimum}{upper}")
        return value

    return _parsed(parse)


def _ratio(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0.0 <= value <= 1.0:
        raise ValueError("a number from 0 to 1")
    return value


def _duration(text: str) -> float:
    value = parse_duration(text)
    if value < 0:
        raise ValueError("a duration that is not negative")
    return value


def _choice(*choices: str) -> BeforeValidator:
    """One of ``choices``, compared case-insensitively; read in the choices' spelling."""

    def parse(text: str) -> str:
        for choice in choices:
            if text.strip().lower() == choice.lower():
                return choice
        raise ValueError("one of " + ", ".join(choices))

    return _parsed(parse)


def _path(text: str) -> str:
    if not text.startswith("/"):
        raise ValueError("a path starting with /")
    return text


GoBool = Annotated[bool, _parsed(parse_bool)]
"""A Go boolean (``strconv.ParseBool``)."""
Duration = Annotated[float, _parsed(_duration)]
"""A Go duration (``time.ParseDuration``), not negative, in seconds."""
Port = Annotated[int, _integer(0, 65535)]
Count = Annotated[int, _integer(0)]
Ratio = Annotated[float, _parsed(_ratio)]
Tags = Annotated[tuple[tuple[str, str], ...], NoDecode, _parsed(parse_tags)]
NodeMetadata = Annotated[tuple[tuple[str, str], ...], NoDecode, _parsed(parse_node_metadata)]
GrpcHeaders = Annotated[tuple[tuple[str, str], ...], NoDecode, _parsed(parse_grpc_headers)]
HostPorts = Annotated[tuple[str, ...], NoDecode, _parsed(parse_host_ports)]
Names = Annotated[tuple[str, ...], NoDecode, _parsed(parse_names)]
ListenAddress = Annotated[tuple[str, int], NoDecode, _parsed(parse_listen_address)]
PositiveNumber = Annotated[float, _parsed(parse_positive_number)]
SocketType = Annotated[str, _choice("tcp", "unix")]
KvStoreType = Annotated[str, _choice("single", "sentinel", "cluster")]
PoolOnEmpty = Annotated[str, _choice("CREATE", "ERROR", "WAIT")]
Stripped = Annotated[str, _parsed(str.strip)]


def _variable(
    name: str,
    description: str,
    default: Any = PydanticUndefined,
    *,
    upstream: str | None = None,
    default_text: str | None = None,
    default_factory: Callable[[], Any] | None = None,
) -> Any:
    """The field of variable ``name`` (and its ``upstream`` alias, read when ``name`` is not
    set), described for the settings tables; ``default_text`` shows a computed default."""
    alias: str | AliasChoices = name if upstream is None else AliasChoices(name, upstream)
    extra: dict[str, Any] | None = None if default_text is None else {"default_text": default_text}
    if default_factory is not None:
        return Field(
            default_factory=default_factory,
            validation_alias=alias,
            description=description,
            json_schema_extra=extra,
        )
    return Field(default, validation_alias=alias, description=description, json_schema_extra=extra)


# --- the structured settings the rest of the service reads -------------------------------------


@dataclass(frozen=True, slots=True)
class KvStoreSettings:
    """One key-value cache instance (``KVSTORE_*``, or ``KVSTORE_PERSECOND_*``)."""

    socket_type: str = "unix"
    url: str = "/var/run/nutcracker/ratelimit.sock"
    type: str = "single"
    pool_size: int = 10
    timeout: float = 10.0
    pool_on_empty_behavior: str = "CREATE"
    pool_on_empty_wait_duration: float = 1.0
    pipeline_window: float = 0.0
    tls: bool = False
    tls_client_cert: str = ""
    tls_client_key: str = ""
    tls_cacert: str = ""
    tls_skip_hostname_verification: bool = False
    auth: str = ""
    sentinel_auth: str = ""
    cluster_pipeline_parallelism: int = 1
    startup_max_elapsed_time: float = 0.0


@dataclass(frozen=True, slots=True)
class Modes:
    """Settings the upstream re-reads at every configuration load."""

    shadow_mode: bool = False
    quota_mode: bool = False
    response_dynamic_metadata: bool = False
    response_headers_enabled: bool = False
    limit_header: str = "RateLimit-Limit"
    remaining_header: str = "RateLimit-Remaining"
    reset_header: str = "RateLimit-Reset"

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Modes:
        """The modes ``env`` (default ``os.environ``) gives now: read again at each
        configuration load, as upstream does. Raises :class:`SettingsError`."""
        return ModeSettings.from_env(env).modes


@dataclass(frozen=True, slots=True)
class AltCacheSettings:
    """The alternative memory cache, memcached (``ALTCACHE_*``, upstream ``MEMCACHE_*``), used
    when BACKEND_TYPE is memcache: nodes from ``host_port`` or from the ``srv`` record."""

    host_port: tuple[str, ...] = ()
    srv: str = ""
    srv_refresh: float = 0.0
    max_idle_conns: int = 2
    tls: bool = False
    tls_client_cert: str = ""
    tls_client_key: str = ""
    tls_cacert: str = ""
    tls_skip_hostname_verification: bool = False

    def _check(self) -> None:
        if self.host_port and self.srv:
            raise SettingsError("ALTCACHE_HOST_PORT and ALTCACHE_SRV are both set: use one")
        if self.tls and bool(self.tls_client_cert) != bool(self.tls_client_key):
            raise SettingsError(
                "ALTCACHE_TLS_CLIENT_CERT and ALTCACHE_TLS_CLIENT_KEY go together: set both"
            )


@dataclass(frozen=True, slots=True)
class GrpcTransportSettings:
    """TLS, mTLS and connection ageing of the gRPC port (``GRPC_SERVER_*``, ``GRPC_CLIENT_*``,
    ``GRPC_MAX_CONNECTION_AGE*``; ages default to the upstream's 24h and 1h)."""

    use_tls: bool = False
    cert: str = ""
    key: str = ""
    client_ca: str = ""
    client_san: str = ""
    max_connection_age: float = 24 * 3600.0
    max_connection_age_grace: float = 3600.0

    def _check(self) -> None:
        if self.use_tls and not (self.cert and self.key):
            raise SettingsError(
                "GRPC_SERVER_USE_TLS=true needs GRPC_SERVER_TLS_CERT and GRPC_SERVER_TLS_KEY"
            )
        if self.client_ca and not self.use_tls:
            raise SettingsError("GRPC_CLIENT_TLS_CACERT (mTLS) needs GRPC_SERVER_USE_TLS=true")
        if self.client_san and not self.client_ca:
            raise SettingsError("GRPC_CLIENT_TLS_SAN needs GRPC_CLIENT_TLS_CACERT (mTLS)")


@dataclass(frozen=True, slots=True)
class XdsSettings:
    """The xDS configuration client (``CONFIG_GRPC_XDS_*``, ``XDS_CLIENT_*``), used when
    CONFIG_TYPE is GRPC_XDS_SOTW; durations in seconds, ``max_msg_size_in_bytes`` 0 keeps
    gRPC's default (4 MiB)."""

    server_url: str = "localhost:18000"
    node_id: str = "default"
    node_metadata: tuple[tuple[str, str], ...] = ()
    connect_retry_interval: float = 3.0
    additional_headers: tuple[tuple[str, str], ...] = ()
    use_tls: bool = False
    client_tls_cert: str = ""
    client_tls_key: str = ""
    server_tls_cacert: str = ""
    server_tls_san: str = ""
    backoff_initial_interval: float = 10.0
    backoff_max_interval: float = 60.0
    backoff_random_factor: float = 0.5
    backoff_jitter: bool = True
    max_msg_size_in_bytes: int = 0

    def _check(self) -> None:
        for name, text in (
            ("CONFIG_GRPC_XDS_SERVER_URL", self.server_url),
            ("CONFIG_GRPC_XDS_NODE_ID", self.node_id),
        ):
            if not text:
                raise SettingsError(f"{name} is empty: expected a value (or leave it unset)")
        for name, seconds in (
            ("CONFIG_GRPC_XDS_SERVER_CONNECT_RETRY_INTERVAL", self.connect_retry_interval),
            ("XDS_CLIENT_BACKOFF_INITIAL_INTERVAL", self.backoff_initial_interval),
            ("XDS_CLIENT_BACKOFF_MAX_INTERVAL", self.backoff_max_interval),
        ):
            if seconds <= 0:
                raise SettingsError(f"{name} must be a positive duration such as 500ms or 3s")
        if self.backoff_max_interval < self.backoff_initial_interval:
            raise SettingsError(
                "XDS_CLIENT_BACKOFF_MAX_INTERVAL must not be below "
                "XDS_CLIENT_BACKOFF_INITIAL_INTERVAL"
            )
        if bool(self.client_tls_cert) != bool(self.client_tls_key):
            raise SettingsError(
                "CONFIG_GRPC_XDS_CLIENT_TLS_CERT and CONFIG_GRPC_XDS_CLIENT_TLS_KEY go together: "
                "set both"
            )
        stray = [
            name
            for name, text in (
                ("CONFIG_GRPC_XDS_CLIENT_TLS_CERT", self.client_tls_cert),
                ("CONFIG_GRPC_XDS_CLIENT_TLS_KEY", self.client_tls_key),
                ("CONFIG_GRPC_XDS_SERVER_TLS_CACERT", self.server_tls_cacert),
                ("CONFIG_GRPC_XDS_SERVER_TLS_SAN", self.server_tls_san),
            )
            if text
        ]
        if stray and not self.use_tls:
            raise SettingsError(f"{', '.join(stray)} need CONFIG_GRPC_XDS_SERVER_USE_TLS=true")


@dataclass(frozen=True, slots=True)
class TracingSettings:
    """OpenTelemetry tracing (``TRACING_*``); the OTLP destination comes from the standard
    ``OTEL_EXPORTER_OTLP_*`` variables."""

    enabled: bool = False
    exporter_protocol: str = "http"
    service_name: str = "RateLimit"
    service_namespace: str = ""
    service_instance_id: str = ""
    sampling_rate: float = 1.0


MOGRIFIER_PREFIX = "TAGGED_METRICSD_MOGRIFIER_"
"""The mogrifiers' variables: ``TAGGED_METRICSD_MOGRIFIER_<N>_PATTERN``, ``_NAME``, ``_TAGS``."""
_UPSTREAM_MOGRIFIER_PREFIX = "DOG_STATSD_MOGRIFIER_"


@dataclass(frozen=True, slots=True)
class MogrifierSettings:
    """One tag sink mogrifier: a stat name matching ``pattern`` is sent as ``name`` with
    ``tags``; ``$1``, ``$2``... in both are the pattern's groups."""

    key: str
    pattern: str
    name: str
    tags: tuple[tuple[str, str], ...] = ()

    @classmethod
    def read(cls, variables: Mapping[str, str], key: str) -> MogrifierSettings:
        """Mogrifier ``key`` from its ``TAGGED_METRICSD_MOGRIFIER_<key>_*`` ``variables``."""
        prefix = f"{MOGRIFIER_PREFIX}{key}_"
        pattern = variables.get(prefix + "PATTERN", "")
        if not pattern:
            raise SettingsError(f"{prefix}PATTERN is not set: mogrifier {key} needs a pattern")
        try:
            groups = re.compile(pattern).groups
        except re.error as error:
            raise SettingsError(f"{prefix}PATTERN={pattern!r} is invalid: {error}") from None
        name = variables.get(prefix + "NAME", "")
        if not name:
            raise SettingsError(f"{prefix}NAME is not set: mogrifier {key} needs a name")
        tags_text = variables.get(prefix + "TAGS", "")
        try:
            tags = parse_tags(tags_text)
        except ValueError as error:
            raise SettingsError(
                f"{prefix}TAGS={tags_text!r} is invalid: expected {error}"
            ) from None
        for setting, template in [(prefix + "NAME", name)] + [
            (prefix + "TAGS", v) for _, v in tags
        ]:
            for group in _TEMPLATE_GROUP.findall(template):
                if int(group) > groups:
                    raise SettingsError(
                        f"{setting} refers to ${group} but {prefix}PATTERN has {groups} groups"
                    )
        return cls(key=key, pattern=pattern, name=name, tags=tags)


@dataclass(frozen=True, slots=True)
class StatsSettings:
    """Where statistics go (``METRICSD``, ``TAGGED_METRICSD``, ``PULLMETRICS``, stdout) and
    how; :attr:`sink` is the one chosen."""

    sink: str = "metricsd"
    """One of STATS_SINKS: the push sink by default, ``none`` with DISABLE_STATS."""
    metricsd_host: str = "localhost"
    metricsd_port: int = 8125
    flush_interval: float = 10.0
    extra_tags: tuple[tuple[str, str], ...] = ()
    mogrifiers: tuple[MogrifierSettings, ...] = ()
    pullmetrics_host: str = "0.0.0.0"
    pullmetrics_port: int = 9090
    pullmetrics_path: str = "/metrics"
    pullmetrics_mapper_yaml: str = ""
    pullmetrics_response_time_as_milliseconds: bool = False


# --- the variables -----------------------------------------------------------------------------


class ModeSettings(ServiceSettings):
    """The variables upstream re-reads at every configuration load (:meth:`Modes.from_env`);
    :class:`Settings` has them too."""

    # fields by name too (``Settings(runtime_root=...)``, :meth:`changed`); an error's
    # location is the field, so the message names the variable that was set (alias included)
    model_config = SettingsConfigDict(validate_by_name=True, loc_by_alias=False)

    shadow_mode: GoBool = _variable(
        "SHADOW_MODE",
        "global shadow mode: the overall code is always OK (counted by `global_shadow_mode`)",
        False,
    )
    quota_mode: GoBool = _variable("QUOTA_MODE", "every rule is a quota rule", False)
    response_dynamic_metadata: GoBool = _variable(
        "RESPONSE_DYNAMIC_METADATA",
        "fill `dynamic_metadata` (domain, descriptors, hits, merged rule metadata)",
        False,
    )
    limit_response_headers_enabled: GoBool = _variable(
        "LIMIT_RESPONSE_HEADERS_ENABLED",
        "add rate limit headers to `response_headers_to_add`",
        False,
    )
    limit_limit_header: str = _variable(
        "LIMIT_LIMIT_HEADER", "header with the limit", "RateLimit-Limit"
    )
    limit_remaining_header: str = _variable(
        "LIMIT_REMAINING_HEADER", "header with the remaining allowance", "RateLimit-Remaining"
    )
    limit_reset_header: str = _variable(
        "LIMIT_RESET_HEADER",
        "header with the seconds until the window resets",
        "RateLimit-Reset",
    )

    @property
    def modes(self) -> Modes:
        return Modes(
            shadow_mode=self.shadow_mode,
            quota_mode=self.quota_mode,
            response_dynamic_metadata=self.response_dynamic_metadata,
            response_headers_enabled=self.limit_response_headers_enabled,
            limit_header=self.limit_limit_header,
            remaining_header=self.limit_remaining_header,
            reset_header=self.limit_reset_header,
        )


_MOGRIFIER_VARIABLES = "TAGGED_METRICSD_MOGRIFIER_<N>_*"


def _sorted_items(value: object) -> object:
    """The mogrifiers' variables as (name, value) pairs, hashable as every other setting."""
    return tuple(sorted(value.items())) if isinstance(value, Mapping) else value


class _MogrifierVariables(PydanticBaseSettingsSource):
    """The field ``tagged_metricsd_mogrifier_variables``: every ``TAGGED_METRICSD_MOGRIFIER_*``
    variable of the environment source (an upstream ``DOG_STATSD_MOGRIFIER_*`` one under the
    seed's name, unless that is set too). The mogrifiers' names are the values of
    TAGGED_METRICSD_MOGRIFIERS, so their variables cannot be fields of their own."""

    def __init__(self, settings_cls: type[BaseSettings], environment: EnvSettingsSource):
        super().__init__(settings_cls)
        self._environment = environment

    def get_field_value(self, field: Any, field_name: str) -> tuple[Any, str, bool]:
        return None, field_name, False

    def __call__(self) -> dict[str, Any]:
        found: dict[str, str] = {}
        for name, value in self._environment.env_vars.items():
            if value is None:
                continue
            if name.startswith(MOGRIFIER_PREFIX):
                found[name] = value
            elif name.startswith(_UPSTREAM_MOGRIFIER_PREFIX):
                seed = MOGRIFIER_PREFIX + name.removeprefix(_UPSTREAM_MOGRIFIER_PREFIX)
                found.setdefault(seed, value)
        return {_MOGRIFIER_VARIABLES: found} if found else {}


class Settings(ModeSettings):
    """The service's settings: one field per variable (its ``validation_alias``; the upstream
    name is an ``AliasChoices`` alternative), the structured settings as properties."""

    program: ClassVar[str] = "ratelimit"
    always_logged: ClassVar[tuple[str, ...]] = ("ratelimit.startup",)

    # --- listeners -----------------------------------------------------------------------------
    host: str = _variable("HOST", "address of the HTTP listener", "0.0.0.0")
    port: Port = _variable("PORT", "port of the HTTP listener", 8080)
    docs_enabled: GoBool = _variable(
        "DOCS_ENABLED",
        "serve Swagger UI over the HTTP port's OpenAPI document at `/docs`",
        True,
    )
    grpc_host: str = _variable("GRPC_HOST", "address of the gRPC listener", "0.0.0.0")
    grpc_port: Port = _variable("GRPC_PORT", "port of the gRPC listener", 8081)
    grpc_uds: str = _variable("GRPC_UDS", "listen for gRPC on this unix socket instead", "")
    debug_host: str = _variable("DEBUG_HOST", "address of the debug listener", "0.0.0.0")
    debug_port: Port = _variable("DEBUG_PORT", "port of the debug listener", 6070)
    grpc_server_use_tls: GoBool = _variable(
        "GRPC_SERVER_USE_TLS",
        "serve gRPC over TLS with `GRPC_SERVER_TLS_CERT` and `GRPC_SERVER_TLS_KEY` (re-read "
        "when they change)",
        False,
    )
    grpc_server_tls_cert: str = _variable(
        "GRPC_SERVER_TLS_CERT", "certificate (chain) of the gRPC listener", ""
    )
    grpc_server_tls_key: str = _variable(
        "GRPC_SERVER_TLS_KEY", "private key of the gRPC listener", ""
    )
    grpc_client_tls_cacert: str = _variable(
        "GRPC_CLIENT_TLS_CACERT",
        "mTLS: clients must present a certificate signed by this CA (needs TLS on)",
        "",
    )
    grpc_client_tls_san: str = _variable(
        "GRPC_CLIENT_TLS_SAN",
        "with mTLS, calls whose client certificate does not name this DNS SAN get "
        "`UNAUTHENTICATED`",
        "",
    )
    grpc_max_connection_age: Duration = _variable(
        "GRPC_MAX_CONNECTION_AGE",
        "after this age (+/-10 % jitter) the server sends GOAWAY and clients reconnect; `0` "
        "disables ageing",
        24 * 3600.0,
        default_text="`24h`",
    )
    grpc_max_connection_age_grace: Duration = _variable(
        "GRPC_MAX_CONNECTION_AGE_GRACE",
        "then in-flight calls get this long before the connection is closed",
        3600.0,
        default_text="`1h`",
    )
    workers: Annotated[int, _integer(0, 1024)] = _variable(
        "WORKERS",
        "worker processes sharing the ports (`0`: one per core; the memory backend runs one)",
        0,
        default_text="one per core (`1` for memory)",
    )
    # --- logging (upstream's defaults) ---------------------------------------------------------
    log_level: LogLevel = _variable(
        "LOG_LEVEL",
        "least important log records shown: `DEBUG` (`TRACE`), `INFO`, `WARN` (`WARNING`) or "
        "`ERROR`, any case; listener and configuration announcements are always shown",
        "WARNING",
        default_text="`WARN`",
    )
    log_format: LogFormat = _variable(
        "LOG_FORMAT",
        "`text` (`time=... level=... msg=...`), `json` (`@timestamp`, `@message`, `level`) or "
        "`plain` (`<time> <LEVEL> <logger> <message>`)",
        "text",
    )
    # --- health --------------------------------------------------------------------------------
    healthy_with_at_least_one_config_loaded: GoBool = _variable(
        "HEALTHY_WITH_AT_LEAST_ONE_CONFIG_LOADED",
        "enable the configuration health component: unhealthy until a domain is loaded",
        False,
    )
    kvstore_health_check_active_connection: GoBool = _variable(
        "KVSTORE_HEALTH_CHECK_ACTIVE_CONNECTION",
        "unhealthy while there is no active cache connection",
        False,
        upstream="REDIS_HEALTH_CHECK_ACTIVE_CONNECTION",
    )
    # --- configuration -------------------------------------------------------------------------
    config_type: Annotated[str, _choice("FILE", "GRPC_XDS_SOTW")] = _variable(
        "CONFIG_TYPE",
        "`FILE` (rule files), or `GRPC_XDS_SOTW` (rules from an xDS management server)",
        "FILE",
    )
    force_start_without_initial_config: GoBool = _variable(
        "FORCE_START_WITHOUT_INITIAL_CONFIG",
        "with xDS, serve at once instead of waiting for the management server's first response",
        False,
    )
    runtime_root: str = _variable(
        "RUNTIME_ROOT", "root of the rule tree", "/srv/runtime_data/current"
    )
    runtime_subdirectory: str = _variable(
        "RUNTIME_SUBDIRECTORY", "subdirectory of the root (required in symlink mode)", ""
    )
    runtime_appdirectory: str = _variable(
        "RUNTIME_APPDIRECTORY", "directory holding the rule files", "config"
    )
    runtime_watch_root: GoBool = _variable(
        "RUNTIME_WATCH_ROOT",
        "`true`: reload when the `RUNTIME_ROOT` symlink is swapped; `false`: reload on any "
        "change in ROOT/SUBDIRECTORY/APPDIRECTORY (Kubernetes ConfigMaps)",
        True,
    )
    runtime_ignoredotfiles: GoBool = _variable(
        "RUNTIME_IGNOREDOTFILES",
        "skip dot files and dot directories (ConfigMap `..data`)",
        False,
    )
    merge_domain_config: GoBool = _variable(
        "MERGE_DOMAIN_CONFIG",
        "allow several files (or xDS `RateLimitConfig`s) for one domain",
        False,
    )
    # --- xDS configuration (CONFIG_TYPE=GRPC_XDS_SOTW) ------------------------------------------
    config_grpc_xds_server_url: Stripped = _variable(
        "CONFIG_GRPC_XDS_SERVER_URL",
        "management server (a gRPC target: `host:port`, `dns:///...`, `unix:...`)",
        "localhost:18000",
    )
    config_grpc_xds_node_id: str = _variable(
        "CONFIG_GRPC_XDS_NODE_ID", "`node.id` of the requests", "default"
    )
    config_grpc_xds_node_metadata: NodeMetadata = _variable(
        "CONFIG_GRPC_XDS_NODE_METADATA", "`k1=v1,k2=v2`: `node.metadata` (string values)", ()
    )
    config_grpc_xds_client_additional_headers: GrpcHeaders = _variable(
        "CONFIG_GRPC_XDS_CLIENT_ADDITIONAL_HEADERS",
        "`k1:v1,k2:v2`: gRPC metadata on the stream (names lower-cased; printable ASCII values)",
        (),
    )
    config_grpc_xds_server_connect_retry_interval: Duration = _variable(
        "CONFIG_GRPC_XDS_SERVER_CONNECT_RETRY_INTERVAL",
        "wait before the first retry after a failure (+/-50 % jitter), and the least any "
        "retry waits",
        3.0,
        default_text="`3s`",
    )
    xds_client_backoff_initial_interval: Duration = _variable(
        "XDS_CLIENT_BACKOFF_INITIAL_INTERVAL",
        "wait before the second consecutive retry",
        10.0,
        default_text="`10s`",
    )
    xds_client_backoff_random_factor: PositiveNumber = _variable(
        "XDS_CLIENT_BACKOFF_RANDOM_FACTOR",
        "each further retry waits the previous exponential wait times this factor",
        0.5,
    )
    xds_client_backoff_max_interval: Duration = _variable(
        "XDS_CLIENT_BACKOFF_MAX_INTERVAL",
        "cap of the exponential wait",
        60.0,
        default_text="`60s`",
    )
    xds_client_backoff_jitter: GoBool = _variable(
        "XDS_CLIENT_BACKOFF_JITTER",
        "randomise the exponential wait by +/- the random factor (at most 100 %)",
        True,
    )
    xds_client_max_msg_size_in_bytes: Annotated[int, _integer(0, 2**31 - 1)] = _variable(
        "XDS_CLIENT_MAX_MSG_SIZE_IN_BYTES",
        "largest response accepted (`0`: gRPC's 4 MiB)",
        0,
        default_text="gRPC's 4 MiB",
    )
    config_grpc_xds_server_use_tls: GoBool = _variable(
        "CONFIG_GRPC_XDS_SERVER_USE_TLS", "TLS to the management server", False
    )
    config_grpc_xds_server_tls_cacert: str = _variable(
        "CONFIG_GRPC_XDS_SERVER_TLS_CACERT",
        "CA of the management server's certificate",
        "",
        default_text="system roots",
    )
    config_grpc_xds_client_tls_cert: str = _variable(
        "CONFIG_GRPC_XDS_CLIENT_TLS_CERT",
        "client certificate (mTLS), with `CONFIG_GRPC_XDS_CLIENT_TLS_KEY`",
        "",
    )
    config_grpc_xds_client_tls_key: str = _variable(
        "CONFIG_GRPC_XDS_CLIENT_TLS_KEY",
        "client key (mTLS), with `CONFIG_GRPC_XDS_CLIENT_TLS_CERT`",
        "",
    )
    config_grpc_xds_server_tls_san: str = _variable(
        "CONFIG_GRPC_XDS_SERVER_TLS_SAN",
        "name to verify in the server certificate instead of the URL's host",
        "",
    )
    # --- decisions -----------------------------------------------------------------------------
    near_limit_ratio: Ratio = _variable(
        "NEAR_LIMIT_RATIO",
        "near-limit threshold for the `near_limit` statistic, 0 to 1",
        0.8,
    )
    stop_cache_key_increment_when_overlimit: GoBool = _variable(
        "STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT",
        "when a descriptor would go over, only the counters that would go over are incremented",
        False,
    )
    # --- cache ---------------------------------------------------------------------------------
    backend_type: Annotated[str, _choice(*BACKENDS)] = _variable(
        "BACKEND_TYPE",
        "`redis` (the key-value cache), `memcache` (memcached), or `memory` (counters in the "
        "process: one worker, nothing shared)",
        "redis",
    )
    cache_key_prefix: str = _variable("CACHE_KEY_PREFIX", "prefix of every counter key", "")
    expiration_jitter_max_seconds: Count = _variable(
        "EXPIRATION_JITTER_MAX_SECONDS",
        "each counter expires after its window plus a random 0..max-1 seconds",
        300,
    )
    local_cache_size_in_bytes: Count = _variable(
        "LOCAL_CACHE_SIZE_IN_BYTES",
        "memory for the in-process cache of over-limit keys (`0` disables it)",
        0,
        upstream="LocalCacheSizeInBytes",
    )
    # the key-value cache (upstream REDIS_*)
    kvstore_socket_type: SocketType = _variable(
        "KVSTORE_SOCKET_TYPE", "`tcp` or `unix`", "unix", upstream="REDIS_SOCKET_TYPE"
    )
    kvstore_url: str = _variable(
        "KVSTORE_URL",
        "single: `host:port` or a socket path; sentinel: `master,host:port,host:port...`; "
        "cluster: `host:port,...` of the nodes",
        "/var/run/nutcracker/ratelimit.sock",
        upstream="REDIS_URL",
    )
    kvstore_type: KvStoreType = _variable(
        "KVSTORE_TYPE", "`single`, `sentinel` or `cluster`", "single", upstream="REDIS_TYPE"
    )
    kvstore_pool_size: Annotated[int, _integer(1)] = _variable(
        "KVSTORE_POOL_SIZE",
        "connections per instance: the batches of commands in flight at once",
        10,
        upstream="REDIS_POOL_SIZE",
    )
    kvstore_timeout: Duration = _variable(
        "KVSTORE_TIMEOUT",
        "connect, read and write timeout",
        10.0,
        upstream="REDIS_TIMEOUT",
        default_text="`10s`",
    )
    kvstore_pool_on_empty_behavior: PoolOnEmpty = _variable(
        "KVSTORE_POOL_ON_EMPTY_BEHAVIOR",
        "when every connection is busy: `CREATE` an overflow connection after the wait, "
        "`ERROR` after the wait, or `WAIT` until one is free",
        "CREATE",
        upstream="REDIS_POOL_ON_EMPTY_BEHAVIOR",
    )
    kvstore_pool_on_empty_wait_duration: Duration = _variable(
        "KVSTORE_POOL_ON_EMPTY_WAIT_DURATION",
        "the wait before CREATE or ERROR",
        1.0,
        upstream="REDIS_POOL_ON_EMPTY_WAIT_DURATION",
        default_text="`1s`",
    )
    kvstore_pipeline_window: Duration = _variable(
        "KVSTORE_PIPELINE_WINDOW",
        "`0` flushes concurrent calls' commands as soon as the event loop is free; a duration "
        "waits that long to gather a batch",
        0.0,
        upstream="REDIS_PIPELINE_WINDOW",
        default_text="`0`",
    )
    kvstore_tls: GoBool = _variable("KVSTORE_TLS", "TLS to the cache", False, upstream="REDIS_TLS")
    kvstore_tls_client_cert: str = _variable(
        "KVSTORE_TLS_CLIENT_CERT",
        "client certificate (TLS)",
        "",
        upstream="REDIS_TLS_CLIENT_CERT",
    )
    kvstore_tls_client_key: str = _variable(
        "KVSTORE_TLS_CLIENT_KEY", "client key (TLS)", "", upstream="REDIS_TLS_CLIENT_KEY"
    )
    kvstore_tls_cacert: str = _variable(
        "KVSTORE_TLS_CACERT", "CA of the cache's certificate (TLS)", "", upstream="REDIS_TLS_CACERT"
    )
    kvstore_tls_skip_hostname_verification: GoBool = _variable(
        "KVSTORE_TLS_SKIP_HOSTNAME_VERIFICATION",
        "do not check the host name (the chain is still verified)",
        False,
        upstream="REDIS_TLS_SKIP_HOSTNAME_VERIFICATION",
    )
    kvstore_auth: str = _variable(
        "KVSTORE_AUTH", "`password` or `user:password`", "", upstream="REDIS_AUTH"
    )
    kvstore_sentinel_auth: str = _variable(
        "KVSTORE_SENTINEL_AUTH",
        "`password` or `user:password` for the sentinels",
        "",
        upstream="REDIS_SENTINEL_AUTH",
    )
    kvstore_cluster_pipeline_parallelism: Count = _variable(
        "KVSTORE_CLUSTER_PIPELINE_PARALLELISM",
        "cluster: keys of a call sent at once (`1`: one after the other, as upstream; `0`: up "
        "to the pool size)",
        1,
        upstream="REDIS_CLUSTER_PIPELINE_PARALLELISM",
    )
    kvstore_startup_max_elapsed_time: Duration = _variable(
        "KVSTORE_STARTUP_MAX_ELAPSED_TIME",
        "give up the startup PING after this long (`0`: retry forever, backing off 1 s to 30 s)",
        0.0,
        upstream="REDIS_STARTUP_MAX_ELAPSED_TIME",
        default_text="`0`",
    )
    # the per-second instance (upstream REDIS_PERSECOND_*)
    kvstore_persecond: GoBool = _variable(
        "KVSTORE_PERSECOND",
        "a second instance for per-second limits (`KVSTORE_PERSECOND_*`)",
        False,
        upstream="REDIS_PERSECOND",
    )
    kvstore_persecond_socket_type: SocketType = _variable(
        "KVSTORE_PERSECOND_SOCKET_TYPE",
        "per-second instance: `KVSTORE_SOCKET_TYPE`",
        "unix",
        upstream="REDIS_PERSECOND_SOCKET_TYPE",
    )
    kvstore_persecond_url: str = _variable(
        "KVSTORE_PERSECOND_URL",
        "per-second instance: `KVSTORE_URL`",
        "/var/run/nutcracker/ratelimit.sock",
        upstream="REDIS_PERSECOND_URL",
    )
    kvstore_persecond_type: KvStoreType = _variable(
        "KVSTORE_PERSECOND_TYPE",
        "per-second instance: `KVSTORE_TYPE`",
        "single",
        upstream="REDIS_PERSECOND_TYPE",
    )
    kvstore_persecond_pool_size: Annotated[int, _integer(1)] = _variable(
        "KVSTORE_PERSECOND_POOL_SIZE",
        "per-second instance: `KVSTORE_POOL_SIZE`",
        10,
        upstream="REDIS_PERSECOND_POOL_SIZE",
    )
    kvstore_persecond_timeout: Duration = _variable(
        "KVSTORE_PERSECOND_TIMEOUT",
        "per-second instance: `KVSTORE_TIMEOUT`",
        10.0,
        upstream="REDIS_PERSECOND_TIMEOUT",
        default_text="`10s`",
    )
    kvstore_persecond_pool_on_empty_behavior: PoolOnEmpty = _variable(
        "KVSTORE_PERSECOND_POOL_ON_EMPTY_BEHAVIOR",
        "per-second instance: `KVSTORE_POOL_ON_EMPTY_BEHAVIOR`",
        "CREATE",
        upstream="REDIS_PERSECOND_POOL_ON_EMPTY_BEHAVIOR",
    )
    kvstore_persecond_pool_on_empty_wait_duration: Duration = _variable(
        "KVSTORE_PERSECOND_POOL_ON_EMPTY_WAIT_DURATION",
        "per-second instance: `KVSTORE_POOL_ON_EMPTY_WAIT_DURATION`",
        1.0,
        upstream="REDIS_PERSECOND_POOL_ON_EMPTY_WAIT_DURATION",
        default_text="`1s`",
    )
    kvstore_persecond_pipeline_window: Duration = _variable(
        "KVSTORE_PERSECOND_PIPELINE_WINDOW",
        "per-second instance: `KVSTORE_PIPELINE_WINDOW`",
        0.0,
        upstream="REDIS_PERSECOND_PIPELINE_WINDOW",
        default_text="`0`",
    )
    kvstore_persecond_tls: GoBool = _variable(
        "KVSTORE_PERSECOND_TLS",
        "per-second instance: `KVSTORE_TLS`",
        False,
        upstream="REDIS_PERSECOND_TLS",
    )
    kvstore_persecond_tls_client_cert: str = _variable(
        "KVSTORE_PERSECOND_TLS_CLIENT_CERT",
        "per-second instance: `KVSTORE_TLS_CLIENT_CERT`",
        "",
        upstream="REDIS_PERSECOND_TLS_CLIENT_CERT",
    )
    kvstore_persecond_tls_client_key: str = _variable(
        "KVSTORE_PERSECOND_TLS_CLIENT_KEY",
        "per-second instance: `KVSTORE_TLS_CLIENT_KEY`",
        "",
        upstream="REDIS_PERSECOND_TLS_CLIENT_KEY",
    )
    kvstore_persecond_tls_cacert: str = _variable(
        "KVSTORE_PERSECOND_TLS_CACERT",
        "per-second instance: `KVSTORE_TLS_CACERT`",
        "",
        upstream="REDIS_PERSECOND_TLS_CACERT",
    )
    kvstore_persecond_tls_skip_hostname_verification: GoBool = _variable(
        "KVSTORE_PERSECOND_TLS_SKIP_HOSTNAME_VERIFICATION",
        "per-second instance: `KVSTORE_TLS_SKIP_HOSTNAME_VERIFICATION`",
        False,
        upstream="REDIS_PERSECOND_TLS_SKIP_HOSTNAME_VERIFICATION",
    )
    kvstore_persecond_auth: str = _variable(
        "KVSTORE_PERSECOND_AUTH",
        "per-second instance: `KVSTORE_AUTH`",
        "",
        upstream="REDIS_PERSECOND_AUTH",
    )
    kvstore_persecond_sentinel_auth: str = _variable(
        "KVSTORE_PERSECOND_SENTINEL_AUTH",
        "per-second instance: `KVSTORE_SENTINEL_AUTH`",
        "",
        upstream="REDIS_PERSECOND_SENTINEL_AUTH",
    )
    kvstore_persecond_cluster_pipeline_parallelism: Count = _variable(
        "KVSTORE_PERSECOND_CLUSTER_PIPELINE_PARALLELISM",
        "per-second instance: `KVSTORE_CLUSTER_PIPELINE_PARALLELISM`",
        1,
        upstream="REDIS_PERSECOND_CLUSTER_PIPELINE_PARALLELISM",
    )
    kvstore_persecond_startup_max_elapsed_time: Duration = _variable(
        "KVSTORE_PERSECOND_STARTUP_MAX_ELAPSED_TIME",
        "per-second instance: `KVSTORE_STARTUP_MAX_ELAPSED_TIME`",
        0.0,
        upstream="REDIS_PERSECOND_STARTUP_MAX_ELAPSED_TIME",
        default_text="`0`",
    )
    # --- the alternative memory cache, memcached (upstream MEMCACHE_*) --------------------------
    altcache_host_port: HostPorts = _variable(
        "ALTCACHE_HOST_PORT",
        "comma-separated `host:port` nodes (or unix socket paths); exclusive with `ALTCACHE_SRV`",
        (),
        upstream="MEMCACHE_HOST_PORT",
    )
    altcache_srv: Annotated[str, _parsed(parse_srv_name)] = _variable(
        "ALTCACHE_SRV",
        "SRV record (`_service._proto.name`) whose targets are the nodes",
        "",
        upstream="MEMCACHE_SRV",
    )
    altcache_srv_refresh: Duration = _variable(
        "ALTCACHE_SRV_REFRESH",
        "look the record up again this often (`0`: never)",
        0.0,
        upstream="MEMCACHE_SRV_REFRESH",
        default_text="`0`",
    )
    altcache_max_idle_conns: Count = _variable(
        "ALTCACHE_MAX_IDLE_CONNS",
        "connections kept per node (`0` means 2)",
        2,
        upstream="MEMCACHE_MAX_IDLE_CONNS",
    )
    altcache_tls: GoBool = _variable(
        "ALTCACHE_TLS", "TLS to the nodes", False, upstream="MEMCACHE_TLS"
    )
    altcache_tls_client_cert: str = _variable(
        "ALTCACHE_TLS_CLIENT_CERT",
        "client certificate (TLS), with `ALTCACHE_TLS_CLIENT_KEY`",
        "",
        upstream="MEMCACHE_TLS_CLIENT_CERT",
    )
    altcache_tls_client_key: str = _variable(
        "ALTCACHE_TLS_CLIENT_KEY",
        "client key (TLS), with `ALTCACHE_TLS_CLIENT_CERT`",
        "",
        upstream="MEMCACHE_TLS_CLIENT_KEY",
    )
    altcache_tls_cacert: str = _variable(
        "ALTCACHE_TLS_CACERT",
        "CA of the nodes' certificates (TLS)",
        "",
        upstream="MEMCACHE_TLS_CACERT",
    )
    altcache_tls_skip_hostname_verification: GoBool = _variable(
        "ALTCACHE_TLS_SKIP_HOSTNAME_VERIFICATION",
        "do not check the host name (the chain is still verified)",
        False,
        upstream="MEMCACHE_TLS_SKIP_HOSTNAME_VERIFICATION",
    )
    # --- statistics ----------------------------------------------------------------------------
    use_metricsd: Annotated[bool | None, _parsed(parse_bool)] = _variable(
        "USE_METRICSD",
        "push statsd lines over UDP to `METRICSD_HOST:METRICSD_PORT`; `false` (and no other "
        "sink): the stdout sink",
        None,
        upstream="USE_STATSD",
        default_text="`true`",
    )
    metricsd_host: str = _variable(
        "METRICSD_HOST", "where both push sinks send", "localhost", upstream="STATSD_HOST"
    )
    metricsd_port: Annotated[int, _integer(1, 65535)] = _variable(
        "METRICSD_PORT", "its port", 8125, upstream="STATSD_PORT"
    )
    use_tagged_metricsd: GoBool = _variable(
        "USE_TAGGED_METRICSD",
        "DogStatsD instead: tags as `|#k:v`, renamed by the mogrifiers",
        False,
        upstream="USE_DOG_STATSD",
    )
    tagged_metricsd_mogrifiers: Names = _variable(
        "TAGGED_METRICSD_MOGRIFIERS",
        "comma-separated mogrifier names `N`, tried in this order (first match wins)",
        (),
        upstream="DOG_STATSD_MOGRIFIERS",
    )
    tagged_metricsd_mogrifier_variables: Annotated[
        tuple[tuple[str, str], ...], NoDecode, BeforeValidator(_sorted_items)
    ] = Field(
        (),
        validation_alias=AliasChoices(_MOGRIFIER_VARIABLES, "DOG_STATSD_MOGRIFIER_<N>_*"),
        description="mogrifier `N`: `_PATTERN` (a regular expression searched in the stat "
        "name), `_NAME` (the new name; `$1`, `$2`... are the pattern's groups) and `_TAGS` "
        "(`key:$1,key2:$2`, added after EXTRA_TAGS)",
    )
    use_pullmetrics: GoBool = _variable(
        "USE_PULLMETRICS",
        "Prometheus text format at `PULLMETRICS_ADDR` + `PULLMETRICS_PATH`",
        False,
        upstream="USE_PROMETHEUS",
    )
    pullmetrics_addr: ListenAddress = _variable(
        "PULLMETRICS_ADDR",
        "`host:port` or `:port` of the pull endpoint",
        ("0.0.0.0", 9090),
        upstream="PROMETHEUS_ADDR",
        default_text="`:9090`",
    )
    pullmetrics_path: Annotated[str, _parsed(_path)] = _variable(
        "PULLMETRICS_PATH", "its path (404 elsewhere)", "/metrics", upstream="PROMETHEUS_PATH"
    )
    pullmetrics_mapper_yaml: str = _variable(
        "PULLMETRICS_MAPPER_YAML",
        "a statsd_exporter mapping file replacing the default",
        "",
        upstream="PROMETHEUS_MAPPER_YAML",
    )
    pullmetrics_response_time_as_milliseconds: GoBool = _variable(
        "PULLMETRICS_RESPONSE_TIME_AS_MILLISECONDS",
        "observe response times in ms (the default mapping scales them to seconds)",
        False,
        upstream="PROMETHEUS_RESPONSE_TIME_AS_MILLISECONDS",
    )
    stats_flush_interval: Duration = _variable(
        "STATS_FLUSH_INTERVAL",
        "flush interval (a positive duration)",
        10.0,
        default_text="`10s`",
    )
    extra_tags: Tags = _variable("EXTRA_TAGS", "`k1:v1,k2:v2` on every stat", ())
    disable_stats: GoBool = _variable(
        "DISABLE_STATS",
        "no sink at all (counting in memory goes on; `/stats` still shows it)",
        False,
    )
    # --- tracing -------------------------------------------------------------------------------
    tracing_enabled: GoBool = _variable("TRACING_ENABLED", "send OTLP spans", False)
    tracing_exporter_protocol: Annotated[str, _choice("http", "grpc")] = _variable(
        "TRACING_EXPORTER_PROTOCOL", "`http` (OTLP http/protobuf) or `grpc`", "http"
    )
    tracing_service_name: str = _variable(
        "TRACING_SERVICE_NAME", "`service.name` of the spans", "RateLimit"
    )
    tracing_service_namespace: str = _variable(
        "TRACING_SERVICE_NAMESPACE", "`service.namespace`", ""
    )
    tracing_service_instance_id: str = _variable(
        "TRACING_SERVICE_INSTANCE_ID",
        "`service.instance.id`",
        default_factory=lambda: str(uuid.uuid4()),
        default_text="a random UUID v4",
    )
    tracing_sampling_rate: Ratio = _variable(
        "TRACING_SAMPLING_RATE",
        "fraction of trace ids sampled, 0 to 1, whatever the caller sampled",
        1.0,
    )

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        sources = super().settings_customise_sources(
            settings_cls, init_settings, env_settings, dotenv_settings, file_secret_settings
        )
        environment = next(s for s in sources if isinstance(s, EnvSettingsSource))
        return (*sources, _MogrifierVariables(settings_cls, environment))

    @model_validator(mode="after")
    def _check_together(self) -> Settings:
        """The checks of several variables together (each message names them)."""
        self._grpc_transport()
        self._xds()
        self._altcache()
        self._stats()
        return self

    # --- the structured settings ----------------------------------------------------------------

    @property
    def grpc_transport(self) -> GrpcTransportSettings:
        return self._grpc_transport()

    @property
    def tracing(self) -> TracingSettings:
        return TracingSettings(
            enabled=self.tracing_enabled,
            exporter_protocol=self.tracing_exporter_protocol,
            service_name=self.tracing_service_name,
            service_namespace=self.tracing_service_namespace,
            service_instance_id=self.tracing_service_instance_id,
            sampling_rate=self.tracing_sampling_rate,
        )

    @property
    def xds(self) -> XdsSettings:
        return self._xds()

    @property
    def kvstore(self) -> KvStoreSettings:
        return KvStoreSettings(
            socket_type=self.kvstore_socket_type,
            url=self.kvstore_url,
            type=self.kvstore_type,
            pool_size=self.kvstore_pool_size,
            timeout=self.kvstore_timeout,
            pool_on_empty_behavior=self.kvstore_pool_on_empty_behavior,
            pool_on_empty_wait_duration=self.kvstore_pool_on_empty_wait_duration,
            pipeline_window=self.kvstore_pipeline_window,
            tls=self.kvstore_tls,
            tls_client_cert=self.kvstore_tls_client_cert,
            tls_client_key=self.kvstore_tls_client_key,
            tls_cacert=self.kvstore_tls_cacert,
            tls_skip_hostname_verification=self.kvstore_tls_skip_hostname_verification,
            auth=self.kvstore_auth,
            sentinel_auth=self.kvstore_sentinel_auth,
            cluster_pipeline_parallelism=self.kvstore_cluster_pipeline_parallelism,
            startup_max_elapsed_time=self.kvstore_startup_max_elapsed_time,
        )

    @property
    def kvstore_persecond_settings(self) -> KvStoreSettings:
        return KvStoreSettings(
            socket_type=self.kvstore_persecond_socket_type,
            url=self.kvstore_persecond_url,
            type=self.kvstore_persecond_type,
            pool_size=self.kvstore_persecond_pool_size,
            timeout=self.kvstore_persecond_timeout,
            pool_on_empty_behavior=self.kvstore_persecond_pool_on_empty_behavior,
            pool_on_empty_wait_duration=self.kvstore_persecond_pool_on_empty_wait_duration,
            pipeline_window=self.kvstore_persecond_pipeline_window,
            tls=self.kvstore_persecond_tls,
            tls_client_cert=self.kvstore_persecond_tls_client_cert,
            tls_client_key=self.kvstore_persecond_tls_client_key,
            tls_cacert=self.kvstore_persecond_tls_cacert,
            tls_skip_hostname_verification=self.kvstore_persecond_tls_skip_hostname_verification,
            auth=self.kvstore_persecond_auth,
            sentinel_auth=self.kvstore_persecond_sentinel_auth,
            cluster_pipeline_parallelism=self.kvstore_persecond_cluster_pipeline_parallelism,
            startup_max_elapsed_time=self.kvstore_persecond_startup_max_elapsed_time,
        )

    @property
    def altcache(self) -> AltCacheSettings:
        return self._altcache()

    @property
    def stats(self) -> StatsSettings:
        return self._stats()

    def _grpc_transport(self) -> GrpcTransportSettings:
        settings = GrpcTransportSettings(
            use_tls=self.grpc_server_use_tls,
            cert=self.grpc_server_tls_cert,
            key=self.grpc_server_tls_key,
            client_ca=self.grpc_client_tls_cacert,
            client_san=self.grpc_client_tls_san,
            max_connection_age=self.grpc_max_connection_age,
            max_connection_age_grace=self.grpc_max_connection_age_grace,
        )
        settings._check()
        return settings

    def _xds(self) -> XdsSettings:
        settings = XdsSettings(
            server_url=self.config_grpc_xds_server_url,
            node_id=self.config_grpc_xds_node_id,
            node_metadata=self.config_grpc_xds_node_metadata,
            connect_retry_interval=self.config_grpc_xds_server_connect_retry_interval,
            additional_headers=self.config_grpc_xds_client_additional_headers,
            use_tls=self.config_grpc_xds_server_use_tls,
            client_tls_cert=self.config_grpc_xds_client_tls_cert,
            client_tls_key=self.config_grpc_xds_client_tls_key,
            server_tls_cacert=self.config_grpc_xds_server_tls_cacert,
            server_tls_san=self.config_grpc_xds_server_tls_san,
            backoff_initial_interval=self.xds_client_backoff_initial_interval,
            backoff_max_interval=self.xds_client_backoff_max_interval,
            backoff_random_factor=self.xds_client_backoff_random_factor,
            backoff_jitter=self.xds_client_backoff_jitter,
            max_msg_size_in_bytes=self.xds_client_max_msg_size_in_bytes,
        )
        settings._check()
        return settings

    def _altcache(self) -> AltCacheSettings:
        settings = AltCacheSettings(
            host_port=self.altcache_host_port,
            srv=self.altcache_srv,
            srv_refresh=self.altcache_srv_refresh,
            max_idle_conns=self.altcache_max_idle_conns,
            tls=self.altcache_tls,
            tls_client_cert=self.altcache_tls_client_cert,
            tls_client_key=self.altcache_tls_client_key,
            tls_cacert=self.altcache_tls_cacert,
            tls_skip_hostname_verification=self.altcache_tls_skip_hostname_verification,
        )
        settings._check()
        return settings

    def _stats(self) -> StatsSettings:
        # USE_METRICSD is on unless set false; set true explicitly, it conflicts with the others
        others = [
            name
            for name, on in (
                ("USE_METRICSD", self.use_metricsd is True),
                ("USE_TAGGED_METRICSD", self.use_tagged_metricsd),
                ("USE_PULLMETRICS", self.use_pullmetrics),
            )
            if on
        ]
        if len(others) > 1:
            raise SettingsError(
                "unable to use more than one stats sink at the same time: "
                + " and ".join(others)
                + " are true; set one of USE_METRICSD, USE_TAGGED_METRICSD, USE_PULLMETRICS"
            )
        if self.disable_stats:
            sink = "none"
        elif self.use_tagged_metricsd:
            sink = "tagged_metricsd"
        elif self.use_pullmetrics:
            sink = "pullmetrics"
        else:
            sink = "stdout" if self.use_metricsd is False else "metricsd"
        if self.stats_flush_interval <= 0:
            raise SettingsError(
                "STATS_FLUSH_INTERVAL must be a positive duration such as 10s or 500ms"
            )
        pull_host, pull_port = self.pullmetrics_addr
        return StatsSettings(
            sink=sink,
            metricsd_host=self.metricsd_host,
            metricsd_port=self.metricsd_port,
            flush_interval=self.stats_flush_interval,
            extra_tags=self.extra_tags,
            mogrifiers=tuple(
                MogrifierSettings.read(dict(self.tagged_metricsd_mogrifier_variables), name)
                for name in self.tagged_metricsd_mogrifiers
            ),
            pullmetrics_host=pull_host,
            pullmetrics_port=pull_port,
            pullmetrics_path=self.pullmetrics_path,
            pullmetrics_mapper_yaml=self.pullmetrics_mapper_yaml,
            pullmetrics_response_time_as_milliseconds=(
                self.pullmetrics_response_time_as_milliseconds
            ),
        )
