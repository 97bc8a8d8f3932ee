"""Hostile input: no request bytes make a route answer 5xx or fail unhandled.

Every route of the example application and of the three services' generated applications
(rag, ratelimit and agents, each over its real handlers with its state in temporary
directories, built as tests/contract builds them) gets hostile bodies (deep nesting, huge
numbers, invalid UTF-8, random bytes, truncated JSON, wrong content types), hostile headers
(odd ``Accept``, ``Content-Type`` with odd parameters, huge values, repeated lines), hostile
paths (encoded slashes, ``%00``, overlong, invalid escapes, invalid UTF-8 once decoded) and
hostile query strings. Each application is called in-process over ASGI and over a real
uvicorn server on 127.0.0.1 (raw bytes on a socket, so that nothing is cleaned up on the way).

A request passes when its answer is not a 5xx and nothing was logged at ERROR by webrest or
uvicorn ("Unhandled error ...", "Exception in ASGI application"). Each application gets a
fixed sweep (every route, every case of a list) and then hypothesis' examples, derandomized
so that CI runs the same requests each time.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import socket
import tempfile
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote

import pytest
from anyio.from_thread import start_blocking_portal
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from starlette.types import ASGIApp, Message

from .support import serve

pytestmark = pytest.mark.slow

EXAMPLES = 40
"""Hypothesis examples per application and transport, beyond the fixed sweep."""
TIMEOUT = 30.0
"""Seconds one request over the socket may take."""


# -- requests -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Raw:
    """One request as bytes: what a client puts on the wire (``Host``, ``Content-Length`` and
    ``Connection`` are added by the transport; ``truncate`` sends only that many body bytes
    and then goes away)."""

    method: str
    target: bytes
    headers: tuple[tuple[bytes, bytes], ...] = ()
    body: bytes = b""
    truncate: int | None = None

    def __repr__(self) -> str:
        def short(data: bytes) -> str:
            return repr(data if len(data) <= 120 else data[:100] + b"...(%d bytes)" % len(data))

        headers = ", ".join(f"{short(k)}: {short(v)}" for k, v in self.headers)
        return f"{self.method} {short(self.target)} [{headers}] body={short(self.body)}" + (
            f" truncated at {self.truncate}" if self.truncate is not None else ""
        )


@dataclass(frozen=True)
class Route:
    method: str
    template: str
    query: tuple[str, ...] = ()
    headers: tuple[str, ...] = ()

    def path(self, segment: str | None = None) -> bytes:
        """The path with every placeholder filled: ``segment`` (raw) or a plausible value."""
        parts = []
        for piece in self.template.split("/"):
            if piece.startswith("{") and piece.endswith("}"):
                parts.append(segment if segment is not None else "1549")
            else:
                parts.append(piece)
        return "/".join(parts).encode("latin-1", "replace")

    @property
    def has_placeholders(self) -> bool:
        return "{" in self.template


def routes_of(document: dict[str, Any]) -> list[Route]:
    """Every operation of an OpenAPI document, with its query and header parameters."""
    found = []
    for template, item in document.get("paths", {}).items():
        shared = item.get("parameters", [])
        for method, operation in item.items():
            if method not in {"get", "head", "post", "put", "patch", "delete", "options"}:
                continue
            parameters = [*shared, *operation.get("parameters", [])]
            found.append(
                Route(
                    method.upper(),
                    template,
                    tuple(p["name"] for p in parameters if p.get("in") == "query"),
                    tuple(p["name"] for p in parameters if p.get("in") == "header"),
                )
            )
    found.append(Route("GET", "/openapi.json"))
    found.append(Route("GET", "/docs"))
    return found


def nest(depth: int, opener: bytes, closer: bytes) -> bytes:
    return opener * depth + closer * depth


JSON = b"application/json"
FORM = b"application/x-www-form-urlencoded"
BOUNDARY = b"hostile"
MULTIPART = b"multipart/form-data; boundary=" + BOUNDARY


def multipart(*parts: bytes, end: bool = True) -> bytes:
    body = b"".join(b"--" + BOUNDARY + b"\r\n" + part + b"\r\n" for part in parts)
    return body + (b"--" + BOUNDARY + b"--\r\n" if end else b"")


HOSTILE_BODIES: list[tuple[bytes, bytes]] = [
    (JSON, nest(1000, b"[", b"]")),  # the 2 KB RecursionError
    (JSON, b'{"a":' * 3000 + b"1" + b"}" * 3000),
    (JSON, b"[" * 20_000),
    (JSON, b"9" * 4301),  # the ValueError (Python's int conversion limit)
    (JSON, b'{"question": ' + b"9" * 5000 + b', "num_docs": 1e999, "limit": NaN}'),
    (JSON, b'{"name": -Infinity, "description": 1e99999, "x": -0e-99999}'),
    (JSON, b'{"name": "\xff\xfe", "x": "\xc3\x28"}'),
    (JSON, b'{"name": "\\ud800", "content": "\\udfff\\ud800"}'),
    (JSON, '{"name": "x"}'.encode("utf-16")),
    (JSON, b"\xef\xbb\xbf{}"),
    (JSON, b'{"name": "x", "description": [1, 2, {"a": '),  # truncated
    (JSON, b"\x00\x01\x02\x80\x81\xfe\xff"),
    # JSON in a form field: a text that the generated routes parse (agents' ``_json``)
    (
        MULTIPART,
        multipart(b'Content-Disposition: form-data; name="_json"\r\n\r\n' + nest(1000, b"[", b"]")),
    ),
    (MULTIPART, multipart(b'Content-Disposition: form-data; name="_json"\r\n\r\n' + b"9" * 4301)),
    (JSON, b"null"),
    (JSON, b'"' + b"a" * 100_000 + b'"'),
    (b"application/json; charset=utf-16", b'{"a": 1}'),
    (b"application/json; charset=nonsense", b'{"a": 1}'),
    (b"text/plain; charset=utf-7", b"+2AA-"),
    (b"text/plain; charset=unicode_escape", b"\\ud800"),
    (FORM, b"name=%FF&x=\xff&%zz=%&&=&a=" + b"9" * 5000),
    (FORM, b"&".join([b"f=1"] * 1500)),
    (b"application/x-www-form-urlencoded; charset=utf-7", b"name=%2B2AA-"),
    (
        MULTIPART,
        multipart(
            b'Content-Disposition: form-data; name="file"; filename="a.txt"\r\n\r\nabc', end=False
        ),
    ),
    (MULTIPART, multipart(b'Content-Disposition: form-data; name="\xff"\r\n\r\n\xff')),
    (
        MULTIPART,
        multipart(
            b"Content-Disposition: form-data; name=\"file\"; filename*=utf-7''%2B2AA-\r\n\r\nx",
            b'Content-Disposition: form-data; name="files"; filename="\x00../../etc"\r\n\r\n\x00',
        ),
    ),
    (MULTIPART, multipart(b"X-Junk: " + b"j" * 20_000 + b"\r\n\r\nx")),
    (b"multipart/form-data", b"--x\r\n\r\n"),
    (b'multipart/form-data; boundary="' + b"b" * 300 + b'"', b"--b\r\n"),
    (
        b"multipart/form-data; boundary=hostile; charset=utf-7",
        multipart(b'Content-Disposition: form-data; name="a"\r\n\r\n+2AA-'),
    ),
    (b"text/plain; charset=undefined", b"abc"),  # a codec that decodes nothing
    (b"application/x-www-form-urlencoded; charset=undefined", b"a=b"),
    (
        MULTIPART + b"; charset=undefined",
        multipart(b'Content-Disposition: form-data; name="a"\r\n\r\nb'),
    ),
    (
        MULTIPART,
        multipart(
            b"Content-Disposition: form-data; name=\"f\"; filename*=undefined''x\r\n\r\nx",
            b"Content-Disposition: form-data; name=\"g\"; filename*=utf-8\x00''x\r\n\r\nx",
        ),
    ),
    (b"application/octet-stream", bytes(range(256))),
    (b"application/xml", b"<a/>"),
    (b"", b'{"a": 1}'),
    (b";;;=;", b'{"a": 1}'),
    (b'application/json; a="unterminated; charset', b"{}"),
    (b"\xff\xfe/\x80", b"{}"),
    (b"*/*", b"{}"),
]

HOSTILE_SEGMENTS = [
    "%2F",
    "..%2F..%2Fetc%2Fpasswd",
    "%00",
    "%zz",
    "%",
    "%C3%28",
    "%ED%A0%80",  # an encoded surrogate
    "9" * 5000,
    "a" * 20_000,
    "a%00b",
    "%FF%FE",
    "%252F",
    "%C3%A9t%C3%A9",
    ";a=1;b=x,y;c",
    ".",
    "..",
    "%20",
    "%0A%0D",
    "-1",
    "1e999",
    "NaN",
]

HOSTILE_HEADERS: list[tuple[tuple[bytes, bytes], ...]] = [
    ((b"accept", b"application/xml"), (b"accept", b"application/json")),
    ((b"accept", b"text/*;q=nan, */*;q=-1, a/b;q=1e999, ,,,;q=1"),),
    ((b"accept", b"application/xml"),),
    ((b"accept", b"\xff\xfe/\x80;q=0.5"),),
    ((b"accept", b"*/*;" * 2000),),
    ((b"content-type", b"application/json"), (b"content-type", FORM)),
    ((b"x-request-id", b"\xff" * 200), (b"x-request-id", b"x" * 8000)),
    ((b"accept-language", b"a" * 8000), (b"cookie", b"a=b; " * 1000)),
    ((b"expect", b"100-continue"),),
    ((b"if-none-match", b'"x", W/"\xff"'), (b"range", b"bytes=-1-2,,")),
    ((b"authorization", b"Bearer \xff\xfe"),),
]


def query_cases(route: Route) -> list[bytes]:
    names = route.query or ("q",)
    huge = "9" * 5000
    return [
        "&".join(f"{n}={huge}" for n in names).encode(),
        "&".join(f"{n}=%FF&{n}=%zz&{n}=1e999&{n}=NaN&{n}=-1" for n in names).encode(),
        b"%zz=%&&&=&a=%00&" + b"&" * 3000,
        "&".join(f"{n}[]=x&{n}=a,b,,c&{n}=" for n in names).encode(),
    ]


SPREAD = 3
"""Beyond the first cases of each list (the issue's, given to every route), a route gets
every third case, each route a different third: every case reaches a third of the routes."""


def share(cases: list[Any], essential: int, index: int) -> list[Any]:
    return cases[:essential] + [
        case for k, case in enumerate(cases[essential:]) if (k + index) % SPREAD == 0
    ]


def fixed_cases(route: Route, index: int) -> Iterator[Raw]:
    """The sweep of the ``index``-th route: hostile path segments, bodies, headers, queries."""
    method = route.method
    if route.has_placeholders:
        for segment in share(HOSTILE_SEGMENTS, 9, index):
            yield Raw(method, route.path(segment))
    yield Raw(method, route.path() + b"%2F..%2F" + b"/x" * 500)
    yield Raw(method, b"//" + route.path().lstrip(b"/") + b"/")
    if method in ("POST", "PUT", "PATCH") or route.template == "/docs":
        for content_type, body in share(HOSTILE_BODIES, 15, index):
            headers = ((b"content-type", content_type),) if content_type else ()
            yield Raw(method, route.path(), headers, body)
        yield Raw(method, route.path(), ((b"content-type", JSON),), b'{"name": "x", "a": [1, 2', 10)
    for headers in share(HOSTILE_HEADERS, 3, index):
        yield Raw(method, route.path(), headers)
    for query in share(query_cases(route), 2, index):
        yield Raw(method, route.path() + b"?" + query)


# -- strategies ---------------------------------------------------------------------------------


def _json_values() -> st.SearchStrategy[object]:
    scalars = st.one_of(
        st.none(),
        st.booleans(),
        st.integers(min_value=-(10**120), max_value=10**120),
        st.floats(allow_nan=False, allow_infinity=False),
        st.text(max_size=30),
    )
    return st.recursive(
        scalars,
        lambda inner: (
            st.lists(inner, max_size=4)
            | st.dictionaries(
                st.sampled_from(["name", "question", "content", "num_docs", "x", "input"])
                | st.text(max_size=8),
                inner,
                max_size=4,
            )
        ),
        max_leaves=12,
    )


@st.composite
def json_bodies(draw: st.DrawFn) -> bytes:
    """JSON-ish bodies: valid values, then maybe cut, nested deeply, or given a hostile
    number or string in the middle."""
    text = json.dumps(draw(_json_values()))
    mutation = draw(st.sampled_from(["none", "cut", "deep", "number", "string", "splice"]))
    if mutation == "cut" and len(text) > 1:
        text = text[: draw(st.integers(1, len(text) - 1))]
    elif mutation == "deep":
        depth = draw(st.sampled_from([63, 64, 65, 199, 200, 201, 1000, 5000]))
        opener, closer = draw(st.sampled_from([("[", "]"), ('{"a":', "}")]))
        text = opener * depth + text + closer * depth
    elif mutation == "number":
        number = draw(
            st.sampled_from(["9" * 101, "9" * 4301, "-" + "1" * 5000, "1e999", "-1E+400", "NaN"])
        )
        text = f'{{"name": {number}, "question": {text}}}'
    elif mutation == "string":
        junk = draw(st.sampled_from(["\\ud800", "\\u0000", "\\", '\\"', "\\x41", "\\uZZZZ"]))
        text = f'{{"name": "{junk}", "content": {text}}}'
    elif mutation == "splice":
        raw = text.encode()
        cut = draw(st.integers(0, len(raw)))
        return raw[:cut] + draw(st.binary(max_size=8)) + raw[cut:]
    return text.encode()


segments = st.one_of(
    st.sampled_from(HOSTILE_SEGMENTS),
    st.binary(max_size=24).map(lambda b: "".join(f"%{byte:02X}" for byte in b)),
    st.text(max_size=16).map(lambda t: quote(t, safe="")),
)
header_values = st.one_of(
    st.binary(max_size=64).map(lambda b: b.replace(b"\r", b"").replace(b"\n", b"")),
    st.sampled_from([b"", b" ", b"*/*", b"a/b;q=nan", b";", b",", b"\x7f", b"x" * 9000]),
)
header_names = st.sampled_from(
    [b"accept", b"content-type", b"x-request-id", b"accept-encoding", b"authorization", b"x-n"]
)
content_types = st.one_of(
    st.sampled_from([ct for ct, _ in HOSTILE_BODIES] + [JSON, FORM, MULTIPART]),
    header_values,
)
bodies = st.one_of(
    json_bodies(),
    st.sampled_from([body for _, body in HOSTILE_BODIES]),
    st.binary(max_size=256),
)
queries = st.one_of(
    st.binary(max_size=64).map(lambda b: quote(b, safe="=&%").encode()),
    st.lists(
        st.tuples(st.sampled_from(["q", "limit", "offset", "page", "x"]), segments), max_size=4
    ).map(lambda pairs: "&".join(f"{k}={v}" for k, v in pairs).encode()),
)


@st.composite
def hostile_requests(draw: st.DrawFn, routes: list[Route]) -> Raw:
    route = draw(st.sampled_from(routes))
    path = route.path(draw(segments) if route.has_placeholders and draw(st.booleans()) else None)
    if draw(st.booleans()):
        names = route.query or ("q",)
        pairs = [
            f"{name}={draw(segments)}"
            for name in draw(st.lists(st.sampled_from(names), min_size=1, max_size=3))
        ]
        path += b"?" + "&".join(pairs).encode()
    elif draw(st.booleans()):
        path += b"?" + draw(queries)
    headers = list(draw(st.lists(st.tuples(header_names, header_values), max_size=3)))
    body = b""
    if route.method in ("POST", "PUT", "PATCH") or draw(st.integers(0, 9)) == 0:
        headers.append((b"content-type", draw(content_types)))
        body = draw(bodies)
    truncate = (
        draw(st.integers(0, len(body) - 1)) if body and draw(st.integers(0, 9)) == 0 else None
    )
    return Raw(route.method, path, tuple(headers), body, truncate)


# -- transports ---------------------------------------------------------------------------------


class Errors(logging.Handler):
    """ERROR records of webrest and uvicorn (any thread)."""

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)

    def take(self) -> list[str]:
        taken, self.records = self.records, []
        return [self.format(record) for record in taken]


@contextlib.contextmanager
def capturing_errors() -> Iterator[Errors]:
    handler = Errors()
    handler.setFormatter(logging.Formatter("%(name)s: %(message)s"))
    loggers = [logging.getLogger(name) for name in ("webrest", "uvicorn.error", "uvicorn")]
    for logger in loggers:
        logger.addHandler(handler)
    try:
        yield handler
    finally:
        for logger in loggers:
            logger.removeHandler(handler)


Send = Callable[["Raw"], tuple[int | None, bytes]]
Headers = tuple[tuple[bytes, bytes], ...]


async def asgi_request(app: ASGIApp, raw: Raw, extra: Headers) -> tuple[int | None, bytes]:
    """``raw`` as uvicorn would hand it over: percent-decoded path, lower-case header names,
    the body in two pieces (or cut short, then a disconnect)."""
    raw_path, _, query = raw.target.partition(b"?")
    body = raw.body if raw.truncate is None else raw.body[: raw.truncate]
    headers = [(b"host", b"127.0.0.1")]
    headers += [(name.lower(), value) for name, value in (*extra, *raw.headers)]
    headers.append((b"content-length", str(len(raw.body)).encode()))
    scope: dict[str, Any] = {
        "type": "http",
        "asgi": {"version": "3.0", "spec_version": "2.4"},
        "http_version": "1.1",
        "method": raw.method,
        "scheme": "http",
        "path": unquote(raw_path.decode("latin-1")),
        "raw_path": raw_path,
        "root_path": "",
        "query_string": query,
        "headers": headers,
        "server": ("127.0.0.1", 80),
        "client": ("127.0.0.1", 4321),
    }
    half = len(body) // 2
    pending: list[Message] = [
        {"type": "http.request", "body": body[:half], "more_body": True},
        {"type": "http.request", "body": body[half:], "more_body": raw.truncate is not None},
    ]
    if raw.truncate is not None:
        pending.append({"type": "http.disconnect"})
    done = asyncio.Event()
    status: list[int] = []
    chunks: list[bytes] = []

    async def receive() -> Message:
        if pending:
            return pending.pop(0)
        await done.wait()
        return {"type": "http.disconnect"}

    async def send(message: Message) -> None:
        if message["type"] == "http.response.start":
            status.append(message["status"])
        elif message["type"] == "http.response.body":
            chunks.append(message.get("body", b""))
            if not message.get("more_body", False):
                done.set()

    await asyncio.wait_for(app(scope, receive, send), TIMEOUT)
    return (status[0] if status else None), b"".join(chunks)


def socket_request(port: int, raw: Raw, extra: Headers) -> tuple[int | None, bytes]:
    """``raw`` on a fresh connection to 127.0.0.1:``port``; the answer's status (``None`` when
    the server closed the connection without one, as for a client gone mid-body)."""
    head = [raw.method.encode() + b" " + raw.target + b" HTTP/1.1", b"Host: 127.0.0.1"]
    head += [name + b": " + value for name, value in (*extra, *raw.headers)]
    head += [b"Content-Length: %d" % len(raw.body), b"Connection: close", b"", b""]
    data = b"\r\n".join(head) + (raw.body if raw.truncate is None else raw.body[: raw.truncate])
    with socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT) as sock:
        try:
            sock.sendall(data)
            if raw.truncate is not None:
                sock.shutdown(socket.SHUT_WR)
        except (BrokenPipeError, ConnectionResetError):  # answered before the whole request
            pass
        received = bytearray()
        try:
            while chunk := sock.recv(65536):
                received += chunk
        except ConnectionResetError:
            pass
    while received.startswith(b"HTTP/1.1 1"):  # an interim answer (100 Continue)
        del received[: received.find(b"\r\n\r\n") + 4]
    if not received.startswith(b"HTTP/1.1 "):
        return None, bytes(received)
    return int(received[9:12]), bytes(received)


@dataclass
class Target:
    """An application behind one transport, and what every request to it carries."""

    routes: list[Route]
    send: Send
    extra: Headers = ()
    errors: Errors = field(default_factory=Errors)
    name: str = ""

    def check(self, raw: Raw) -> None:
        status, answer = self.send(raw)
        logged = self.errors.take()
        assert not logged, f"{raw!r} logged {logged}"
        assert status is None or status < 500, f"{raw!r} got {status}: {answer[:600]!r}"


@contextlib.asynccontextmanager
async def lifespan(app: ASGIApp) -> AsyncIterator[None]:
    """The ASGI lifespan of ``app``: started before, shut down after the block."""
    inbox: asyncio.Queue[Message] = asyncio.Queue()
    outbox: asyncio.Queue[Message] = asyncio.Queue()
    await inbox.put({"type": "lifespan.startup"})
    task = asyncio.ensure_future(
        app({"type": "lifespan", "asgi": {"version": "3.0"}}, inbox.get, outbox.put)
    )
    started = await outbox.get()
    assert started["type"] == "lifespan.startup.complete", started
    try:
        yield
    finally:
        await inbox.put({"type": "lifespan.shutdown"})
        await outbox.get()
        await task


@contextlib.contextmanager
def over_asgi(
    app: ASGIApp,
    extra: Headers = (),
    *,
    lifespan_on: bool = False,
    around: Callable[[], Any] | None = None,
) -> Iterator[Send]:
    """Call ``app`` in-process, on one event loop in a thread (the loop its state lives on)."""
    with start_blocking_portal() as portal, contextlib.ExitStack() as stack:
        if lifespan_on:
            stack.enter_context(portal.wrap_async_context_manager(lifespan(app)))
        if around is not None:
            stack.enter_context(portal.wrap_async_context_manager(around()))

        def send(raw: Raw) -> tuple[int | None, bytes]:
            return portal.call(asgi_request, app, raw, extra)

        yield send


# -- applications -------------------------------------------------------------------------------


@contextlib.contextmanager
def example_target(transport: str, tmp: Path) -> Iterator[Target]:
    from examples.webrest_example.app import create_app

    app = create_app(storage=tmp / "avatars")
    routes = routes_of(app.openapi())
    yield from _plain_target(app, routes, transport)


@contextlib.contextmanager
def ratelimit_target(transport: str, tmp: Path) -> Iterator[Target]:
    from generated.ratelimit.routes import create_app
    from tests.contract.implementations import ratelimit_handlers

    app = create_app(ratelimit_handlers())
    yield from _plain_target(app, routes_of(app.openapi()), transport)


@contextlib.contextmanager
def rag_target(transport: str, tmp: Path) -> Iterator[Target]:
    from tests.contract.implementations import rag_app

    app = rag_app()  # models loaded (once per process) when it starts
    yield from _plain_target(app, routes_of(app.openapi()), transport, lifespan_on=True)


def _plain_target(
    app: Any, routes: list[Route], transport: str, *, lifespan_on: bool = False
) -> Iterator[Target]:
    if transport == "asgi":
        with over_asgi(app, lifespan_on=lifespan_on) as send:
            yield Target(routes, send)
    else:
        with serve(app, lifespan="on" if lifespan_on else "off", timeout=300) as served:
            port = int(served.url.rsplit(":", 1)[1])
            yield Target(routes, lambda raw: socket_request(port, raw, ()))


@contextlib.contextmanager
def agents_target(transport: str, tmp: Path) -> Iterator[Target]:
    """The real agents server (SQLite and blobs in ``tmp``): over ASGI its application on an
    event loop of the test with its execution engine running there, over the socket the
    ``agents-server`` itself. Requests carry a key of every scope, to get past authentication
    to the routes."""
    from handlers.agents.domain.keys import create_key
    from handlers.agents.server import AgentsServer
    from tests.agents.support import RunningServer, Storage

    storage = Storage(tmp, f"sqlite:///{tmp}/agents.db")
    if transport == "asgi":
        server = AgentsServer(storage.settings())
        try:
            issued = server.database.write_sync(
                partial(create_key, name="hostile", scope_all=True, can_create_agents=True)
            )
            routes = routes_of(server.app.openapi())
            auth = ((b"authorization", b"Bearer " + issued.secret.encode()),)
            with over_asgi(server.app, auth, around=server.engine.running) as send:
                yield Target(routes, send, auth)
        finally:
            server.socket.close()
            server.database.dispose()
    else:
        running = RunningServer(storage)
        try:
            key = running.key("hostile", scope_all=True, can_create_agents=True)
            routes = routes_of(running.server.app.openapi())
            auth = ((b"authorization", b"Bearer " + key.encode()),)
            yield Target(routes, lambda raw: socket_request(running.server.port, raw, auth), auth)
        finally:
            running.stop()


APPS = {
    "example": example_target,
    "ratelimit": ratelimit_target,
    "rag": rag_target,
    "agents": agents_target,
}


# -- the tests ----------------------------------------------------------------------------------


@pytest.mark.parametrize("transport", ["asgi", "uvicorn"])
@pytest.mark.parametrize("name", list(APPS))
def test_no_request_gets_a_server_error(name: str, transport: str) -> None:
    with (
        tempfile.TemporaryDirectory(prefix=f"hostile-{name}-") as tmp,
        capturing_errors() as errors,
        APPS[name](transport, Path(tmp)) as target,
    ):
        target.errors = errors
        target.name = name
        assert len(target.routes) > 2
        swept = 0
        for index, route in enumerate(target.routes):
            for raw in fixed_cases(route, index):
                target.check(raw)
                swept += 1

        @settings(
            max_examples=EXAMPLES,
            deadline=None,
            derandomize=True,
            database=None,
            suppress_health_check=list(HealthCheck),
        )
        @given(raw=hostile_requests(target.routes))
        def fuzz(raw: Raw) -> None:
            target.check(raw)

        fuzz()
        assert swept > 8 * len(target.routes)
    assert not errors.take()
