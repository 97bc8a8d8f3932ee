"""Clients of Document retrieval and answer generation service: ``RagClient`` (sync) and ``AsyncRagClient``.

Generated from specs/rag.openapi.yaml by `make generate`; do not edit. Needs only httpx and
pydantic besides the models beside it::

    with RagClient(base_url="http://127.0.0.1:8000") as client:
        ...

Every non-2xx answer raises a ``RagError`` subclass carrying ``status``, the parsed
error body (``envelope``), ``request_id`` and, for 429, ``retry_after``:
``RagValidationError`` (400/422),
``RagAuthError`` (401),
``RagForbiddenError`` (403),
``RagNotFoundError`` (404),
``RagConflictError`` (409),
``RagPayloadTooLargeError`` (413),
``RagUnsupportedMediaTypeError`` (415),
``RagRateLimitError`` (429),
``RagServerError`` (5xx) and ``RagTimeoutError`` (a timeout, ``status`` 0);
any other status raises ``RagError`` itself.

Every call is retried (``RetryPolicy``: twice by default, with backoff and jitter, honouring
``Retry-After``) after a 408, 429, 500, 502, 503, 504, connection failure or timeout when
repeating it is safe (idempotent methods; POST and PATCH with an ``Idempotency-Key``). Every
method takes ``timeout=`` (seconds) and ``max_retries=`` for that call.
``client.with_raw_response.<method>(...)`` returns a ``RawResponse`` (status, headers,
``parse()``). ``event_hooks`` (httpx's) see every attempt, for logging and tracing.
"""

from __future__ import annotations

import asyncio
import builtins  # noqa: F401
import datetime
import email.utils
import json
import math
import os
import random
import ssl
import time
import uuid  # noqa: F401
from collections.abc import AsyncIterator, Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import IO, Any, Generic, Literal, TypeVar, Union  # noqa: F401

import httpx
from pydantic import BaseModel

from generated.rag import models  # noqa: F401

__all__ = [
    "AsyncRagClient",
    "RagClient",
    "FileInput",
    "RawResponse",
    "RetryPolicy",
    "RagError",
    "RagValidationError",
    "RagAuthError",
    "RagForbiddenError",
    "RagNotFoundError",
    "RagConflictError",
    "RagPayloadTooLargeError",
    "RagUnsupportedMediaTypeError",
    "RagRateLimitError",
    "RagServerError",
    "RagTimeoutError",
]

T = TypeVar("T")
DEFAULT_BASE_URL = "http://127.0.0.1:8000"
ENV_API_KEY = "RAG_API_KEY"
ENV_BASE_URL = "RAG_BASE_URL"

FileInput = Union[
    bytes, Path, IO[bytes], tuple[str, bytes | IO[bytes]], tuple[str, bytes | IO[bytes], str]
]
"""A file to upload: bytes, a path, a binary file object, or (filename, content[, mime type])."""


# -- errors ------------------------------------------------------------------------------------


class RagError(Exception):
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


class RagValidationError(RagError):
    """400 or 422: the request was invalid."""

    @property
    def issues(self) -> list[Any]:
        """The envelope's ``issues`` (empty when the body has none)."""
        issues = self.envelope.get("issues") if isinstance(self.envelope, dict) else None
        return issues if isinstance(issues, list) else []


class RagAuthError(RagError):
    """401: missing or wrong credentials."""


class RagForbiddenError(RagError):
    """403: the credentials may not do this."""


class RagNotFoundError(RagError):
    """404: no such resource."""


class RagConflictError(RagError):
    """409: the request conflicts with the resource's current state."""


class RagPayloadTooLargeError(RagError):
    """413: the request body (or a part of it) is too large."""


class RagUnsupportedMediaTypeError(RagError):
    """415: the request body's content type is not accepted."""


class RagRateLimitError(RagError):
    """429: too many requests; ``retry_after`` seconds from ``Retry-After``."""


class RagServerError(RagError):
    """5xx: the server failed."""


class RagTimeoutError(RagError):
    """The request timed out (``status`` 0)."""


_ERRORS: dict[int, type[RagError]] = {
    400: RagValidationError,
    422: RagValidationError,
    401: RagAuthError,
    403: RagForbiddenError,
    404: RagNotFoundError,
    409: RagConflictError,
    413: RagPayloadTooLargeError,
    415: RagUnsupportedMediaTypeError,
    429: RagRateLimitError,
}


def _error(response: httpx.Response) -> RagError:
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
        kind = RagServerError if response.status_code >= 500 else RagError
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


# -- retries -----------------------------------------------------------------------------------

RETRY_STATUSES = frozenset({408, 429, 500, 502, 503, 504})
"""Statuses worth sending a request again for: a timeout, a rate limit, a server failure."""
IDEMPOTENT_METHODS = frozenset({"GET", "HEAD", "PUT", "DELETE", "OPTIONS", "TRACE"})
"""Methods whose repeat does what one request does (RFC 9110 9.2.2); POST and PATCH are
retried only with an ``Idempotency-Key`` header."""
MAX_RETRIES_LIMIT = 10
"""The most retries a client or a call may ask for: with the delay caps, a call stays bounded."""
_UNSENT_ERRORS = (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout)
"""Transport errors raised before the request left: retrying is safe for any method."""
_SENT_ERRORS = (
    httpx.ReadTimeout,
    httpx.WriteTimeout,
    httpx.ReadError,
    httpx.WriteError,
    httpx.RemoteProtocolError,
)
"""Transport errors after (part of) the request left: the server may have acted on it, so
only an idempotent request (by method or by ``Idempotency-Key``) is retried."""


@dataclass(frozen=True)
class RetryPolicy:
    """When a failed request is sent again, and how long the client waits before.

    A request is retried at most ``max_retries`` times (default 2, as the best generated SDKs)
    after a 408, 429, 500, 502, 503 or 504 (not a status the operation documents as its
    answer, such as a rate limit decision's 429 or a readiness 503), a connection failure or
    a timeout, when the repeat is safe:

    * a connection that could not be made (nothing was sent) is retried for every request;
    * otherwise only an idempotent request: GET, HEAD, PUT, DELETE, OPTIONS, or a POST or
      PATCH carrying an ``Idempotency-Key`` (the client sends one on every operation whose
      spec declares the header; a retry resends the same key, so the server answers the
      repeat with the first answer and acts once);
    * a request with a file object (not bytes or a path) is retried only when the file is
      seekable: it is rewound to where it was before each repeat.

    The wait before retry ``n`` (0 for the first) is the server's ``Retry-After`` (seconds
    or an HTTP date; ``retry-after-ms`` too) when it sends one; a wait longer than
    ``max_retry_after`` (default 60 s) is not waited for: the error (``retry_after`` set) is
    raised at once, for the caller to schedule. Without one, exponential backoff with equal
    jitter: ``d = min(max_delay, initial_delay * 2**n)``, a random wait in ``[d/2, d]``.
    A certificate that fails verification is never retried.
    """

    max_retries: int = 2
    initial_delay: float = 0.5
    max_delay: float = 8.0
    max_retry_after: float = 60.0

    def __post_init__(self) -> None:
        _check_retries(self.max_retries)
        for name in ("initial_delay", "max_delay", "max_retry_after"):
            value = getattr(self, name)
            if not isinstance(value, (int, float)) or not 0 <= value <= 3600:
                raise ValueError(f"RetryPolicy.{name} must be between 0 and 3600 seconds")
        if self.initial_delay > self.max_delay:
            raise ValueError("RetryPolicy.initial_delay must not exceed max_delay")

    def backoff(self, retry: int, draw: Callable[[], float] = random.random) -> float:
        """The wait before retry ``retry`` (0-based) without ``Retry-After``: between half and
        all of ``min(max_delay, initial_delay * 2**retry)``; ``draw`` is in ``[0, 1)``."""
        ceiling = min(self.max_delay, math.ldexp(self.initial_delay, min(max(retry, 0), 32)))
        return ceiling / 2 + ceiling / 2 * draw()

    def delay(self, retry: int, headers: Mapping[str, str] | None = None) -> float | None:
        """The wait before retry ``retry``: the response's ``Retry-After`` if it has one (None
        when that is over ``max_retry_after``: do not retry), else ``backoff(retry)``."""
        asked = _retry_after(headers) if headers is not None else None
        if asked is None:
            return self.backoff(retry)
        return asked if asked <= self.max_retry_after else None


def _check_retries(value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"max_retries must be an int, not {type(value).__name__}")
    if not 0 <= value <= MAX_RETRIES_LIMIT:
        raise ValueError(f"max_retries must be between 0 and {MAX_RETRIES_LIMIT}, not {value}")
    return value


def _check_timeout(value: float | httpx.Timeout | None) -> Any:
    """A call's ``timeout`` for httpx: the client's default for ``None``."""
    if value is None:
        return httpx.USE_CLIENT_DEFAULT
    if isinstance(value, httpx.Timeout):
        return value
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < 1e6:
        raise ValueError(f"timeout must be a positive number of seconds, not {value!r}")
    return float(value)


def _retry_after(headers: Mapping[str, str]) -> float | None:
    """Seconds the server asks to wait (``retry-after-ms``, ``Retry-After`` in seconds or as
    an HTTP date), at least 0; ``None`` without a readable one."""
    millis = headers.get("retry-after-ms", "")[:32]
    try:
        if millis and math.isfinite(float(millis)):
            return max(0.0, float(millis) / 1000)
    except ValueError:
        pass
    value = headers.get("retry-after", "")[:64].strip()
    if not value:
        return None
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError, IndexError, OverflowError):
            return None
        if when.tzinfo is None:
            when = when.replace(tzinfo=datetime.timezone.utc)
        seconds = (when - datetime.datetime.now(datetime.timezone.utc)).total_seconds()
    return max(0.0, seconds) if math.isfinite(seconds) else None


def _idempotent(request: _Request) -> bool:
    return request.method in IDEMPOTENT_METHODS or any(
        name.lower() == "idempotency-key" for name in request.headers
    )


def _bookmarks(request: _Request) -> list[tuple[IO[bytes], int]] | None:
    """Where each file object of ``request`` starts, to rewind it before a repeat; ``None``
    when one cannot be rewound (the request is then never repeated)."""
    marks: list[tuple[IO[bytes], int]] = []
    for _, (_, content, _) in request.files or []:
        if isinstance(content, bytes):
            continue
        try:
            if not content.seekable():
                return None
            marks.append((content, content.tell()))
        except (AttributeError, OSError, ValueError):
            return None
    return marks


def _rewind(marks: list[tuple[IO[bytes], int]]) -> None:
    for content, position in marks:
        content.seek(position)


def _transport_retryable(request: _Request, error: httpx.TransportError) -> bool:
    """Whether ``error`` may be retried for ``request`` (see ``RetryPolicy``)."""
    cause: BaseException | None = error
    for _ in range(8):  # httpx's error, httpcore's, then the ssl module's
        if cause is None:
            break
        if isinstance(cause, ssl.SSLCertVerificationError):
            return False  # a certificate that fails now fails again
        cause = cause.__cause__ or cause.__context__
    if isinstance(error, _UNSENT_ERRORS):
        return True
    return isinstance(error, _SENT_ERRORS) and _idempotent(request)


def _next_delay(
    policy: RetryPolicy,
    request: _Request,
    retry: int,
    retries: int,
    marks: list[tuple[IO[bytes], int]] | None,
    *,
    response: httpx.Response | None = None,
    error: httpx.TransportError | None = None,
) -> float | None:
    """The wait before sending ``request`` again after ``response`` or ``error``; ``None``:
    do not (retries spent, not a retryable failure, not safe to repeat, or a long
    ``Retry-After``)."""
    if retry >= retries or marks is None:
        return None
    if response is not None:
        if response.status_code not in RETRY_STATUSES or not _idempotent(request):
            return None
        return policy.delay(retry, response.headers)
    if error is None or not _transport_retryable(request, error):
        return None
    return policy.backoff(retry)


def _timed_out(error: httpx.TimeoutException) -> RagTimeoutError:
    """What a call raises when its last attempt timed out (other transport errors propagate
    as httpx raised them)."""
    return RagTimeoutError(f"Request timed out: {error}", status=0)


class RawResponse(Generic[T]):
    """A call's HTTP response (``client.with_raw_response.<method>(...)``): ``status_code``,
    ``headers``, ``request_id``, ``retries`` (how many times the request was sent again) and
    ``http_response`` (the ``httpx.Response``); ``parse()`` gives what the method returns."""

    def __init__(self, response: httpx.Response, parse: Callable[[httpx.Response], T]) -> None:
        self.http_response = response
        self._parse = parse

    @property
    def status_code(self) -> int:
        return self.http_response.status_code

    @property
    def headers(self) -> httpx.Headers:
        return self.http_response.headers

    @property
    def request_id(self) -> str | None:
        value = self.http_response.headers.get("x-request-id")
        return value if isinstance(value, str) else None

    @property
    def retries(self) -> int:
        return int(self.http_response.extensions.get(RETRIES_EXTENSION, 0))

    def parse(self) -> T:
        """The body as the method without ``with_raw_response`` returns it."""
        return self._parse(self.http_response)

    def __repr__(self) -> str:
        return f"<RawResponse [{self.status_code}]>"


RETRIES_EXTENSION = "rag_client_retries"
"""The ``httpx.Response.extensions`` key of how many retries a response took."""


def _build_upload_document(
    file: FileInput, *, collection: str | None = None, metadata: str | None = None
) -> _Request:
    request = _Request("POST", "/uploadDocument")
    request.data = {}
    request.files = []
    if file is not None:
        request.files.append(_file("file", file))
    if collection is not None:
        request.data["collection"] = _text(collection)
    if metadata is not None:
        request.data["metadata"] = _text(metadata)
    return request


def _build_generate(
    body: models.Prompt | Mapping[str, Any], *, accept: str = "text/plain"
) -> _Request:
    request = _Request("POST", "/generate")
    request.headers["accept"] = accept
    if body is not None:
        request.headers["content-type"] = "application/json"
        request.content = _json_bytes(body)
    return request


def _build_document_search(body: models.DocumentSearch | Mapping[str, Any]) -> _Request:
    request = _Request("POST", "/documentSearch")
    if body is not None:
        request.headers["content-type"] = "application/json"
        request.content = _json_bytes(body)
    return request


def _build_list_documents(*, collection: str | None = None) -> _Request:
    request = _Request("GET", "/documents")
    if collection is not None:
        request.params["collection"] = _text(collection)
    return request


def _build_delete_document(document_id: str) -> _Request:
    request = _Request("DELETE", f"/documents/{_segment(document_id)}")
    return request


def _build_list_ingestion_jobs(*, limit: int | None = None) -> _Request:
    request = _Request("GET", "/ingestionJobs")
    if limit is not None:
        request.params["limit"] = _text(limit)
    return request


def _build_create_ingestion_job(
    *,
    collection: str | None = None,
    metadata: str | None = None,
    files: Mapping[str, FileInput] | None = None,
) -> _Request:
    request = _Request("POST", "/ingestionJobs")
    request.data = {}
    request.files = []
    if collection is not None:
        request.data["collection"] = _text(collection)
    if metadata is not None:
        request.data["metadata"] = _text(metadata)
    for key, value in (files or {}).items():
        request.files.append(_file(key, value))
    return request


def _build_get_ingestion_job(job_id: str) -> _Request:
    request = _Request("GET", f"/ingestionJobs/{_segment(job_id)}")
    return request


def _build_health() -> _Request:
    request = _Request("GET", "/health")
    return request


def _parse_upload_document(response: httpx.Response) -> Any:
    return models.UploadResult.model_validate(response.json())


def _parse_generate(response: httpx.Response) -> Any:
    return response.content


def _parse_document_search(response: httpx.Response) -> Any:
    return [models.SearchResult.model_validate(item) for item in response.json()]


def _parse_list_documents(response: httpx.Response) -> Any:
    return [models.DocumentInfo.model_validate(item) for item in response.json()]


def _parse_delete_document(response: httpx.Response) -> Any:
    return None


def _parse_list_ingestion_jobs(response: httpx.Response) -> Any:
    return [models.IngestionJob.model_validate(item) for item in response.json()]


def _parse_create_ingestion_job(response: httpx.Response) -> Any:
    return models.IngestionJob.model_validate(response.json())


def _parse_get_ingestion_job(response: httpx.Response) -> Any:
    return models.IngestionJob.model_validate(response.json())


def _parse_health(response: httpx.Response) -> Any:
    return models.Health.model_validate(response.json())


# -- clients -----------------------------------------------------------------------------------


def _settings(api_key: str | None, base_url: str | None) -> tuple[str | None, str]:
    key = api_key if api_key is not None else os.environ.get(ENV_API_KEY)
    url = base_url or os.environ.get(ENV_BASE_URL) or DEFAULT_BASE_URL
    return key, url.rstrip("/")


def _headers(api_key: str | None, extra: Mapping[str, str] | None) -> dict[str, str]:
    headers = {"user-agent": "rag-client/0.2.0"}
    if api_key:
        headers["authorization"] = f"Bearer {api_key}"
    headers.update(extra or {})
    return headers


class _RawRagClient:
    """``client.with_raw_response``: the client's methods answering a ``RawResponse`` (status,
    headers, ``parse()``) instead of the parsed body; streamed methods are not among them."""

    def __init__(self, client: RagClient) -> None:
        self._client = client

    def upload_document(
        self,
        file: FileInput,
        *,
        collection: str | None = None,
        metadata: str | None = None,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> RawResponse[models.UploadResult]:
        """POST /uploadDocument: Upload Document"""
        request = _build_upload_document(file, collection=collection, metadata=metadata)
        response = self._client._send(
            request,
            timeout=timeout,
            max_retries=max_retries,
        )
        return RawResponse(response, _parse_upload_document)

    def document_search(
        self,
        body: models.DocumentSearch | Mapping[str, Any],
        *,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> RawResponse[builtins.list[models.SearchResult]]:
        """POST /documentSearch: Document Search"""
        request = _build_document_search(body)
        response = self._client._send(
            request,
            timeout=timeout,
            max_retries=max_retries,
        )
        return RawResponse(response, _parse_document_search)

    def list_documents(
        self,
        *,
        collection: str | None = None,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> RawResponse[builtins.list[models.DocumentInfo]]:
        """GET /documents: List Documents"""
        request = _build_list_documents(collection=collection)
        response = self._client._send(
            request,
            timeout=timeout,
            max_retries=max_retries,
        )
        return RawResponse(response, _parse_list_documents)

    def delete_document(
        self,
        document_id: str,
        *,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> RawResponse[None]:
        """DELETE /documents/{document_id}: Delete Document"""
        request = _build_delete_document(document_id)
        response = self._client._send(
            request,
            timeout=timeout,
            max_retries=max_retries,
        )
        return RawResponse(response, _parse_delete_document)

    def list_ingestion_jobs(
        self,
        *,
        limit: int | None = None,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> RawResponse[builtins.list[models.IngestionJob]]:
        """GET /ingestionJobs: List Ingestion Jobs"""
        request = _build_list_ingestion_jobs(limit=limit)
        response = self._client._send(
            request,
            timeout=timeout,
            max_retries=max_retries,
        )
        return RawResponse(response, _parse_list_ingestion_jobs)

    def create_ingestion_job(
        self,
        *,
        collection: str | None = None,
        metadata: str | None = None,
        files: Mapping[str, FileInput] | None = None,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> RawResponse[models.IngestionJob]:
        """POST /ingestionJobs: Create Ingestion Job"""
        request = _build_create_ingestion_job(collection=collection, metadata=metadata, files=files)
        response = self._client._send(
            request,
            timeout=timeout,
            max_retries=max_retries,
        )
        return RawResponse(response, _parse_create_ingestion_job)

    def get_ingestion_job(
        self,
        job_id: str,
        *,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> RawResponse[models.IngestionJob]:
        """GET /ingestionJobs/{job_id}: Get Ingestion Job"""
        request = _build_get_ingestion_job(job_id)
        response = self._client._send(
            request,
            timeout=timeout,
            max_retries=max_retries,
        )
        return RawResponse(response, _parse_get_ingestion_job)

    def health(
        self,
        *,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> RawResponse[models.Health]:
        """GET /health: Health"""
        request = _build_health()
        response = self._client._send(
            request,
            answers=(503,),
            timeout=timeout,
            max_retries=max_retries,
        )
        return RawResponse(response, _parse_health)


class RagClient:
    """Client of Document retrieval and answer generation service.

    ``api_key`` (default ``$RAG_API_KEY``) is sent as a bearer token;
    ``base_url`` defaults to ``$RAG_BASE_URL``, else http://127.0.0.1:8000;
    ``timeout_seconds`` bounds each request (each method's ``timeout=`` overrides it for a
    call); ``verify_ssl=False`` accepts self-signed hosts; ``transport`` replaces the network
    (e.g. ``httpx.MockTransport`` in tests). ``max_retries``
    (default 2) and ``retry`` (a ``RetryPolicy``: its delays) say how failed requests are
    retried; each method's ``max_retries=`` overrides it for a call. ``event_hooks`` are
    httpx's (``{"request": [...], "response": [...]}``, called for every attempt):
    the place for logging and tracing; ``http_client`` is the underlying ``httpx.Client``.
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
        max_retries: int | None = None,
        retry: RetryPolicy | None = None,
        event_hooks: Mapping[str, Sequence[Callable[..., Any]]] | None = None,
    ) -> None:
        key, url = _settings(api_key, base_url)
        self.base_url = url
        self.timeout_seconds = timeout_seconds
        policy = retry if retry is not None else RetryPolicy()
        if max_retries is not None:
            policy = replace(policy, max_retries=_check_retries(max_retries))
        self.retry = policy
        self._http = httpx.Client(
            base_url=url,
            headers=_headers(key, headers),
            timeout=timeout_seconds,
            verify=verify_ssl,
            transport=transport,
            event_hooks={name: builtins.list(hooks) for name, hooks in (event_hooks or {}).items()},
        )
        self.with_raw_response = _RawRagClient(self)

    @property
    def http_client(self) -> httpx.Client:
        """The ``httpx.Client`` under this client (e.g. for OpenTelemetry's
        ``HTTPXClientInstrumentor.instrument_client``)."""
        return self._http

    def close(self) -> None:
        """Close the connection pool."""
        self._http.close()

    def __enter__(self) -> RagClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _sleep(self, seconds: float) -> None:
        """Wait before a retry (a method of its own so that a test can record the waits)."""
        time.sleep(seconds)

    def _send(
        self,
        request: _Request,
        answers: tuple[int, ...] = (),
        *,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> httpx.Response:
        """The response, after the retries ``RetryPolicy`` allows; raises the typed error of
        a non-2xx status, except ``answers`` (statuses whose body is the operation's success
        body, never retried)."""
        limit = _check_timeout(timeout)
        retries = self.retry.max_retries if max_retries is None else _check_retries(max_retries)
        marks = _bookmarks(request)
        retry = 0
        while True:
            try:
                response = self._http.request(
                    request.method,
                    request.path,
                    params=request.params,
                    headers=request.headers,
                    content=request.content,
                    data=request.data,
                    files=request.files,
                    timeout=limit,
                )
            except httpx.TransportError as exc:
                delay = _next_delay(self.retry, request, retry, retries, marks, error=exc)
                if delay is None:
                    if isinstance(exc, httpx.TimeoutException):
                        raise _timed_out(exc) from exc
                    raise
            else:
                if response.status_code < 400 or response.status_code in answers:
                    response.extensions[RETRIES_EXTENSION] = retry
                    return response
                delay = _next_delay(self.retry, request, retry, retries, marks, response=response)
                if delay is None:
                    raise _error(response)
            retry += 1
            self._sleep(delay)
            _rewind(marks or [])

    def _iter(
        self,
        request: _Request,
        *,
        text: bool,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> Iterator[Any]:
        """Yield a streamed response's chunks as they arrive (text decoded incrementally);
        retried as ``_send`` until the response starts, never once a chunk was yielded."""
        limit = _check_timeout(timeout)
        retries = self.retry.max_retries if max_retries is None else _check_retries(max_retries)
        marks = _bookmarks(request)
        retry = 0
        started = False
        while True:
            try:
                with self._http.stream(
                    request.method,
                    request.path,
                    params=request.params,
                    headers=request.headers,
                    content=request.content,
                    data=request.data,
                    files=request.files,
                    timeout=limit,
                ) as response:
                    if response.status_code >= 400:
                        response.read()
                        delay = _next_delay(
                            self.retry, request, retry, retries, marks, response=response
                        )
                        if delay is None:
                            raise _error(response)
                    else:
                        started = True
                        yield from (response.iter_text() if text else response.iter_bytes())
                        return
            except httpx.TransportError as exc:
                delay = None
                if not started:
                    delay = _next_delay(self.retry, request, retry, retries, marks, error=exc)
                if delay is None:
                    if isinstance(exc, httpx.TimeoutException):
                        raise _timed_out(exc) from exc
                    raise
            retry += 1
            self._sleep(delay)
            _rewind(marks or [])

    def upload_document(
        self,
        file: FileInput,
        *,
        collection: str | None = None,
        metadata: str | None = None,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> models.UploadResult:
        """POST /uploadDocument: Upload Document"""
        request = _build_upload_document(file, collection=collection, metadata=metadata)
        response = self._send(
            request,
            timeout=timeout,
            max_retries=max_retries,
        )
        return _parse_upload_document(response)  # type: ignore[no-any-return]

    def generate(
        self,
        body: models.Prompt | Mapping[str, Any],
        *,
        accept: str = "text/plain",
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> Iterator[str]:
        """POST /generate: Generate Answer"""
        request = _build_generate(body, accept=accept)
        return self._iter(
            request,
            text=True,
            timeout=timeout,
            max_retries=max_retries,
        )

    def document_search(
        self,
        body: models.DocumentSearch | Mapping[str, Any],
        *,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> builtins.list[models.SearchResult]:
        """POST /documentSearch: Document Search"""
        request = _build_document_search(body)
        response = self._send(
            request,
            timeout=timeout,
            max_retries=max_retries,
        )
        return _parse_document_search(response)  # type: ignore[no-any-return]

    def list_documents(
        self,
        *,
        collection: str | None = None,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> builtins.list[models.DocumentInfo]:
        """GET /documents: List Documents"""
        request = _build_list_documents(collection=collection)
        response = self._send(
            request,
            timeout=timeout,
            max_retries=max_retries,
        )
        return _parse_list_documents(response)  # type: ignore[no-any-return]

    def delete_document(
        self,
        document_id: str,
        *,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> None:
        """DELETE /documents/{document_id}: Delete Document"""
        request = _build_delete_document(document_id)
        response = self._send(
            request,
            timeout=timeout,
            max_retries=max_retries,
        )
        return _parse_delete_document(response)  # type: ignore[no-any-return]

    def list_ingestion_jobs(
        self,
        *,
        limit: int | None = None,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> builtins.list[models.IngestionJob]:
        """GET /ingestionJobs: List Ingestion Jobs"""
        request = _build_list_ingestion_jobs(limit=limit)
        response = self._send(
            request,
            timeout=timeout,
            max_retries=max_retries,
        )
        return _parse_list_ingestion_jobs(response)  # type: ignore[no-any-return]

    def create_ingestion_job(
        self,
        *,
        collection: str | None = None,
        metadata: str | None = None,
        files: Mapping[str, FileInput] | None = None,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> models.IngestionJob:
        """POST /ingestionJobs: Create Ingestion Job"""
        request = _build_create_ingestion_job(collection=collection, metadata=metadata, files=files)
        response = self._send(
            request,
            timeout=timeout,
            max_retries=max_retries,
        )
        return _parse_create_ingestion_job(response)  # type: ignore[no-any-return]

    def get_ingestion_job(
        self,
        job_id: str,
        *,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> models.IngestionJob:
        """GET /ingestionJobs/{job_id}: Get Ingestion Job"""
        request = _build_get_ingestion_job(job_id)
        response = self._send(
            request,
            timeout=timeout,
            max_retries=max_retries,
        )
        return _parse_get_ingestion_job(response)  # type: ignore[no-any-return]

    def health(
        self,
        *,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> models.Health:
        """GET /health: Health"""
        request = _build_health()
        response = self._send(
            request,
            answers=(503,),
            timeout=timeout,
            max_retries=max_retries,
        )
        return _parse_health(response)  # type: ignore[no-any-return]


class _AsyncRawRagClient:
    """``client.with_raw_response``: the client's methods answering a ``RawResponse`` (status,
    headers, ``parse()``) instead of the parsed body; streamed methods are not among them."""

    def __init__(self, client: AsyncRagClient) -> None:
        self._client = client

    async def upload_document(
        self,
        file: FileInput,
        *,
        collection: str | None = None,
        metadata: str | None = None,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> RawResponse[models.UploadResult]:
        """POST /uploadDocument: Upload Document"""
        request = _build_upload_document(file, collection=collection, metadata=metadata)
        response = await self._client._send(
            request,
            timeout=timeout,
            max_retries=max_retries,
        )
        return RawResponse(response, _parse_upload_document)

    async def document_search(
        self,
        body: models.DocumentSearch | Mapping[str, Any],
        *,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> RawResponse[builtins.list[models.SearchResult]]:
        """POST /documentSearch: Document Search"""
        request = _build_document_search(body)
        response = await self._client._send(
            request,
            timeout=timeout,
            max_retries=max_retries,
        )
        return RawResponse(response, _parse_document_search)

    async def list_documents(
        self,
        *,
        collection: str | None = None,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> RawResponse[builtins.list[models.DocumentInfo]]:
        """GET /documents: List Documents"""
        request = _build_list_documents(collection=collection)
        response = await self._client._send(
            request,
            timeout=timeout,
            max_retries=max_retries,
        )
        return RawResponse(response, _parse_list_documents)

    async def delete_document(
        self,
        document_id: str,
        *,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> RawResponse[None]:
        """DELETE /documents/{document_id}: Delete Document"""
        request = _build_delete_document(document_id)
        response = await self._client._send(
            request,
            timeout=timeout,
            max_retries=max_retries,
        )
        return RawResponse(response, _parse_delete_document)

    async def list_ingestion_jobs(
        self,
        *,
        limit: int | None = None,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> RawResponse[builtins.list[models.IngestionJob]]:
        """GET /ingestionJobs: List Ingestion Jobs"""
        request = _build_list_ingestion_jobs(limit=limit)
        response = await self._client._send(
            request,
            timeout=timeout,
            max_retries=max_retries,
        )
        return RawResponse(response, _parse_list_ingestion_jobs)

    async def create_ingestion_job(
        self,
        *,
        collection: str | None = None,
        metadata: str | None = None,
        files: Mapping[str, FileInput] | None = None,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> RawResponse[models.IngestionJob]:
        """POST /ingestionJobs: Create Ingestion Job"""
        request = _build_create_ingestion_job(collection=collection, metadata=metadata, files=files)
        response = await self._client._send(
            request,
            timeout=timeout,
            max_retries=max_retries,
        )
        return RawResponse(response, _parse_create_ingestion_job)

    async def get_ingestion_job(
        self,
        job_id: str,
        *,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> RawResponse[models.IngestionJob]:
        """GET /ingestionJobs/{job_id}: Get Ingestion Job"""
        request = _build_get_ingestion_job(job_id)
        response = await self._client._send(
            request,
            timeout=timeout,
            max_retries=max_retries,
        )
        return RawResponse(response, _parse_get_ingestion_job)

    async def health(
        self,
        *,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> RawResponse[models.Health]:
        """GET /health: Health"""
        request = _build_health()
        response = await self._client._send(
            request,
            answers=(503,),
            timeout=timeout,
            max_retries=max_retries,
        )
        return RawResponse(response, _parse_health)


class AsyncRagClient:
    """Asynchronous client of Document retrieval and answer generation service.

    ``api_key`` (default ``$RAG_API_KEY``) is sent as a bearer token;
    ``base_url`` defaults to ``$RAG_BASE_URL``, else http://127.0.0.1:8000;
    ``timeout_seconds`` bounds each request (each method's ``timeout=`` overrides it for a
    call); ``verify_ssl=False`` accepts self-signed hosts; ``transport`` replaces the network
    (e.g. ``httpx.ASGITransport`` in tests). ``max_retries``
    (default 2) and ``retry`` (a ``RetryPolicy``: its delays) say how failed requests are
    retried; each method's ``max_retries=`` overrides it for a call. ``event_hooks`` are
    httpx's (``{"request": [...], "response": [...]}``, called for every attempt, awaited):
    the place for logging and tracing; ``http_client`` is the underlying ``httpx.AsyncClient``.
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
        max_retries: int | None = None,
        retry: RetryPolicy | None = None,
        event_hooks: Mapping[str, Sequence[Callable[..., Any]]] | None = None,
    ) -> None:
        key, url = _settings(api_key, base_url)
        self.base_url = url
        self.timeout_seconds = timeout_seconds
        policy = retry if retry is not None else RetryPolicy()
        if max_retries is not None:
            policy = replace(policy, max_retries=_check_retries(max_retries))
        self.retry = policy
        self._http = httpx.AsyncClient(
            base_url=url,
            headers=_headers(key, headers),
            timeout=timeout_seconds,
            verify=verify_ssl,
            transport=transport,
            event_hooks={name: builtins.list(hooks) for name, hooks in (event_hooks or {}).items()},
        )
        self.with_raw_response = _AsyncRawRagClient(self)

    @property
    def http_client(self) -> httpx.AsyncClient:
        """The ``httpx.AsyncClient`` under this client (e.g. for OpenTelemetry's
        ``HTTPXClientInstrumentor.instrument_client``)."""
        return self._http

    async def close(self) -> None:
        """Close the connection pool."""
        await self._http.aclose()

    async def __aenter__(self) -> AsyncRagClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def _sleep(self, seconds: float) -> None:
        """Wait before a retry (a method of its own so that a test can record the waits)."""
        await asyncio.sleep(seconds)

    async def _send(
        self,
        request: _Request,
        answers: tuple[int, ...] = (),
        *,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> httpx.Response:
        """The response, after the retries ``RetryPolicy`` allows; raises the typed error of
        a non-2xx status, except ``answers`` (statuses whose body is the operation's success
        body, never retried)."""
        limit = _check_timeout(timeout)
        retries = self.retry.max_retries if max_retries is None else _check_retries(max_retries)
        marks = _bookmarks(request)
        retry = 0
        while True:
            try:
                response = await self._http.request(
                    request.method,
                    request.path,
                    params=request.params,
                    headers=request.headers,
                    content=request.content,
                    data=request.data,
                    files=request.files,
                    timeout=limit,
                )
            except httpx.TransportError as exc:
                delay = _next_delay(self.retry, request, retry, retries, marks, error=exc)
                if delay is None:
                    if isinstance(exc, httpx.TimeoutException):
                        raise _timed_out(exc) from exc
                    raise
            else:
                if response.status_code < 400 or response.status_code in answers:
                    response.extensions[RETRIES_EXTENSION] = retry
                    return response
                delay = _next_delay(self.retry, request, retry, retries, marks, response=response)
                if delay is None:
                    raise _error(response)
            retry += 1
            await self._sleep(delay)
            _rewind(marks or [])

    async def _iter(
        self,
        request: _Request,
        *,
        text: bool,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> AsyncIterator[Any]:
        """Yield a streamed response's chunks as they arrive (text decoded incrementally);
        retried as ``_send`` until the response starts, never once a chunk was yielded."""
        limit = _check_timeout(timeout)
        retries = self.retry.max_retries if max_retries is None else _check_retries(max_retries)
        marks = _bookmarks(request)
        retry = 0
        started = False
        while True:
            try:
                async with self._http.stream(
                    request.method,
                    request.path,
                    params=request.params,
                    headers=request.headers,
                    content=request.content,
                    data=request.data,
                    files=request.files,
                    timeout=limit,
                ) as response:
                    if response.status_code >= 400:
                        await response.aread()
                        delay = _next_delay(
                            self.retry, request, retry, retries, marks, response=response
                        )
                        if delay is None:
                            raise _error(response)
                    else:
                        started = True
                        chunks = response.aiter_text() if text else response.aiter_bytes()
                        async for chunk in chunks:
                            yield chunk
                        return
            except httpx.TransportError as exc:
                delay = None
                if not started:
                    delay = _next_delay(self.retry, request, retry, retries, marks, error=exc)
                if delay is None:
                    if isinstance(exc, httpx.TimeoutException):
                        raise _timed_out(exc) from exc
                    raise
            retry += 1
            await self._sleep(delay)
            _rewind(marks or [])

    async def upload_document(
        self,
        file: FileInput,
        *,
        collection: str | None = None,
        metadata: str | None = None,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> models.UploadResult:
        """POST /uploadDocument: Upload Document"""
        request = _build_upload_document(file, collection=collection, metadata=metadata)
        response = await self._send(
            request,
            timeout=timeout,
            max_retries=max_retries,
        )
        return _parse_upload_document(response)  # type: ignore[no-any-return]

    def generate(
        self,
        body: models.Prompt | Mapping[str, Any],
        *,
        accept: str = "text/plain",
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> AsyncIterator[str]:
        """POST /generate: Generate Answer"""
        request = _build_generate(body, accept=accept)
        return self._iter(
            request,
            text=True,
            timeout=timeout,
            max_retries=max_retries,
        )

    async def document_search(
        self,
        body: models.DocumentSearch | Mapping[str, Any],
        *,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> builtins.list[models.SearchResult]:
        """POST /documentSearch: Document Search"""
        request = _build_document_search(body)
        response = await self._send(
            request,
            timeout=timeout,
            max_retries=max_retries,
        )
        return _parse_document_search(response)  # type: ignore[no-any-return]

    async def list_documents(
        self,
        *,
        collection: str | None = None,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> builtins.list[models.DocumentInfo]:
        """GET /documents: List Documents"""
        request = _build_list_documents(collection=collection)
        response = await self._send(
            request,
            timeout=timeout,
            max_retries=max_retries,
        )
        return _parse_list_documents(response)  # type: ignore[no-any-return]

    async def delete_document(
        self,
        document_id: str,
        *,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> None:
        """DELETE /documents/{document_id}: Delete Document"""
        request = _build_delete_document(document_id)
        response = await self._send(
            request,
            timeout=timeout,
            max_retries=max_retries,
        )
        return _parse_delete_document(response)  # type: ignore[no-any-return]

    async def list_ingestion_jobs(
        self,
        *,
        limit: int | None = None,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> builtins.list[models.IngestionJob]:
        """GET /ingestionJobs: List Ingestion Jobs"""
        request = _build_list_ingestion_jobs(limit=limit)
        response = await self._send(
            request,
            timeout=timeout,
            max_retries=max_retries,
        )
        return _parse_list_ingestion_jobs(response)  # type: ignore[no-any-return]

    async def create_ingestion_job(
        self,
        *,
        collection: str | None = None,
        metadata: str | None = None,
        files: Mapping[str, FileInput] | None = None,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> models.IngestionJob:
        """POST /ingestionJobs: Create Ingestion Job"""
        request = _build_create_ingestion_job(collection=collection, metadata=metadata, files=files)
        response = await self._send(
            request,
            timeout=timeout,
            max_retries=max_retries,
        )
        return _parse_create_ingestion_job(response)  # type: ignore[no-any-return]

    async def get_ingestion_job(
        self,
        job_id: str,
        *,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> models.IngestionJob:
        """GET /ingestionJobs/{job_id}: Get Ingestion Job"""
        request = _build_get_ingestion_job(job_id)
        response = await self._send(
            request,
            timeout=timeout,
            max_retries=max_retries,
        )
        return _parse_get_ingestion_job(response)  # type: ignore[no-any-return]

    async def health(
        self,
        *,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> models.Health:
        """GET /health: Health"""
        request = _build_health()
        response = await self._send(
            request,
            answers=(503,),
            timeout=timeout,
            max_retries=max_retries,
        )
        return _parse_health(response)  # type: ignore[no-any-return]
