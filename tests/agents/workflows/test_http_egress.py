"""The http step's egress guard, through WorkflowEngine with the real HttpStepRunner and real
loopback HTTP(S) servers: SSRF to loopback, link-local and private addresses is refused before
any connection, redirects are followed with every hop checked, and the connection goes to the
address that was checked (no second resolution, the original Host and TLS name).

Linux routes all of 127.0.0.0/8 to the loopback interface, so a server on 127.0.0.2 with the
allowlist ``127.0.0.2/32`` plays a "public" server next to the forbidden 127.0.0.1."""

from __future__ import annotations

import asyncio
import json
import shutil
import socket
import ssl
import subprocess
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest

from handlers.agents.egress import EgressPolicy
from handlers.agents.workflows import (
    HttpStepRunner,
    MemoryJournal,
    WorkflowEngine,
    WorkflowOutcome,
    standard_runners,
)
from tests.agents.workflows.support import workflow

PUBLIC = EgressPolicy.parse(["127.0.0.2/32"])
"""127.0.0.2 stands for a public address; 127.0.0.1 stays forbidden."""


# -- recording servers ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Seen:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes


@dataclass
class Recorder:
    host: str
    port: int
    scheme: str = "http"
    requests: list[Seen] = field(default_factory=list)
    server_names: list[str | None] = field(default_factory=list)
    """The TLS server names (SNI) clients sent."""

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.scheme}://{host}:{self.port}"


class _Handler(BaseHTTPRequestHandler):
    """``/redirect?to=URL&status=302``; ``/chain/N`` redirects to ``/chain/N-1`` (302) and
    ``/chain/0`` echoes; ``/json/<kind>`` answers awkward JSON; anything else echoes the request
    (method, path, headers, body) as JSON."""

    server: _Server

    def do_GET(self) -> None:
        self._answer()

    def do_POST(self) -> None:
        self._answer()

    def do_PUT(self) -> None:
        self._answer()

    def _answer(self) -> None:
        parts = urlsplit(self.path)
        query = {name: values[0] for name, values in parse_qs(parts.query).items()}
        length = int(self.headers.get("content-length") or 0)
        body = self.rfile.read(length) if length else b""
        headers = {name.lower(): value for name, value in self.headers.items()}
        self.server.recorder.requests.append(Seen(self.command, self.path, headers, body))
        if parts.path == "/redirect":
            self._redirect(int(query.get("status", "302")), query["to"])
        elif parts.path.startswith("/chain/"):
            left = int(parts.path.rsplit("/", 1)[1])
            if left > 0:
                self._redirect(302, f"/chain/{left - 1}")
            else:
                self._echo(parts.path, headers, body)
        elif parts.path.startswith("/json/"):
            self._send(200, AWKWARD_JSON[parts.path.rsplit("/", 1)[1]], "application/json")
        else:
            self._echo(parts.path, headers, body)

    def _echo(self, path: str, headers: dict[str, str], body: bytes) -> None:
        echoed = {"method": self.command, "path": path, "headers": headers, "body": body.decode()}
        self._send(200, json.dumps(echoed).encode(), "application/json")

    def _redirect(self, status: int, location: str) -> None:
        self.send_response(status)
        self.send_header("location", location)
        self.send_header("content-length", "0")
        self.end_headers()

    def _send(self, status: int, content: bytes, content_type: str) -> None:
        self.send_response(status)
        self.send_header("content-type", content_type)
        self.send_header("content-length", str(len(content)))
        self.end_headers()
        self.wfile.write(content)

    def log_message(self, format: str, *args: object) -> None:  # quiet
        pass


AWKWARD_JSON = {
    "deep": b"[" * 100_000 + b"]" * 100_000,
    "bigint": b'{"n": ' + b"7" * 5000 + b"}",
    "huge": b'{"x": 1e999}',
    "nan": b'{"x": NaN}',
    "broken": b'{"x": ',
    "fine": b'{"x": [1, 2.5, "three"]}',
}


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    recorder: Recorder

    def handle_error(self, request: object, client_address: object) -> None:
        pass


class _Server6(_Server):
    address_family = socket.AF_INET6


@contextmanager
def serve(host: str, port: int = 0, tls: ssl.SSLContext | None = None) -> Iterator[Recorder]:
    """A recording server on ``host`` (an address), over TLS when ``tls`` is given."""
    server = (_Server6 if ":" in host else _Server)((host, port), _Handler)
    recorder = Recorder(host, server.server_address[1], "https" if tls else "http")
    if tls is not None:
        tls.sni_callback = lambda _sock, name, _ctx: recorder.server_names.append(name)
        server.socket = tls.wrap_socket(server.socket, server_side=True)
    server.recorder = recorder
    thread = threading.Thread(target=server.serve_forever, args=(0.02,), daemon=True)
    thread.start()
    try:
        yield recorder
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


@contextmanager
def serve_pair() -> Iterator[tuple[Recorder, Recorder]]:
    """Servers on 127.0.0.2 and 127.0.0.1 with the same port."""
    for _ in range(20):
        with serve("127.0.0.2") as public:
            try:
                forbidden = serve("127.0.0.1", public.port)
                local = forbidden.__enter__()
            except OSError:
                continue
            try:
                yield public, local
            finally:
                forbidden.__exit__(None, None, None)
            return
    pytest.skip("no port free on both 127.0.0.1 and 127.0.0.2")


def fake_dns(monkeypatch: pytest.MonkeyPatch, answers: dict[str, list[str]]) -> list[str]:
    """``name`` resolves to ``answers[name][0]`` the first time, then to the next answer (the
    last one for good): a rebinding DNS. Other names resolve as usual. Returns the names asked."""
    asked: list[str] = []
    original = asyncio.BaseEventLoop.getaddrinfo

    async def getaddrinfo(
        self: asyncio.BaseEventLoop, host: Any, port: Any, *args: Any, **kwargs: Any
    ) -> Any:
        name = host.decode() if isinstance(host, bytes) else host
        if name not in answers:
            return await original(self, host, port, *args, **kwargs)
        asked.append(name)
        address = answers[name][min(asked.count(name), len(answers[name])) - 1]
        family = socket.AF_INET6 if ":" in address else socket.AF_INET
        return [(family, socket.SOCK_STREAM, 6, "", (address, int(port or 0)))]

    monkeypatch.setattr(asyncio.BaseEventLoop, "getaddrinfo", getaddrinfo)
    return asked


async def run(runner: HttpStepRunner | None, yaml: str) -> WorkflowOutcome:
    runners = standard_runners(http=runner)  # None: the default runner
    engine = WorkflowEngine(runners)
    return await engine.run(workflow(yaml), {}, journal=MemoryJournal(), execution_id="egress")


def output(outcome: WorkflowOutcome, step: str) -> dict[str, Any]:
    value = outcome.steps[step].output
    assert isinstance(value, dict), outcome.steps[step]
    return value


def ipv6_loopback() -> bool:
    try:
        with socket.socket(socket.AF_INET6) as probe:
            probe.bind(("::1", 0))
    except OSError:
        return False
    return True


# -- SSRF: refused before any connection ---------------------------------------------------------


@pytest.fixture
def loopback() -> Iterator[list[Recorder]]:
    """Servers on 127.0.0.1 and, where there is IPv6, on ::1."""
    with serve("127.0.0.1") as v4:
        if not ipv6_loopback():
            yield [v4]
            return
        with serve("::1") as v6:
            yield [v4, v6]


def ssrf_targets(servers: list[Recorder]) -> dict[str, tuple[str, str]]:
    """step id -> (url, the refusal expected in the error)."""
    v4 = servers[0]
    targets = {
        "loopback": (f"{v4.url}/echo", "127.0.0.1 is a loopback address"),
        "localhost": (f"http://localhost:{v4.port}/echo", "a loopback address"),
        "metadata": (
            "http://169.254.169.254/latest/meta-data/",
            "169.254.169.254 is a link-local address",
        ),
        "private": (f"http://10.1.2.3:{v4.port}/echo", "10.1.2.3 is a private address"),
        "mapped": (f"http://[::ffff:127.0.0.1]:{v4.port}/echo", "embedding 127.0.0.1"),
    }
    if len(servers) > 1:
        targets["ipv6"] = (f"{servers[1].url}/echo", "::1 is a loopback address")
    return targets


def ssrf_workflow(targets: dict[str, tuple[str, str]]) -> str:
    steps = "".join(
        f"  - id: {step}\n    type: http\n    url: '{url}'\n    timeout: 5s\n"
        "    retries: 2\n    allow_failure: true\n"
        for step, (url, _) in targets.items()
    )
    return f"name: ssrf\nsteps:\n{steps}"


async def test_ssrf_to_loopback_link_local_and_private_addresses_is_refused(
    loopback: list[Recorder],
) -> None:
    targets = ssrf_targets(loopback)
    outcome = await run(None, ssrf_workflow(targets))  # standard_runners' default runner

    assert outcome.status == "completed"
    for step, (url, refusal) in targets.items():
        record = outcome.steps[step]
        assert record.status == "failed", record
        assert record.attempts == 1, record  # not retried
        error = record.error or ""
        assert error.startswith(f"url '{url}' refused: "), error
        assert refusal in error, error
    assert "localhost resolves to " in (outcome.steps["localhost"].error or "")
    for server in loopback:
        assert server.requests == []


async def test_a_refused_destination_never_reaches_the_transport(
    loopback: list[Recorder],
) -> None:
    sent: list[httpx.Request] = []

    def transport(request: httpx.Request) -> httpx.Response:
        sent.append(request)
        return httpx.Response(200, json={"reached": str(request.url)})

    targets = ssrf_targets(loopback)
    async with httpx.AsyncClient(transport=httpx.MockTransport(transport)) as client:
        outcome = await run(HttpStepRunner(client), ssrf_workflow(targets))
    assert {step: record.status for step, record in outcome.steps.items()} == dict.fromkeys(
        targets, "failed"
    )
    assert sent == []


async def test_public_destinations_are_reached_at_the_checked_address(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    asked = fake_dns(
        monkeypatch, {"public.example": ["93.184.216.34"], "v6.example": ["2606:4700::1111"]}
    )
    sent: list[tuple[str, str, object]] = []

    def transport(request: httpx.Request) -> httpx.Response:
        sni = request.extensions.get("sni_hostname")
        sent.append((str(request.url), request.headers["host"], sni))
        return httpx.Response(200, json={"ok": True})

    yaml = """\
        name: public
        steps:
          - id: name
            type: http
            url: https://Public.Example/x?q=1
          - id: ipv6
            type: http
            needs: name
            url: http://v6.example:8080/y
          - id: address
            type: http
            needs: ipv6
            url: http://93.184.216.34/z
        """
    async with httpx.AsyncClient(transport=httpx.MockTransport(transport)) as client:
        outcome = await run(HttpStepRunner(client), yaml)  # the default policy
    assert outcome.status == "completed", outcome.error
    assert output(outcome, "name")["body"] == {"ok": True}
    assert sent == [
        ("https://93.184.216.34/x?q=1", "public.example", "public.example"),
        ("http://[2606:4700::1111]:8080/y", "v6.example:8080", None),
        ("http://93.184.216.34/z", "93.184.216.34", None),
    ]
    assert asked == ["public.example", "v6.example"]


# -- redirects -----------------------------------------------------------------------------------


@pytest.mark.parametrize("status", [301, 302, 303, 307, 308])
async def test_a_redirect_to_loopback_from_an_allowed_server_is_refused(status: int) -> None:
    with serve("127.0.0.2") as public, serve("127.0.0.1") as local:
        yaml = f"""\
            name: redirected
            steps:
              - id: call
                type: http
                method: POST
                url: {public.url}/redirect
                query: {{to: "{local.url}/echo", status: "{status}"}}
                json: {{secret: 1}}
                retries: 2
            """
        outcome = await run(HttpStepRunner(egress=PUBLIC), yaml)

    assert outcome.status == "failed"
    record = outcome.steps["call"]
    assert record.attempts == 1
    assert (record.error or "").startswith(
        f"url '{local.url}/echo' refused: 127.0.0.1 is a loopback address (redirected from "
        f"'{public.url}/redirect?to="
    ), record.error
    assert [seen.path.split("?")[0] for seen in public.requests] == ["/redirect"]
    assert local.requests == []


async def test_a_redirect_to_the_metadata_address_is_refused() -> None:
    with serve("127.0.0.2") as public:
        yaml = f"""\
            name: metadata
            steps:
              - id: call
                type: http
                url: {public.url}/redirect
                query: {{to: "http://169.254.169.254/latest/meta-data/"}}
            """
        outcome = await run(HttpStepRunner(egress=PUBLIC), yaml)
    assert outcome.status == "failed"
    assert (outcome.steps["call"].error or "").startswith(
        "url 'http://169.254.169.254/latest/meta-data/' refused: 169.254.169.254 is a "
        "link-local address"
    )


async def test_redirects_within_the_allowlist_are_followed() -> None:
    with serve("127.0.0.2") as public, serve("127.0.0.2") as other:
        yaml = f"""\
            name: chain
            steps:
              - id: five
                type: http
                url: {public.url}/chain/5
                headers: {{Authorization: Bearer same-origin}}
              - id: see_other
                type: http
                method: POST
                needs: five
                url: {public.url}/redirect
                query: {{to: "/echo", status: "303"}}
                json: {{n: 1}}
              - id: found_after_post
                type: http
                method: POST
                needs: see_other
                url: {public.url}/redirect
                query: {{to: "/echo", status: "302"}}
                json: {{n: 2}}
              - id: temporary
                type: http
                method: POST
                needs: found_after_post
                url: {public.url}/redirect
                query: {{to: "/echo", status: "307"}}
                json: {{n: 3}}
              - id: permanent_put
                type: http
                method: PUT
                needs: temporary
                url: {public.url}/redirect
                query: {{to: "/echo", status: "308"}}
                json: {{n: 4}}
              - id: cross_origin
                type: http
                needs: permanent_put
                url: {public.url}/redirect
                query: {{to: "{other.url}/echo", status: "301"}}
                headers: {{Authorization: Bearer mine, X-Kept: kept}}
            """
        outcome = await run(HttpStepRunner(egress=PUBLIC), yaml)

    assert outcome.status == "completed", outcome.error
    five = output(outcome, "five")
    assert five["status"] == 200
    assert five["body"]["path"] == "/chain/0"
    assert five["body"]["headers"]["authorization"] == "Bearer same-origin"
    assert five["body"]["headers"]["host"] == f"127.0.0.2:{public.port}"

    def echoed(step: str) -> dict[str, Any]:
        body = output(outcome, step)["body"]
        assert isinstance(body, dict)
        return body

    assert (echoed("see_other")["method"], echoed("see_other")["body"]) == ("GET", "")
    assert "content-type" not in echoed("see_other")["headers"]
    assert (echoed("found_after_post")["method"], echoed("found_after_post")["body"]) == (
        "GET",
        "",
    )
    assert (echoed("temporary")["method"], json.loads(echoed("temporary")["body"])) == (
        "POST",
        {"n": 3},
    )
    assert echoed("temporary")["headers"]["content-type"] == "application/json"
    assert (echoed("permanent_put")["method"], json.loads(echoed("permanent_put")["body"])) == (
        "PUT",
        {"n": 4},
    )
    cross = echoed("cross_origin")
    assert "authorization" not in cross["headers"]
    assert cross["headers"]["x-kept"] == "kept"
    assert cross["headers"]["host"] == f"127.0.0.2:{other.port}"
    assert [seen.path for seen in other.requests] == ["/echo"]
    redirects = [seen for seen in public.requests if seen.path.startswith("/redirect")]
    assert redirects[-1].headers["authorization"] == "Bearer mine"


async def test_more_than_five_redirects_fail() -> None:
    with serve("127.0.0.2") as public:
        yaml = f"""\
            name: too-many
            steps:
              - id: call
                type: http
                url: {public.url}/chain/6
            """
        outcome = await run(HttpStepRunner(egress=PUBLIC), yaml)
    assert outcome.status == "failed"
    assert outcome.steps["call"].error == (
        f"GET {public.url}/chain/6: more than 5 redirects (the last to {public.url}/chain/0)"
    )
    assert [seen.path for seen in public.requests] == [f"/chain/{n}" for n in range(6, 0, -1)]


# -- the connection goes to the checked address --------------------------------------------------


async def test_the_connection_goes_to_the_address_that_was_checked(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with serve_pair() as (public, local):
        # a rebinding DNS: public first, loopback for every later question
        asked = fake_dns(monkeypatch, {"service.test": ["127.0.0.2", "127.0.0.1"]})
        yaml = f"""\
            name: pinned
            steps:
              - id: call
                type: http
                url: http://service.test:{public.port}/echo?a=1
            """
        outcome = await run(HttpStepRunner(egress=PUBLIC), yaml)

    assert outcome.status == "completed", outcome.error
    assert asked == ["service.test"]  # resolved once
    assert [seen.path for seen in public.requests] == ["/echo?a=1"]
    assert public.requests[0].headers["host"] == f"service.test:{public.port}"
    assert local.requests == []


async def test_a_name_rebound_to_loopback_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    with serve_pair() as (public, local):
        asked = fake_dns(monkeypatch, {"service.test": ["127.0.0.1"]})
        yaml = f"""\
            name: rebound
            steps:
              - id: call
                type: http
                url: http://service.test:{public.port}/echo
            """
        outcome = await run(HttpStepRunner(egress=PUBLIC), yaml)
    assert outcome.status == "failed"
    assert outcome.steps["call"].error == (
        f"url 'http://service.test:{public.port}/echo' refused: service.test resolves to "
        "127.0.0.1, a loopback address"
    )
    assert asked == ["service.test"]
    assert public.requests == [] and local.requests == []


async def test_a_name_that_cannot_be_resolved_fails_the_attempt() -> None:
    yaml = """\
        name: unresolved
        steps:
          - id: call
            type: http
            url: http://no-such-host.invalid/x
        """
    outcome = await run(HttpStepRunner(), yaml)
    assert outcome.status == "failed"
    assert (outcome.steps["call"].error or "").startswith(
        "GET http://no-such-host.invalid/x failed: no-such-host.invalid could not be resolved"
    )


@pytest.fixture
def certificate(tmp_path: Path) -> Path:
    """A self-signed certificate (and its key) for ``service.test``."""
    if shutil.which("openssl") is None:
        pytest.skip("openssl is not installed")
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
         "-nodes", "-keyout", "key.pem", "-out", "cert.pem", "-days", "2",
         "-subj", "/CN=service.test", "-addext", "subjectAltName=DNS:service.test"],
        cwd=tmp_path, check=True, capture_output=True,
    )  # fmt: skip
    return tmp_path


async def test_https_keeps_the_name_for_sni_and_certificate_verification(
    certificate: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    tls.load_cert_chain(certificate / "cert.pem", certificate / "key.pem")
    trust = ssl.create_default_context(cafile=str(certificate / "cert.pem"))
    with serve("127.0.0.2", tls=tls) as public:
        asked = fake_dns(
            monkeypatch, {"service.test": ["127.0.0.2"], "impostor.test": ["127.0.0.2"]}
        )
        yaml = f"""\
            name: tls
            steps:
              - id: good
                type: http
                url: https://service.test:{public.port}/echo
              - id: wrong_name
                type: http
                needs: good
                url: https://impostor.test:{public.port}/echo
                allow_failure: true
            """
        # no keep-alive: the second step must not reuse the first one's TLS connection
        limits = httpx.Limits(max_keepalive_connections=0)
        async with httpx.AsyncClient(verify=trust, limits=limits) as client:
            outcome = await run(HttpStepRunner(client, egress=PUBLIC), yaml)

    assert outcome.status == "completed", outcome.error
    good = output(outcome, "good")
    assert good["status"] == 200
    assert good["body"]["headers"]["host"] == f"service.test:{public.port}"
    wrong = outcome.steps["wrong_name"]
    assert wrong.status == "failed"
    assert "CERTIFICATE_VERIFY_FAILED" in (wrong.error or ""), wrong.error
    assert public.server_names == ["service.test", "impostor.test"]
    assert [seen.headers["host"] for seen in public.requests] == [f"service.test:{public.port}"]
    assert asked == ["service.test", "impostor.test"]


# -- the response ------------------------------------------------------------------------------


async def test_json_that_cannot_be_kept_is_text() -> None:
    with serve("127.0.0.2") as public:
        steps = "".join(
            f"  - id: {kind}\n    type: http\n    url: {public.url}/json/{kind}\n"
            for kind in AWKWARD_JSON
        )
        outcome = await run(HttpStepRunner(egress=PUBLIC), f"name: awkward\nsteps:\n{steps}")
    assert outcome.status == "completed", outcome.error
    for kind, content in AWKWARD_JSON.items():
        body = output(outcome, kind)["body"]
        if kind == "fine":
            assert body == {"x": [1, 2.5, "three"]}
        else:
            assert body == content.decode(), kind


async def test_a_redirect_the_step_expects_is_its_answer_and_not_followed() -> None:
    with serve("127.0.0.2") as public, serve("127.0.0.1") as local:
        yaml = f"""\
            name: expected-redirect
            steps:
              - id: call
                type: http
                url: {public.url}/redirect
                query: {{to: "{local.url}/echo", status: "302"}}
                expect_status: [302]
            """
        outcome = await run(HttpStepRunner(egress=PUBLIC), yaml)

    assert outcome.status == "completed", outcome.steps["call"].error
    answer = output(outcome, "call")
    assert answer["status"] == 302
    assert answer["headers"]["location"] == f"{local.url}/echo"
    assert local.requests == []
