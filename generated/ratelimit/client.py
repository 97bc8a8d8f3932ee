"""Clients of Rate limit service, HTTP port: ``RatelimitClient`` (sync) and ``AsyncRatelimitClient``.

Generated from specs/ratelimit.openapi.yaml by `make generate`; do not edit. Needs only httpx and
pydantic besides the models beside it::

    with RatelimitClient(base_url="http://127.0.0.1:8000") as client:
        ...

Every non-2xx answer raises a ``RatelimitError`` subclass carrying ``status``, the parsed
error body (``envelope``), ``request_id`` and, for 429, ``retry_after``:
``RatelimitValidationError`` (400/422),
``RatelimitAuthError`` (401),
``RatelimitForbiddenError`` (403),
``RatelimitNotFoundError`` (404),
``RatelimitConflictError`` (409),
``RatelimitPayloadTooLargeError`` (413),
``RatelimitUnsupportedMediaTypeError`` (415),
``RatelimitRateLimitError`` (429),
``RatelimitServerError`` (5xx) and ``RatelimitTimeoutError`` (a timeout, ``status`` 0);
any other status raises ``RatelimitError`` itself.
"""

from __future__ import annotations

import builtins  # noqa: F401
import datetime  # noqa: F401
import json
import os
import uuid  # noqa: F401
from collections.abc import AsyncIterator, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Literal, Union  # noqa: F401

import httpx
from pydantic import BaseModel

from generated.ratelimit import models  # noqa: F401

__all__ = [
    "AsyncRatelimitClient",
    "RatelimitClient",
    "FileInput",
    "RatelimitError",
    "RatelimitValidationError",
    "RatelimitAuthError",
    "RatelimitForbiddenError",
    "RatelimitNotFoundError",
    "RatelimitConflictError",
    "RatelimitPayloadTooLargeError",
    "RatelimitUnsupportedMediaTypeError",
    "RatelimitRateLimitError",
    "RatelimitServerError",
    "RatelimitTimeoutError",
]

DEFAULT_BASE_URL = "http://127.0.0.1:8000"
ENV_API_KEY = "RATELIMIT_API_KEY"
ENV_BASE_URL = "RATELIMIT_BASE_URL"

FileInput = Union[
    bytes, Path, IO[bytes], tuple[str, bytes | IO[bytes]], tuple[str, bytes | IO[bytes], str]
]
"""A file to upload: bytes, a path, a binary file object, or (filename, content[, mime type])."""


# -- errors ------------------------------------------------------------------------------------


class RatelimitError(Exception):
    """A failed call: ``status`` (0 for a timeout), the error body and the request id."""

    def __init__(
        self,
        message: str,
        *,
        status: int,
        envelope: Any = None,
        request_id: str | None = None,
        retry_after: int | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.envelope = envelope
        self.request_id = request_id
        self.retry_after = retry_after

    @property
    def requestId(self) -> str | None:  # noqa: N802 - the seed's attribute name
        return self.request_id

    @property
    def retryAfter(self) -> int | None:  # noqa: N802 - the seed's attribute name
        return self.retry_after


class RatelimitValidationError(RatelimitError):
    """400 or 422: the request was invalid."""

    @property
    def issues(self) -> list[Any]:
        """The envelope's ``issues`` (empty when the body has none)."""
        issues = self.envelope.get("issues") if isinstance(self.envelope, dict) else None
        return issues if isinstance(issues, list) else []


class RatelimitAuthError(RatelimitError):
    """401: missing or wrong credentials."""


class RatelimitForbiddenError(RatelimitError):
    """403: the credentials may not do this."""


class RatelimitNotFoundError(RatelimitError):
    """404: no such resource."""


class RatelimitConflictError(RatelimitError):
    """409: the request conflicts with the resource's current state."""


class RatelimitPayloadTooLargeError(RatelimitError):
    """413: the request body (or a part of it) is too large."""


class RatelimitUnsupportedMediaTypeError(RatelimitError):
    """415: the request body's content type is not accepted."""


class RatelimitRateLimitError(RatelimitError):
    """429: too many requests; ``retry_after`` seconds from ``Retry-After``."""


class RatelimitServerError(RatelimitError):
    """5xx: the server failed."""


class RatelimitTimeoutError(RatelimitError):
    """The request timed out (``status`` 0)."""


_ERRORS: dict[int, type[RatelimitError]] = {
    400: RatelimitValidationError,
    422: RatelimitValidationError,
    401: RatelimitAuthError,
    403: RatelimitForbiddenError,
    404: RatelimitNotFoundError,
    409: RatelimitConflictError,
    413: RatelimitPayloadTooLargeError,
    415: RatelimitUnsupportedMediaTypeError,
    429: RatelimitRateLimitError,
}


def _error(response: httpx.Response) -> RatelimitError:
    envelope: Any = None
    message = response.reason_phrase or f"HTTP {response.status_code}"
    if response.headers.get("content-type", "").startswith("application/json"):
        try:
            envelope = response.json()
        except ValueError:
            envelope = None
    elif response.content:
        envelope = response.text
        message = response.text.strip() or message
    if isinstance(envelope, dict):
        issues = envelope.get("issues")
        detail = envelope.get("detail")
        if isinstance(issues, list) and issues and isinstance(issues[0], dict):
            message = f"{issues[0].get('field', '<root>')}: {issues[0].get('message', '')}"
        elif isinstance(detail, list) and detail and isinstance(detail[0], dict):
            message = f"{'.'.join(map(str, detail[0].get('loc', [])))}: {detail[0].get('msg', '')}"
        elif isinstance(detail, str):
            message = detail
    request_id = response.headers.get("x-request-id") or (
        envelope.get("requestId") if isinstance(envelope, dict) else None
    )
    retry = response.headers.get("retry-after", "")
    kind = _ERRORS.get(response.status_code)
    if kind is None:
        kind = RatelimitServerError if response.status_code >= 500 else RatelimitError
    return kind(
        message,
        status=response.status_code,
        envelope=envelope,
        request_id=request_id,
        retry_after=int(retry) if retry.isdigit() else None,
    )


# -- requests ----------------------------------------------------------------------------------


@dataclass
class _Request:
    method: str
    path: str
    params: dict[str, str] = field(default_factory=dict)
    headers: dict[str, str] = field(default_factory=dict)
    content: bytes | None = None
    data: dict[str, str] | None = None
    files: list[tuple[str, tuple[str, bytes | IO[bytes], str]]] | None = None


def _segment(value: object) -> str:
    from urllib.parse import quote

    return quote(str(value), safe="")


def _text(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple)):
        return ",".join(_text(v) for v in value)
    if isinstance(value, datetime.datetime) and value.tzinfo is None:
        return value.astimezone().isoformat()  # RFC 3339 needs an offset: naive is local time
    if isinstance(value, (datetime.datetime, datetime.date)):
        return value.isoformat()
    return str(value)


def _json_bytes(body: BaseModel | Mapping[str, Any] | None) -> bytes:
    if isinstance(body, BaseModel):
        return body.model_dump_json(by_alias=True, exclude_unset=True).encode()
    return json.dumps(body, default=str).encode()


def _file(name: str, value: FileInput) -> tuple[str, tuple[str, bytes | IO[bytes], str]]:
    import mimetypes

    if isinstance(value, tuple):
        filename, content = value[0], value[1]
        mime = value[2] if len(value) > 2 else None
    elif isinstance(value, Path):
        filename, content, mime = value.name, value.read_bytes(), None
    elif isinstance(value, bytes):
        filename, content, mime = name, value, None
    else:
        filename, content, mime = Path(getattr(value, "name", name)).name, value, None
    guessed = mime or mimetypes.guess_type(filename)[0] or "application/octet-stream"
    return name, (filename, content, guessed)


def _build_should_rate_limit(body: models.RateLimitRequest | Mapping[str, Any]) -> _Request:
    request = _Request("POST", "/json")
    if body is not None:
        request.headers["content-type"] = "application/json"
        request.content = _json_bytes(body)
    return request


def _build_read_counters(body: models.RateLimitRequest | Mapping[str, Any]) -> _Request:
    request = _Request("POST", "/counters")
    if body is not None:
        request.headers["content-type"] = "application/json"
        request.content = _json_bytes(body)
    return request


def _build_healthcheck() -> _Request:
    request = _Request("GET", "/healthcheck")
    return request


def _parse_should_rate_limit(response: httpx.Response) -> Any:
    return models.RateLimitResponse.model_validate(response.json())


def _parse_read_counters(response: httpx.Response) -> Any:
    return models.CountersResponse.model_validate(response.json())


def _parse_healthcheck(response: httpx.Response) -> Any:
    return response.content


# -- clients -----------------------------------------------------------------------------------


def _settings(api_key: str | None, base_url: str | None) -> tuple[str | None, str]:
    key = api_key if api_key is not None else os.environ.get(ENV_API_KEY)
    url = base_url or os.environ.get(ENV_BASE_URL) or DEFAULT_BASE_URL
    return key, url.rstrip("/")


def _headers(api_key: str | None, extra: Mapping[str, str] | None) -> dict[str, str]:
    headers = {"user-agent": "ratelimit-client/1.0.0"}
    if api_key:
        headers["authorization"] = f"Bearer {api_key}"
    headers.update(extra or {})
    return headers


class RatelimitClient:
    """Client of Rate limit service, HTTP port.

    ``api_key`` (default ``$RATELIMIT_API_KEY``) is sent as a bearer token;
    ``base_url`` defaults to ``$RATELIMIT_BASE_URL``, else http://127.0.0.1:8000;
    ``timeout_seconds`` bounds each request; ``verify_ssl=False`` accepts self-signed hosts;
    ``transport`` replaces the network (e.g. ``httpx.MockTransport`` in tests).
    """

    def __init__(
        self,
        api_key: str | None = None,
        base_url: str | None = None,
        timeout_seconds: float = 60.0,
        verify_ssl: bool = True,
        *,
        headers: Mapping[str, str] | None = None,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        key, url = _settings(api_key, base_url)
        self.base_url = url
        self.timeout_seconds = timeout_seconds
        self._http = httpx.Client(
            base_url=url,
            headers=_headers(key, headers),
            timeout=timeout_seconds,
            verify=verify_ssl,
            transport=transport,
        )

    def close(self) -> None:
        """Close the connection pool."""
        self._http.close()

    def __enter__(self) -> RatelimitClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _send(self, request: _Request, answers: tuple[int, ...] = ()) -> httpx.Response:
        """The response; raises the typed error of a non-2xx status, except ``answers``
        (statuses whose body is the operation's success body)."""
        try:
            response = self._http.request(
                request.method,
                request.path,
                params=request.params,
                headers=request.headers,
                content=request.content,
                data=request.data,
                files=request.files,
            )
        except httpx.TimeoutException as exc:
            raise RatelimitTimeoutError(f"Request timed out: {exc}", status=0) from exc
        if response.status_code >= 400 and response.status_code not in answers:
            raise _error(response)
        return response

    def _iter(self, request: _Request, *, text: bool) -> Iterator[Any]:
        """Yield a streamed response's chunks as they arrive (text decoded incrementally)."""
        try:
            with self._http.stream(
                request.method,
                request.path,
                params=request.params,
                headers=request.headers,
                content=request.content,
                data=request.data,
                files=request.files,
            ) as response:
                if response.status_code >= 400:
                    response.read()
                    raise _error(response)
                yield from (response.iter_text() if text else response.iter_bytes())
        except httpx.TimeoutException as exc:
            raise RatelimitTimeoutError(f"Request timed out: {exc}", status=0) from exc

    def should_rate_limit(
        self,
        body: models.RateLimitRequest | Mapping[str, Any],
    ) -> models.RateLimitResponse:
        """POST /json: Decide whether a request is within its rate limits"""
        request = _build_should_rate_limit(body)
        response = self._send(
            request,
            answers=(
                429,
                500,
            ),
        )
        return _parse_should_rate_limit(response)  # type: ignore[no-any-return]

    def read_counters(
        self,
        body: models.RateLimitRequest | Mapping[str, Any],
    ) -> models.CountersResponse:
        """POST /counters: Read the state of a request's limits without counting"""
        request = _build_read_counters(body)
        return _parse_read_counters(self._send(request))  # type: ignore[no-any-return]

    def healthcheck(
        self,
    ) -> Iterator[str]:
        """GET /healthcheck: Report whether the service is healthy"""
        request = _build_healthcheck()
        return self._iter(request, text=True)


class AsyncRatelimitClient:
    """Asynchronous client of Rate limit service, HTTP port.

    ``api_key`` (default ``$RATELIMIT_API_KEY``) is sent as a bearer token;
    ``base_url`` defaults to ``$RATELIMIT_BASE_URL``, else http://127.0.0.1:8000;
    ``timeout_seconds`` bounds each request; ``verify_ssl=False`` accepts self-signed hosts;
    ``transport`` replaces the network (e.g. ``httpx.ASGITransport`` in tests).
    """

    def __init__(
        self,
        api_key: str | None = None,
        base_url: str | None = None,
        timeout_seconds: float = 60.0,
        verify_ssl: bool = True,
        *,
        headers: Mapping[str, str] | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        key, url = _settings(api_key, base_url)
        self.base_url = url
        self.timeout_seconds = timeout_seconds
        self._http = httpx.AsyncClient(
            base_url=url,
            headers=_headers(key, headers),
            timeout=timeout_seconds,
            verify=verify_ssl,
            transport=transport,
        )

    async def close(self) -> None:
        """Close the connection pool."""
        await self._http.aclose()

    async def __aenter__(self) -> AsyncRatelimitClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def _send(self, request: _Request, answers: tuple[int, ...] = ()) -> httpx.Response:
        """The response; raises the typed error of a non-2xx status, except ``answers``
        (statuses whose body is the operation's success body)."""
        try:
            response = await self._http.request(
                request.method,
                request.path,
                params=request.params,
                headers=request.headers,
                content=request.content,
                data=request.data,
                files=request.files,
            )
        except httpx.TimeoutException as exc:
            raise RatelimitTimeoutError(f"Request timed out: {exc}", status=0) from exc
        if response.status_code >= 400 and response.status_code not in answers:
            raise _error(response)
        return response

    async def _iter(self, request: _Request, *, text: bool) -> AsyncIterator[Any]:
        """Yield a streamed response's chunks as they arrive (text decoded incrementally)."""
        try:
            async with self._http.stream(
                request.method,
                request.path,
                params=request.params,
                headers=request.headers,
                content=request.content,
                data=request.data,
                files=request.files,
            ) as response:
                if response.status_code >= 400:
                    await response.aread()
                    raise _error(response)
                chunks = response.aiter_text() if text else response.aiter_bytes()
                async for chunk in chunks:
                    yield chunk
        except httpx.TimeoutException as exc:
            raise RatelimitTimeoutError(f"Request timed out: {exc}", status=0) from exc

    async def should_rate_limit(
        self,
        body: models.RateLimitRequest | Mapping[str, Any],
    ) -> models.RateLimitResponse:
        """POST /json: Decide whether a request is within its rate limits"""
        request = _build_should_rate_limit(body)
        response = await self._send(
            request,
            answers=(
                429,
                500,
            ),
        )
        return _parse_should_rate_limit(response)  # type: ignore[no-any-return]

    async def read_counters(
        self,
        body: models.RateLimitRequest | Mapping[str, Any],
    ) -> models.CountersResponse:
        """POST /counters: Read the state of a request's limits without counting"""
        request = _build_read_counters(body)
        return _parse_read_counters(await self._send(request))  # type: ignore[no-any-return]

    def healthcheck(
        self,
    ) -> AsyncIterator[str]:
        """GET /healthcheck: Report whether the service is healthy"""
        request = _build_healthcheck()
        return self._iter(request, text=True)
