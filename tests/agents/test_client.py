"""The generated ``ServiceClient`` and ``AsyncServiceClient`` against the seed (002): the
constructor and its environment fallbacks, the namespaces and method names, multipart file
inputs, both variants, the context manager and the typed exceptions of the seed's table."""

from __future__ import annotations

import inspect
import io
import json
import shutil
import subprocess
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import pytest
import uvicorn

from generated.agents.client import (
    AsyncServiceClient,
    ServiceAuthError,
    ServiceClient,
    ServiceError,
    ServiceForbiddenError,
    ServiceNotFoundError,
    ServiceServerError,
    ServiceTimeoutError,
    ServiceValidationError,
)
from tests.agents.run_support import new_agent
from tests.agents.support import RunningServer, Storage, running
from tests.ratelimit.redis_servers import free_port

# the client methods of the seed, by namespace
SEED_METHODS = {
    "agents": ["list", "create", "get", "update", "run", "list_files", "put_file", "upload_files"],
    "agents.executions": [
        "list", "get", "cancel", "rerun", "get_feedback", "update_feedback", "clear_feedback",
        "list_expected", "copy_output_to_expected", "upload_expected", "download_expected",
        "rename_expected", "delete_expected", "download_file",
    ],
    "workflows": ["list", "get", "run", "versions"],
    "workflows.executions": ["list", "get", "cancel"],
}  # fmt: skip


@pytest.fixture(scope="module")
def sqlite_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    """The client's behaviour does not depend on the database: SQLite only."""
    directory = tmp_path_factory.mktemp("client")
    with running(Storage(directory, f"sqlite:///{directory / 'agents.db'}")) as server:
        yield server


@pytest.fixture(scope="module")
def key(sqlite_server: RunningServer) -> str:
    return sqlite_server.key("client", scope_all=True, can_create_agents=True)


def test_the_constructor_is_the_seeds() -> None:
    for cls in (ServiceClient, AsyncServiceClient):
        parameters = inspect.signature(cls).parameters
        seed = ["api_key", "base_url", "timeout_seconds", "verify_ssl"]
        assert list(parameters)[:4] == seed
        assert {parameters[name].kind for name in seed} == {inspect.Parameter.POSITIONAL_OR_KEYWORD}
        assert parameters["timeout_seconds"].default == 60.0
        assert parameters["verify_ssl"].default is True
        assert parameters["api_key"].default is None and parameters["base_url"].default is None


def test_key_and_url_come_from_the_environment_and_the_arguments_win(
    sqlite_server: RunningServer, key: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SERVICE_API_KEY", key)
    monkeypatch.setenv("SERVICE_BASE_URL", sqlite_server.url + "/")
    with ServiceClient() as client:
        assert client.base_url == sqlite_server.url
        client.agents.list()
    with ServiceClient(api_key="sk_bad_key") as client, pytest.raises(ServiceAuthError):
        client.agents.list()
    dead = f"http://127.0.0.1:{free_port()}"
    monkeypatch.setenv("SERVICE_BASE_URL", dead)
    with ServiceClient(base_url=sqlite_server.url) as client:
        client.agents.list()
    with ServiceClient() as client, pytest.raises(httpx.ConnectError):
        client.agents.list()


@pytest.mark.parametrize("cls", [ServiceClient, AsyncServiceClient])
def test_namespaces_and_method_names_are_the_seeds(cls: type) -> None:
    client = cls(api_key="sk_x_y", base_url="http://127.0.0.1:9")
    for path, names in SEED_METHODS.items():
        namespace = client
        for part in path.split("."):
            namespace = getattr(namespace, part)
        for name in names:
            assert callable(getattr(namespace, name, None)), f"{path}.{name}"


def test_run_and_wait_exists() -> None:
    client = ServiceClient(api_key="sk_x_y", base_url="http://127.0.0.1:9")
    assert callable(getattr(client.workflows.executions, "run_and_wait", None))


def test_file_inputs_are_multipart_parts(
    sqlite_server: RunningServer, key: str, tmp_path: Path
) -> None:
    on_disk = tmp_path / "invoice.pdf"
    on_disk.write_bytes(b"%PDF-1.4 " + b"9" * 1000)
    with ServiceClient(key, sqlite_server.url) as client:  # the seed's positional form
        slug = new_agent(client, "files")
        run = client.agents.run(
            slug,
            {"input": {"currency": "EUR"}},
            files={
                "invoice": on_disk,
                "raw": b"\x00\x01\x02",
                "named": ("notes.md", b"# notes", "text/markdown"),
                "stream": io.BytesIO(b"streamed bytes"),
            },
            wait_for_completion=60,
        )
        assert run.status is not None and run.status.value == "completed", run
        assert run.output == {
            "echo": {
                "currency": "EUR",
                "invoice": {"$file": "input/invoice.pdf"},
                "raw": {"$file": "input/raw"},
                "named": {"$file": "input/notes.md"},
                "stream": {"$file": "input/stream"},
            },
            "files": {"invoice.pdf": 1009, "raw": 3, "notes.md": 7, "stream": 14},
        }
        stored = b"".join(client.agents.executions.download_file(run.execution_id, "input",
                                                                  "invoice.pdf"))  # fmt: skip
        assert stored == on_disk.read_bytes()


async def test_the_async_client_does_the_same(sqlite_server: RunningServer, key: str) -> None:
    async with AsyncServiceClient(api_key=key, base_url=sqlite_server.url) as client:
        slug = f"async-{int(time.time() * 1000)}"
        await client.agents.create({"name": slug, "slug": slug})
        run = await client.agents.run(
            slug, {"input": {"n": 1}}, files={"doc": ("doc.txt", b"abc")}, wait_for_completion=60
        )
        assert run.status is not None and run.status.value == "completed"
        chunks = client.agents.executions.download_file(run.execution_id, "input", "doc.txt")
        assert b"".join([chunk async for chunk in chunks]) == b"abc"
        listed = await client.agents.executions.list(slug, include=["files"])
        assert [e.id for e in listed.executions] == [run.execution_id]
        with pytest.raises(ServiceNotFoundError) as raised:
            await client.agents.executions.get("aex_missing")
        assert raised.value.status == 404 and raised.value.requestId


def test_the_context_manager_closes_the_connections(sqlite_server: RunningServer, key: str) -> None:
    with ServiceClient(api_key=key, base_url=sqlite_server.url) as client:
        client.agents.list()
    with pytest.raises(RuntimeError, match="closed"):
        client.agents.list()


def _expect(error: ServiceError, status: int) -> None:
    assert error.status == status
    assert isinstance(error.envelope, dict)
    assert error.requestId and error.requestId == error.request_id
    assert error.envelope["requestId"] == error.requestId
    assert error.retryAfter is None


def test_each_status_raises_the_seeds_exception(sqlite_server: RunningServer, key: str) -> None:
    reader = sqlite_server.key("reader", scope_all=True)  # may not create agents
    with ServiceClient(api_key=key, base_url=sqlite_server.url) as client:
        with pytest.raises(ServiceValidationError) as invalid:
            client.agents.list(limit=0)
        _expect(invalid.value, 400)
        assert invalid.value.envelope["issues"][0]["field"] == "query.limit"
        assert str(invalid.value).startswith("query.limit: ")
        with pytest.raises(ServiceNotFoundError) as missing:
            client.agents.get("no-such-agent")
        _expect(missing.value, 404)
    with ServiceClient(api_key="sk_unknown_secret", base_url=sqlite_server.url) as client:
        with pytest.raises(ServiceAuthError) as unauthorized:
            client.agents.list()
        _expect(unauthorized.value, 401)
    with ServiceClient(api_key=reader, base_url=sqlite_server.url) as client:
        with pytest.raises(ServiceForbiddenError) as forbidden:
            client.agents.create({"name": "nope", "slug": "not-allowed"})
        _expect(forbidden.value, 403)
    # 429 (ServiceRateLimitError with retryAfter): tests/agents/test_rate_limits.py


def test_a_timeout_raises_service_timeout_error(sqlite_server: RunningServer, key: str) -> None:
    with ServiceClient(key, sqlite_server.url) as setup:
        slug = new_agent(setup, "slow")
    impatient = ServiceClient(api_key=key, base_url=sqlite_server.url, timeout_seconds=0.3)
    with impatient as client, pytest.raises(ServiceTimeoutError) as raised:
        client.agents.run(slug, {"input": {"sleep": 3}}, wait_for_completion=30)
    assert raised.value.status == 0 and raised.value.envelope is None


class _FailingApi(BaseHTTPRequestHandler):
    """A stand-in for a failing deployment (no way to make the real server answer 5xx): an
    envelope with status 503, as a proxy in front of the service would."""

    def do_GET(self) -> None:
        body = json.dumps(
            {
                "issues": [
                    {
                        "field": "<root>",
                        "message": "Service Unavailable",
                        "code": "server_error",
                        "severity": "error",
                    }
                ],
                "requestId": "req_upstream",
            }
        ).encode()
        self.send_response(503)
        self.send_header("content-type", "application/json")
        self.send_header("x-request-id", "req_upstream")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        return None


def test_a_5xx_raises_service_server_error() -> None:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _FailingApi)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        url = f"http://127.0.0.1:{httpd.server_address[1]}"
        client = ServiceClient(api_key="sk_x_y", base_url=url)
        with client, pytest.raises(ServiceServerError) as raised:
            client.workflows.list()
    finally:
        httpd.shutdown()
        httpd.server_close()
    _expect(raised.value, 503)
    assert raised.value.requestId == "req_upstream"


@pytest.fixture
def tls_url(sqlite_server: RunningServer, tmp_path: Path) -> Iterator[str]:
    """The real agents app behind uvicorn with a self-signed certificate."""
    if shutil.which("openssl") is None:
        pytest.skip("openssl is not installed")
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
         "-nodes", "-keyout", "key.pem", "-out", "cert.pem", "-days", "1",
         "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"],
        cwd=tmp_path, check=True, capture_output=True,
    )  # fmt: skip
    port = free_port()
    config = uvicorn.Config(
        sqlite_server.server.app,
        host="127.0.0.1",
        port=port,
        lifespan="off",
        log_level="warning",
        ssl_certfile=str(tmp_path / "cert.pem"),
        ssl_keyfile=str(tmp_path / "key.pem"),
    )
    tls = uvicorn.Server(config)
    thread = threading.Thread(target=tls.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not tls.started:
        assert thread.is_alive() and time.monotonic() < deadline, "uvicorn TLS did not start"
        time.sleep(0.01)
    yield f"https://127.0.0.1:{port}"
    tls.should_exit = True
    thread.join(20)


def test_verify_ssl_false_accepts_a_self_signed_host(tls_url: str, key: str) -> None:
    strict = ServiceClient(api_key=key, base_url=tls_url)
    with strict, pytest.raises(httpx.ConnectError, match="CERTIFICATE_VERIFY_FAILED"):
        strict.agents.list()
    with ServiceClient(api_key=key, base_url=tls_url, verify_ssl=False) as client:
        assert client.agents.list().total >= 0
