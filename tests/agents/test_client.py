"""The generated ``ServiceClient`` and ``AsyncServiceClient`` against the seed (002): the
constructor and its environment fallbacks, the namespaces and method names, multipart file
inputs, both variants, the context manager, the typed exceptions of the seed's table and of
the other documented statuses (409, 413, 415), and ``workflows.executions.run_and_wait``
against the product SDK's signature (its server wait, polling interval and deadline on a fake
clock)."""

from __future__ import annotations

import inspect
import io
import json
import shutil
import subprocess
import threading
import time
import types
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn

from generated.agents import client_extensions
from generated.agents.client import (
    AsyncServiceClient,
    ServiceAuthError,
    ServiceClient,
    ServiceConflictError,
    ServiceError,
    ServiceForbiddenError,
    ServiceNotFoundError,
    ServicePayloadTooLargeError,
    ServiceServerError,
    ServiceTimeoutError,
    ServiceUnsupportedMediaTypeError,
    ServiceValidationError,
)
from generated.agents.models import RunWorkflowResponse, WorkflowRunOverrides
from tests.agents.run_support import new_agent, tuned_server
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


# -- run_and_wait ------------------------------------------------------------------------------

# The product SDK's workflows.executions.run_and_wait (eigenpal 0.5.12): name, kind, default.
SDK_RUN_AND_WAIT = [
    ("workflow_id", inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.empty),
    ("input", inspect.Parameter.POSITIONAL_OR_KEYWORD, None),
    ("version", inspect.Parameter.KEYWORD_ONLY, None),
    ("poll_interval_seconds", inspect.Parameter.KEYWORD_ONLY, 2.0),
    ("timeout_seconds", inspect.Parameter.KEYWORD_ONLY, 300.0),
    ("overrides", inspect.Parameter.KEYWORD_ONLY, None),
]


def _parameters(method: object) -> list[tuple[str, inspect._ParameterKind, object]]:
    return [(p.name, p.kind, p.default) for p in inspect.signature(method).parameters.values()]  # type: ignore[arg-type]


@pytest.mark.parametrize("cls", [ServiceClient, AsyncServiceClient])
def test_run_and_wait_takes_the_sdks_parameters(cls: type) -> None:
    client = cls(api_key="sk_x_y", base_url="http://127.0.0.1:9")
    ours = _parameters(client.workflows.executions.run_and_wait)
    assert ours[: len(SDK_RUN_AND_WAIT)] == SDK_RUN_AND_WAIT
    sdk = pytest.importorskip("eigenpal.client")
    theirs = _parameters(sdk.WorkflowExecutionsResource.run_and_wait)[1:]  # less self
    assert theirs == SDK_RUN_AND_WAIT  # the table above is the SDK's
    assert inspect.iscoroutinefunction(client.workflows.executions.run_and_wait) == (
        cls is AsyncServiceClient
    )


class _FakeWorkflows:
    """The two routes ``run_and_wait`` uses, on a fake clock that ``run_and_wait`` reads and
    sleeps on. The execution ends (``final``) once the clock reaches ``ends_at`` (None: never);
    a run asking ``wait_for_completion=N`` is held until then or for N seconds."""

    def __init__(self, ends_at: float | None = 0.0, final: str = "completed") -> None:
        self.now = 0.0
        self.ends_at = ends_at
        self.final = final
        self.requests: list[tuple[float, httpx.Request]] = []
        self.sleeps: list[float] = []

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        assert seconds > 0
        self.sleeps.append(seconds)
        self.now += seconds

    async def async_sleep(self, seconds: float) -> None:
        self.sleep(seconds)

    def _status(self) -> str:
        return self.final if self.ends_at is not None and self.now >= self.ends_at else "running"

    def _outcome(self) -> dict[str, object]:
        status = self._status()
        return {
            "status": status,
            "result": 7 if status == "completed" else None,
            "error": "boom" if status == "failed" else None,
        }

    def handle(self, request: httpx.Request) -> httpx.Response:
        self.requests.append((self.now, request))
        if request.method == "POST":
            assert request.url.path == "/api/v1/workflows/wf-slug/run"
            wait = request.url.params.get("wait_for_completion")
            if wait is None:
                return httpx.Response(202, json={"executionId": "wfx_1"})  # as the server
            held = self.now + int(wait)
            if self.ends_at is not None:
                held = min(held, max(self.now, self.ends_at))
            self.now = held
            return httpx.Response(200, json={"executionId": "wfx_1", **self._outcome()})
        assert (request.method, request.url.path) == ("GET", "/api/v1/workflows/executions/wfx_1")
        summary = {"id": "wfx_1", "workflowId": "wf_1", "createdAt": "2026-01-01T00:00:00Z"}
        return httpx.Response(200, json={**summary, **self._outcome()})

    @property
    def polls(self) -> list[float]:
        """The clock at each ``workflows.executions.get``."""
        return [at for at, request in self.requests if request.method == "GET"]

    @property
    def run(self) -> httpx.Request:
        (at, first), *_ = self.requests
        assert first.method == "POST" and at == 0.0
        return first


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> _FakeWorkflows:
    """A fake workflows API whose clock replaces run_and_wait's ``time`` and ``asyncio``."""
    fake = _FakeWorkflows()
    monkeypatch.setattr(
        client_extensions, "time", types.SimpleNamespace(monotonic=fake.monotonic, sleep=fake.sleep)
    )
    monkeypatch.setattr(client_extensions, "asyncio", types.SimpleNamespace(sleep=fake.async_sleep))
    return fake


async def _run_and_wait(
    fake: _FakeWorkflows, aio: bool, *args: Any, request_timeout: float = 60.0, **kwargs: Any
) -> Any:
    """``workflows.executions.run_and_wait("wf-slug", …)`` of either client against ``fake``."""
    transport = httpx.MockTransport(fake.handle)
    settings: dict[str, Any] = {"api_key": "sk_x_y", "base_url": "http://agents"}
    settings.update(timeout_seconds=request_timeout, transport=transport)
    if aio:
        async with AsyncServiceClient(**settings) as client:
            return await client.workflows.executions.run_and_wait("wf-slug", *args, **kwargs)
    with ServiceClient(**settings) as client:
        return client.workflows.executions.run_and_wait("wf-slug", *args, **kwargs)


@pytest.mark.parametrize("aio", [False, True])
async def test_a_short_workflow_is_one_held_request(fake: _FakeWorkflows, aio: bool) -> None:
    fake.ends_at = 1.5
    outcome = await _run_and_wait(fake, aio, {"n": 1})
    assert len(fake.requests) == 1 and fake.sleeps == []
    assert fake.run.url.params["wait_for_completion"] == "30"
    assert json.loads(fake.run.content) == {"input": {"n": 1}}
    assert isinstance(outcome, RunWorkflowResponse)
    assert (outcome.execution_id, outcome.result, outcome.error) == ("wfx_1", 7, None)
    # it also reads as the SDK's {executionId, status, result, error}
    assert dict(outcome) == {
        "executionId": "wfx_1",
        "status": "completed",
        "result": 7,
        "error": None,
    }
    assert outcome.get("nope", "default") == "default"
    with pytest.raises(KeyError):
        outcome["nope"]


@pytest.mark.parametrize(
    ("timeout_seconds", "request_timeout", "wait"),
    [
        (300.0, 60.0, "30"),  # the SDK's default deadline: the server's longest hold here
        (None, 60.0, "30"),  # no deadline
        (10.0, 60.0, "10"),  # within the deadline
        (10.9, 60.0, "10"),  # whole seconds
        (300.0, 12.0, "7"),  # 5 s below the client's request timeout
        (0.5, 60.0, None),  # under a second left: no hold
        (300.0, 3.0, None),  # too short a request timeout to hold
    ],
)
async def test_the_server_wait_is_bounded_by_the_deadline_and_the_request_timeout(
    fake: _FakeWorkflows, timeout_seconds: float | None, request_timeout: float, wait: str | None
) -> None:
    await _run_and_wait(
        fake, False, timeout_seconds=timeout_seconds, request_timeout=request_timeout
    )
    assert fake.run.url.params.get("wait_for_completion") == wait
    assert len(fake.requests) == (1 if wait else 2)  # an unheld run is polled at once


@pytest.mark.parametrize("aio", [False, True])
async def test_a_running_execution_is_polled_every_interval(
    fake: _FakeWorkflows, aio: bool
) -> None:
    fake.ends_at, fake.final = 33.2, "failed"
    outcome = await _run_and_wait(fake, aio, poll_interval_seconds=0.5)
    # held 30 s by the server, then one poll each half second until it has ended
    assert fake.polls == pytest.approx([30.5, 31.0, 31.5, 32.0, 32.5, 33.0, 33.5])
    assert fake.sleeps == [0.5] * 7
    assert (outcome["status"], outcome["error"], outcome["result"]) == ("failed", "boom", None)


@pytest.mark.parametrize("aio", [False, True])
async def test_the_default_interval_is_two_seconds_and_an_unheld_run_is_polled_at_once(
    fake: _FakeWorkflows, aio: bool
) -> None:
    fake.ends_at = 5.0
    outcome = await _run_and_wait(fake, aio, request_timeout=3.0)
    assert "wait_for_completion" not in fake.run.url.params
    assert fake.polls == [0.0, 2.0, 4.0, 6.0]
    assert fake.sleeps == [2.0, 2.0, 2.0]
    assert outcome["status"] == "completed"


@pytest.mark.parametrize("aio", [False, True])
async def test_the_deadline_raises_service_timeout_error_and_is_never_passed(
    fake: _FakeWorkflows, aio: bool
) -> None:
    fake.ends_at = None
    with pytest.raises(ServiceTimeoutError) as raised:
        await _run_and_wait(
            fake, aio, poll_interval_seconds=2.0, timeout_seconds=5.0, request_timeout=3.0
        )
    assert str(raised.value) == "run_and_wait timed out after 5.0s (execution_id=wfx_1)"
    assert raised.value.status == 0 and raised.value.envelope is None
    assert not isinstance(raised.value, TimeoutError)  # the client's error, not the built-in
    assert fake.polls == [0.0, 2.0, 4.0]
    assert fake.sleeps == [2.0, 2.0, 1.0]  # the last pause is cut at the deadline
    assert fake.now == 5.0


@pytest.mark.parametrize("aio", [False, True])
async def test_the_default_deadline_is_five_minutes(fake: _FakeWorkflows, aio: bool) -> None:
    fake.ends_at = None
    with pytest.raises(ServiceTimeoutError, match=r"after 300\.0s \(execution_id=wfx_1\)$"):
        await _run_and_wait(fake, aio)
    assert fake.run.url.params["wait_for_completion"] == "30"
    assert fake.polls == [30.0 + 2.0 * n for n in range(1, 135)]  # 32 … 298
    assert fake.now == 300.0


@pytest.mark.parametrize("aio", [False, True])
@pytest.mark.parametrize(
    "arguments",
    [
        {"poll_interval_seconds": 0},
        {"poll_interval_seconds": -1.0},
        {"poll_interval_seconds": float("nan")},
        {"poll_interval_seconds": float("inf")},
        {"timeout_seconds": 0},
        {"timeout_seconds": -0.5},
        {"timeout_seconds": float("nan")},
    ],
)
async def test_a_non_positive_interval_or_timeout_is_a_value_error(
    fake: _FakeWorkflows, aio: bool, arguments: dict[str, float]
) -> None:
    (name,) = arguments
    with pytest.raises(ValueError, match=name):
        await _run_and_wait(fake, aio, **arguments)
    assert fake.requests == []


@pytest.mark.parametrize(
    "overrides",
    [
        {"steps": {"fetch": {"rows": 3}}},  # the SDK's form: the run body's overrides
        WorkflowRunOverrides(steps={"fetch": {"rows": 3}}),
        {"fetch": {"rows": 3}},  # the steps alone
    ],
)
async def test_version_and_overrides_go_as_the_sdk_sends_them(
    fake: _FakeWorkflows, overrides: object
) -> None:
    await _run_and_wait(fake, False, {"n": 2}, version="v2", overrides=overrides)
    assert fake.run.url.params["version"] == "v2"
    assert json.loads(fake.run.content) == {
        "input": {"n": 2},
        "overrides": {"steps": {"fetch": {"rows": 3}}},
    }


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


@pytest.mark.parametrize("aio", [False, True])
@pytest.mark.parametrize(
    ("status", "kind"),
    [
        (409, ServiceConflictError),
        (413, ServicePayloadTooLargeError),
        (415, ServiceUnsupportedMediaTypeError),
    ],
)
async def test_409_413_and_415_raise_their_typed_errors(
    status: int, kind: type[ServiceError], aio: bool
) -> None:
    """The spec's other documented statuses, as the server's envelope (via a mock transport)."""
    issue = {"field": "body.slug", "message": "taken", "code": "conflict", "severity": "error"}
    envelope = {"issues": [issue], "requestId": "req_1234"}

    def answer(request: httpx.Request) -> httpx.Response:
        return httpx.Response(status, json=envelope, headers={"x-request-id": "req_1234"})

    settings: dict[str, Any] = {"api_key": "sk_x_y", "base_url": "http://agents"}
    settings["transport"] = httpx.MockTransport(answer)
    with pytest.raises(ServiceError) as raised:
        if aio:
            async with AsyncServiceClient(**settings) as client:
                await client.agents.create({"name": "x", "slug": "x"})
        else:
            with ServiceClient(**settings) as client:
                client.agents.create({"name": "x", "slug": "x"})
    assert type(raised.value) is kind
    _expect(raised.value, status)
    assert raised.value.request_id == "req_1234" and raised.value.envelope == envelope
    assert str(raised.value) == "body.slug: taken"


def test_the_servers_409_and_413_raise_their_typed_errors(
    sqlite_server: RunningServer, key: str, tmp_path: Path
) -> None:
    with ServiceClient(api_key=key, base_url=sqlite_server.url) as client:
        slug = new_agent(client, "twice", program=None)
        with pytest.raises(ServiceConflictError) as conflict:
            client.agents.create({"name": slug, "slug": slug})
        _expect(conflict.value, 409)
        assert slug in str(conflict.value)
    storage = Storage(tmp_path, f"sqlite:///{tmp_path / 'agents.db'}")
    with tuned_server(storage, max_request_bytes=64 * 1024) as small:
        small_key = small.key("big", scope_all=True, can_create_agents=True)
        with small.client(small_key) as client:
            slug = new_agent(client, "size", program=None)
            with pytest.raises(ServicePayloadTooLargeError) as too_large:
                client.agents.put_file(slug, {"content": "y" * 64 * 1024}, path="main.py")
        _expect(too_large.value, 413)


def test_a_validation_error_has_the_sdks_issues() -> None:
    issue = {"field": "query.limit", "message": "too small", "code": "range", "severity": "error"}

    def answer(request: httpx.Request) -> httpx.Response:
        return httpx.Response(400, json={"issues": [issue], "requestId": "req_1"})

    transport = httpx.MockTransport(answer)
    client = ServiceClient(api_key="sk_x_y", base_url="http://agents", transport=transport)
    with client, pytest.raises(ServiceValidationError) as raised:
        client.agents.list(limit=0)
    assert raised.value.issues == [issue]
    assert ServiceValidationError("no body", status=400, envelope="text").issues == []


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
