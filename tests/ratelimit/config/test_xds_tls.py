"""The xDS client over TLS: the server CA with the SAN override, a server that does not match,
mutual TLS with a client certificate, and an unreadable file, with certificates from openssl."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

import grpc
import pytest

from handlers.ratelimit.config.xds import XdsConfigProvider
from handlers.ratelimit.settings import SettingsError
from tests.ratelimit.config.test_xds import FOO, FOO_DUMP, Connect, Updates, xds_settings
from tests.ratelimit.config.test_xds import connect as connect  # the fixtures
from tests.ratelimit.config.test_xds import server as server
from tests.ratelimit.test_grpc_transport import SERVER_NAME, Pki
from tests.ratelimit.xds_management_server import TIMEOUT, ManagementServer


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    return Pki(tmp_path_factory.mktemp("xds-pki"))


async def tls_server(pki: Pki, client_ca: str | None = None) -> ManagementServer:
    credentials = grpc.ssl_server_credentials(
        [(pki.read("server1.key"), pki.read("server1.crt"))],
        root_certificates=pki.read(f"{client_ca}.crt") if client_ca else None,
        require_client_auth=client_ca is not None,
    )
    management = ManagementServer(credentials)
    await management.start()
    management.set_snapshot("1", [FOO])
    return management


async def test_tls_with_the_server_ca_and_san_override(pki: Pki, connect: Connect) -> None:
    management = await tls_server(pki)
    try:
        _, updates = await connect(
            management,
            CONFIG_GRPC_XDS_SERVER_USE_TLS="true",
            CONFIG_GRPC_XDS_SERVER_TLS_CACERT=str(pki.path("ca1.crt")),
            CONFIG_GRPC_XDS_SERVER_TLS_SAN=SERVER_NAME,
        )
        assert await updates.next_rules() == FOO_DUMP
    finally:
        await management.stop()


async def test_tls_refuses_a_server_not_matching(
    pki: Pki, connect: Connect, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="ratelimit.config")
    management = await tls_server(pki)
    try:
        for env in (
            {"CONFIG_GRPC_XDS_SERVER_TLS_CACERT": str(pki.path("ca1.crt"))},  # 127.0.0.1 != SAN
            {
                "CONFIG_GRPC_XDS_SERVER_TLS_CACERT": str(pki.path("ca2.crt")),  # other CA
                "CONFIG_GRPC_XDS_SERVER_TLS_SAN": SERVER_NAME,
            },
        ):
            caplog.clear()
            await connect(
                management,
                CONFIG_GRPC_XDS_SERVER_USE_TLS="true",
                FORCE_START_WITHOUT_INITIAL_CONFIG="true",
                **env,
            )
            deadline = asyncio.get_running_loop().time() + TIMEOUT
            while not any("UNAVAILABLE" in m for m in caplog.messages):
                assert asyncio.get_running_loop().time() < deadline
                await asyncio.sleep(0.01)
        assert management.requests == []
    finally:
        await management.stop()


async def test_mutual_tls_with_a_client_certificate(pki: Pki, connect: Connect) -> None:
    management = await tls_server(pki, client_ca="ca1")
    try:
        _, updates = await connect(
            management,
            CONFIG_GRPC_XDS_SERVER_USE_TLS="true",
            CONFIG_GRPC_XDS_SERVER_TLS_CACERT=str(pki.path("ca1.crt")),
            CONFIG_GRPC_XDS_SERVER_TLS_SAN=SERVER_NAME,
            CONFIG_GRPC_XDS_CLIENT_TLS_CERT=str(pki.path("client-a.crt")),
            CONFIG_GRPC_XDS_CLIENT_TLS_KEY=str(pki.path("client-a.key")),
        )
        assert await updates.next_rules() == FOO_DUMP
    finally:
        await management.stop()


async def test_unreadable_tls_file_stops_start(server: ManagementServer, tmp_path: Path) -> None:
    settings = xds_settings(
        server,
        CONFIG_GRPC_XDS_SERVER_USE_TLS="true",
        CONFIG_GRPC_XDS_SERVER_TLS_CACERT=str(tmp_path / "missing.crt"),
    )
    provider = XdsConfigProvider(settings, Updates())
    with pytest.raises(SettingsError, match=r"CONFIG_GRPC_XDS_SERVER_TLS_CACERT=.*cannot be read"):
        await provider.start()
    await provider.close()
