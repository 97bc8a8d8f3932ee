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
        )
