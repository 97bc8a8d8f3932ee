"""The ``http`` step: one request through httpx, its response as the step's output."""

from __future__ import annotations

import json
from collections.abc import Callable

import httpx

from handlers.agents.workflows.definition import HttpRequest
from handlers.agents.workflows.functions import to_text
from handlers.agents.workflows.steps import StepContext, StepFailed, until_cancelled

DEFAULT_TIMEOUT_SECONDS = 30.0
"""Of a request whose step sets no ``timeout``."""
MAX_RESPONSE_BYTES = 10_000_000
MAX_ERROR_BODY_CHARS = 500

UrlGuard = Callable[[httpx.URL], str | None]
"""Returns why a URL may not be requested (e.g. private addresses), or None to allow it."""


class HttpStepRunner:
    """Sends ``{url, headers, query, json}`` with the step's method. Output: ``{"status",
    "headers" (lower-case names), "body"}``, the body parsed when it is JSON, else text. A
    status outside ``expect_status`` (default: any 2xx) fails the attempt (retryable)."""

    def __init__(
        self,
        client: httpx.AsyncClient | None = None,
        *,
        max_response_bytes: int = MAX_RESPONSE_BYTES,
        url_guard: UrlGuard | None = None,
    ) -> None:
        self.client = client
        self.max_response_bytes = max_response_bytes
        self.url_guard = url_guard

    async def run(self, params: object, context: StepContext) -> object:
        config = context.step.config
        assert isinstance(config, HttpRequest)
        if not isinstance(params, dict):
            raise StepFailed("http step parameters must be an object", retryable=False)
        url = self._url(params.get("url"))
        headers = _strings(params.get("headers"), "headers")
        query = _strings(params.get("query"), "query")
        if query:  # added to the URL's own query (httpx's params= would replace it)
            url = url.copy_merge_params(query)
        timeout = context.step.timeout_seconds or DEFAULT_TIMEOUT_SECONDS
        request = self._send(config.method, url, headers, params, timeout)
        status, response_headers, body = await until_cancelled(request, context.cancel)
        if not _expected(status, config.expect_status):
            excerpt = to_text(body)[:MAX_ERROR_BODY_CHARS]
            raise StepFailed(f"{config.method} {url} answered {status}: {excerpt}")
        return {"status": status, "headers": response_headers, "body": body}

    def _url(self, value: object) -> httpx.URL:
        if not isinstance(value, str):
            raise StepFailed("url must be a string", retryable=False)
        try:
            url = httpx.URL(value)
        except httpx.InvalidURL as exc:
            raise StepFailed(f"invalid url {value!r}: {exc}", retryable=False) from None
        if url.scheme not in ("http", "https") or not url.host:
            raise StepFailed(f"url must be http(s)://host/..., not {value!r}", retryable=False)
        refusal = self.url_guard(url) if self.url_guard else None
        if refusal is not None:
            raise StepFailed(f"url {value!r} refused: {refusal}", retryable=False)
        return url

    async def _send(
        self,
        method: str,
        url: httpx.URL,
        headers: dict[str, str],
        params: dict[str, object],
        seconds: float,
    ) -> tuple[int, dict[str, str], object]:
        content = None
        if "json" in params:
            content = json.dumps(params["json"], ensure_ascii=False, allow_nan=False).encode()
            headers = {"content-type": "application/json", **headers}
        try:
            if self.client is not None:
                request = self.client.build_request(
                    method, url, headers=headers, content=content, timeout=seconds
                )
                return await self._exchange(self.client, request)
            async with httpx.AsyncClient(trust_env=False) as client:
                request = client.build_request(
                    method, url, headers=headers, content=content, timeout=seconds
                )
                return await self._exchange(client, request)
        except httpx.TimeoutException:
            raise StepFailed(f"{method} {url} timed out after {seconds:g} s") from None
        except httpx.HTTPError as exc:
            raise StepFailed(f"{method} {url} failed: {type(exc).__name__}: {exc}") from None

    async def _exchange(
        self, client: httpx.AsyncClient, request: httpx.Request
    ) -> tuple[int, dict[str, str], object]:
        response = await client.send(request, stream=True)
        try:
            content = bytearray()
            async for chunk in response.aiter_bytes():
                content += chunk
                if len(content) > self.max_response_bytes:
                    raise StepFailed(
                        f"{request.method} {request.url}: response larger than "
                        f"{self.max_response_bytes} bytes"
                    )
        finally:
            await response.aclose()
        response_headers = {name.lower(): value for name, value in response.headers.items()}
        return response.status_code, response_headers, _body(response, bytes(content))


def _strings(value: object, what: str) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise StepFailed(f"{what} must be an object", retryable=False)
    return {str(name): to_text(item) for name, item in value.items()}


def _expected(status: int, expected: tuple[int, ...]) -> bool:
    return status in expected if expected else 200 <= status < 300


def _body(response: httpx.Response, content: bytes) -> object:
    text = content.decode(response.encoding or "utf-8", errors="replace")
    if "json" in response.headers.get("content-type", "") and text.strip():
        try:
            return json.loads(text)
        except json.JSONDecodeError:
            return text
    return text
