"""The generated clients' retries (``RetryPolicy``), per-call options, raw responses and event
hooks, against a real HTTP server on loopback that fails on purpose: each request takes the
next step of a script (a status with headers, a dropped connection, a slow answer), and the
server records every attempt (method, path, headers, body).

The waits between attempts are recorded by the client's ``_sleep`` (replaced on the
instance), so the tests check the delays the client computed without waiting for them."""

from __future__ import annotations

import datetime
import email.utils
import io
import json
import ssl
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from generated.agents import client as agents_client
from generated.agents.client import (
    AsyncServiceClient,
    RawResponse,
    RetryPolicy,
    ServiceClient,
    ServiceRateLimitError,
    ServiceServerError,
    ServiceTimeoutError,
)
from generated.rag.client import RagClient
from tests.ratelimit.redis_servers import free_port

EMPTY_PAGE = {"data": [], "total": 0, "limit": 50, "offset": 0}


@dataclass
class Step:
    """One answer of the script: a status (with headers and a JSON body), or ``drop`` (close
    the connection without a response), after ``delay`` seconds."""

    status: int = 200
    body: Any = field(default_factory=lambda: EMPTY_PAGE)
    headers: dict[str, str] = field(default_factory=dict)
    drop: bool = False
    delay: float = 0.0


@dataclass
class Attempt:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes


class FailingServer:
    """A loopback HTTP server answering with ``script`` in order (the last step repeats)."""

    def __init__(self) -> None:
        self.script: list[Step] = [Step()]
        self.attempts: list[Attempt] = []
        self._lock = threading.Lock()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def _handle(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                body = self.rfile.read(length) if length else b""
                with outer._lock:
                    outer.attempts.append(
                        Attempt(
                            self.command,
                            self.path,
                            {k.lower(): v for k, v in self.headers.items()},
                            body,
                        )
                    )
                    index = min(len(outer.attempts), len(outer.script)) - 1
                    step = outer.script[index]
                if step.delay:
                    time.sleep(step.delay)
                if step.drop:
                    self.close_connection = True
                    return
                payload = json.dumps(step.body).encode()
                self.send_response(step.status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(payload)))
                for name, value in step.headers.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(payload)

            do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _handle

            def log_message(self, *args: object) -> None:
                return None

        class Server(ThreadingHTTPServer):
            def handle_error(self, request: Any, client_address: Any) -> None:
                return None  # a client that gave up (a timeout) breaks the pipe: expected

        self.httpd = Server(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def answer(self, *steps: Step) -> None:
        self.script = list(steps)
        self.attempts = []


@pytest.fixture(scope="module")
def failing() -> Iterator[FailingServer]:
    server = FailingServer()
    thread = threading.Thread(target=server.httpd.serve_forever, daemon=True)
    thread.start()
    yield server
    server.httpd.shutdown()
    server.httpd.server_close()


class Recorded(ServiceClient):
    """The sync client, its waits recorded instead of slept."""

    waits: list[float]

    def __enter__(self) -> Recorded:
        return self

    def _sleep(self, seconds: float) -> None:
        self.waits.append(seconds)


class AsyncRecorded(AsyncServiceClient):
    waits: list[float]

    async def __aenter__(self) -> AsyncRecorded:
        return self

    async def _sleep(self, seconds: float) -> None:
        self.waits.append(seconds)


def _client(url: str, **options: Any) -> Recorded:
    client = Recorded(api_key="sk_test_key", base_url=url, **options)
    client.waits = []
    return client


def _async_client(url: str, **options: Any) -> AsyncRecorded:
    client = AsyncRecorded(api_key="sk_test_key", base_url=url, **options)
    client.waits = []
    return client


def test_a_503_is_retried_with_backoff_until_it_succeeds(failing: FailingServer) -> None:
    failing.answer(Step(503), Step(502), Step(200))
    with _client(failing.url) as client:
        raw = client.with_raw_response.agents.list(limit=5)
    assert isinstance(raw, RawResponse)
    assert [a.method for a in failing.attempts] == ["GET"] * 3
    assert raw.status_code == 200 and raw.retries == 2
    assert raw.parse().total == 0
    # equal jitter: retry n waits between half and all of 0.5 * 2**n
    assert 0.25 <= client.waits[0] <= 0.5 and 0.5 <= client.waits[1] <= 1.0


def test_retries_stop_after_max_retries_and_raise_the_last_error(failing: FailingServer) -> None:
    failing.answer(Step(500))
    with _client(failing.url) as client, pytest.raises(ServiceServerError) as raised:
        client.agents.list()
    assert raised.value.status == 500
    assert len(failing.attempts) == 3 and len(client.waits) == 2  # the default: 2 retries


@pytest.mark.parametrize("where", ["client", "call"])
def test_max_retries_per_client_and_per_call(failing: FailingServer, where: str) -> None:
    failing.answer(Step(503))
    settings = {"max_retries": 0} if where == "client" else {}
    with _client(failing.url, **settings) as client, pytest.raises(ServiceServerError):
        if where == "client":
            client.agents.list()
        else:
            client.agents.list(max_retries=0)
    assert len(failing.attempts) == 1 and client.waits == []
    failing.answer(Step(503))
    with _client(failing.url) as client, pytest.raises(ServiceServerError):
        client.agents.list(max_retries=4)
    assert len(failing.attempts) == 5
    with pytest.raises(ValueError, match="between 0 and 10"):
        ServiceClient(api_key="k", base_url=failing.url, max_retries=11)
    with _client(failing.url) as client, pytest.raises(ValueError, match="max_retries"):
        client.agents.list(max_retries=-1)


def test_retry_after_seconds_and_http_date_are_honoured(failing: FailingServer) -> None:
    failing.answer(Step(429, headers={"Retry-After": "1"}), Step(200))
    with _client(failing.url) as client:
        assert client.agents.list().total == 0
    assert client.waits == [1.0] and len(failing.attempts) == 2

    later = datetime.datetime.now(datetime.UTC) + datetime.timedelta(seconds=30)
    date = email.utils.format_datetime(later, usegmt=True)
    failing.answer(Step(503, headers={"Retry-After": date}), Step(200))
    with _client(failing.url) as client:
        client.agents.list()
    assert 27 <= client.waits[0] <= 30

    failing.answer(Step(429, headers={"retry-after-ms": "250"}), Step(200))
    with _client(failing.url) as client:
        client.agents.list()
    assert client.waits == [0.25]


def test_a_retry_after_over_the_cap_is_raised_at_once(failing: FailingServer) -> None:
    """An hour's wait is the caller's to schedule: no retry, the error carries it."""
    failing.answer(Step(429, headers={"Retry-After": "3600"}))
    with _client(failing.url) as client, pytest.raises(ServiceRateLimitError) as raised:
        client.agents.list()
    assert raised.value.retry_after == 3600 and len(failing.attempts) == 1
    failing.answer(Step(429, headers={"Retry-After": "90"}), Step(200))
    policy = RetryPolicy(max_retry_after=120)
    with _client(failing.url, retry=policy) as client:
        client.agents.list()
    assert client.waits == [90.0]


def test_a_real_wait_on_retry_after(failing: FailingServer) -> None:
    """Without the recording: the client really waits what the server asked."""
    failing.answer(Step(429, headers={"Retry-After": "1"}), Step(200))
    started = time.monotonic()
    with ServiceClient(api_key="k", base_url=failing.url) as client:
        assert client.agents.list().total == 0
    assert time.monotonic() - started >= 1.0 and len(failing.attempts) == 2


def test_a_keyed_post_is_retried_with_the_same_idempotency_key(failing: FailingServer) -> None:
    failing.answer(Step(503), Step(500), Step(201, body={"agent": {}}))
    with _client(failing.url) as client:
        raw = client.with_raw_response.agents.create({"name": "a", "slug": "a-1"})
    assert raw.status_code == 201 and len(failing.attempts) == 3
    keys = {a.headers["idempotency-key"] for a in failing.attempts}
    assert len(keys) == 1 and uuid.UUID(keys.pop())  # one fresh key, resent on each retry
    assert {a.body for a in failing.attempts} == {b'{"name": "a", "slug": "a-1"}'}
    # a caller's key is sent as given, and a second call gets a new key of its own
    failing.answer(Step(503), Step(201, body={}))
    with _client(failing.url) as client:
        client.with_raw_response.agents.create({"name": "a", "slug": "a"}, idempotency_key="k-1")
        client.with_raw_response.agents.create({"name": "a", "slug": "a"})
    sent = [a.headers["idempotency-key"] for a in failing.attempts]
    assert sent[:2] == ["k-1", "k-1"] and sent[2] != "k-1"


def test_a_post_without_a_key_is_never_retried(failing: FailingServer) -> None:
    failing.answer(Step(503))
    with _client(failing.url) as client, pytest.raises(ServiceServerError):
        client.agents.archive("agent-1")
    assert len(failing.attempts) == 1 and client.waits == []
    failing.answer(Step(drop=True))  # the server may have acted before the connection broke
    with _client(failing.url) as client, pytest.raises(httpx.RemoteProtocolError):
        client.agents.archive("agent-1")
    assert len(failing.attempts) == 1


def test_a_dropped_connection_is_retried_when_the_request_is_idempotent(
    failing: FailingServer,
) -> None:
    failing.answer(Step(drop=True), Step(drop=True), Step(200))
    with _client(failing.url) as client:
        assert client.agents.list().total == 0
    assert len(failing.attempts) == 3 and len(client.waits) == 2
    failing.answer(Step(drop=True), Step(202, body={}))
    with _client(failing.url) as client:
        assert client.with_raw_response.agents.run("a", {"input": {}}).status_code == 202
    assert len({a.headers["idempotency-key"] for a in failing.attempts}) == 1


def test_a_refused_connection_is_retried_for_any_method() -> None:
    """Nothing was sent: even a POST without a key is safe to send again."""
    client = _client(f"http://127.0.0.1:{free_port()}")
    with client, pytest.raises(httpx.ConnectError) as raised:
        client.agents.archive("agent-1")
    assert len(client.waits) == 2
    assert raised.value.__cause__ is not raised.value  # httpx's error, its causes kept


def test_file_objects_are_rewound_and_unseekable_ones_never_resent(
    failing: FailingServer,
) -> None:
    document = io.BytesIO(b"the whole document")
    failing.answer(Step(503), Step(202, body={}))
    with _client(failing.url) as client:
        client.with_raw_response.agents.run("a", {"input": {}}, files={"doc": document})
    assert len(failing.attempts) == 2
    assert all(b"\r\n\r\nthe whole document\r\n" in a.body for a in failing.attempts)

    class Pipe(io.RawIOBase):
        def readable(self) -> bool:
            return True

        def seekable(self) -> bool:
            return False

        def readinto(self, buffer: Any) -> int:
            return 0

    failing.answer(Step(503), Step(202, body={}))
    with _client(failing.url) as client, pytest.raises(ServiceServerError):
        client.agents.run("a", {"input": {}}, files={"doc": Pipe()})  # type: ignore[dict-item]
    assert len(failing.attempts) == 1


def test_a_documented_answer_is_not_retried(failing: FailingServer) -> None:
    """rag's readiness 503 carries the health body: an answer, returned at once."""
    failing.answer(Step(503, body={"status": "loading", "components": {}}))
    with RagClient(base_url=failing.url) as client:
        health = client.health()
    assert health.status == "loading" and len(failing.attempts) == 1


def test_a_stream_is_retried_until_it_starts(failing: FailingServer) -> None:
    failing.answer(Step(503), Step(200, body="file content"))
    with _client(failing.url) as client:
        chunks = b"".join(client.agents.executions.download_file("exe_1", "output", "a.txt"))
    assert chunks == b'"file content"' and len(failing.attempts) == 2


def test_the_per_call_timeout(failing: FailingServer) -> None:
    failing.answer(Step(delay=1.5))
    with _client(failing.url) as client:
        with pytest.raises(ServiceTimeoutError) as raised:
            client.agents.list(timeout=0.2, max_retries=0)
        assert raised.value.status == 0 and len(failing.attempts) == 1
        failing.answer(Step(delay=1.5))
        assert client.agents.list().total == 0  # the client's own 60 s
        with pytest.raises(ValueError, match="timeout"):
            client.agents.list(timeout=0)
    # a timeout of an idempotent request is retried
    failing.answer(Step(delay=1.0), Step(200))
    with _client(failing.url) as client:
        assert client.agents.list(timeout=0.3).total == 0
    assert len(failing.attempts) == 2 and len(client.waits) == 1


def test_event_hooks_see_every_attempt(failing: FailingServer) -> None:
    seen: list[tuple[str, int]] = []

    def on_response(response: httpx.Response) -> None:
        seen.append((response.request.method, response.status_code))

    failing.answer(Step(503), Step(200))
    with _client(failing.url, event_hooks={"response": [on_response]}) as client:
        client.agents.list()
    assert seen == [("GET", 503), ("GET", 200)]


async def test_the_async_client_retries_alike(failing: FailingServer) -> None:
    failing.answer(Step(503), Step(429, headers={"Retry-After": "2"}), Step(200))
    seen: list[int] = []

    async def on_response(response: httpx.Response) -> None:
        seen.append(response.status_code)

    async with _async_client(failing.url, event_hooks={"response": [on_response]}) as client:
        assert (await client.agents.list()).total == 0
        assert seen == [503, 429, 200] and client.waits[1] == 2.0
        failing.answer(Step(503), Step(201, body={}))
        raw = await client.with_raw_response.agents.create({"name": "a", "slug": "a"})
        assert raw.retries == 1
        assert len({a.headers["idempotency-key"] for a in failing.attempts}) == 1
        failing.answer(Step(503))
        with pytest.raises(ServiceServerError):
            await client.agents.archive("agent-1")
        assert len(failing.attempts) == 1
        failing.answer(Step(503), Step(200, body="x"))
        chunks = [c async for c in client.agents.executions.download_file("e", "output", "a")]
        assert b"".join(chunks) == b'"x"' and len(failing.attempts) == 2
        failing.answer(Step(delay=1.0))
        with pytest.raises(ServiceTimeoutError):
            await client.agents.list(timeout=0.2, max_retries=0)


def test_the_backoff_is_exponential_capped_and_jittered() -> None:
    policy = RetryPolicy()
    assert (policy.max_retries, policy.initial_delay, policy.max_delay) == (2, 0.5, 8.0)
    lowest = [policy.backoff(n, draw=lambda: 0.0) for n in range(7)]
    highest = [policy.backoff(n, draw=lambda: 0.999999) for n in range(7)]
    assert lowest == [0.25, 0.5, 1.0, 2.0, 4.0, 4.0, 4.0]
    assert [round(h, 3) for h in highest] == [0.5, 1.0, 2.0, 4.0, 8.0, 8.0, 8.0]
    assert policy.backoff(10_000, draw=lambda: 0.5) == 6.0  # no overflow on a huge count
    for bad in (
        {"max_retries": 11},
        {"initial_delay": -1.0},
        {"max_delay": 1e9},
        {"initial_delay": 2.0, "max_delay": 1.0},
    ):
        with pytest.raises(ValueError):
            RetryPolicy(**bad)


def test_retry_after_parsing_is_bounded_and_lenient() -> None:
    parse = agents_client._retry_after
    assert parse(httpx.Headers({"retry-after": "3"})) == 3.0
    assert parse(httpx.Headers({"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"})) == 0.0
    assert parse(httpx.Headers({"retry-after": "soon"})) is None
    assert parse(httpx.Headers({"retry-after": "-5"})) == 0.0
    assert parse(httpx.Headers({"retry-after": "nan"})) is None
    assert parse(httpx.Headers({"retry-after": "9" * 5000})) is not None  # cut, not parsed whole
    assert parse(httpx.Headers({"retry-after-ms": "1500", "retry-after": "9"})) == 1.5
    assert parse(httpx.Headers({})) is None
    policy = RetryPolicy()
    assert policy.delay(0, httpx.Headers({"retry-after": "61"})) is None  # over the cap
    assert 0.25 <= (policy.delay(0, httpx.Headers({"retry-after": "x"})) or 0) <= 0.5


def test_the_readmes_opentelemetry_example_traces_every_attempt(
    failing: FailingServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """specs/README.md's example, run as written (its tracer swapped for an in-memory one)."""
    readme = (Path(__file__).resolve().parents[2] / "specs" / "README.md").read_text()
    example = readme.split("  ```python\n", 1)[1].split("  ```\n", 1)[0]
    source = "\n".join(line.removeprefix("  ") for line in example.splitlines())
    monkeypatch.setenv("SERVICE_API_KEY", "sk_test_key")
    monkeypatch.setenv("SERVICE_BASE_URL", failing.url)
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    namespace: dict[str, Any] = {}
    exec(compile(source, "specs/README.md", "exec"), namespace)
    namespace["tracer"] = provider.get_tracer("test")
    failing.answer(Step(503), Step(200))
    client: ServiceClient = namespace["client"]
    with client:
        client.agents.list(limit=1)
    spans = exporter.get_finished_spans()
    assert [(span.attributes or {}).get("http.response.status_code") for span in spans] == [
        503,
        200,
    ]
    assert {span.name for span in spans} == {"GET /api/v1/agents"}
    assert spans[0].status.status_code is StatusCode.ERROR
    for span, attempt in zip(spans, failing.attempts, strict=True):
        assert span.context is not None
        assert attempt.headers["traceparent"].split("-")[2] == f"{span.context.span_id:016x}"


def test_a_certificate_that_fails_verification_is_not_retried() -> None:
    """What httpx raises for it: its ConnectError, from httpcore's, from the ssl module's."""
    request = agents_client._Request("GET", "/api/v1/agents")
    failure = httpx.ConnectError("[SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed")
    inner = httpx.ConnectError("httpcore")
    inner.__cause__ = ssl.SSLCertVerificationError(1, "certificate verify failed")
    failure.__cause__ = inner
    assert not agents_client._transport_retryable(request, failure)
    assert agents_client._transport_retryable(request, httpx.ConnectError("refused"))
