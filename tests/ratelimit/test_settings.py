"""Settings: defaults, the seed's names and the upstream aliases, invalid values."""

from __future__ import annotations

import pytest

from handlers.ratelimit.settings import Settings, SettingsError, parse_duration


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


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"KVSTORE_TYPE": "ring"}, "KVSTORE_TYPE='ring' is invalid: expected one of single, "),
        ({"GRPC_PORT": "http"}, "GRPC_PORT='http' is invalid: expected an integer"),
        ({"NEAR_LIMIT_RATIO": "1.5"}, "NEAR_LIMIT_RATIO='1.5' is invalid: expected a number"),
        ({"SHADOW_MODE": "yes"}, "SHADOW_MODE='yes' is invalid: expected true or false"),
        ({"KVSTORE_TIMEOUT": "10"}, "KVSTORE_TIMEOUT='10' is invalid: expected a duration"),
        ({"LOG_FORMAT": "xml"}, "LOG_FORMAT='xml' is invalid: expected one of text, json"),
        ({"BACKEND_TYPE": "etcd"}, "BACKEND_TYPE='etcd' is invalid: expected one of redis"),
        ({"REDIS_POOL_SIZE": "0"}, "KVSTORE_POOL_SIZE='0' is invalid: expected an integer"),
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


def test_case_insensitive_choices() -> None:
    s = Settings.from_env({"KVSTORE_POOL_ON_EMPTY_BEHAVIOR": "error", "CONFIG_TYPE": "file"})
    assert s.kvstore.pool_on_empty_behavior == "ERROR"
    assert s.config_type == "FILE"
