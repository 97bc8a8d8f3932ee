"""Settings: defaults, the seed's names and the upstream aliases, invalid values, the entry
point's refusal of an invalid one, and the README's tables."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from pydantic import AliasChoices

from handlers.ratelimit import server
from handlers.ratelimit.settings import (
    Modes,
    MogrifierSettings,
    Settings,
    SettingsError,
    parse_duration,
)

README = Path(__file__).parents[2] / "handlers" / "ratelimit" / "README.md"


def test_defaults() -> None:
    s = Settings.from_env({})
    assert (s.host, s.port, s.grpc_host, s.grpc_port, s.debug_port) == (
        "0.0.0.0",
        8080,
        "0.0.0.0",
        8081,
        6070,
    )
    assert s.runtime_root == "/srv/runtime_data/current"
    assert s.runtime_appdirectory == "config"
    assert s.runtime_watch_root is True
    assert s.near_limit_ratio == 0.8
    assert s.kvstore.pool_size == 10
    assert s.kvstore.timeout == 10.0
    assert s.kvstore.pool_on_empty_behavior == "CREATE"
    assert s.kvstore.pool_on_empty_wait_duration == 1.0
    assert s.kvstore.type == "single"
    assert s.modes.limit_header == "RateLimit-Limit"
    assert s.backend_type == "redis"
    assert (s.log_level, s.log_format) == ("WARNING", "text")  # upstream's WARN and text


def test_seed_names_and_upstream_aliases() -> None:
    s = Settings.from_env(
        {
            "REDIS_URL": "10.0.0.1:6379",
            "REDIS_POOL_SIZE": "3",
            "KVSTORE_TYPE": "cluster",
            "REDIS_TYPE": "single",  # the seed's name wins
            "REDIS_PERSECOND": "true",
            "REDIS_PERSECOND_URL": "10.0.0.2:6379",
            "LocalCacheSizeInBytes": "1024",
        }
    )
    assert s.kvstore.url == "10.0.0.1:6379"
    assert s.kvstore.pool_size == 3
    assert s.kvstore.type == "cluster"
    assert s.kvstore_persecond is True
    assert s.kvstore_persecond_settings.url == "10.0.0.2:6379"
    assert s.local_cache_size_in_bytes == 1024


# Every variable with an upstream alias: (a value, what the field reads, other variables the
# value needs). The per-second instance's variables take the same values as the primary's.
_KVSTORE = {
    "SOCKET_TYPE": ("tcp", "tcp"),
    "URL": ("master,10.0.0.1:26379", "master,10.0.0.1:26379"),
    "TYPE": ("Sentinel", "sentinel"),
    "POOL_SIZE": ("3", 3),
    "TIMEOUT": ("1m30s", 90.0),
    "POOL_ON_EMPTY_BEHAVIOR": ("wait", "WAIT"),
    "POOL_ON_EMPTY_WAIT_DURATION": ("150us", 0.00015),
    "PIPELINE_WINDOW": ("500ms", 0.5),
    "TLS": ("T", True),
    "TLS_CLIENT_CERT": ("/c.pem", "/c.pem"),
    "TLS_CLIENT_KEY": ("/k.pem", "/k.pem"),
    "TLS_CACERT": ("/ca.pem", "/ca.pem"),
    "TLS_SKIP_HOSTNAME_VERIFICATION": ("1", True),
    "AUTH": ("user:secret", "user:secret"),
    "SENTINEL_AUTH": ("secret", "secret"),
    "CLUSTER_PIPELINE_PARALLELISM": ("0", 0),
    "STARTUP_MAX_ELAPSED_TIME": ("1h", 3600.0),
}
_MOGRIFIER = {
    "TAGGED_METRICSD_MOGRIFIER_A_PATTERN": r"^x\.(\w+)$",
    "TAGGED_METRICSD_MOGRIFIER_A_NAME": "x",
}
ALIASED: dict[str, tuple[str, object, dict[str, str]]] = {
    **{f"KVSTORE_{name}": (text, value, {}) for name, (text, value) in _KVSTORE.items()},
    **{f"KVSTORE_PERSECOND_{name}": (text, value, {}) for name, (text, value) in _KVSTORE.items()},
    "KVSTORE_PERSECOND": ("TRUE", True, {}),
    "KVSTORE_HEALTH_CHECK_ACTIVE_CONNECTION": ("true", True, {}),
    "LOCAL_CACHE_SIZE_IN_BYTES": ("1024", 1024, {}),
    "ALTCACHE_HOST_PORT": ("a:1, [::1]:2,/run/mc.sock", ("a:1", "[::1]:2", "/run/mc.sock"), {}),
    "ALTCACHE_SRV": ("_memcache._tcp.example.com", "_memcache._tcp.example.com", {}),
    "ALTCACHE_SRV_REFRESH": ("30s", 30.0, {}),
    "ALTCACHE_MAX_IDLE_CONNS": ("8", 8, {}),
    "ALTCACHE_TLS": ("t", True, {}),
    "ALTCACHE_TLS_CLIENT_CERT": ("/c.pem", "/c.pem", {}),
    "ALTCACHE_TLS_CLIENT_KEY": ("/k.pem", "/k.pem", {}),
    "ALTCACHE_TLS_CACERT": ("/ca.pem", "/ca.pem", {}),
    "ALTCACHE_TLS_SKIP_HOSTNAME_VERIFICATION": ("True", True, {}),
    "USE_METRICSD": ("false", False, {}),
    "METRICSD_HOST": ("stats", "stats", {}),
    "METRICSD_PORT": ("9125", 9125, {}),
    "USE_TAGGED_METRICSD": ("true", True, {}),
    "TAGGED_METRICSD_MOGRIFIERS": ("A", ("A",), _MOGRIFIER),
    "USE_PULLMETRICS": ("1", True, {}),
    "PULLMETRICS_ADDR": (":9102", ("0.0.0.0", 9102), {}),
    "PULLMETRICS_PATH": ("/m", "/m", {}),
    "PULLMETRICS_MAPPER_YAML": ("/mapping.yaml", "/mapping.yaml", {}),
    "PULLMETRICS_RESPONSE_TIME_AS_MILLISECONDS": ("true", True, {}),
}


def _aliases() -> dict[str, tuple[str, str]]:
    """Seed variable -> (field, upstream variable), for every field with an upstream alias."""
    found = {}
    for field, info in Settings.model_fields.items():
        if isinstance(info.validation_alias, AliasChoices):
            seed, upstream = Settings.variable_names(field)
            found[seed] = (field, upstream)
    return found


def test_every_alias_is_tested() -> None:
    aliases = _aliases()
    assert set(aliases) - set(ALIASED) == {"TAGGED_METRICSD_MOGRIFIER_<N>_*"}  # test below
    assert set(ALIASED) <= set(aliases)
    for seed, (_, upstream) in aliases.items():
        expected = {
            "KVSTORE_": "REDIS_",
            "ALTCACHE_": "MEMCACHE_",
            "TAGGED_METRICSD": "DOG_STATSD",
            "USE_TAGGED_METRICSD": "USE_DOG_STATSD",
            "METRICSD": "STATSD",
            "USE_METRICSD": "USE_STATSD",
            "PULLMETRICS": "PROMETHEUS",
            "USE_PULLMETRICS": "USE_PROMETHEUS",
            "LOCAL_CACHE_SIZE_IN_BYTES": "LocalCacheSizeInBytes",
        }
        prefix = max((p for p in expected if seed.startswith(p)), key=len)
        assert upstream == expected[prefix] + seed.removeprefix(prefix)


@pytest.mark.parametrize("seed", sorted(ALIASED))
def test_every_upstream_alias_is_read(seed: str) -> None:
    field, upstream = _aliases()[seed]
    text, value, needs = ALIASED[seed]
    default = getattr(Settings.from_env(needs), field)
    assert value != default
    assert getattr(Settings.from_env({upstream: text, **needs}), field) == value
    assert getattr(Settings.from_env({seed: text, **needs}), field) == value
    # both set: the seed's name wins; an empty one counts as unset
    assert getattr(Settings.from_env({seed: text, upstream: "~", **needs}), field) == value
    assert getattr(Settings.from_env({seed: "", upstream: text, **needs}), field) == value


def test_mogrifier_variables_by_either_name() -> None:
    env = {
        "DOG_STATSD_MOGRIFIERS": "A,B",
        "DOG_STATSD_MOGRIFIER_A_PATTERN": r"^x\.(\w+)$",
        "DOG_STATSD_MOGRIFIER_A_NAME": "upstream",
        "TAGGED_METRICSD_MOGRIFIER_A_NAME": "x_$1",  # the seed's name wins
        "DOG_STATSD_MOGRIFIER_A_TAGS": "k:$1",
        "TAGGED_METRICSD_MOGRIFIER_B_PATTERN": "^y$",
        "TAGGED_METRICSD_MOGRIFIER_B_NAME": "y",
    }
    assert Settings.from_env(env).stats.mogrifiers == (
        MogrifierSettings("A", r"^x\.(\w+)$", "x_$1", (("k", "$1"),)),
        MogrifierSettings("B", "^y$", "y"),
    )
    with pytest.raises(SettingsError, match="TAGGED_METRICSD_MOGRIFIER_A_TAGS='k' is invalid"):
        Settings.from_env({**env, "DOG_STATSD_MOGRIFIER_A_TAGS": "k"})


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"KVSTORE_TYPE": "ring"}, "KVSTORE_TYPE='ring' is invalid: expected one of single, "),
        ({"GRPC_PORT": "http"}, "GRPC_PORT='http' is invalid: expected an integer"),
        ({"NEAR_LIMIT_RATIO": "1.5"}, "NEAR_LIMIT_RATIO='1.5' is invalid: expected a number"),
        ({"SHADOW_MODE": "yes"}, "SHADOW_MODE='yes' is invalid: expected true or false"),
        ({"KVSTORE_TIMEOUT": "10"}, "KVSTORE_TIMEOUT='10' is invalid: expected a duration"),
        ({"LOG_FORMAT": "xml"}, "LOG_FORMAT='xml' is invalid: expected one of plain, text, json"),
        ({"LOG_LEVEL": "loud"}, "LOG_LEVEL='loud' is invalid: expected one of DEBUG, INFO, "),
        ({"BACKEND_TYPE": "etcd"}, "BACKEND_TYPE='etcd' is invalid: expected one of redis"),
        # the variable that was set is named, the upstream alias included
        ({"REDIS_POOL_SIZE": "0"}, "REDIS_POOL_SIZE='0' is invalid: expected an integer"),
        ({"REDIS_TIMEOUT": "-1s"}, "REDIS_TIMEOUT='-1s' is invalid: expected a duration that"),
        ({"USE_STATSD": "yes"}, "USE_STATSD='yes' is invalid: expected true or false"),
        ({"PROMETHEUS_ADDR": "9090"}, "PROMETHEUS_ADDR='9090' is invalid: expected host:port"),
        ({"MEMCACHE_HOST_PORT": "a"}, "MEMCACHE_HOST_PORT='a' is invalid: expected a comma-"),
        ({"LocalCacheSizeInBytes": "-1"}, "LocalCacheSizeInBytes='-1' is invalid: expected an "),
    ],
)
def test_invalid_values_name_the_setting(env: dict[str, str], message: str) -> None:
    with pytest.raises(SettingsError) as raised:
        Settings.from_env(env)
    assert str(raised.value).startswith(message)


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("10s", 10.0), ("1m30s", 90.0), ("150us", 0.00015), ("500ms", 0.5), ("1h", 3600.0), ("0", 0)],
)
def test_durations(text: str, seconds: float) -> None:
    assert parse_duration(text) == pytest.approx(seconds)
    assert Settings.from_env({"KVSTORE_TIMEOUT": text}).kvstore.timeout == pytest.approx(seconds)


@pytest.mark.parametrize("text", ["1", "t", "T", "TRUE", "true", "True"])
def test_go_booleans_true(text: str) -> None:
    assert Settings.from_env({"SHADOW_MODE": text}).modes.shadow_mode is True


@pytest.mark.parametrize("text", ["0", "f", "F", "FALSE", "false", "False"])
def test_go_booleans_false(text: str) -> None:
    assert Settings.from_env({"RUNTIME_WATCH_ROOT": text}).runtime_watch_root is False


@pytest.mark.parametrize("text", ["yes", "on", "tRue", " true"])
def test_other_booleans_are_refused(text: str) -> None:
    with pytest.raises(SettingsError, match="expected true or false"):
        Settings.from_env({"SHADOW_MODE": text})


def test_case_insensitive_choices() -> None:
    s = Settings.from_env({"KVSTORE_POOL_ON_EMPTY_BEHAVIOR": "error", "CONFIG_TYPE": "file"})
    assert s.kvstore.pool_on_empty_behavior == "ERROR"
    assert s.config_type == "FILE"


@pytest.mark.parametrize(
    ("text", "level"),
    [("WARN", "WARNING"), ("warn", "WARNING"), ("TRACE", "DEBUG"), ("trace", "DEBUG")],
)
def test_log_level_aliases(text: str, level: str) -> None:
    assert Settings.from_env({"LOG_LEVEL": text}).log_level == level


@pytest.mark.parametrize("text", ["json", "JSON", "text", "plain"])
def test_log_formats(text: str) -> None:
    assert Settings.from_env({"LOG_FORMAT": text}).log_format == text.lower()


def test_empty_counts_as_unset() -> None:
    s = Settings.from_env(
        {
            "LOG_LEVEL": "",
            "KVSTORE_URL": "",
            "PORT": "",
            "CONFIG_GRPC_XDS_NODE_ID": "",
            "TRACING_SERVICE_INSTANCE_ID": "",
        }
    )
    assert (s.log_level, s.kvstore.url, s.port) == (
        "WARNING",
        "/var/run/nutcracker/ratelimit.sock",
        8080,
    )
    assert s.xds.node_id == "default"
    assert len(s.tracing.service_instance_id) == 36  # a random UUID, as when unset


def test_structured_settings_from_the_flat_fields() -> None:
    s = Settings.from_env(
        {
            "GRPC_SERVER_USE_TLS": "true",
            "GRPC_SERVER_TLS_CERT": "/c",
            "GRPC_SERVER_TLS_KEY": "/k",
            "TRACING_SERVICE_INSTANCE_ID": "i-1",
            "LIMIT_RESPONSE_HEADERS_ENABLED": "1",
            "PULLMETRICS_ADDR": "127.0.0.1:0",
        }
    )
    assert (s.grpc_transport.use_tls, s.grpc_transport.cert) == (True, "/c")
    assert s.tracing.service_instance_id == "i-1" == s.tracing.service_instance_id
    assert s.modes == Modes(response_headers_enabled=True)
    assert (s.stats.pullmetrics_host, s.stats.pullmetrics_port) == ("127.0.0.1", 0)
    # the instance id of an unset TRACING_SERVICE_INSTANCE_ID is drawn once per settings
    unset = Settings.from_env({})
    assert unset.tracing.service_instance_id == unset.tracing.service_instance_id
    assert hash(s) != hash(unset)  # hashable, as the frozen dataclass was


def test_a_changed_copy_keeps_the_other_values_and_is_validated_again() -> None:
    s = Settings.from_env({"REDIS_URL": "10.0.0.1:6379", "EXTRA_TAGS": "a:1", **_MOGRIFIER})
    changed = s.changed(host="127.0.0.1", port=0)
    assert (changed.host, changed.port, changed.kvstore.url) == ("127.0.0.1", 0, "10.0.0.1:6379")
    assert changed.stats == s.stats and changed.tracing == s.tracing
    with pytest.raises(ValueError, match="GRPC_SERVER_TLS_CERT"):  # pydantic's, validated again
        s.changed(grpc_server_use_tls=True)


def test_modes_are_read_again_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SHADOW_MODE", "true")
    monkeypatch.setenv("LIMIT_RESET_HEADER", "X-Reset")
    assert Modes.from_env() == Modes(shadow_mode=True, reset_header="X-Reset")
    assert Modes.from_env({"QUOTA_MODE": "1"}) == Modes(quota_mode=True)


# --- the entry point -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        ("KVSTORE_TIMEOUT", "10", "expected a duration such as 500ms, 10s, 1m30s or 1h"),
        ("REDIS_TIMEOUT", "1x", "expected a duration such as 500ms, 10s, 1m30s or 1h"),
        ("SHADOW_MODE", "yes", "expected true or false"),
        ("USE_PROMETHEUS", "maybe", "expected true or false"),
    ],
)
def test_the_entry_point_refuses_an_invalid_value(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    name: str,
    value: str,
    message: str,
) -> None:
    monkeypatch.setenv(name, value)
    assert server.main([]) == 2
    assert capsys.readouterr().err == f"ratelimit: {name}={value!r} is invalid: {message}\n"


def test_the_program_exits_2_naming_the_variable() -> None:
    env = {**os.environ, "BACKEND_TYPE": "memory", "GRPC_MAX_CONNECTION_AGE": "1 day"}
    done = subprocess.run(
        [sys.executable, "-m", "handlers.ratelimit.server"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2
    assert done.stderr == (
        "ratelimit: GRPC_MAX_CONNECTION_AGE='1 day' is invalid: expected a duration such as "
        "500ms, 10s, 1m30s or 1h\n"
    )


# --- the README ------------------------------------------------------------------------------


def test_the_readme_tables_list_every_variable_and_alias() -> None:
    text = README.read_text()
    tables = text[text.index("## Settings") : text.index("## Runbook")]
    names = re.findall(r"`([A-Za-z_<>*]+)`", tables)
    for field in Settings.model_fields:
        for variable in Settings.variable_names(field):
            if variable.startswith(("KVSTORE_PERSECOND_", "REDIS_PERSECOND_")):
                continue  # one row: KVSTORE_PERSECOND_* (REDIS_PERSECOND_*)
            assert variable in names, variable
    assert "KVSTORE_PERSECOND_*" in names and "REDIS_PERSECOND_*" in names
