"""The ``http`` step: one request through httpx, its response as the step's output.

Every destination passes the egress guard (:mod:`handlers.agents.egress`) first: the host is
resolved once, its address checked (loopback, link-local, private and the like are refused
unless allowlisted), and the connection goes to that address, never resolving the name again.
The request keeps the URL's host in its ``Host`` header and, for https, as the TLS server name
(SNI) and the name the certificate is verified against (httpcore's ``sni_hostname`` request
extension). Redirects are followed here, not by httpx, so that each new target is checked and
pinned the same way.
"""

from __future__ import annotations

import json
import math
from functools import partial

import httpx

from handlers.agents.egress import EgressPolicy, EgressRefused, EgressUnresolved, IPAddress
from handlers.agents.workflows.definition import HttpRequest
from handlers.agents.workflows.functions import to_text
from handlers.agents.workflows.steps import StepContext, StepFailed, until_cancelled

DEFAULT_TIMEOUT_SECONDS = 30.0
"""Of a request whose step sets no ``timeout``."""
MAX_RESPONSE_BYTES = 10_000_000
MAX_ERROR_BODY_CHARS = 500
MAX_REDIRECTS = 5
"""Redirects followed by one request; one more fails the attempt."""

REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})
_BODY_HEADERS = frozenset(
    {"content-type", "content-length", "content-encoding", "transfer-encoding"}
)
_ORIGIN_HEADERS = frozenset({"authorization", "proxy-authorization", "cookie", "host"})
"""Headers not sent on to another origin (scheme, host, port) by a redirect."""
_DEFAULT_PORTS = {"http": 80, "https": 443}

Exchange = tuple[int, dict[str, str], object]


class HttpStepRunner:
    """Sends ``{url, headers, query, json}`` with the step's method. Output: ``{"status",
    "headers" (lower-case names), "body"}``, the body parsed when it is JSON, else text. A
    status outside ``expect_status`` (default: any 2xx) fails the attempt (retryable).

    ``egress`` decides which destinations may be reached (None: :class:`EgressPolicy`'s
    default, public addresses only); a refused one fails the step without a retry. Redirects
    (301, 302, 303, 307, 308) are followed up to :data:`MAX_REDIRECTS` times, each target
    checked like the first.

    ``client`` (None: a new client for each request, without keep-alive and without the
    environment's proxy settings) is for tests and special transports. A given client must not
    follow redirects itself (this runner asks it not to), and since its connection pool is
    keyed by the address connected to, a pooled https connection keeps the TLS name it was
    opened with: give it no keep-alive where several names share an address.
    """

    def __init__(
        self,
        client: httpx.AsyncClient | None = None,
        *,
        max_response_bytes: int = MAX_RESPONSE_BYTES,
        egress: EgressPolicy | None = None,
    ) -> None:
        self.client = client
        self.max_response_bytes = max_response_bytes
        self.egress = EgressPolicy() if egress is None else egress

    async def run(self, params: object, context: StepContext) -> object:
        config = context.step.config
        assert isinstance(config, HttpRequest)
        if not isinstance(params, dict):
            raise StepFailed("http step parameters must be an object", retryable=False)
        url = _url(params.get("url"))
        headers = _strings(params.get("headers"), "headers")
        query = _strings(params.get("query"), "query")
        if query:  # added to the URL's own query (httpx's params= would replace it)
            url = url.copy_merge_params(query)
        timeout = context.step.timeout_seconds or DEFAULT_TIMEOUT_SECONDS
        content = None
        if "json" in params:
            content = json.dumps(params["json"], ensure_ascii=False, allow_nan=False).encode()
            headers = {"content-type": "application/json", **headers}
        request = self._send(
            config.method, url, headers, content, timeout, str(params["url"]), config.expect_status
        )
        status, response_headers, body = await until_cancelled(request, context.cancel)
        if not _expected(status, config.expect_status):
            excerpt = _excerpt(body)
            raise StepFailed(f"{config.method} {url} answered {status}: {excerpt}")
        return {"status": status, "headers": response_headers, "body": body}

    async def _send(
        self,
        method: str,
        url: httpx.URL,
        headers: dict[str, str],
        content: bytes | None,
        seconds: float,
        written: str,
        expected: tuple[int, ...],
    ) -> Exchange:
        follow = partial(self._follow, method=method, url=url, headers=headers, content=content,
                         seconds=seconds, written=written, expected=expected)  # fmt: skip
        if self.client is not None:
            return await follow(self.client)
        # no keep-alive: a connection is never reused for another name at the same address
        limits = httpx.Limits(max_keepalive_connections=0)
        async with httpx.AsyncClient(trust_env=False, limits=limits) as client:
            return await follow(client)

    async def _follow(
        self,
        client: httpx.AsyncClient,
        method: str,
        url: httpx.URL,
        headers: dict[str, str],
        content: bytes | None,
        seconds: float,
        written: str,
        expected: tuple[int, ...],
    ) -> Exchange:
        """The exchange with ``url``, following redirects but those whose status the step
        expects (``expect_status: 302`` answers the redirect itself); ``written`` is the URL as
        the step gave it (for the refusal message)."""
        first = f"{method} {url}"
        previous: httpx.URL | None = None
        for hop in range(MAX_REDIRECTS + 1):
            shown = written if previous is None else str(url)
            address = await self._destination(method, url, shown, previous)
            request = _pinned_request(client, method, url, address, headers, content, seconds)
            try:
                response = await client.send(request, stream=True, follow_redirects=False)
                location = None if response.status_code in expected else _location(response)
                if location is None:
                    return await self._read(response, method, url)
                await response.aclose()
            except httpx.TimeoutException:
                raise StepFailed(f"{method} {url} timed out after {seconds:g} s") from None
            except httpx.HTTPError as exc:
                raise StepFailed(f"{method} {url} failed: {type(exc).__name__}: {exc}") from None
            target = _redirect_target(method, url, location)
            if hop == MAX_REDIRECTS:
                break
            method, headers, content = _redirected(
                response.status_code, method, url, target, headers, content
            )
            previous, url = url, target
        raise StepFailed(f"{first}: more than {MAX_REDIRECTS} redirects (the last to {target})")

    async def _destination(
        self, method: str, url: httpx.URL, shown: str, previous: httpx.URL | None
    ) -> IPAddress:
        """The checked address to connect to for ``url``."""
        port = url.port or _DEFAULT_PORTS[url.scheme]
        try:
            return await self.egress.resolve(url.raw_host.decode("ascii"), port)
        except EgressUnresolved as refused:  # DNS may answer on the next attempt
            raise StepFailed(f"{method} {url} failed: {refused}") from None
        except EgressRefused as refused:
            after = "" if previous is None else f" (redirected from '{previous}')"
            raise StepFailed(f"url {shown!r} refused: {refused}{after}", retryable=False) from None

    async def _read(self, response: httpx.Response, method: str, url: httpx.URL) -> Exchange:
        try:
            content = bytearray()
            async for chunk in response.aiter_bytes():
                content += chunk
                if len(content) > self.max_response_bytes:
                    raise StepFailed(
                        f"{method} {url}: response larger than {self.max_response_bytes} bytes"
                    )
        finally:
            await response.aclose()
        response_headers = {name.lower(): value for name, value in response.headers.items()}
        return response.status_code, response_headers, _body(response, bytes(content))


def _url(value: object) -> httpx.URL:
    if not isinstance(value, str):
        raise StepFailed("url must be a string", retryable=False)
    try:
        url = httpx.URL(value)
    except httpx.InvalidURL as exc:
        raise StepFailed(f"invalid url {value!r}: {exc}", retryable=False) from None
    if url.scheme not in _DEFAULT_PORTS or not url.host:
        raise StepFailed(f"url must be http(s)://host/..., not {value!r}", retryable=False)
    return url


def _pinned_request(
    client: httpx.AsyncClient,
    method: str,
    url: httpx.URL,
    address: IPAddress,
    headers: dict[str, str],
    content: bytes | None,
    seconds: float,
) -> httpx.Request:
    """A request for ``url`` that connects to ``address``: the URL's host replaced by the
    address (bracketed when IPv6), the host kept in ``Host`` and, for https, as the TLS name."""
    name = url.raw_host.decode("ascii")
    sent = httpx.Headers(headers)
    if "host" not in sent:  # a Host the step sets itself is kept (virtual hosts by address)
        sent["Host"] = url.netloc.decode("ascii")
    extensions: dict[str, object] = {}
    if url.scheme == "https":
        extensions["sni_hostname"] = name
    return client.build_request(
        method,
        url.copy_with(host=str(address)),
        headers=sent,
        content=content,
        timeout=seconds,
        extensions=extensions,
    )


def _location(response: httpx.Response) -> str | None:
    """Where a redirect response points, or None when it is not one to follow."""
    if response.status_code not in REDIRECT_STATUSES:
        return None
    return response.headers.get("location") or None


def _redirect_target(method: str, url: httpx.URL, location: str) -> httpx.URL:
    try:
        target = url.join(location)
    except httpx.InvalidURL as exc:
        raise StepFailed(f"{method} {url} redirected to {location!r}: {exc}") from None
    if target.scheme not in _DEFAULT_PORTS or not target.host:
        raise StepFailed(f"{method} {url} redirected to {location!r}, not an http(s) URL")
    return target.copy_with(fragment=None)


def _redirected(
    status: int,
    method: str,
    url: httpx.URL,
    target: httpx.URL,
    headers: dict[str, str],
    content: bytes | None,
) -> tuple[str, dict[str, str], bytes | None]:
    """Method, headers and body of the request that follows a redirect, as browsers do: 303
    (but for HEAD), and 301/302 after a POST, become a GET without body; 307 and 308 keep
    method and body. Credentials, cookies and Host do not go on to another origin."""
    if (status == 303 and method != "HEAD") or (status in (301, 302) and method == "POST"):
        method, content = "GET", None
        headers = {k: v for k, v in headers.items() if k.lower() not in _BODY_HEADERS}
    if _origin(url) != _origin(target):
        headers = {k: v for k, v in headers.items() if k.lower() not in _ORIGIN_HEADERS}
    return method, headers, content


def _origin(url: httpx.URL) -> tuple[str, bytes, int]:
    return url.scheme, url.raw_host, url.port or _DEFAULT_PORTS[url.scheme]


def _strings(value: object, what: str) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise StepFailed(f"{what} must be an object", retryable=False)
    return {str(name): to_text(item) for name, item in value.items()}


def _excerpt(body: object) -> str:
    """The start of a response body for an error message, whatever its size."""
    if isinstance(body, str):
        return body[:MAX_ERROR_BODY_CHARS]
    try:
        return to_text(body)[:MAX_ERROR_BODY_CHARS]
    except ValueError:  # a JSON body too large (or deep) to write out again
        return "(a JSON body too large to quote)"


def _expected(status: int, expected: tuple[int, ...]) -> bool:
    return status in expected if expected else 200 <= status < 300


def _body(response: httpx.Response, content: bytes) -> object:
    text = content.decode(response.encoding or "utf-8", errors="replace")
    if "json" in response.headers.get("content-type", "") and text.strip():
        try:
            return json.loads(text, parse_float=_finite, parse_constant=_no_constant)
        except (ValueError, RecursionError):  # also too deep, or an integer too long
            return text
    return text


def _finite(text: str) -> float:
    """A JSON number as a float; one out of range (``1e999``) is no JSON value of the output."""
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"number out of range: {text}")
    return value


def _no_constant(text: str) -> object:
    raise ValueError(f"not JSON: {text}")  # NaN, Infinity, -Infinity
