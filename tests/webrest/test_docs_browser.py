"""The docs page in a real browser: headless Chromium (Debian's, installed by ``make test``)
loads ``/docs`` of each service's real application and of the webrest example, served by
uvicorn on 127.0.0.1, and Swagger UI renders every operation of the application's document.

Nothing may leave the machine. Chromium resolves no host name but 127.0.0.1 and sends
everything else to a proxy on a closed loopback port, so nothing *can* leave; and the test
proves that nothing the page asked for was elsewhere, from two witnesses: Chromium's own log
of every request it made (its NetLog: the page's requests all went to the server, and the
requests Chromium makes for itself, such as update checks, all failed at the closed proxy),
and the server's record of the requests it answered (all from 127.0.0.1, only the page, its
assets and the document). The page's Content-Security-Policy must not have refused anything
Swagger UI needed, and a screenshot of each rendered page is kept in pytest's ``tmp_path``.
"""

from __future__ import annotations

import html
import json
import re
import shutil
import subprocess
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from starlette.types import ASGIApp, Receive, Scope, Send

from webrest import Application

from .support import serve

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")

pytestmark = pytest.mark.skipif(
    CHROMIUM is None,
    reason="chromium is not installed (make test installs it: "
    "./scripts/ensure-debian-packages.sh chromium)",
)

RENDER_BUDGET_MS = 30_000
"""Virtual time Chromium gives the page: it pauses while requests are pending, so this is
the time scripts and timers get after the last response, not a wall-clock wait."""
CHROMIUM_TIMEOUT_S = 120
CLOSED_PORT = 9  # discard: nothing listens there, so the proxy refuses every connection


class Recorder:
    """An ASGI wrapper recording each request's client address, method and path."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self.requests: list[tuple[str, str, str]] = []

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            self.requests.append((scope["client"][0], scope["method"], scope["path"]))
        await self.app(scope, receive, send)


@dataclass
class NetRequest:
    """One request in Chromium's NetLog: its URL, who asked, and how it ended."""

    url: str
    initiator: str
    main_frame: bool
    error: int = 0
    answered: bool = False
    events: list[str] = field(default_factory=list)


@dataclass
class Rendered:
    dom: str
    console: list[str]
    requests: list[NetRequest]
    screenshot: Path


def net_requests(netlog: Path) -> list[NetRequest]:
    """Every URL request in a NetLog file, with whether a response came and its error."""
    log = json.loads(netlog.read_text(encoding="utf-8"))
    names = {number: name for name, number in log["constants"]["logEventTypes"].items()}
    requests: dict[int, NetRequest] = {}
    for event in log["events"]:
        source = event["source"]["id"]
        name = names.get(event["type"], "")
        params = event.get("params") or {}
        if name == "URL_REQUEST_START_JOB" and source not in requests:
            requests[source] = NetRequest(
                params["url"],
                params.get("initiator", ""),
                params.get("request_type") == "main frame",
            )
        request = requests.get(source)
        if request is None:
            continue
        request.events.append(name)
        if name == "HTTP_TRANSACTION_READ_RESPONSE_HEADERS":
            request.answered = True
        if isinstance(params.get("net_error"), int) and params["net_error"] < 0:
            request.error = params["net_error"]
    return list(requests.values())


def isolated_chromium(profile: Path) -> list[str]:
    """Headless Chromium's command up to the page: a profile of its own, and nothing can leave
    (no name resolves but 127.0.0.1, every other request goes to a proxy on a closed loopback
    port), with fewer requests of Chromium's own (those left fail at the proxy)."""
    assert CHROMIUM is not None
    return [
        CHROMIUM,
        "--headless",
        "--no-sandbox",  # tests run as root, where Chromium's sandbox cannot start
        "--disable-gpu",
        f"--user-data-dir={profile}",
        "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
        f"--proxy-server=http://127.0.0.1:{CLOSED_PORT}",
        "--proxy-bypass-list=127.0.0.1",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-extensions",
        "--no-first-run",
    ]


def render(url: str, directory: Path) -> Rendered:
    """``url`` loaded in headless Chromium: its DOM once Swagger UI has rendered, the console
    messages, every request made, and a screenshot."""
    assert CHROMIUM is not None
    directory.mkdir(parents=True, exist_ok=True)
    screenshot = directory / "docs.png"
    netlog = directory / "netlog.json"
    command = [
        *isolated_chromium(directory / "profile"),
        "--disable-default-apps",
        "--no-pings",
        f"--log-net-log={netlog}",
        "--enable-logging=stderr",  # console messages, CSP refusals among them
        "--v=0",
        f"--virtual-time-budget={RENDER_BUDGET_MS}",
        "--window-size=1280,2000",
        f"--screenshot={screenshot}",
        "--dump-dom",
        url,
    ]
    try:
        done = subprocess.run(
            command, capture_output=True, text=True, timeout=CHROMIUM_TIMEOUT_S, check=False
        )
    finally:
        shutil.rmtree(directory / "profile", ignore_errors=True)  # keep the results only
    assert done.returncode == 0, done.stderr[-2000:]
    (directory / "dom.html").write_text(done.stdout, encoding="utf-8")  # to look at on failure
    console = [line for line in done.stderr.splitlines() if ":CONSOLE" in line]
    return Rendered(done.stdout, console, net_requests(netlog), screenshot)


def operations(document: dict[str, Any]) -> list[tuple[str, str, str | None]]:
    """(method, path, operationId) of every operation in an OpenAPI document."""
    methods = ("get", "put", "post", "delete", "options", "head", "patch", "trace")
    return [
        (method, path, operation.get("operationId"))
        for path, item in document["paths"].items()
        for method, operation in item.items()
        if method in methods
    ]


# -- the applications ----------------------------------------------------------------------------


@contextmanager
def example_app(tmp_path: Path) -> Iterator[tuple[str, Application, Recorder]]:
    from examples.webrest_example.app import create_app

    app = create_app(storage=tmp_path / "avatars")
    recorder = Recorder(app)
    with serve(recorder) as served:
        yield served.url, app, recorder


@contextmanager
def ratelimit_app(tmp_path: Path) -> Iterator[tuple[str, Application, Recorder]]:
    from handlers.ratelimit.backends.memory import MemoryStore
    from handlers.ratelimit.health import Health
    from handlers.ratelimit.http import create_http_app
    from handlers.ratelimit.limiter import Limiter
    from handlers.ratelimit.service import RateLimitService
    from handlers.ratelimit.stats import ServiceStats

    service = RateLimitService(Limiter(MemoryStore()), ServiceStats())
    asgi = create_http_app(service, Health())  # the HTTP port's real app, as the server's
    recorder = Recorder(asgi)
    with serve(recorder) as served:
        yield served.url, unwrap(asgi), recorder


@contextmanager
def rag_app(tmp_path: Path) -> Iterator[tuple[str, Application, Recorder]]:
    from tests.contract.implementations import rag_app as build

    app = build()  # its models load when it starts: not here, the docs do not need them
    recorder = Recorder(app)
    with serve(recorder) as served:
        yield served.url, app, recorder


@contextmanager
def agents_app(tmp_path: Path) -> Iterator[tuple[str, Application, Recorder | None]]:
    from tests.contract.implementations import agents_server

    server = agents_server()  # the real agents-server: its own uvicorn, SQLite, worker
    try:
        yield server.url, server.server.app, None
    finally:
        server.stop()


def unwrap(asgi: ASGIApp) -> Application:
    while not isinstance(asgi, Application):
        asgi = asgi._app  # type: ignore[attr-defined]  # ratelimit's AnyMethod wrapper
    return asgi


AppFactory = Callable[[Path], Any]
APPS: dict[str, AppFactory] = {
    "webrest-example": example_app,
    "ratelimit": ratelimit_app,
    "rag": rag_app,
    "agents": agents_app,
}


@pytest.mark.parametrize("name", APPS)
def test_the_docs_page_renders_every_operation_offline(name: str, tmp_path: Path) -> None:
    with APPS[name](tmp_path) as (base, app, recorder):
        assert base.startswith("http://127.0.0.1:")
        assert app.docs is not None
        rendered = render(f"{base}/docs", tmp_path / name)
        served = list(recorder.requests) if recorder is not None else None
        document = app.openapi()

    # Swagger UI rendered the document: its title and every operation, by path and id
    dom = rendered.dom
    assert 'class="swagger-ui"' in dom, dom[:2000]
    assert html.escape(document["info"]["title"], quote=False) in dom
    # each operation's block: id="operations-<tag>-<operationId>", CSS-escaped
    blocks = [
        re.sub(r"\\(.)", r"\1", html.unescape(found))
        for found in re.findall(r'<div class="opblock opblock-[a-z]+" id="operations-([^"]*)"', dom)
    ]
    for method, path, operation_id in operations(document):
        assert f'data-path="{html.escape(path)}"' in dom, (method, path)
        assert f'class="opblock opblock-{method}"' in dom, (method, path)
        if operation_id is not None:
            assert any(block.endswith(f"-{operation_id}") for block in blocks), operation_id
    shown = dom.count('<div class="opblock opblock-')
    assert shown == len(operations(document))

    # every request the page made went to the server; Chromium's own never got out
    page = [r for r in rendered.requests if r.main_frame or r.initiator == base]
    others = [r for r in rendered.requests if r not in page]
    assert {r.url for r in page} >= {
        f"{base}/docs",
        f"{base}/openapi.json",
        f"{base}{app.docs.assets_path}/swagger-ui-bundle.js",
        f"{base}{app.docs.assets_path}/docs.js",
        f"{base}{app.docs.assets_path}/swagger-ui.css",
    }
    for request in page:
        assert request.url.startswith(f"{base}/"), request.url
        assert request.answered and request.error == 0, request
    for request in others:  # update checks and the like, made by Chromium itself
        assert not request.url.startswith(f"{base}/"), request.url
        assert not request.answered and request.error < 0, request

    # the server's record: loopback clients, and only the page, its assets and the document
    if served is not None:
        allowed = {"/docs", "/openapi.json"} | {
            f"{app.docs.assets_path}/{asset}" for asset in ("swagger-ui-bundle.js", "docs.js")
        }
        assert {client for client, _, _ in served} == {"127.0.0.1"}
        assert {method for _, method, _ in served} == {"GET"}
        paths = {path for _, _, path in served}
        assert allowed <= paths
        assert all(
            path in allowed or path.startswith(app.docs.assets_path + "/") for path in paths
        ), paths

    # the page's policy refused nothing
    refused = [line for line in rendered.console if "Content Security Policy" in line]
    assert refused == []

    # the screenshot, in this test's tmp_path
    picture = rendered.screenshot.read_bytes()
    assert picture.startswith(b"\x89PNG\r\n\x1a\n")
    assert len(picture) > 10_000
