"""The ``ALTCACHE_*`` settings (upstream ``MEMCACHE_*``): defaults, aliases, validation, and
what BACKEND_TYPE=memcache builds."""

from __future__ import annotations

import pytest

from handlers.ratelimit.backends.memcache import MemcacheStore
from handlers.ratelimit.server import build_store, worker_count
from handlers.ratelimit.settings import AltCacheSettings, Settings, SettingsError
from handlers.ratelimit.stats import ServiceStats


def test_defaults() -> None:
    assert Settings.from_env({}).altcache == AltCacheSettings(
        host_port=(),
        srv="",
        srv_refresh=0.0,
        max_idle_conns=2,
        tls=False,
        tls_client_cert="",
        tls_client_key="",
        tls_cacert="",
        tls_skip_hostname_verification=False,
    )


def test_seed_names_and_upstream_aliases() -> None:
    altcache = Settings.from_env(
        {
            "ALTCACHE_HOST_PORT": "10.0.0.1:11211, cache-b:11212,[::1]:11213,/run/mc.sock",
            "MEMCACHE_MAX_IDLE_CONNS": "8",
            "ALTCACHE_TLS": "true",
            "MEMCACHE_TLS_CLIENT_CERT": "/c.pem",
            "MEMCACHE_TLS_CLIENT_KEY": "/k.pem",
            "ALTCACHE_TLS_CACERT": "/ca.pem",
            "MEMCACHE_TLS_SKIP_HOSTNAME_VERIFICATION": "1",
        }
    ).altcache
    assert altcache.host_port == ("10.0.0.1:11211", "cache-b:11212", "[::1]:11213", "/run/mc.sock")
    assert altcache.max_idle_conns == 8
    assert (altcache.tls, altcache.tls_skip_hostname_verification) == (True, True)
    assert (altcache.tls_client_cert, altcache.tls_client_key, altcache.tls_cacert) == (
        "/c.pem",
        "/k.pem",
        "/ca.pem",
    )
    srv = Settings.from_env(
        {"MEMCACHE_SRV": "_memcache._tcp.example.com", "ALTCACHE_SRV_REFRESH": "1m30s"}
    ).altcache
    assert (srv.srv, srv.srv_refresh) == ("_memcache._tcp.example.com", 90.0)


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"ALTCACHE_HOST_PORT": "cache-a"}, "ALTCACHE_HOST_PORT='cache-a' is invalid: expected a"),
        ({"ALTCACHE_HOST_PORT": "a:1,,b:2"}, "got the item ''"),
        ({"ALTCACHE_HOST_PORT": "a:0"}, "got the item 'a:0'"),
        ({"ALTCACHE_HOST_PORT": "a:70000"}, "got the item 'a:70000'"),
        ({"ALTCACHE_SRV": "memcache.example.com"}, "expected an SRV name such as"),
        ({"ALTCACHE_SRV_REFRESH": "soon"}, "ALTCACHE_SRV_REFRESH='soon' is invalid"),
        ({"ALTCACHE_SRV_REFRESH": "-1s"}, "a duration that is not negative"),
        ({"ALTCACHE_MAX_IDLE_CONNS": "-1"}, "an integer of at least 0"),
        ({"ALTCACHE_TLS": "maybe"}, "ALTCACHE_TLS='maybe' is invalid: expected true or false"),
        (
            {"ALTCACHE_HOST_PORT": "a:1", "MEMCACHE_SRV": "_m._tcp.example.com"},
            "ALTCACHE_HOST_PORT and ALTCACHE_SRV are both set",
        ),
        (
            {"ALTCACHE_TLS": "true", "ALTCACHE_TLS_CLIENT_CERT": "/c.pem"},
            "ALTCACHE_TLS_CLIENT_CERT and ALTCACHE_TLS_CLIENT_KEY go together",
        ),
    ],
)
def test_invalid_values_name_the_setting(env: dict[str, str], message: str) -> None:
    with pytest.raises(SettingsError) as raised:
        Settings.from_env(env)
    assert message in str(raised.value)


def test_memcache_backend_builds_the_memcache_store_with_one_worker_per_core() -> None:
    settings = Settings.from_env(
        {"BACKEND_TYPE": "memcache", "ALTCACHE_HOST_PORT": "127.0.0.1:11211", "WORKERS": "3"}
    )
    assert isinstance(build_store(settings, ServiceStats()), MemcacheStore)
    assert worker_count(settings) == 3


def test_memcache_backend_needs_hosts_or_a_record() -> None:
    settings = Settings.from_env({"BACKEND_TYPE": "memcache"})
    with pytest.raises(SettingsError, match="needs ALTCACHE_HOST_PORT or ALTCACHE_SRV"):
        build_store(settings, ServiceStats())
