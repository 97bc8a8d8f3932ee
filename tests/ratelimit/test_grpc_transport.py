"""The gRPC port's transport (issue 5, item 4): TLS with hot-reloaded certificates, mTLS with
the optional SAN check, and connection ageing, against real TLS handshakes on loopback."""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path

import grpc
import pytest

from generated.proto.envoy.service.ratelimit.v3 import rls_pb2, rls_pb2_grpc
from handlers.ratelimit.grpc_server import create_grpc_server
from handlers.ratelimit.health import Health
from handlers.ratelimit.settings import GrpcTransportSettings, Settings, SettingsError
from tests.ratelimit.conftest import descriptor, harness, request

SERVER_NAME = "ratelimit.test"
RULES = """
domain: edge
descriptors:
  - key: remote_address
    rate_limit: {unit: minute, requests_per_unit: 100}
"""


class Pki:
    """Two CAs; server certificates from each; client certificates naming a DNS SAN."""

    def __init__(self, directory: Path) -> None:
        if shutil.which("openssl") is None:
            pytest.skip("openssl is not installed")
        self.directory = directory
        directory.mkdir(parents=True, exist_ok=True)
        for ca in ("ca1", "ca2"):
            self._openssl(
                "req", "-x509", *self._ec(), "-keyout", f"{ca}.key", "-out", f"{ca}.crt",
                "-days", "2", "-subj", f"/CN={ca}",
                "-addext", "basicConstraints=critical,CA:TRUE",
                "-addext", "keyUsage=critical,keyCertSign,cRLSign",
            )  # fmt: skip
        self.issue("server1", "ca1", f"DNS:{SERVER_NAME}", "serverAuth")
        self.issue("server2", "ca2", f"DNS:{SERVER_NAME}", "serverAuth")
        self.issue("client-a", "ca1", "DNS:client-a.test", "clientAuth")
        self.issue("client-b", "ca1", "DNS:client-b.test", "clientAuth")
        self.issue("stranger", "ca2", "DNS:client-a.test", "clientAuth")

    @staticmethod
    def _ec() -> list[str]:
        return ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]

    def _openssl(self, *args: str) -> None:
        subprocess.run(["openssl", *args], cwd=self.directory, check=True, capture_output=True)

    def issue(self, name: str, ca: str, san: str, usage: str) -> None:
        (self.directory / f"{name}.ext").write_text(
            f"subjectAltName={san}\nextendedKeyUsage={usage}\n"
        )
        self._openssl("req", "-new", *self._ec(), "-keyout", f"{name}.key",
                      "-out", f"{name}.csr", "-subj", f"/CN={name}")  # fmt: skip
        self._openssl("x509", "-req", "-in", f"{name}.csr", "-CA", f"{ca}.crt",
                      "-CAkey", f"{ca}.key", "-CAcreateserial", "-out", f"{name}.crt",
                      "-days", "2", "-extfile", f"{name}.ext")  # fmt: skip

    def path(self, name: str) -> Path:
        return self.directory / name

    def read(self, name: str) -> bytes:
        return self.path(name).read_bytes()


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    return Pki(tmp_path_factory.mktemp("pki"))


def served_files(pki: Pki, directory: Path) -> tuple[Path, Path]:
    """Copies of server1's certificate and key, which tests may replace."""
    cert, key = directory / "tls.crt", directory / "tls.key"
    shutil.copy(pki.path("server1.crt"), cert)
    shutil.copy(pki.path("server1.key"), key)
    return cert, key


@pytest.fixture
async def serve() -> AsyncIterator[object]:
    servers: list[grpc.aio.Server] = []

    async def start(transport: GrpcTransportSettings) -> int:
        h = harness(RULES)
        server, ports = await create_grpc_server(
            h.service, Health(), h.stats.store, ["127.0.0.1:0"], transport=transport
        )
        servers.append(server)
        return ports[0]

    yield start
    for server in servers:
        await server.stop(None)


async def call(
    port: int, pki: Pki, ca: str = "ca1", client: str | None = None
) -> rls_pb2.RateLimitResponse:
    credentials = grpc.ssl_channel_credentials(
        root_certificates=pki.read(f"{ca}.crt"),
        private_key=pki.read(f"{client}.key") if client else None,
        certificate_chain=pki.read(f"{client}.crt") if client else None,
    )
    options = [("grpc.ssl_target_name_override", SERVER_NAME)]
    async with grpc.aio.secure_channel(f"127.0.0.1:{port}", credentials, options) as channel:
        stub = rls_pb2_grpc.RateLimitServiceStub(channel)
        response: rls_pb2.RateLimitResponse = await stub.ShouldRateLimit(
            request("edge", descriptor(("remote_address", "a"))), timeout=5
        )
        return response


async def test_tls(serve: object, pki: Pki, tmp_path: Path) -> None:
    cert, key = served_files(pki, tmp_path)
    port = await serve(GrpcTransportSettings(use_tls=True, cert=str(cert), key=str(key)))  # type: ignore[operator]
    assert (await call(port, pki)).overall_code == rls_pb2.RateLimitResponse.OK
    async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as plain:
        stub = rls_pb2_grpc.RateLimitServiceStub(plain)
        with pytest.raises(grpc.aio.AioRpcError) as raised:
            await stub.ShouldRateLimit(request("edge", descriptor(("k", "v"))), timeout=2)
    assert raised.value.code() == grpc.StatusCode.UNAVAILABLE


async def test_certificate_is_reloaded_when_its_files_change(
    serve: object, pki: Pki, tmp_path: Path
) -> None:
    cert, key = served_files(pki, tmp_path)
    port = await serve(GrpcTransportSettings(use_tls=True, cert=str(cert), key=str(key)))  # type: ignore[operator]
    await call(port, pki, ca="ca1")
    # rotate to a certificate of another CA, as a secret update would
    for source, target in (("server2.crt", cert), ("server2.key", key)):
        staged = target.with_suffix(".new")
        shutil.copy(pki.path(source), staged)
        os.replace(staged, target)
    assert (await call(port, pki, ca="ca2")).overall_code == rls_pb2.RateLimitResponse.OK
    with pytest.raises(grpc.aio.AioRpcError):
        await call(port, pki, ca="ca1")
    # an unreadable replacement keeps the current certificate
    key.write_text("not a key")
    os.utime(key, None)
    assert (await call(port, pki, ca="ca2")).overall_code == rls_pb2.RateLimitResponse.OK


async def test_mtls_requires_a_client_certificate_of_the_ca(
    serve: object, pki: Pki, tmp_path: Path
) -> None:
    cert, key = served_files(pki, tmp_path)
    transport = GrpcTransportSettings(
        use_tls=True, cert=str(cert), key=str(key), client_ca=str(pki.path("ca1.crt"))
    )
    port = await serve(transport)  # type: ignore[operator]
    assert (await call(port, pki, client="client-a")).overall_code == 1
    for client in (None, "stranger"):  # no certificate; a certificate of another CA
        with pytest.raises(grpc.aio.AioRpcError) as raised:
            await call(port, pki, client=client)
        assert raised.value.code() == grpc.StatusCode.UNAVAILABLE


async def test_san_check(serve: object, pki: Pki, tmp_path: Path) -> None:
    cert, key = served_files(pki, tmp_path)
    transport = GrpcTransportSettings(
        use_tls=True,
        cert=str(cert),
        key=str(key),
        client_ca=str(pki.path("ca1.crt")),
        client_san="client-a.test",
    )
    port = await serve(transport)  # type: ignore[operator]
    assert (await call(port, pki, client="client-a")).overall_code == 1
    with pytest.raises(grpc.aio.AioRpcError) as raised:
        await call(port, pki, client="client-b")
    assert raised.value.code() == grpc.StatusCode.UNAUTHENTICATED
    assert "client-a.test" in (raised.value.details() or "")


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    except ConnectionError:
        pass
    finally:
        writer.close()


async def test_connections_are_aged_out(serve: object) -> None:
    """Through a counting TCP proxy: one channel calling steadily opens a new connection
    after each age (GOAWAY, then the channel reconnects)."""
    transport = GrpcTransportSettings(max_connection_age=0.5, max_connection_age_grace=0.5)
    port = await serve(transport)  # type: ignore[operator]
    connections = 0

    async def relay(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal connections
        connections += 1
        upstream_reader, upstream_writer = await asyncio.open_connection("127.0.0.1", port)
        await asyncio.gather(_pipe(reader, upstream_writer), _pipe(upstream_reader, writer))

    proxy = await asyncio.start_server(relay, "127.0.0.1", 0)
    proxy_port = proxy.sockets[0].getsockname()[1]
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{proxy_port}") as channel:
            stub = rls_pb2_grpc.RateLimitServiceStub(channel)
            deadline = asyncio.get_running_loop().time() + 5
            while asyncio.get_running_loop().time() < deadline and connections < 3:
                await stub.ShouldRateLimit(request("edge", descriptor(("k", "v"))), timeout=5)
                await asyncio.sleep(0.02)
    finally:
        proxy.close()
    assert connections >= 3


def test_settings() -> None:
    transport = Settings.from_env(
        {
            "GRPC_SERVER_USE_TLS": "true",
            "GRPC_SERVER_TLS_CERT": "/c",
            "GRPC_SERVER_TLS_KEY": "/k",
            "GRPC_MAX_CONNECTION_AGE": "10m",
            "GRPC_MAX_CONNECTION_AGE_GRACE": "30s",
        }
    ).grpc_transport
    assert (transport.max_connection_age, transport.max_connection_age_grace) == (600, 30)
    defaults = Settings.from_env({}).grpc_transport
    assert (defaults.max_connection_age, defaults.max_connection_age_grace) == (86400, 3600)
    problems = {
        "GRPC_SERVER_USE_TLS": ({"GRPC_SERVER_USE_TLS": "true"}, "needs GRPC_SERVER_TLS_CERT"),
        "GRPC_CLIENT_TLS_CACERT": ({"GRPC_CLIENT_TLS_CACERT": "/ca"}, "GRPC_SERVER_USE_TLS=true"),
        "GRPC_CLIENT_TLS_SAN": ({"GRPC_CLIENT_TLS_SAN": "x"}, "needs GRPC_CLIENT_TLS_CACERT"),
        "GRPC_MAX_CONNECTION_AGE": ({"GRPC_MAX_CONNECTION_AGE": "soon"}, "a duration"),
    }
    for name, (env, message) in problems.items():
        with pytest.raises(SettingsError) as raised:
            Settings.from_env(env)
        assert name in str(raised.value) and message in str(raised.value)
