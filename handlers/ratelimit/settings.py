"""Every setting of the service, read from the environment with its default.

Names are the seed's (``KVSTORE_``, ``ALTCACHE_``, ``METRICSD``, ``TAGGED_METRICSD``,
``PULLMETRICS``); the upstream names (``REDIS_``, ``MEMCACHE_``, ``STATSD``, ``DOG_STATSD``,
``PROMETHEUS``) are read as aliases so an existing deployment's environment works unchanged.
Where both are set the seed's name wins. An invalid value raises :class:`SettingsError` naming
the setting and what it accepts; the server stops on it.
"""

from __future__ import annotations

import os
import re
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TypeVar

T = TypeVar("T")

# seed prefix -> upstream prefix
_ALIASES = (
    ("KVSTORE_", "REDIS_"),
    ("ALTCACHE_", "MEMCACHE_"),
    ("TAGGED_METRICSD", "DOG_STATSD"),
    ("USE_TAGGED_METRICSD", "USE_DOG_STATSD"),
    ("METRICSD", "STATSD"),
    ("USE_METRICSD", "USE_STATSD"),
    ("PULLMETRICS", "PROMETHEUS"),
    ("USE_PULLMETRICS", "USE_PROMETHEUS"),
    ("LOCAL_CACHE_SIZE_IN_BYTES", "LocalCacheSizeInBytes"),
)

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


class SettingsError(ValueError):
    """A setting has a value the service cannot use."""


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


class Environment:
    """Reads settings from a mapping, resolving the upstream aliases."""

    def __init__(self, env: Mapping[str, str] | None = None) -> None:
        self._env = os.environ if env is None else env

    def raw(self, name: str) -> str | None:
        if name in self._env:
            return self._env[name]
        for seed, upstream in _ALIASES:
            if name.startswith(seed):
                alias = upstream + name[len(seed) :]
                if alias in self._env:
                    return self._env[alias]
        return None

    def get(self, name: str, default: T, parse: Callable[[str], T]) -> T:
        text = self.raw(name)
        if text is None or (text == "" and not isinstance(default, str)):
            return default
        try:
            return parse(text)
        except ValueError as error:
            raise SettingsError(f"{name}={text!r} is invalid: expected {error}") from None

    def string(self, name: str, default: str = "") -> str:
        return self.get(name, default, str)

    def boolean(self, name: str, default: bool = False) -> bool:
        return self.get(name, default, parse_bool)

    def integer(self, name: str, default: int, minimum: int = 0, maximum: int | None = None) -> int:
        def parse(text: str) -> int:
            try:
                value = int(text, 10)
            except ValueError:
                value = minimum - 1
            if value < minimum or (maximum is not None and value > maximum):
                upper = "" if maximum is None else f" and at most {maximum}"
                raise ValueError(f"an integer of at least {minimum}{upper}")
            return value

        return self.get(name, default, parse)

    def ratio(self, name: str, default: float) -> float:
        def parse(text: str) -> float:
            try:
                value = float(text)
            except ValueError:
                value = -1.0
            if not 0.0 <= value <= 1.0:
                raise ValueError("a number from 0 to 1")
            return value

        return self.get(name, default, parse)

    def duration(self, name: str, default: float) -> float:
        def parse(text: str) -> float:
            value = parse_duration(text)
            if value < 0:
                raise ValueError("a duration that is not negative")
            return value

        return self.get(name, default, parse)

    def choice(self, name: str, default: str, choices: tuple[str, ...]) -> str:
        """One of ``choices``, compared case-insensitively; returned in the choices' spelling."""

        def parse(text: str) -> str:
            for choice in choices:
                if text.strip().lower() == choice.lower():
                    return choice
            raise ValueError("one of " + ", ".join(choices))

        return self.get(name, default, parse)


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

    @classmethod
    def read(cls, env: Environment, prefix: str) -> KvStoreSettings:
        defaults = cls()
        socket_type = env.choice(prefix + "SOCKET_TYPE", defaults.socket_type, ("tcp", "unix"))
        return cls(
            socket_type=socket_type,
            url=env.string(prefix + "URL", defaults.url),
            type=env.choice(prefix + "TYPE", defaults.type, ("single", "sentinel", "cluster")),
            pool_size=env.integer(prefix + "POOL_SIZE", defaults.pool_size, minimum=1),
            timeout=env.duration(prefix + "TIMEOUT", defaults.timeout),
            pool_on_empty_behavior=env.choice(
                prefix + "POOL_ON_EMPTY_BEHAVIOR",
                defaults.pool_on_empty_behavior,
                ("CREATE", "ERROR", "WAIT"),
            ),
            pool_on_empty_wait_duration=env.duration(
                prefix + "POOL_ON_EMPTY_WAIT_DURATION", defaults.pool_on_empty_wait_duration
            ),
            pipeline_window=env.duration(prefix + "PIPELINE_WINDOW", defaults.pipeline_window),
            tls=env.boolean(prefix + "TLS"),
            tls_client_cert=env.string(prefix + "TLS_CLIENT_CERT"),
            tls_client_key=env.string(prefix + "TLS_CLIENT_KEY"),
            tls_cacert=env.string(prefix + "TLS_CACERT"),
            tls_skip_hostname_verification=env.boolean(prefix + "TLS_SKIP_HOSTNAME_VERIFICATION"),
            auth=env.string(prefix + "AUTH"),
            sentinel_auth=env.string(prefix + "SENTINEL_AUTH"),
            cluster_pipeline_parallelism=env.integer(
                prefix + "CLUSTER_PIPELINE_PARALLELISM", 1, minimum=0
            ),
            startup_max_elapsed_time=env.duration(prefix + "STARTUP_MAX_ELAPSED_TIME", 0.0),
        )


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
    def read(cls, env: Environment) -> Modes:
        return cls(
            shadow_mode=env.boolean("SHADOW_MODE"),
            quota_mode=env.boolean("QUOTA_MODE"),
            response_dynamic_metadata=env.boolean("RESPONSE_DYNAMIC_METADATA"),
            response_headers_enabled=env.boolean("LIMIT_RESPONSE_HEADERS_ENABLED"),
            limit_header=env.string("LIMIT_LIMIT_HEADER", "RateLimit-Limit"),
            remaining_header=env.string("LIMIT_REMAINING_HEADER", "RateLimit-Remaining"),
            reset_header=env.string("LIMIT_RESET_HEADER", "RateLimit-Reset"),
        )


_SRV_NAME = re.compile(r"^_(.+?)\._(.+?)\.(.+)$")


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

    @classmethod
    def read(cls, env: Environment) -> AltCacheSettings:
        settings = cls(
            host_port=env.get("ALTCACHE_HOST_PORT", (), parse_host_ports),
            srv=env.get("ALTCACHE_SRV", "", parse_srv_name),
            srv_refresh=env.duration("ALTCACHE_SRV_REFRESH", 0.0),
            max_idle_conns=env.integer("ALTCACHE_MAX_IDLE_CONNS", 2, minimum=0),
            tls=env.boolean("ALTCACHE_TLS"),
            tls_client_cert=env.string("ALTCACHE_TLS_CLIENT_CERT"),
            tls_client_key=env.string("ALTCACHE_TLS_CLIENT_KEY"),
            tls_cacert=env.string("ALTCACHE_TLS_CACERT"),
            tls_skip_hostname_verification=env.boolean("ALTCACHE_TLS_SKIP_HOSTNAME_VERIFICATION"),
        )
        if settings.host_port and settings.srv:
            raise SettingsError("ALTCACHE_HOST_PORT and ALTCACHE_SRV are both set: use one")
        if settings.tls and bool(settings.tls_client_cert) != bool(settings.tls_client_key):
            raise SettingsError(
                "ALTCACHE_TLS_CLIENT_CERT and ALTCACHE_TLS_CLIENT_KEY go together: set both"
            )
        return settings


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

    @classmethod
    def read(cls, e: Environment) -> GrpcTransportSettings:
        d = cls()
        settings = cls(
            use_tls=e.boolean("GRPC_SERVER_USE_TLS"),
            cert=e.string("GRPC_SERVER_TLS_CERT"),
            key=e.string("GRPC_SERVER_TLS_KEY"),
            client_ca=e.string("GRPC_CLIENT_TLS_CACERT"),
            client_san=e.string("GRPC_CLIENT_TLS_SAN"),
            max_connection_age=e.duration("GRPC_MAX_CONNECTION_AGE", d.max_connection_age),
            max_connection_age_grace=e.duration(
                "GRPC_MAX_CONNECTION_AGE_GRACE", d.max_connection_age_grace
            ),
        )
        if settings.use_tls and not (settings.cert and settings.key):
            raise SettingsError(
                "GRPC_SERVER_USE_TLS=true needs GRPC_SERVER_TLS_CERT and GRPC_SERVER_TLS_KEY"
            )
        if settings.client_ca and not settings.use_tls:
            raise SettingsError("GRPC_CLIENT_TLS_CACERT (mTLS) needs GRPC_SERVER_USE_TLS=true")
        if settings.client_san and not settings.client_ca:
            raise SettingsError("GRPC_CLIENT_TLS_SAN needs GRPC_CLIENT_TLS_CACERT (mTLS)")
        return settings


_METADATA_KEY = re.compile(r"[0-9a-z_.-]+")


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

    @classmethod
    def read(cls, e: Environment) -> XdsSettings:
        d = cls()
        none: tuple[tuple[str, str], ...] = ()
        settings = cls(
            server_url=e.string("CONFIG_GRPC_XDS_SERVER_URL", d.server_url).strip(),
            node_id=e.string("CONFIG_GRPC_XDS_NODE_ID", d.node_id),
            node_metadata=e.get("CONFIG_GRPC_XDS_NODE_METADATA", none, parse_node_metadata),
            connect_retry_interval=e.duration(
                "CONFIG_GRPC_XDS_SERVER_CONNECT_RETRY_INTERVAL", d.connect_retry_interval
            ),
            additional_headers=e.get(
                "CONFIG_GRPC_XDS_CLIENT_ADDITIONAL_HEADERS", none, parse_grpc_headers
            ),
            use_tls=e.boolean("CONFIG_GRPC_XDS_SERVER_USE_TLS"),
            client_tls_cert=e.string("CONFIG_GRPC_XDS_CLIENT_TLS_CERT"),
            client_tls_key=e.string("CONFIG_GRPC_XDS_CLIENT_TLS_KEY"),
            server_tls_cacert=e.string("CONFIG_GRPC_XDS_SERVER_TLS_CACERT"),
            server_tls_san=e.string("CONFIG_GRPC_XDS_SERVER_TLS_SAN"),
            backoff_initial_interval=e.duration(
                "XDS_CLIENT_BACKOFF_INITIAL_INTERVAL", d.backoff_initial_interval
            ),
            backoff_max_interval=e.duration(
                "XDS_CLIENT_BACKOFF_MAX_INTERVAL", d.backoff_max_interval
            ),
            backoff_random_factor=e.get(
                "XDS_CLIENT_BACKOFF_RANDOM_FACTOR", d.backoff_random_factor, parse_positive_number
            ),
            backoff_jitter=e.boolean("XDS_CLIENT_BACKOFF_JITTER", d.backoff_jitter),
            max_msg_size_in_bytes=e.integer(
                "XDS_CLIENT_MAX_MSG_SIZE_IN_BYTES", 0, maximum=2**31 - 1
            ),
        )
        settings._check()
        return settings

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

    @classmethod
    def read(cls, e: Environment) -> TracingSettings:
        d = cls()
        return cls(
            enabled=e.boolean("TRACING_ENABLED"),
            exporter_protocol=e.choice(
                "TRACING_EXPORTER_PROTOCOL", d.exporter_protocol, ("http", "grpc")
            ),
            service_name=e.string("TRACING_SERVICE_NAME", d.service_name),
            service_namespace=e.string("TRACING_SERVICE_NAMESPACE"),
            service_instance_id=e.string("TRACING_SERVICE_INSTANCE_ID") or str(uuid.uuid4()),
            sampling_rate=e.ratio("TRACING_SAMPLING_RATE", d.sampling_rate),
        )


_TEMPLATE_GROUP = re.compile(r"\$(\d+)")


def parse_tags(text: str) -> tuple[tuple[str, str], ...]:
    """``k1:v1,k2:v2`` (EXTRA_TAGS, a mogrifier's TAGS) as (key, value) pairs in order."""
    return _parse_pairs(text, ":", empty_values=False)


def parse_listen_address(text: str) -> tuple[str, int]:
    """``host:port`` or ``:port`` (every interface; port 0: any free port) as a host and a
    port number."""
    host, sep, port = text.strip().rpartition(":")
    if not sep or not port.isdigit() or int(port) > 65535:
        raise ValueError(f"host:port or :port, got {text.strip()!r}")
    return host.strip("[]") or "0.0.0.0", int(port)


@dataclass(frozen=True, slots=True)
class MogrifierSettings:
    """One tag sink mogrifier: a stat name matching ``pattern`` is sent as ``name`` with
    ``tags``; ``$1``, ``$2``... in both are the pattern's groups."""

    key: str
    pattern: str
    name: str
    tags: tuple[tuple[str, str], ...] = ()

    @classmethod
    def read(cls, env: Environment, key: str) -> MogrifierSettings:
        prefix = f"TAGGED_METRICSD_MOGRIFIER_{key}_"
        pattern = env.string(prefix + "PATTERN")
        if not pattern:
            raise SettingsError(f"{prefix}PATTERN is not set: mogrifier {key} needs a pattern")
        try:
            groups = re.compile(pattern).groups
        except re.error as error:
            raise SettingsError(f"{prefix}PATTERN={pattern!r} is invalid: {error}") from None
        name = env.string(prefix + "NAME")
        if not name:
            raise SettingsError(f"{prefix}NAME is not set: mogrifier {key} needs a name")
        no_tags: tuple[tuple[str, str], ...] = ()
        tags = env.get(prefix + "TAGS", no_tags, parse_tags)
        for setting, template in [(prefix + "NAME", name)] + [
            (prefix + "TAGS", v) for _, v in tags
        ]:
            for group in _TEMPLATE_GROUP.findall(template):
                if int(group) > groups:
                    raise SettingsError(
                        f"{setting} refers to ${group} but {prefix}PATTERN has {groups} groups"
                    )
        return cls(key=key, pattern=pattern, name=name, tags=tags)


STATS_SINKS = ("metricsd", "tagged_metricsd", "pullmetrics", "stdout", "none")


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

    @classmethod
    def read(cls, e: Environment) -> StatsSettings:
        d = cls()
        use_push = e.boolean("USE_METRICSD", True)
        push_explicit = e.raw("USE_METRICSD") not in (None, "")
        use_tagged = e.boolean("USE_TAGGED_METRICSD")
        use_pull = e.boolean("USE_PULLMETRICS")
        others = [
            n
            for n, on in (("USE_TAGGED_METRICSD", use_tagged), ("USE_PULLMETRICS", use_pull))
            if on
        ]
        if push_explicit and use_push:
            others.insert(0, "USE_METRICSD")
        if len(others) > 1:
            raise SettingsError(
                "unable to use more than one stats sink at the same time: "
                + " and ".join(others)
                + " are true; set one of USE_METRICSD, USE_TAGGED_METRICSD, USE_PULLMETRICS"
            )
        if e.boolean("DISABLE_STATS"):
            sink = "none"
        elif use_tagged:
            sink = "tagged_metricsd"
        elif use_pull:
            sink = "pullmetrics"
        else:
            sink = "metricsd" if use_push else "stdout"
        flush_interval = e.duration("STATS_FLUSH_INTERVAL", d.flush_interval)
        if flush_interval <= 0:
            raise SettingsError(
                "STATS_FLUSH_INTERVAL must be a positive duration such as 10s or 500ms"
            )
        pull_host, pull_port = e.get("PULLMETRICS_ADDR", ("0.0.0.0", 9090), parse_listen_address)
        pull_path = e.string("PULLMETRICS_PATH", d.pullmetrics_path)
        if not pull_path.startswith("/"):
            raise SettingsError(
                f"PULLMETRICS_PATH={pull_path!r} is invalid: expected a path starting with /"
            )
        no_names: tuple[str, ...] = ()
        names = e.get("TAGGED_METRICSD_MOGRIFIERS", no_names, parse_names)
        return cls(
            sink=sink,
            metricsd_host=e.string("METRICSD_HOST", d.metricsd_host),
            metricsd_port=e.integer("METRICSD_PORT", d.metricsd_port, minimum=1, maximum=65535),
            flush_interval=flush_interval,
            extra_tags=e.get("EXTRA_TAGS", (), parse_tags),
            mogrifiers=tuple(MogrifierSettings.read(e, name) for name in names),
            pullmetrics_host=pull_host,
            pullmetrics_port=pull_port,
            pullmetrics_path=pull_path,
            pullmetrics_mapper_yaml=e.string("PULLMETRICS_MAPPER_YAML"),
            pullmetrics_response_time_as_milliseconds=e.boolean(
                "PULLMETRICS_RESPONSE_TIME_AS_MILLISECONDS"
            ),
        )


def parse_names(text: str) -> tuple[str, ...]:
    """A comma-separated list of names (TAGGED_METRICSD_MOGRIFIERS)."""
    names = tuple(name.strip() for name in text.split(",") if name.strip())
    for name in names:
        if not re.fullmatch(r"[A-Za-z0-9_]+", name):
            raise ValueError(f"a comma-separated list of names (letters, digits, _), got {name!r}")
    return names


BACKENDS = ("redis", "memcache", "memory")


@dataclass(frozen=True, slots=True)
class Settings:
    """The service's settings (see the README's table for each one's meaning)."""

    # listeners
    host: str = "0.0.0.0"
    port: int = 8080
    debug_host: str = "0.0.0.0"
    debug_port: int = 6070
    grpc_host: str = "0.0.0.0"
    grpc_port: int = 8081
    grpc_uds: str = ""
    grpc_transport: GrpcTransportSettings = field(default_factory=GrpcTransportSettings)
    tracing: TracingSettings = field(default_factory=TracingSettings)
    workers: int = 0
    """Worker processes sharing the ports; 0 means one per core (one for the memory backend)."""
    # logging
    log_level: str = "WARN"
    log_format: str = "text"
    # configuration
    config_type: str = "FILE"
    force_start_without_initial_config: bool = False
    runtime_root: str = "/srv/runtime_data/current"
    runtime_subdirectory: str = ""
    runtime_appdirectory: str = "config"
    runtime_ignoredotfiles: bool = False
    runtime_watch_root: bool = True
    merge_domain_config: bool = False
    xds: XdsSettings = field(default_factory=XdsSettings)
    # decisions and cache
    backend_type: str = "redis"
    cache_key_prefix: str = ""
    expiration_jitter_max_seconds: int = 300
    local_cache_size_in_bytes: int = 0
    near_limit_ratio: float = 0.8
    stop_cache_key_increment_when_overlimit: bool = False
    modes: Modes = field(default_factory=Modes)
    # health
    healthy_with_at_least_one_config_loaded: bool = False
    kvstore_health_check_active_connection: bool = False
    # key-value cache
    kvstore: KvStoreSettings = field(default_factory=KvStoreSettings)
    kvstore_persecond: bool = False
    kvstore_persecond_settings: KvStoreSettings = field(default_factory=KvStoreSettings)
    # alternative memory cache (memcached)
    altcache: AltCacheSettings = field(default_factory=AltCacheSettings)
    # statistics
    stats: StatsSettings = field(default_factory=StatsSettings)

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Settings:
        e = Environment(env)
        d = cls()
        return cls(
            host=e.string("HOST", d.host),
            port=e.integer("PORT", d.port, maximum=65535),
            debug_host=e.string("DEBUG_HOST", d.debug_host),
            debug_port=e.integer("DEBUG_PORT", d.debug_port, maximum=65535),
            grpc_host=e.string("GRPC_HOST", d.grpc_host),
            grpc_port=e.integer("GRPC_PORT", d.grpc_port, maximum=65535),
            grpc_uds=e.string("GRPC_UDS"),
            grpc_transport=GrpcTransportSettings.read(e),
            tracing=TracingSettings.read(e),
            workers=e.integer("WORKERS", 0, maximum=1024),
            log_level=e.choice(
                "LOG_LEVEL", d.log_level, ("TRACE", "DEBUG", "INFO", "WARN", "WARNING", "ERROR")
            ),
            log_format=e.choice("LOG_FORMAT", d.log_format, ("text", "json")),
            config_type=e.choice("CONFIG_TYPE", d.config_type, ("FILE", "GRPC_XDS_SOTW")),
            force_start_without_initial_config=e.boolean("FORCE_START_WITHOUT_INITIAL_CONFIG"),
            runtime_root=e.string("RUNTIME_ROOT", d.runtime_root),
            runtime_subdirectory=e.string("RUNTIME_SUBDIRECTORY"),
            runtime_appdirectory=e.string("RUNTIME_APPDIRECTORY", d.runtime_appdirectory),
            runtime_ignoredotfiles=e.boolean("RUNTIME_IGNOREDOTFILES"),
            runtime_watch_root=e.boolean("RUNTIME_WATCH_ROOT", True),
            merge_domain_config=e.boolean("MERGE_DOMAIN_CONFIG"),
            xds=XdsSettings.read(e),
            backend_type=e.choice("BACKEND_TYPE", d.backend_type, BACKENDS),
            cache_key_prefix=e.string("CACHE_KEY_PREFIX"),
            expiration_jitter_max_seconds=e.integer("EXPIRATION_JITTER_MAX_SECONDS", 300),
            local_cache_size_in_bytes=e.integer("LOCAL_CACHE_SIZE_IN_BYTES", 0),
            near_limit_ratio=e.ratio("NEAR_LIMIT_RATIO", d.near_limit_ratio),
            stop_cache_key_increment_when_overlimit=e.boolean(
                "STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT"
            ),
            modes=Modes.read(e),
            healthy_with_at_least_one_config_loaded=e.boolean(
                "HEALTHY_WITH_AT_LEAST_ONE_CONFIG_LOADED"
            ),
            kvstore_health_check_active_connection=e.boolean(
                "KVSTORE_HEALTH_CHECK_ACTIVE_CONNECTION"
            ),
            kvstore=KvStoreSettings.read(e, "KVSTORE_"),
            kvstore_persecond=e.boolean("KVSTORE_PERSECOND"),
            kvstore_persecond_settings=KvStoreSettings.read(e, "KVSTORE_PERSECOND_"),
            altcache=AltCacheSettings.read(e),
            stats=StatsSettings.read(e),
        )
