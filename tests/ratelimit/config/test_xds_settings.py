"""The xDS client's settings (CONFIG_GRPC_XDS_*, XDS_CLIENT_*): defaults, reading, and a clear
error naming the setting for each bad value."""

from __future__ import annotations

import pytest

from handlers.ratelimit.settings import Settings, SettingsError


def test_settings_defaults() -> None:
    xds = Settings.from_env({}).xds
    assert (xds.server_url, xds.node_id, xds.node_metadata) == ("localhost:18000", "default", ())
    assert (xds.connect_retry_interval, xds.backoff_initial_interval) == (3.0, 10.0)
    assert (xds.backoff_max_interval, xds.backoff_random_factor) == (60.0, 0.5)
    assert xds.backoff_jitter is True
    assert (xds.use_tls, xds.additional_headers, xds.max_msg_size_in_bytes) == (False, (), 0)


def test_settings_are_read() -> None:
    xds = Settings.from_env(
        {
            "CONFIG_GRPC_XDS_SERVER_URL": "xds.internal:18001",
            "CONFIG_GRPC_XDS_NODE_ID": "n1",
            "CONFIG_GRPC_XDS_NODE_METADATA": "a=1, b = two ,",
            "CONFIG_GRPC_XDS_CLIENT_ADDITIONAL_HEADERS": "X-A:1,x-b:two words",
            "CONFIG_GRPC_XDS_SERVER_CONNECT_RETRY_INTERVAL": "1500ms",
            "XDS_CLIENT_BACKOFF_INITIAL_INTERVAL": "1s",
            "XDS_CLIENT_BACKOFF_MAX_INTERVAL": "1m",
            "XDS_CLIENT_BACKOFF_RANDOM_FACTOR": "1.5",
            "XDS_CLIENT_BACKOFF_JITTER": "false",
            "XDS_CLIENT_MAX_MSG_SIZE_IN_BYTES": "1048576",
            "CONFIG_GRPC_XDS_SERVER_USE_TLS": "true",
            "CONFIG_GRPC_XDS_SERVER_TLS_CACERT": "/ca.crt",
            "CONFIG_GRPC_XDS_CLIENT_TLS_CERT": "/c.crt",
            "CONFIG_GRPC_XDS_CLIENT_TLS_KEY": "/c.key",
            "CONFIG_GRPC_XDS_SERVER_TLS_SAN": "xds.example",
        }
    ).xds
    assert xds.server_url == "xds.internal:18001" and xds.node_id == "n1"
    assert xds.node_metadata == (("a", "1"), ("b", "two"))
    assert xds.additional_headers == (("x-a", "1"), ("x-b", "two words"))
    assert (xds.connect_retry_interval, xds.backoff_initial_interval) == (1.5, 1.0)
    assert (xds.backoff_max_interval, xds.backoff_random_factor) == (60.0, 1.5)
    assert not xds.backoff_jitter and xds.max_msg_size_in_bytes == 1048576
    assert xds.use_tls and (xds.server_tls_cacert, xds.client_tls_cert) == ("/ca.crt", "/c.crt")
    assert (xds.client_tls_key, xds.server_tls_san) == ("/c.key", "xds.example")


@pytest.mark.parametrize(
    ("env", "message"),
    [
        # an empty variable counts as unset (the default); a blank URL is still refused
        ({"CONFIG_GRPC_XDS_SERVER_URL": "  "}, "CONFIG_GRPC_XDS_SERVER_URL is empty"),
        (
            {"CONFIG_GRPC_XDS_NODE_METADATA": "a=1,b"},
            "CONFIG_GRPC_XDS_NODE_METADATA='a=1,b' is invalid: expected a comma-separated "
            "list of key=value, got the item 'b'",
        ),
        (
            {"CONFIG_GRPC_XDS_CLIENT_ADDITIONAL_HEADERS": "a"},
            "CONFIG_GRPC_XDS_CLIENT_ADDITIONAL_HEADERS='a' is invalid: expected a "
            "comma-separated list of key:value",
        ),
        (
            {"CONFIG_GRPC_XDS_CLIENT_ADDITIONAL_HEADERS": "bad header:1"},
            "header names of letters, digits",
        ),
        ({"CONFIG_GRPC_XDS_CLIENT_ADDITIONAL_HEADERS": "grpc-x:1"}, "not starting with grpc-"),
        ({"CONFIG_GRPC_XDS_CLIENT_ADDITIONAL_HEADERS": "x:\u00e9"}, "printable ASCII"),
        (
            {"CONFIG_GRPC_XDS_SERVER_CONNECT_RETRY_INTERVAL": "3"},
            "CONFIG_GRPC_XDS_SERVER_CONNECT_RETRY_INTERVAL='3' is invalid: expected a duration",
        ),
        (
            {"CONFIG_GRPC_XDS_SERVER_CONNECT_RETRY_INTERVAL": "0s"},
            "CONFIG_GRPC_XDS_SERVER_CONNECT_RETRY_INTERVAL must be a positive duration",
        ),
        (
            {"XDS_CLIENT_BACKOFF_INITIAL_INTERVAL": "0"},
            "XDS_CLIENT_BACKOFF_INITIAL_INTERVAL must be a positive duration",
        ),
        (
            {"XDS_CLIENT_BACKOFF_MAX_INTERVAL": "5s"},
            "XDS_CLIENT_BACKOFF_MAX_INTERVAL must not be below XDS_CLIENT_BACKOFF_INITIAL_INTERVAL",
        ),
        (
            {"XDS_CLIENT_BACKOFF_RANDOM_FACTOR": "0"},
            "XDS_CLIENT_BACKOFF_RANDOM_FACTOR='0' is invalid: expected a number above 0",
        ),
        (
            {"XDS_CLIENT_BACKOFF_RANDOM_FACTOR": "nan"},
            "XDS_CLIENT_BACKOFF_RANDOM_FACTOR='nan' is invalid",
        ),
        ({"XDS_CLIENT_BACKOFF_JITTER": "maybe"}, "XDS_CLIENT_BACKOFF_JITTER='maybe' is invalid"),
        (
            {"XDS_CLIENT_MAX_MSG_SIZE_IN_BYTES": "-1"},
            "XDS_CLIENT_MAX_MSG_SIZE_IN_BYTES='-1' is invalid: expected an integer of at least 0",
        ),
        ({"CONFIG_GRPC_XDS_SERVER_USE_TLS": "yes"}, "CONFIG_GRPC_XDS_SERVER_USE_TLS='yes'"),
        (
            {"CONFIG_GRPC_XDS_SERVER_USE_TLS": "true", "CONFIG_GRPC_XDS_CLIENT_TLS_CERT": "/c"},
            "CONFIG_GRPC_XDS_CLIENT_TLS_CERT and CONFIG_GRPC_XDS_CLIENT_TLS_KEY go together",
        ),
        (
            {"CONFIG_GRPC_XDS_SERVER_TLS_CACERT": "/ca", "CONFIG_GRPC_XDS_SERVER_TLS_SAN": "x"},
            "CONFIG_GRPC_XDS_SERVER_TLS_CACERT, CONFIG_GRPC_XDS_SERVER_TLS_SAN need "
            "CONFIG_GRPC_XDS_SERVER_USE_TLS=true",
        ),
    ],
)
def test_settings_validation(env: dict[str, str], message: str) -> None:
    with pytest.raises(SettingsError) as raised:
        Settings.from_env(env)
    assert message in str(raised.value)
