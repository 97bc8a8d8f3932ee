"""Clients of Agents and Workflows API: ``ServiceClient`` (sync) and ``AsyncServiceClient``.

Generated from specs/agents.openapi.yaml by `make generate`; do not edit. Needs only httpx and
pydantic besides the models beside it::

    with ServiceClient(base_url="http://127.0.0.1:8000") as client:
        ...

Every non-2xx answer raises a ``ServiceError`` subclass carrying ``status``, the parsed
error body (``envelope``), ``request_id`` and, for 429, ``retry_after``:
``ServiceValidationError`` (400/422),
``ServiceAuthError`` (401),
``ServiceForbiddenError`` (403),
``ServiceNotFoundError`` (404),
``ServiceConflictError`` (409),
``ServicePayloadTooLargeError`` (413),
``ServiceUnsupportedMediaTypeError`` (415),
``ServiceRateLimitError`` (429),
``ServiceServerError`` (5xx) and ``ServiceTimeoutError`` (a timeout, ``status`` 0);
any other status raises ``ServiceError`` itself.

Every call is retried (``RetryPolicy``: twice by default, with backoff and jitter, honouring
``Retry-After``) after a 408, 429, 500, 502, 503, 504, connection failure or timeout when
repeating it is safe (idempotent methods; POST and PATCH with an ``Idempotency-Key``). Every
method takes ``timeout=`` (seconds) and ``max_retries=`` for that call. Paged lists have
an ``iter_<method>`` that yields every item, page after page.
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

from generated.agents import models  # noqa: F401
from generated.agents.client_extensions import (
    AsyncWorkflowsExecutionsExtension,
    RunAndWaitResult,
    WorkflowsExecutionsExtension,
)

__all__ = [
    "AsyncServiceClient",
    "ServiceClient",
    "FileInput",
    "RawResponse",
    "RetryPolicy",
    "ServiceError",
    "ServiceValidationError",
    "ServiceAuthError",
    "ServiceForbiddenError",
    "ServiceNotFoundError",
    "ServiceConflictError",
    "ServicePayloadTooLargeError",
    "ServiceUnsupportedMediaTypeError",
    "ServiceRateLimitError",
    "ServiceServerError",
    "ServiceTimeoutError",
]

T = TypeVar("T")
DEFAULT_BASE_URL = "http://127.0.0.1:8090"
ENV_API_KEY = "SERVICE_API_KEY"
ENV_BASE_URL = "SERVICE_BASE_URL"

FileInput = Union[
    bytes, Path, IO[bytes], tuple[str, bytes | IO[bytes]], tuple[str, bytes | IO[bytes], str]
]
"""A file to upload: bytes, a path, a binary file object, or (filename, content[, mime type])."""


# -- errors ------------------------------------------------------------------------------------


class ServiceError(Exception):
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


class ServiceValidationError(ServiceError):
    """400 or 422: the request was invalid."""

    @property
    def issues(self) -> list[Any]:
        """The envelope's ``issues`` (empty when the body has none)."""
        issues = self.envelope.get("issues") if isinstance(self.envelope, dict) else None
        return issues if isinstance(issues, list) else []


class ServiceAuthError(ServiceError):
    """401: missing or wrong credentials."""


class ServiceForbiddenError(ServiceError):
    """403: the credentials may not do this."""


class ServiceNotFoundError(ServiceError):
    """404: no such resource."""


class ServiceConflictError(ServiceError):
    """409: the request conflicts with the resource's current state."""


class ServicePayloadTooLargeError(ServiceError):
    """413: the request body (or a part of it) is too large."""


class ServiceUnsupportedMediaTypeError(ServiceError):
    """415: the request body's content type is not accepted."""


class ServiceRateLimitError(ServiceError):
    """429: too many requests; ``retry_after`` seconds from ``Retry-After``."""


class ServiceServerError(ServiceError):
    """5xx: the server failed."""


class ServiceTimeoutError(ServiceError):
    """The request timed out (``status`` 0)."""


_ERRORS: dict[int, type[ServiceError]] = {
    400: ServiceValidationError,
    422: ServiceValidationError,
    401: ServiceAuthError,
    403: ServiceForbiddenError,
    404: ServiceNotFoundError,
    409: ServiceConflictError,
    413: ServicePayloadTooLargeError,
    415: ServiceUnsupportedMediaTypeError,
    429: ServiceRateLimitError,
}


def _error(response: httpx.Response) -> ServiceError:
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
        kind = ServiceServerError if response.status_code >= 500 else ServiceError
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


def _timed_out(error: httpx.TimeoutException) -> ServiceTimeoutError:
    """What a call raises when its last attempt timed out (other transport errors propagate
    as httpx raised them)."""
    return ServiceTimeoutError(f"Request timed out: {error}", status=0)


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


RETRIES_EXTENSION = "agents_client_retries"
"""The ``httpx.Response.extensions`` key of how many retries a response took."""


def _build_list_agent_executions(
    agent_id: str,
    *,
    status: builtins.list[
        Literal[
            "created",
            "pending",
            "running",
            "waiting",
            "finalizing",
            "completed",
            "failed",
            "cancelled",
            "rejected",
        ]
    ]
    | None = None,
    batch_id: str | None = None,
    example_name: str | None = None,
    example_name_contains: str | None = None,
    created_after: datetime.datetime | None = None,
    created_before: datetime.datetime | None = None,
    completed_after: datetime.datetime | None = None,
    completed_before: datetime.datetime | None = None,
    feedback_status: Literal["open", "resolved", "ignored"] | None = None,
    feedback_rating: Literal["pass", "fail", "partial", "none"] | None = None,
    has_feedback: bool | None = None,
    no_feedback: bool | None = None,
    has_expected: bool | None = None,
    has_expected_json: bool | None = None,
    has_expected_files: bool | None = None,
    feedback_body_contains: str | None = None,
    feedback_created_after: datetime.datetime | None = None,
    feedback_created_before: datetime.datetime | None = None,
    feedback_updated_after: datetime.datetime | None = None,
    feedback_updated_before: datetime.datetime | None = None,
    feedback_resolved_after: datetime.datetime | None = None,
    feedback_resolved_before: datetime.datetime | None = None,
    promoted_to_example: bool | None = None,
    promoted_example_name: str | None = None,
    since_last_resolved: bool | None = None,
    include: builtins.list[Literal["feedback", "expected", "files", "attempts"]] | None = None,
    sort: Literal["createdAt", "completedAt", "status", "exampleName"] | None = None,
    order: Literal["asc", "desc"] | None = None,
    scan_limit: int | None = None,
    limit: int | None = None,
    offset: int | None = None,
) -> _Request:
    request = _Request("GET", f"/api/v1/agents/{_segment(agent_id)}/executions")
    if status is not None:
        request.params["status"] = _text(status)
    if batch_id is not None:
        request.params["batchId"] = _text(batch_id)
    if example_name is not None:
        request.params["exampleName"] = _text(example_name)
    if example_name_contains is not None:
        request.params["exampleNameContains"] = _text(example_name_contains)
    if created_after is not None:
        request.params["createdAfter"] = _text(created_after)
    if created_before is not None:
        request.params["createdBefore"] = _text(created_before)
    if completed_after is not None:
        request.params["completedAfter"] = _text(completed_after)
    if completed_before is not None:
        request.params["completedBefore"] = _text(completed_before)
    if feedback_status is not None:
        request.params["feedbackStatus"] = _text(feedback_status)
    if feedback_rating is not None:
        request.params["feedbackRating"] = _text(feedback_rating)
    if has_feedback is not None:
        request.params["hasFeedback"] = _text(has_feedback)
    if no_feedback is not None:
        request.params["noFeedback"] = _text(no_feedback)
    if has_expected is not None:
        request.params["hasExpected"] = _text(has_expected)
    if has_expected_json is not None:
        request.params["hasExpectedJson"] = _text(has_expected_json)
    if has_expected_files is not None:
        request.params["hasExpectedFiles"] = _text(has_expected_files)
    if feedback_body_contains is not None:
        request.params["feedbackBodyContains"] = _text(feedback_body_contains)
    if feedback_created_after is not None:
        request.params["feedbackCreatedAfter"] = _text(feedback_created_after)
    if feedback_created_before is not None:
        request.params["feedbackCreatedBefore"] = _text(feedback_created_before)
    if feedback_updated_after is not None:
        request.params["feedbackUpdatedAfter"] = _text(feedback_updated_after)
    if feedback_updated_before is not None:
        request.params["feedbackUpdatedBefore"] = _text(feedback_updated_before)
    if feedback_resolved_after is not None:
        request.params["feedbackResolvedAfter"] = _text(feedback_resolved_after)
    if feedback_resolved_before is not None:
        request.params["feedbackResolvedBefore"] = _text(feedback_resolved_before)
    if promoted_to_example is not None:
        request.params["promotedToExample"] = _text(promoted_to_example)
    if promoted_example_name is not None:
        request.params["promotedExampleName"] = _text(promoted_example_name)
    if since_last_resolved is not None:
        request.params["sinceLastResolved"] = _text(since_last_resolved)
    if include is not None:
        request.params["include"] = _text(include)
    if sort is not None:
        request.params["sort"] = _text(sort)
    if order is not None:
        request.params["order"] = _text(order)
    if scan_limit is not None:
        request.params["scanLimit"] = _text(scan_limit)
    if limit is not None:
        request.params["limit"] = _text(limit)
    if offset is not None:
        request.params["offset"] = _text(offset)
    return request


def _build_get_agent_execution(
    execution_id: str,
    *,
    include: builtins.list[Literal["feedback", "expected", "files", "attempts"]] | None = None,
) -> _Request:
    request = _Request("GET", f"/api/v1/agents/executions/{_segment(execution_id)}")
    if include is not None:
        request.params["include"] = _text(include)
    return request


def _build_cancel_agent_execution(execution_id: str) -> _Request:
    request = _Request("POST", f"/api/v1/agents/executions/{_segment(execution_id)}/cancel")
    return request


def _build_rerun_agent_execution(
    execution_id: str, *, idempotency_key: str | None = None, priority: int | None = None
) -> _Request:
    request = _Request("POST", f"/api/v1/agents/executions/{_segment(execution_id)}/rerun")
    if priority is not None:
        request.params["priority"] = _text(priority)
    # a key of its own on every call (a retry of this request resends it unchanged)
    request.headers["Idempotency-Key"] = (
        _text(idempotency_key) if idempotency_key is not None else str(uuid.uuid4())
    )
    return request


def _build_get_agent_execution_feedback(execution_id: str) -> _Request:
    request = _Request("GET", f"/api/v1/agents/executions/{_segment(execution_id)}/feedback")
    return request


def _build_clear_agent_execution_feedback(execution_id: str) -> _Request:
    request = _Request("DELETE", f"/api/v1/agents/executions/{_segment(execution_id)}/feedback")
    return request


def _build_update_agent_execution_feedback(
    execution_id: str, body: models.UpdateAgentExecutionFeedbackBody | Mapping[str, Any]
) -> _Request:
    request = _Request("PATCH", f"/api/v1/agents/executions/{_segment(execution_id)}/feedback")
    if body is not None:
        request.headers["content-type"] = "application/json"
        request.content = _json_bytes(body)
    return request


def _build_list_agent_execution_expected(execution_id: str) -> _Request:
    request = _Request("GET", f"/api/v1/agents/executions/{_segment(execution_id)}/expected")
    return request


def _build_add_agent_execution_expected_file_copy_output_to_expected(
    execution_id: str, body: models.CopyAgentExecutionOutputToExpectedBody | Mapping[str, Any]
) -> _Request:
    request = _Request("POST", f"/api/v1/agents/executions/{_segment(execution_id)}/expected")
    if body is not None:
        request.headers["content-type"] = "application/json"
        request.content = _json_bytes(body)
    return request


def _build_add_agent_execution_expected_file_upload_expected(
    execution_id: str, file: FileInput, *, name: str | None = None
) -> _Request:
    request = _Request("POST", f"/api/v1/agents/executions/{_segment(execution_id)}/expected")
    request.data = {}
    request.files = []
    if file is not None:
        request.files.append(_file("file", file))
    if name is not None:
        request.data["name"] = _text(name)
    return request


def _build_download_agent_execution_expected_file(execution_id: str, filename: str) -> _Request:
    request = _Request(
        "GET", f"/api/v1/agents/executions/{_segment(execution_id)}/expected/{_segment(filename)}"
    )
    return request


def _build_delete_agent_execution_expected_file(execution_id: str, filename: str) -> _Request:
    request = _Request(
        "DELETE",
        f"/api/v1/agents/executions/{_segment(execution_id)}/expected/{_segment(filename)}",
    )
    return request


def _build_rename_agent_execution_expected_file(
    execution_id: str, filename: str, body: models.RenameExpectedFileBody | Mapping[str, Any]
) -> _Request:
    request = _Request(
        "PATCH", f"/api/v1/agents/executions/{_segment(execution_id)}/expected/{_segment(filename)}"
    )
    if body is not None:
        request.headers["content-type"] = "application/json"
        request.content = _json_bytes(body)
    return request


def _build_promote_agent_execution(
    execution_id: str, body: models.PromoteAgentExecutionBody | Mapping[str, Any]
) -> _Request:
    request = _Request("PUT", f"/api/v1/agents/executions/{_segment(execution_id)}/promotion")
    if body is not None:
        request.headers["content-type"] = "application/json"
        request.content = _json_bytes(body)
    return request


def _build_demote_agent_execution(execution_id: str) -> _Request:
    request = _Request("DELETE", f"/api/v1/agents/executions/{_segment(execution_id)}/promotion")
    return request


def _build_download_agent_execution_file(execution_id: str, kind: str, filename: str) -> _Request:
    request = _Request(
        "GET",
        f"/api/v1/agents/executions/{_segment(execution_id)}/files/{_segment(kind)}/{_segment(filename)}",
    )
    return request


def _build_list_agents(
    *,
    search: str | None = None,
    include_archived: bool | None = None,
    limit: int | None = None,
    offset: int | None = None,
) -> _Request:
    request = _Request("GET", "/api/v1/agents")
    if search is not None:
        request.params["search"] = _text(search)
    if include_archived is not None:
        request.params["includeArchived"] = _text(include_archived)
    if limit is not None:
        request.params["limit"] = _text(limit)
    if offset is not None:
        request.params["offset"] = _text(offset)
    return request


def _build_create_agent(
    body: models.CreateAgentBody | Mapping[str, Any], *, idempotency_key: str | None = None
) -> _Request:
    request = _Request("POST", "/api/v1/agents")
    # a key of its own on every call (a retry of this request resends it unchanged)
    request.headers["Idempotency-Key"] = (
        _text(idempotency_key) if idempotency_key is not None else str(uuid.uuid4())
    )
    if body is not None:
        request.headers["content-type"] = "application/json"
        request.content = _json_bytes(body)
    return request


def _build_get_agent(
    agent_id: str, *, include: builtins.list[Literal["files", "dataset"]] | None = None
) -> _Request:
    request = _Request("GET", f"/api/v1/agents/{_segment(agent_id)}")
    if include is not None:
        request.params["include"] = _text(include)
    return request


def _build_update_agent(agent_id: str, body: models.PatchAgentBody | Mapping[str, Any]) -> _Request:
    request = _Request("PATCH", f"/api/v1/agents/{_segment(agent_id)}")
    if body is not None:
        request.headers["content-type"] = "application/json"
        request.content = _json_bytes(body)
    return request


def _build_archive_agent(agent_id: str) -> _Request:
    request = _Request("POST", f"/api/v1/agents/{_segment(agent_id)}/archive")
    return request


def _build_restore_agent(agent_id: str) -> _Request:
    request = _Request("POST", f"/api/v1/agents/{_segment(agent_id)}/restore")
    return request


def _build_run_agent(
    agent_id: str,
    body: models.RunAgentBody | Mapping[str, Any] | None = None,
    *,
    files: Mapping[str, FileInput] | None = None,
    idempotency_key: str | None = None,
    priority: int | None = None,
    wait_for_completion: int | None = None,
) -> _Request:
    request = _Request("POST", f"/api/v1/agents/{_segment(agent_id)}/run")
    if priority is not None:
        request.params["priority"] = _text(priority)
    if wait_for_completion is not None:
        request.params["wait_for_completion"] = _text(wait_for_completion)
    # a key of its own on every call (a retry of this request resends it unchanged)
    request.headers["Idempotency-Key"] = (
        _text(idempotency_key) if idempotency_key is not None else str(uuid.uuid4())
    )
    if files:
        request.data = {"_json": _json_bytes(body).decode()}
        request.files = [_file(key, value) for key, value in files.items()]
        return request
    if body is not None:
        request.headers["content-type"] = "application/json"
        request.content = _json_bytes(body)
    return request


def _build_list_agent_files(
    agent_id: str, *, path: str | None = None, prefix: str | None = None
) -> _Request:
    request = _Request("GET", f"/api/v1/agents/{_segment(agent_id)}/files")
    if path is not None:
        request.params["path"] = _text(path)
    if prefix is not None:
        request.params["prefix"] = _text(prefix)
    return request


def _build_put_agent_file(
    agent_id: str,
    body: models.AgentFileBody | Mapping[str, Any],
    *,
    path: str | None = None,
    prefix: str | None = None,
) -> _Request:
    request = _Request("PUT", f"/api/v1/agents/{_segment(agent_id)}/files")
    if path is not None:
        request.params["path"] = _text(path)
    if prefix is not None:
        request.params["prefix"] = _text(prefix)
    if body is not None:
        request.headers["content-type"] = "application/json"
        request.content = _json_bytes(body)
    return request


def _build_upload_agent_files(
    agent_id: str, body: models.AgentFilesBody | Mapping[str, Any]
) -> _Request:
    request = _Request("POST", f"/api/v1/agents/{_segment(agent_id)}/files")
    if body is not None:
        request.headers["content-type"] = "application/json"
        request.content = _json_bytes(body)
    return request


def _build_list_workflow_executions(
    id: str,
    *,
    status: builtins.list[
        Literal[
            "created",
            "pending",
            "running",
            "waiting",
            "finalizing",
            "completed",
            "failed",
            "cancelled",
            "rejected",
        ]
    ]
    | None = None,
    from_date: str | None = None,
    to_date: str | None = None,
    example_id: str | None = None,
    limit: int | None = None,
    offset: int | None = None,
) -> _Request:
    request = _Request("GET", f"/api/v1/workflows/{_segment(id)}/executions")
    if status is not None:
        request.params["status"] = _text(status)
    if from_date is not None:
        request.params["fromDate"] = _text(from_date)
    if to_date is not None:
        request.params["toDate"] = _text(to_date)
    if example_id is not None:
        request.params["exampleId"] = _text(example_id)
    if limit is not None:
        request.params["limit"] = _text(limit)
    if offset is not None:
        request.params["offset"] = _text(offset)
    return request


def _build_get_workflow_execution(
    execution_id: str, *, include_steps: bool | None = None
) -> _Request:
    request = _Request("GET", f"/api/v1/workflows/executions/{_segment(execution_id)}")
    if include_steps is not None:
        request.params["includeSteps"] = _text(include_steps)
    return request


def _build_cancel_workflow_execution(execution_id: str) -> _Request:
    request = _Request("POST", f"/api/v1/workflows/executions/{_segment(execution_id)}/cancel")
    return request


def _build_list_workflows(
    *,
    search: str | None = None,
    name: str | None = None,
    kind: Literal["workflow", "block"] | None = None,
    include_archived: bool | None = None,
    limit: int | None = None,
    offset: int | None = None,
) -> _Request:
    request = _Request("GET", "/api/v1/workflows")
    if search is not None:
        request.params["search"] = _text(search)
    if name is not None:
        request.params["name"] = _text(name)
    if kind is not None:
        request.params["kind"] = _text(kind)
    if include_archived is not None:
        request.params["includeArchived"] = _text(include_archived)
    if limit is not None:
        request.params["limit"] = _text(limit)
    if offset is not None:
        request.params["offset"] = _text(offset)
    return request


def _build_create_workflow(
    body: models.CreateWorkflowBody | Mapping[str, Any], *, idempotency_key: str | None = None
) -> _Request:
    request = _Request("POST", "/api/v1/workflows")
    # a key of its own on every call (a retry of this request resends it unchanged)
    request.headers["Idempotency-Key"] = (
        _text(idempotency_key) if idempotency_key is not None else str(uuid.uuid4())
    )
    if body is not None:
        request.headers["content-type"] = "application/json"
        request.content = _json_bytes(body)
    return request


def _build_get_workflow(id: str) -> _Request:
    request = _Request("GET", f"/api/v1/workflows/{_segment(id)}")
    return request


def _build_archive_workflow(id: str) -> _Request:
    request = _Request("POST", f"/api/v1/workflows/{_segment(id)}/archive")
    return request


def _build_restore_workflow(id: str) -> _Request:
    request = _Request("POST", f"/api/v1/workflows/{_segment(id)}/restore")
    return request


def _build_run_workflow(
    id: str,
    body: models.RunWorkflowBody | Mapping[str, Any] | None = None,
    *,
    files: Mapping[str, FileInput] | None = None,
    idempotency_key: str | None = None,
    priority: int | None = None,
    version: str | None = None,
    wait_for_completion: int | None = None,
) -> _Request:
    request = _Request("POST", f"/api/v1/workflows/{_segment(id)}/run")
    if priority is not None:
        request.params["priority"] = _text(priority)
    if version is not None:
        request.params["version"] = _text(version)
    if wait_for_completion is not None:
        request.params["wait_for_completion"] = _text(wait_for_completion)
    # a key of its own on every call (a retry of this request resends it unchanged)
    request.headers["Idempotency-Key"] = (
        _text(idempotency_key) if idempotency_key is not None else str(uuid.uuid4())
    )
    if files:
        request.data = {"_json": _json_bytes(body).decode()}
        request.files = [_file(key, value) for key, value in files.items()]
        return request
    if body is not None:
        request.headers["content-type"] = "application/json"
        request.content = _json_bytes(body)
    return request


def _build_list_workflow_versions(
    id: str, *, limit: int | None = None, offset: int | None = None
) -> _Request:
    request = _Request("GET", f"/api/v1/workflows/{_segment(id)}/versions")
    if limit is not None:
        request.params["limit"] = _text(limit)
    if offset is not None:
        request.params["offset"] = _text(offset)
    return request


def _build_release_workflow_version(
    id: str, body: models.ReleaseWorkflowVersionBody | Mapping[str, Any]
) -> _Request:
    request = _Request("POST", f"/api/v1/workflows/{_segment(id)}/versions")
    if body is not None:
        request.headers["content-type"] = "application/json"
        request.content = _json_bytes(body)
    return request


def _build_list_webhooks(*, limit: int | None = None, offset: int | None = None) -> _Request:
    request = _Request("GET", "/api/v1/webhooks")
    if limit is not None:
        request.params["limit"] = _text(limit)
    if offset is not None:
        request.params["offset"] = _text(offset)
    return request


def _build_create_webhook(body: models.CreateWebhookBody | Mapping[str, Any]) -> _Request:
    request = _Request("POST", "/api/v1/webhooks")
    if body is not None:
        request.headers["content-type"] = "application/json"
        request.content = _json_bytes(body)
    return request


def _build_get_webhook(webhook_id: str) -> _Request:
    request = _Request("GET", f"/api/v1/webhooks/{_segment(webhook_id)}")
    return request


def _build_delete_webhook(webhook_id: str) -> _Request:
    request = _Request("DELETE", f"/api/v1/webhooks/{_segment(webhook_id)}")
    return request


def _build_list_webhook_deliveries(
    webhook_id: str,
    *,
    status: Literal["pending", "delivered", "failed"] | None = None,
    limit: int | None = None,
    offset: int | None = None,
) -> _Request:
    request = _Request("GET", f"/api/v1/webhooks/{_segment(webhook_id)}/deliveries")
    if status is not None:
        request.params["status"] = _text(status)
    if limit is not None:
        request.params["limit"] = _text(limit)
    if offset is not None:
        request.params["offset"] = _text(offset)
    return request


def _build_list_schedules(
    *,
    agent_id: str | None = None,
    workflow_id: str | None = None,
    limit: int | None = None,
    offset: int | None = None,
) -> _Request:
    request = _Request("GET", "/api/v1/schedules")
    if agent_id is not None:
        request.params["agentId"] = _text(agent_id)
    if workflow_id is not None:
        request.params["workflowId"] = _text(workflow_id)
    if limit is not None:
        request.params["limit"] = _text(limit)
    if offset is not None:
        request.params["offset"] = _text(offset)
    return request


def _build_create_schedule(body: models.CreateScheduleBody | Mapping[str, Any]) -> _Request:
    request = _Request("POST", "/api/v1/schedules")
    if body is not None:
        request.headers["content-type"] = "application/json"
        request.content = _json_bytes(body)
    return request


def _build_get_schedule(schedule_id: str) -> _Request:
    request = _Request("GET", f"/api/v1/schedules/{_segment(schedule_id)}")
    return request


def _build_delete_schedule(schedule_id: str) -> _Request:
    request = _Request("DELETE", f"/api/v1/schedules/{_segment(schedule_id)}")
    return request


def _build_update_schedule(
    schedule_id: str, body: models.UpdateScheduleBody | Mapping[str, Any]
) -> _Request:
    request = _Request("PATCH", f"/api/v1/schedules/{_segment(schedule_id)}")
    if body is not None:
        request.headers["content-type"] = "application/json"
        request.content = _json_bytes(body)
    return request


def _parse_list_agents(response: httpx.Response) -> Any:
    return models.ListAgentsResponse.model_validate(response.json())


def _parse_create_agent(response: httpx.Response) -> Any:
    return models.CreateAgentResponse.model_validate(response.json())


def _parse_get_agent(response: httpx.Response) -> Any:
    return models.GetAgentResponse.model_validate(response.json())


def _parse_update_agent(response: httpx.Response) -> Any:
    return models.PatchAgentResponse.model_validate(response.json())


def _parse_archive_agent(response: httpx.Response) -> Any:
    return models.AgentResponse.model_validate(response.json())


def _parse_restore_agent(response: httpx.Response) -> Any:
    return models.AgentResponse.model_validate(response.json())


def _parse_run_agent(response: httpx.Response) -> Any:
    return models.RunAgentResponse.model_validate(response.json())


def _parse_list_agent_files(response: httpx.Response) -> Any:
    return models.AgentFilesAnswer.model_validate(response.json())


def _parse_put_agent_file(response: httpx.Response) -> Any:
    return models.PutAgentFileResponse.model_validate(response.json())


def _parse_upload_agent_files(response: httpx.Response) -> Any:
    return models.UploadAgentFilesResponse.model_validate(response.json())


def _parse_list_agent_executions(response: httpx.Response) -> Any:
    return models.ListAgentExecutionsResponse.model_validate(response.json())


def _parse_get_agent_execution(response: httpx.Response) -> Any:
    return models.AgentExecutionResponse.model_validate(response.json())


def _parse_cancel_agent_execution(response: httpx.Response) -> Any:
    return models.CancelAgentExecutionResponse.model_validate(response.json())


def _parse_rerun_agent_execution(response: httpx.Response) -> Any:
    return models.RerunAgentExecutionResponse.model_validate(response.json())


def _parse_get_agent_execution_feedback(response: httpx.Response) -> Any:
    return models.AgentExecutionFeedbackDetail.model_validate(response.json())


def _parse_clear_agent_execution_feedback(response: httpx.Response) -> Any:
    return models.AgentExecutionFeedbackDetail.model_validate(response.json())


def _parse_update_agent_execution_feedback(response: httpx.Response) -> Any:
    return models.AgentExecutionFeedbackDetail.model_validate(response.json())


def _parse_list_agent_execution_expected(response: httpx.Response) -> Any:
    return models.AgentExecutionExpectedArtifacts.model_validate(response.json())


def _parse_add_agent_execution_expected_file(response: httpx.Response) -> Any:
    return models.CreateExpectedFileResponse.model_validate(response.json())


def _parse_download_agent_execution_expected_file(response: httpx.Response) -> Any:
    return response.content


def _parse_delete_agent_execution_expected_file(response: httpx.Response) -> Any:
    return None


def _parse_rename_agent_execution_expected_file(response: httpx.Response) -> Any:
    return models.RenameExpectedFileResponse.model_validate(response.json())


def _parse_promote_agent_execution(response: httpx.Response) -> Any:
    return models.AgentExecutionPromotion.model_validate(response.json())


def _parse_demote_agent_execution(response: httpx.Response) -> Any:
    return models.AgentExecutionDemotion.model_validate(response.json())


def _parse_download_agent_execution_file(response: httpx.Response) -> Any:
    return response.content


def _parse_list_workflows(response: httpx.Response) -> Any:
    return models.ListWorkflowsResponse.model_validate(response.json())


def _parse_create_workflow(response: httpx.Response) -> Any:
    return models.WorkflowSummary.model_validate(response.json())


def _parse_get_workflow(response: httpx.Response) -> Any:
    return models.WorkflowSummary.model_validate(response.json())


def _parse_archive_workflow(response: httpx.Response) -> Any:
    return models.WorkflowSummary.model_validate(response.json())


def _parse_restore_workflow(response: httpx.Response) -> Any:
    return models.WorkflowSummary.model_validate(response.json())


def _parse_run_workflow(response: httpx.Response) -> Any:
    return models.RunWorkflowResponse.model_validate(response.json())


def _parse_list_workflow_versions(response: httpx.Response) -> Any:
    return models.ListVersionsResponse.model_validate(response.json())


def _parse_release_workflow_version(response: httpx.Response) -> Any:
    return models.WorkflowVersion.model_validate(response.json())


def _parse_list_workflow_executions(response: httpx.Response) -> Any:
    return models.ListWorkflowExecutionsResponse.model_validate(response.json())


def _parse_get_workflow_execution(response: httpx.Response) -> Any:
    return models.GetWorkflowExecutionResponse.model_validate(response.json())


def _parse_cancel_workflow_execution(response: httpx.Response) -> Any:
    return models.CancelWorkflowExecutionResponse.model_validate(response.json())


def _parse_list_webhooks(response: httpx.Response) -> Any:
    return models.ListWebhooksResponse.model_validate(response.json())


def _parse_create_webhook(response: httpx.Response) -> Any:
    return models.CreatedWebhook.model_validate(response.json())


def _parse_get_webhook(response: httpx.Response) -> Any:
    return models.Webhook.model_validate(response.json())


def _parse_delete_webhook(response: httpx.Response) -> Any:
    return None


def _parse_list_webhook_deliveries(response: httpx.Response) -> Any:
    return models.ListWebhookDeliveriesResponse.model_validate(response.json())


def _parse_list_schedules(response: httpx.Response) -> Any:
    return models.ListSchedulesResponse.model_validate(response.json())


def _parse_create_schedule(response: httpx.Response) -> Any:
    return models.Schedule.model_validate(response.json())


def _parse_get_schedule(response: httpx.Response) -> Any:
    return models.Schedule.model_validate(response.json())


def _parse_delete_schedule(response: httpx.Response) -> Any:
    return None


def _parse_update_schedule(response: httpx.Response) -> Any:
    return models.Schedule.model_validate(response.json())


# -- clients -----------------------------------------------------------------------------------


def _settings(api_key: str | None, base_url: str | None) -> tuple[str | None, str]:
    key = api_key if api_key is not None else os.environ.get(ENV_API_KEY)
    if not key:
        raise ValueError(f"No API key: pass api_key= or set {ENV_API_KEY}")
    url = base_url or os.environ.get(ENV_BASE_URL) or DEFAULT_BASE_URL
    return key, url.rstrip("/")


def _headers(api_key: str | None, extra: Mapping[str, str] | None) -> dict[str, str]:
    headers = {"user-agent": "agents-client/1.0.0"}
    if api_key:
        headers["authorization"] = f"Bearer {api_key}"
    headers.update(extra or {})
    return headers


class _AgentsExecutions:
    """``agentsexecutions`` operations."""

    def __init__(self, client: ServiceClient) -> None:
        self._client = client

    def list(
        self,
        agent_id: str,
        *,
        status: builtins.list[
            Literal[
                "created",
                "pending",
                "running",
                "waiting",
                "finalizing",
                "completed",
                "failed",
                "cancelled",
                "rejected",
            ]
        ]
        | None = None,
        batch_id: str | None = None,
        example_name: str | None = None,
        example_name_contains: str | None = None,
        created_after: datetime.datetime | None = None,
        created_before: datetime.datetime | None = None,
        completed_after: datetime.datetime | None = None,
        completed_before: datetime.datetime | None = None,
        feedback_status: Literal["open", "resolved", "ignored"] | None = None,
        feedback_rating: Literal["pass", "fail", "partial", "none"] | None = None,
        has_feedback: bool | None = None,
        no_feedback: bool | None = None,
        has_expected: bool | None = None,
        has_expected_json: bool | None = None,
        has_expected_files: bool | None = None,
        feedback_body_contains: str | None = None,
        feedback_created_after: datetime.datetime | None = None,
        feedback_created_before: datetime.datetime | None = None,
        feedback_updated_after: datetime.datetime | None = None,
        feedback_updated_before: datetime.datetime | None = None,
        feedback_resolved_after: datetime.datetime | None = None,
        feedback_resolved_before: datetime.datetime | None = None,
        promoted_to_example: bool | None = None,
        promoted_example_name: str | None = None,
        since_last_resolved: bool | None = None,
        include: builtins.list[Literal["feedback", "expected", "files", "attempts"]] | None = None,
        sort: Literal["createdAt", "completedAt", "status", "exampleName"] | None = None,
        order: Literal["asc", "desc"] | None = None,
        scan_limit: int | None = None,
        limit: int | None = None,
        offset: int | None = None,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> models.ListAgentExecutionsResponse:
        """GET /api/v1/agents/{agentId}/executions: List an agent's executions"""
        request = _build_list_agent_executions(
            agent_id,
            status=status,
            batch_id=batch_id,
            example_name=example_name,
            example_name_contains=example_name_contains,
            created_after=created_after,
            created_before=created_before,
            completed_after=completed_after,
            completed_before=completed_before,
            feedback_status=feedback_status,
            feedback_rating=feedback_rating,
            has_feedback=has_feedback,
            no_feedback=no_feedback,
            has_expected=has_expected,
            has_expected_json=has_expected_json,
            has_expected_files=has_expected_files,
            feedback_body_contains=feedback_body_contains,
            feedback_created_after=feedback_created_after,
            feedback_created_before=feedback_created_before,
            feedback_updated_after=feedback_updated_after,
            feedback_updated_before=feedback_updated_before,
            feedback_resolved_after=feedback_resolved_after,
            feedback_resolved_before=feedback_resolved_before,
            promoted_to_example=promoted_to_example,
            promoted_example_name=promoted_example_name,
            since_last_resolved=since_last_resolved,
            include=include,
            sort=sort,
            order=order,
            scan_limit=scan_limit,
            limit=limit,
            offset=offset,
        )
        response = self._client._send(
            request,
            timeout=timeout,
            max_retries=max_retries,
        )
        return _parse_list_agent_executions(response)  # type: ignore[no-any-return]

    def iter_list(
        self,
        agent_id: str,
        *,
        status: builtins.list[
            Literal[
                "created",
                "pending",
                "running",
                "waiting",
                "finalizing",
                "completed",
                "failed",
                "cancelled",
                "rejected",
            ]
        ]
        | None = None,
        batch_id: str | None = None,
        example_name: str | None = None,
        example_name_contains: str | None = None,
        created_after: datetime.datetime | None = None,
        created_before: datetime.datetime | None = None,
        completed_after: datetime.datetime | None = None,
        completed_before: datetime.datetime | None = None,
        feedback_status: Literal["open", "resolved", "ignored"] | None = None,
        feedback_rating: Literal["pass", "fail", "partial", "none"] | None = None,
        has_feedback: bool | None = None,
        no_feedback: bool | None = None,
        has_expected: bool | None = None,
        has_expected_json: bool | None = None,
        has_expected_files: bool | None = None,
        feedback_body_contains: str | None = None,
        feedback_created_after: datetime.datetime | None = None,
        feedback_created_before: datetime.datetime | None = None,
        feedback_updated_after: datetime.datetime | None = None,
        feedback_updated_before: datetime.datetime | None = None,
        feedback_resolved_after: datetime.datetime | None = None,
        feedback_resolved_before: datetime.datetime | None = None,
        promoted_to_example: bool | None = None,
        promoted_example_name: str | None = None,
        since_last_resolved: bool | None = None,
        include: builtins.list[Literal["feedback", "expected", "files", "attempts"]] | None = None,
        sort: Literal["createdAt", "completedAt", "status", "exampleName"] | None = None,
        order: Literal["asc", "desc"] | None = None,
        scan_limit: int | None = None,
        limit: int | None = None,
        offset: int | None = None,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> Iterator[models.AgentExecutionSummary]:
        """Every item of ``list``, page after page: ``limit`` items a request (default
        200, the most the API allows) from ``offset`` (default 0) to the last page.

        Pages are fetched as the iteration reaches them, each with the call's ``timeout`` and
        retries. Offset paging: items created or deleted during the iteration shift the
        pages after them (an item may be skipped or seen twice)."""
        size = 200 if limit is None else limit
        start = 0 if offset is None else offset
        while True:
            page = self.list(
                agent_id,
                status=status,
                batch_id=batch_id,
                example_name=example_name,
                example_name_contains=example_name_contains,
                created_after=created_after,
                created_before=created_before,
                completed_after=completed_after,
                completed_before=completed_before,
                feedback_status=feedback_status,
                feedback_rating=feedback_rating,
                has_feedback=has_feedback,
                no_feedback=no_feedback,
                has_expected=has_expected,
                has_expected_json=has_expected_json,
                has_expected_files=has_expected_files,
                feedback_body_contains=feedback_body_contains,
                feedback_created_after=feedback_created_after,
                feedback_created_before=feedback_created_before,
                feedback_updated_after=feedback_updated_after,
                feedback_updated_before=feedback_updated_before,
                feedback_resolved_after=feedback_resolved_after,
                feedback_resolved_before=feedback_resolved_before,
                promoted_to_example=promoted_to_example,
                promoted_example_name=promoted_example_name,
                since_last_resolved=since_last_resolved,
                include=include,
                sort=sort,
                order=order,
                scan_limit=scan_limit,
                limit=size,
                offset=start,
                timeout=timeout,
                max_retries=max_retries,
            )
            items = page.executions
            yield from items
            start += len(items)
            if not items or start >= page.total:
                return

    def get(
        self,
        execution_id: str,
        *,
        include: builtins.list[Literal["feedback", "expected", "files", "attempts"]] | None = None,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> models.AgentExecutionResponse:
        """GET /api/v1/agents/executions/{executionId}: Get an agent execution"""
        request = _build_get_agent_execution(execution_id, include=include)
        response = self._client._send(
            request,
            timeout=timeout,
            max_retries=max_retries,
        )
        return _parse_get_agent_execution(response)  # type: ignore[no-any-return]

    def cancel(
        self,
        execution_id: str,
        *,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> models.CancelAgentExecutionResponse:
        """POST /api/v1/agents/executions/{executionId}/cancel: Cancel an agent execution"""
        request = _build_cancel_agent_execution(execution_id)
        response = self._client._send(
            request,
            timeout=timeout,
            max_retries=max_retries,
        )
        return _parse_cancel_agent_execution(response)  # type: ignore[no-any-return]

    def rerun(
        self,
        execution_id: str,
        *,
        idempotency_key: str | None = None,
        priority: int | None = None,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> models.RerunAgentExecutionResponse:
        """POST /api/v1/agents/executions/{executionId}/rerun: Rerun an agent execution"""
        request = _build_rerun_agent_execution(
            execution_id, idempotency_key=idempotency_key, priority=priority
        )
        response = self._client._send(
            request,
            timeout=timeout,
            max_retries=max_retries,
        )
        return _parse_rerun_agent_execution(response)  # type: ignore[no-any-return]

    def get_feedback(
        self,
        execution_id: str,
        *,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> models.AgentExecutionFeedbackDetail:
        """GET /api/v1/agents/executions/{executionId}/feedback: Get an execution's feedback and expected results"""
        request = _build_get_agent_execution_feedback(execution_id)
        response = self._client._send(
            request,
            timeout=timeout,
            max_retries=max_retries,
        )
        return _parse_get_agent_execution_feedback(response)  # type: ignore[no-any-return]

    def clear_feedback(
        self,
        execution_id: str,
        *,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> models.AgentExecutionFeedbackDetail:
        """DELETE /api/v1/agents/executions/{executionId}/feedback: Clear an execution's feedback and expected results"""
        request = _build_clear_agent_execution_feedback(execution_id)
        response = self._client._send(
            request,
            timeout=timeout,
            max_retries=max_retries,
        )
        return _parse_clear_agent_execution_feedback(response)  # type: ignore[no-any-return]

    def update_feedback(
        self,
        execution_id: str,
        body: models.UpdateAgentExecutionFeedbackBody | Mapping[str, Any],
        *,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> models.AgentExecutionFeedbackDetail:
        """PATCH /api/v1/agents/executions/{executionId}/feedback: Create or change an execution's feedback"""
        request = _build_update_agent_execution_feedback(execution_id, body)
        response = self._client._send(
            request,
            timeout=timeout,
            max_retries=max_retries,
        )
        return _parse_update_agent_execution_feedback(response)  # type: ignore[no-any-return]

    def list_expected(
        self,
        execution_id: str,
        *,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> models.AgentExecutionExpectedArtifacts:
        """GET /api/v1/agents/executions/{executionId}/expected: List an execution's expected artifacts"""
        request = _build_list_agent_execution_expected(execution_id)
        response = self._client._send(
            request,
            timeout=timeout,
            max_retries=max_retries,
        )
        return _parse_list_agent_execution_expected(response)  # type: ignore[no-any-return]

    def copy_output_to_expected(
        self,
        execution_id: str,
        body: models.CopyAgentExecutionOutputToExpectedBody | Mapping[str, Any],
        *,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> models.CreateExpectedFileResponse:
        """POST /api/v1/agents/executions/{executionId}/expected: Add an expected file (upload one, or copy an output file)"""
        request = _build_add_agent_execution_expected_file_copy_output_to_expected(
            execution_id, body
        )
        response = self._client._send(
            request,
            timeout=timeout,
            max_retries=max_retries,
        )
        return _parse_add_agent_execution_expected_file(response)  # type: ignore[no-any-return]

    def upload_expected(
        self,
        execution_id: str,
        file: FileInput,
        *,
        name: str | None = None,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> models.CreateExpectedFileResponse:
        """POST /api/v1/agents/executions/{executionId}/expected: Add an expected file (upload one, or copy an output file)"""
        request = _build_add_agent_execution_expected_file_upload_expected(
            execution_id, file, name=name
        )
        response = self._client._send(
            request,
            timeout=timeout,
            max_retries=max_retries,
        )
        return _parse_add_agent_execution_expected_file(response)  # type: ignore[no-any-return]

    def download_expected(
        self,
        execution_id: str,
        filename: str,
        *,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> Iterator[bytes]:
        """GET /api/v1/agents/executions/{executionId}/expected/{filename}: Download an expected file"""
        request = _build_download_agent_execution_expected_file(execution_id, filename)
        return self._client._iter(
            request,
            text=False,
            timeout=timeout,
            max_retries=max_retries,
        )

    def delete_expected(
        self,
        execution_id: str,
        filename: str,
        *,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> None:
        """DELETE /api/v1/agents/executions/{executionId}/expected/{filename}: Delete an expected file"""
        request = _build_delete_agent_execution_expected_file(execution_id, filename)
        response = self._client._send(
            request,
            timeout=timeout,
            max_retries=max_retries,
        )
        return _parse_delete_agent_execution_expected_file(response)  # type: ignore[no-any-return]

    def rename_expected(
        self,
        execution_id: str,
        filename: str,
        body: models.RenameExpectedFileBody | Mapping[str, Any],
        *,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> models.RenameExpectedFileResponse:
        """PATCH /api/v1/agents/executions/{executionId}/expected/{filename}: Rename an expected file"""
        request = _build_rename_agent_execution_expected_file(execution_id, filename, body)
        response = self._client._send(
            request,
            timeout=timeout,
            max_retries=max_retries,
        )
        return _parse_rename_agent_execution_expected_file(response)  # type: ignore[no-any-return]

    def promote(
        self,
        execution_id: str,
        body: models.PromoteAgentExecutionBody | Mapping[str, Any],
        *,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> models.AgentExecutionPromotion:
        """PUT /api/v1/agents/executions/{executionId}/promotion: Promote an execution to a dataset example"""
        request = _build_promote_agent_execution(execution_id, body)
        response = self._client._send(
            request,
            timeout=timeout,
            max_retries=max_retries,
        )
        return _parse_promote_agent_execution(response)  # type: ignore[no-any-return]

    def demote(
        self,
        execution_id: str,
        *,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> models.AgentExecutionDemotion:
        """DELETE /api/v1/agents/executions/{executionId}/promotion: Withdraw an execution's promotion"""
        request = _build_demote_agent_execution(execution_id)
        response = self._client._send(
            request,
            timeout=timeout,
            max_retries=max_retries,
        )
        return _parse_demote_agent_execution(response)  # type: ignore[no-any-return]

    def download_file(
        self,
        execution_id: str,
        kind: str,
        filename: str,
        *,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> Iterator[bytes]:
        """GET /api/v1/agents/executions/{executionId}/files/{kind}/{filename}: Download an execution's file"""
        request = _build_download_agent_execution_file(execution_id, kind, filename)
        return self._client._iter(
            request,
            text=False,
            timeout=timeout,
            max_retries=max_retries,
        )


class _RawAgentsExecutions:
    """``agentsexecutions`` operations answering a ``RawResponse``."""

    def __init__(self, client: ServiceClient) -> None:
        self._client = client

    def list(
        self,
        agent_id: str,
        *,
        status: builtins.list[
            Literal[
                "created",
                "pending",
                "running",
                "waiting",
                "finalizing",
                "completed",
                "failed",
                "cancelled",
                "rejected",
            ]
        ]
        | None = None,
        batch_id: str | None = None,
        example_name: str | None = None,
        example_name_contains: str | None = None,
        created_after: datetime.datetime | None = None,
        created_before: datetime.datetime | None = None,
        completed_after: datetime.datetime | None = None,
        completed_before: datetime.datetime | None = None,
        feedback_status: Literal["open", "resolved", "ignored"] | None = None,
        feedback_rating: Literal["pass", "fail", "partial", "none"] | None = None,
        has_feedback: bool | None = None,
        no_feedback: bool | None = None,
        has_expected: bool | None = None,
        has_expected_json: bool | None = None,
        has_expected_files: bool | None = None,
        feedback_body_contains: str | None = None,
        feedback_created_after: datetime.datetime | None = None,
        feedback_created_before: datetime.datetime | None = None,
        feedback_updated_after: datetime.datetime | None = None,
        feedback_updated_before: datetime.datetime | None = None,
        feedback_resolved_after: datetime.datetime | None = None,
        feedback_resolved_before: datetime.datetime | None = None,
        promoted_to_example: bool | None = None,
        promoted_example_name: str | None = None,
        since_last_resolved: bool | None = None,
        include: builtins.list[Literal["feedback", "expected", "files", "attempts"]] | None = None,
        sort: Literal["createdAt", "completedAt", "status", "exampleName"] | None = None,
        order: Literal["asc", "desc"] | None = None,
        scan_limit: int | None = None,
        limit: int | None = None,
        offset: int | None = None,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> RawResponse[models.ListAgentExecutionsResponse]:
        """GET /api/v1/agents/{agentId}/executions: List an agent's executions"""
        request = _build_list_agent_executions(
            agent_id,
            status=status,
            batch_id=batch_id,
            example_name=example_name,
            example_name_contains=example_name_contains,
            created_after=created_after,
            created_before=created_before,
            completed_after=completed_after,
            completed_before=completed_before,
            feedback_status=feedback_status,
            feedback_rating=feedback_rating,
            has_feedback=has_feedback,
            no_feedback=no_feedback,
            has_expected=has_expected,
            has_expected_json=has_expected_json,
            has_expected_files=has_expected_files,
            feedback_body_contains=feedback_body_contains,
            feedback_created_after=feedback_created_after,
            feedback_created_before=feedback_created_before,
            feedback_updated_after=feedback_updated_after,
            feedback_updated_before=feedback_updated_before,
            feedback_resolved_after=feedback_resolved_after,
            feedback_resolved_before=feedback_resolved_before,
            promoted_to_example=promoted_to_example,
            promoted_example_name=promoted_example_name,
            since_last_resolved=since_last_resolved,
            include=include,
            sort=sort,
            order=order,
            scan_limit=scan_limit,
            limit=limit,
            offset=offset,
        )
        response = self._client._send(
            request,
            timeout=timeout,
            max_retries=max_retries,
        )
        return RawResponse(response, _parse_list_agent_executions)

    def get(
        self,
        execution_id: str,
        *,
        include: builtins.list[Literal["feedback", "expected", "files", "attempts"]] | None = None,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> RawResponse[models.AgentExecutionResponse]:
        """GET /api/v1/agents/executions/{executionId}: Get an agent execution"""
        request = _build_get_agent_execution(execution_id, include=include)
        response = self._client._send(
            request,
            timeout=timeout,
            max_retries=max_retries,
        )
        return RawResponse(response, _parse_get_agent_execution)

    def cancel(
        self,
        execution_id: str,
        *,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> RawResponse[models.CancelAgentExecutionResponse]:
        """POST /api/v1/agents/executions/{executionId}/cancel: Cancel an agent execution"""
        request = _build_cancel_agent_execution(execution_id)
        response = self._client._send(
            request,
            timeout=timeout,
            max_retries=max_retries,
        )
        return RawResponse(response, _parse_cancel_agent_execution)

    def rerun(
        self,
        execution_id: str,
        *,
        idempotency_key: str | None = None,
        priority: int | None = None,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> RawResponse[models.RerunAgentExecutionResponse]:
        """POST /api/v1/agents/executions/{executionId}/rerun: Rerun an agent execution"""
        request = _build_rerun_agent_execution(
            execution_id, idempotency_key=idempotency_key, priority=priority
        )
        response = self._client._send(
            request,
            timeout=timeout,
            max_retries=max_retries,
        )
        return RawResponse(response, _parse_rerun_agent_execution)

    def get_feedback(
        self,
        execution_id: str,
        *,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> RawResponse[models.AgentExecutionFeedbackDetail]:
        """GET /api/v1/agents/executions/{executionId}/feedback: Get an execution's feedback and expected results"""
        request = _build_get_agent_execution_feedback(execution_id)
        response = self._client._send(
            request,
            timeout=timeout,
            max_retries=max_retries,
        )
        return RawResponse(response, _parse_get_agent_execution_feedback)

    def clear_feedback(
        self,
        execution_id: str,
        *,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> RawResponse[models.AgentExecutionFeedbackDetail]:
        """DELETE /api/v1/agents/executions/{executionId}/feedback: Clear an execution's feedback and expected results"""
        request = _build_clear_agent_execution_feedback(execution_id)
        response = self._client._send(
            request,
            timeout=timeout,
            max_retries=max_retries,
        )
        return RawResponse(response, _parse_clear_agent_execution_feedback)

    def update_feedback(
        self,
        execution_id: str,
        body: models.UpdateAgentExecutionFeedbackBody | Mapping[str, Any],
        *,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> RawResponse[models.AgentExecutionFeedbackDetail]:
        """PATCH /api/v1/agents/executions/{executionId}/feedback: Create or change an execution's feedback"""
        request = _build_update_agent_execution_feedback(execution_id, body)
        response = self._client._send(
            request,
            timeout=timeout,
            max_retries=max_retries,
        )
        return RawResponse(response, _parse_update_agent_execution_feedback)

    def list_expected(
        self,
        execution_id: str,
        *,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> RawResponse[models.AgentExecutionExpectedArtifacts]:
        """GET /api/v1/agents/executions/{executionId}/expected: List an execution's expected artifacts"""
        request = _build_list_agent_execution_expected(execution_id)
        response = self._client._send(
            request,
            timeout=timeout,
            max_retries=max_retries,
        )
        return RawResponse(response, _parse_list_agent_execution_expected)

    def copy_output_to_expected(
        self,
        execution_id: str,
        body: models.CopyAgentExecutionOutputToExpectedBody | Mapping[str, Any],
        *,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> RawResponse[models.CreateExpectedFileResponse]:
        """POST /api/v1/agents/executions/{executionId}/expected: Add an expected file (upload one, or copy an output file)"""
        request = _build_add_agent_execution_expected_file_copy_output_to_expected(
            execution_id, body
        )
        response = self._client._send(
            request,
            timeout=timeout,
            max_retries=max_retries,
        )
        return RawResponse(response, _parse_add_agent_execution_expected_file)

    def upload_expected(
        self,
        execution_id: str,
        file: FileInput,
        *,
        name: str | None = None,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> RawResponse[models.CreateExpectedFileResponse]:
        """POST /api/v1/agents/executions/{executionId}/expected: Add an expected file (upload one, or copy an output file)"""
        request = _build_add_agent_execution_expected_file_upload_expected(
            execution_id, file, name=name
        )
        response = self._client._send(
            request,
            timeout=timeout,
            max_retries=max_retries,
        )
        return RawResponse(response, _parse_add_agent_execution_expected_file)

    def delete_expected(
        self,
        execution_id: str,
        filename: str,
        *,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> RawResponse[None]:
        """DELETE /api/v1/agents/executions/{executionId}/expected/{filename}: Delete an expected file"""
        request = _build_delete_agent_execution_expected_file(execution_id, filename)
        response = self._client._send(
            request,
            timeout=timeout,
            max_retries=max_retries,
        )
        return RawResponse(response, _parse_delete_agent_execution_expected_file)

    def rename_expected(
        self,
        execution_id: str,
        filename: str,
        body: models.RenameExpectedFileBody | Mapping[str, Any],
        *,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> RawResponse[models.RenameExpectedFileResponse]:
        """PATCH /api/v1/agents/executions/{executionId}/expected/{filename}: Rename an expected file"""
        request = _build_rename_agent_execution_expected_file(execution_id, filename, body)
        response = self._client._send(
            request,
            timeout=timeout,
            max_retries=max_retries,
        )
        return RawResponse(response, _parse_rename_agent_execution_expected_file)

    def promote(
        self,
        execution_id: str,
        body: models.PromoteAgentExecutionBody | Mapping[str, Any],
        *,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> RawResponse[models.AgentExecutionPromotion]:
        """PUT /api/v1/agents/executions/{executionId}/promotion: Promote an execution to a dataset example"""
        request = _build_promote_agent_execution(execution_id, body)
        response = self._client._send(
            request,
            timeout=timeout,
            max_retries=max_retries,
        )
        return RawResponse(response, _parse_promote_agent_execution)

    def demote(
        self,
        execution_id: str,
        *,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> RawResponse[models.AgentExecutionDemotion]:
        """DELETE /api/v1/agents/executions/{executionId}/promotion: Withdraw an execution's promotion"""
        request = _build_demote_agent_execution(execution_id)
        response = self._client._send(
            request,
            timeout=timeout,
            max_retries=max_retries,
        )
        return RawResponse(response, _parse_demote_agent_execution)


class _Agents:
    """``agents`` operations."""

    def __init__(self, client: ServiceClient) -> None:
        self._client = client
        self.executions = _AgentsExecutions(client)

    def list(
        self,
        *,
        search: str | None = None,
        include_archived: bool | None = None,
        limit: int | None = None,
        offset: int | None = None,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> models.ListAgentsResponse:
        """GET /api/v1/agents: List agents"""
        request = _build_list_agents(
            search=search, include_archived=include_archived, limit=limit, offset=offset
        )
        response = self._client._send(
            request,
            timeout=timeout,
            max_retries=max_retries,
        )
        return _parse_list_agents(response)  # type: ignore[no-any-return]

    def iter_list(
        self,
        *,
        search: str | None = None,
        include_archived: bool | None = None,
        limit: int | None = None,
        offset: int | None = None,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> Iterator[models.AgentSummary]:
        """Every item of ``list``, page after page: ``limit`` items a request (default
        200, the most the API allows) from ``offset`` (default 0) to the last page.

        Pages are fetched as the iteration reaches them, each with the call's ``timeout`` and
        retries. Offset paging: items created or deleted during the iteration shift the
        pages after them (an item may be skipped or seen twice)."""
        size = 200 if limit is None else limit
        start = 0 if offset is None else offset
        while True:
            page = self.list(
                search=search,
                include_archived=include_archived,
                limit=size,
                offset=start,
                timeout=timeout,
                max_retries=max_retries,
            )
            items = page.data
            yield from items
            start += len(items)
            if not items or start >= page.total:
                return

    def create(
        self,
        body: models.CreateAgentBody | Mapping[str, Any],
        *,
        idempotency_key: str | None = None,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> models.CreateAgentResponse:
        """POST /api/v1/agents: Create an agent"""
        request = _build_create_agent(body, idempotency_key=idempotency_key)
        response = self._client._send(
            request,
            timeout=timeout,
            max_retries=max_retries,
        )
        return _parse_create_agent(response)  # type: ignore[no-any-return]

    def get(
        self,
        agent_id: str,
        *,
        include: builtins.list[Literal["files", "dataset"]] | None = None,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> models.GetAgentResponse:
        """GET /api/v1/agents/{agentId}: Get an agent"""
        request = _build_get_agent(agent_id, include=include)
        response = self._client._send(
            request,
            timeout=timeout,
            max_retries=max_retries,
        )
        return _parse_get_agent(response)  # type: ignore[no-any-return]

    def update(
        self,
        agent_id: str,
        body: models.PatchAgentBody | Mapping[str, Any],
        *,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> models.PatchAgentResponse:
        """PATCH /api/v1/agents/{agentId}: Update an agent"""
        request = _build_update_agent(agent_id, body)
        response = self._client._send(
            request,
            timeout=timeout,
            max_retries=max_retries,
        )
        return _parse_update_agent(response)  # type: ignore[no-any-return]

    def archive(
        self,
        agent_id: str,
        *,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> models.AgentResponse:
        """POST /api/v1/agents/{agentId}/archive: Archive an agent"""
        request = _build_archive_agent(agent_id)
        response = self._client._send(
            request,
            timeout=timeout,
            max_retries=max_retries,
        )
        return _parse_archive_agent(response)  # type: ignore[no-any-return]

    def restore(
        self,
        agent_id: str,
        *,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> models.AgentResponse:
        """POST /api/v1/agents/{agentId}/restore: Restore an archived agent"""
        request = _build_restore_agent(agent_id)
        response = self._client._send(
            request,
            timeout=timeout,
            max_retries=max_retries,
        )
        return _parse_restore_agent(response)  # type: ignore[no-any-return]

    def run(
        self,
        agent_id: str,
        body: models.RunAgentBody | Mapping[str, Any] | None = None,
        *,
        files: Mapping[str, FileInput] | None = None,
        idempotency_key: str | None = None,
        priority: int | None = None,
        wait_for_completion: int | None = None,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> models.RunAgentResponse:
        """POST /api/v1/agents/{agentId}/run: Run an agent"""
        request = _build_run_agent(
            agent_id,
            body,
            files=files,
            idempotency_key=idempotency_key,
            priority=priority,
            wait_for_completion=wait_for_completion,
        )
        response = self._client._send(
            request,
            timeout=timeout,
            max_retries=max_retries,
        )
        return _parse_run_agent(response)  # type: ignore[no-any-return]

    def list_files(
        self,
        agent_id: str,
        *,
        path: str | None = None,
        prefix: str | None = None,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> models.AgentFilesAnswer:
        """GET /api/v1/agents/{agentId}/files: List the agent's live files, or read one"""
        request = _build_list_agent_files(agent_id, path=path, prefix=prefix)
        response = self._client._send(
            request,
            timeout=timeout,
            max_retries=max_retries,
        )
        return _parse_list_agent_files(response)  # type: ignore[no-any-return]

    def put_file(
        self,
        agent_id: str,
        body: models.AgentFileBody | Mapping[str, Any],
        *,
        path: str | None = None,
        prefix: str | None = None,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> models.PutAgentFileResponse:
        """PUT /api/v1/agents/{agentId}/files: Write one live file"""
        request = _build_put_agent_file(agent_id, body, path=path, prefix=prefix)
        response = self._client._send(
            request,
            timeout=timeout,
            max_retries=max_retries,
        )
        return _parse_put_agent_file(response)  # type: ignore[no-any-return]

    def upload_files(
        self,
        agent_id: str,
        body: models.AgentFilesBody | Mapping[str, Any],
        *,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> models.UploadAgentFilesResponse:
        """POST /api/v1/agents/{agentId}/files: Write several live files"""
        request = _build_upload_agent_files(agent_id, body)
        response = self._client._send(
            request,
            timeout=timeout,
            max_retries=max_retries,
        )
        return _parse_upload_agent_files(response)  # type: ignore[no-any-return]


class _RawAgents:
    """``agents`` operations answering a ``RawResponse``."""

    def __init__(self, client: ServiceClient) -> None:
        self._client = client
        self.executions = _RawAgentsExecutions(client)

    def list(
        self,
        *,
        search: str | None = None,
        include_archived: bool | None = None,
        limit: int | None = None,
        offset: int | None = None,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> RawResponse[models.ListAgentsResponse]:
        """GET /api/v1/agents: List agents"""
        request = _build_list_agents(
            search=search, include_archived=include_archived, limit=limit, offset=offset
        )
        response = self._client._send(
            request,
            timeout=timeout,
            max_retries=max_retries,
        )
        return RawResponse(response, _parse_list_agents)

    def create(
        self,
        body: models.CreateAgentBody | Mapping[str, Any],
        *,
        idempotency_key: str | None = None,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> RawResponse[models.CreateAgentResponse]:
        """POST /api/v1/agents: Create an agent"""
        request = _build_create_agent(body, idempotency_key=idempotency_key)
        response = self._client._send(
            request,
            timeout=timeout,
            max_retries=max_retries,
        )
        return RawResponse(response, _parse_create_agent)

    def get(
        self,
        agent_id: str,
        *,
        include: builtins.list[Literal["files", "dataset"]] | None = None,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> RawResponse[models.GetAgentResponse]:
        """GET /api/v1/agents/{agentId}: Get an agent"""
        request = _build_get_agent(agent_id, include=include)
        response = self._client._send(
            request,
            timeout=timeout,
            max_retries=max_retries,
        )
        return RawResponse(response, _parse_get_agent)

    def update(
        self,
        agent_id: str,
        body: models.PatchAgentBody | Mapping[str, Any],
        *,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> RawResponse[models.PatchAgentResponse]:
        """PATCH /api/v1/agents/{agentId}: Update an agent"""
        request = _build_update_agent(agent_id, body)
        response = self._client._send(
            request,
            timeout=timeout,
            max_retries=max_retries,
        )
        return RawResponse(response, _parse_update_agent)

    def archive(
        self,
        agent_id: str,
        *,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> RawResponse[models.AgentResponse]:
        """POST /api/v1/agents/{agentId}/archive: Archive an agent"""
        request = _build_archive_agent(agent_id)
        response = self._client._send(
            request,
            timeout=timeout,
            max_retries=max_retries,
        )
        return RawResponse(response, _parse_archive_agent)

    def restore(
        self,
        agent_id: str,
        *,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> RawResponse[models.AgentResponse]:
        """POST /api/v1/agents/{agentId}/restore: Restore an archived agent"""
        request = _build_restore_agent(agent_id)
        response = self._client._send(
            request,
            timeout=timeout,
            max_retries=max_retries,
        )
        return RawResponse(response, _parse_restore_agent)

    def run(
        self,
        agent_id: str,
        body: models.RunAgentBody | Mapping[str, Any] | None = None,
        *,
        files: Mapping[str, FileInput] | None = None,
        idempotency_key: str | None = None,
        priority: int | None = None,
        wait_for_completion: int | None = None,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> RawResponse[models.RunAgentResponse]:
        """POST /api/v1/agents/{agentId}/run: Run an agent"""
        request = _build_run_agent(
            agent_id,
            body,
            files=files,
            idempotency_key=idempotency_key,
            priority=priority,
            wait_for_completion=wait_for_completion,
        )
        response = self._client._send(
            request,
            timeout=timeout,
            max_retries=max_retries,
        )
        return RawResponse(response, _parse_run_agent)

    def list_files(
        self,
        agent_id: str,
        *,
        path: str | None = None,
        prefix: str | None = None,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> RawResponse[models.AgentFilesAnswer]:
        """GET /api/v1/agents/{agentId}/files: List the agent's live files, or read one"""
        request = _build_list_agent_files(agent_id, path=path, prefix=prefix)
        response = self._client._send(
            request,
            timeout=timeout,
            max_retries=max_retries,
        )
        return RawResponse(response, _parse_list_agent_files)

    def put_file(
        self,
        agent_id: str,
        body: models.AgentFileBody | Mapping[str, Any],
        *,
        path: str | None = None,
        prefix: str | None = None,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> RawResponse[models.PutAgentFileResponse]:
        """PUT /api/v1/agents/{agentId}/files: Write one live file"""
        request = _build_put_agent_file(agent_id, body, path=path, prefix=prefix)
        response = self._client._send(
            request,
            timeout=timeout,
            max_retries=max_retries,
        )
        return RawResponse(response, _parse_put_agent_file)

    def upload_files(
        self,
        agent_id: str,
        body: models.AgentFilesBody | Mapping[str, Any],
        *,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> RawResponse[models.UploadAgentFilesResponse]:
        """POST /api/v1/agents/{agentId}/files: Write several live files"""
        request = _build_upload_agent_files(agent_id, body)
        response = self._client._send(
            request,
            timeout=timeout,
            max_retries=max_retries,
        )
        return RawResponse(response, _parse_upload_agent_files)


class _WorkflowsExecutions(WorkflowsExecutionsExtension):
    """``workflowsexecutions`` operations."""

    def __init__(self, client: ServiceClient) -> None:
        self._client = client

    def list(
        self,
        id: str,
        *,
        status: builtins.list[
            Literal[
                "created",
                "pending",
                "running",
                "waiting",
                "finalizing",
                "completed",
                "failed",
                "cancelled",
                "rejected",
            ]
        ]
        | None = None,
        from_date: str | None = None,
        to_date: str | None = None,
        example_id: str | None = None,
        limit: int | None = None,
        offset: int | None = None,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> models.ListWorkflowExecutionsResponse:
        """GET /api/v1/workflows/{id}/executions: List a workflow's executions"""
        request = _build_list_workflow_executions(
            id,
            status=status,
            from_date=from_date,
            to_date=to_date,
            example_id=example_id,
            limit=limit,
            offset=offset,
        )
        response = self._client._send(
            request,
            timeout=timeout,
            max_retries=max_retries,
        )
        return _parse_list_workflow_executions(response)  # type: ignore[no-any-return]

    def iter_list(
        self,
        id: str,
        *,
        status: builtins.list[
            Literal[
                "created",
                "pending",
                "running",
                "waiting",
                "finalizing",
                "completed",
                "failed",
                "cancelled",
                "rejected",
            ]
        ]
        | None = None,
        from_date: str | None = None,
        to_date: str | None = None,
        example_id: str | None = None,
        limit: int | None = None,
        offset: int | None = None,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> Iterator[models.ExecutionSummary]:
        """Every item of ``list``, page after page: ``limit`` items a request (default
        100, the most the API allows) from ``offset`` (default 0) to the last page.

        Pages are fetched as the iteration reaches them, each with the call's ``timeout`` and
        retries. Offset paging: items created or deleted during the iteration shift the
        pages after them (an item may be skipped or seen twice)."""
        size = 100 if limit is None else limit
        start = 0 if offset is None else offset
        while True:
            page = self.list(
                id,
                status=status,
                from_date=from_date,
                to_date=to_date,
                example_id=example_id,
                limit=size,
                offset=start,
                timeout=timeout,
                max_retries=max_retries,
            )
            items = page.data
            yield from items
            start += len(items)
            if not items or start >= page.total:
                return

    def get(
        self,
        execution_id: str,
        *,
        include_steps: bool | None = None,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> models.GetWorkflowExecutionResponse:
        """GET /api/v1/workflows/executions/{executionId}: Get a workflow execution"""
        request = _build_get_workflow_execution(execution_id, include_steps=include_steps)
        response = self._client._send(
            request,
            timeout=timeout,
            max_retries=max_retries,
        )
        return _parse_get_workflow_execution(response)  # type: ignore[no-any-return]

    def cancel(
        self,
        execution_id: str,
        *,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> models.CancelWorkflowExecutionResponse:
        """POST /api/v1/workflows/executions/{executionId}/cancel: Cancel a workflow execution"""
        request = _build_cancel_workflow_execution(execution_id)
        response = self._client._send(
            request,
            timeout=timeout,
            max_retries=max_retries,
        )
        return _parse_cancel_workflow_execution(response)  # type: ignore[no-any-return]


class _RawWorkflowsExecutions:
    """``workflowsexecutions`` operations answering a ``RawResponse``."""

    def __init__(self, client: ServiceClient) -> None:
        self._client = client

    def list(
        self,
        id: str,
        *,
        status: builtins.list[
            Literal[
                "created",
                "pending",
                "running",
                "waiting",
                "finalizing",
                "completed",
                "failed",
                "cancelled",
                "rejected",
            ]
        ]
        | None = None,
        from_date: str | None = None,
        to_date: str | None = None,
        example_id: str | None = None,
        limit: int | None = None,
        offset: int | None = None,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> RawResponse[models.ListWorkflowExecutionsResponse]:
        """GET /api/v1/workflows/{id}/executions: List a workflow's executions"""
        request = _build_list_workflow_executions(
            id,
            status=status,
            from_date=from_date,
            to_date=to_date,
            example_id=example_id,
            limit=limit,
            offset=offset,
        )
        response = self._client._send(
            request,
            timeout=timeout,
            max_retries=max_retries,
        )
        return RawResponse(response, _parse_list_workflow_executions)

    def get(
        self,
        execution_id: str,
        *,
        include_steps: bool | None = None,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> RawResponse[models.GetWorkflowExecutionResponse]:
        """GET /api/v1/workflows/executions/{executionId}: Get a workflow execution"""
        request = _build_get_workflow_execution(execution_id, include_steps=include_steps)
        response = self._client._send(
            request,
            timeout=timeout,
            max_retries=max_retries,
        )
        return RawResponse(response, _parse_get_workflow_execution)

    def cancel(
        self,
        execution_id: str,
        *,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> RawResponse[models.CancelWorkflowExecutionResponse]:
        """POST /api/v1/workflows/executions/{executionId}/cancel: Cancel a workflow execution"""
        request = _build_cancel_workflow_execution(execution_id)
        response = self._client._send(
            request,
            timeout=timeout,
            max_retries=max_retries,
        )
        return RawResponse(response, _parse_cancel_workflow_execution)


class _Workflows:
    """``workflows`` operations."""

    def __init__(self, client: ServiceClient) -> None:
        self._client = client
        self.executions = _WorkflowsExecutions(client)

    def list(
        self,
        *,
        search: str | None = None,
        name: str | None = None,
        kind: Literal["workflow", "block"] | None = None,
        include_archived: bool | None = None,
        limit: int | None = None,
        offset: int | None = None,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> models.ListWorkflowsResponse:
        """GET /api/v1/workflows: List workflows"""
        request = _build_list_workflows(
            search=search,
            name=name,
            kind=kind,
            include_archived=include_archived,
            limit=limit,
            offset=offset,
        )
        response = self._client._send(
            request,
            timeout=timeout,
            max_retries=max_retries,
        )
        return _parse_list_workflows(response)  # type: ignore[no-any-return]

    def iter_list(
        self,
        *,
        search: str | None = None,
        name: str | None = None,
        kind: Literal["workflow", "block"] | None = None,
        include_archived: bool | None = None,
        limit: int | None = None,
        offset: int | None = None,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> Iterator[models.WorkflowSummary]:
        """Every item of ``list``, page after page: ``limit`` items a request (default
        100, the most the API allows) from ``offset`` (default 0) to the last page.

        Pages are fetched as the iteration reaches them, each with the call's ``timeout`` and
        retries. Offset paging: items created or deleted during the iteration shift the
        pages after them (an item may be skipped or seen twice)."""
        size = 100 if limit is None else limit
        start = 0 if offset is None else offset
        while True:
            page = self.list(
                search=search,
                name=name,
                kind=kind,
                include_archived=include_archived,
                limit=size,
                offset=start,
                timeout=timeout,
                max_retries=max_retries,
            )
            items = page.data
            yield from items
            start += len(items)
            if not items or start >= page.total:
                return

    def create(
        self,
        body: models.CreateWorkflowBody | Mapping[str, Any],
        *,
        idempotency_key: str | None = None,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> models.WorkflowSummary:
        """POST /api/v1/workflows: Create a workflow"""
        request = _build_create_workflow(body, idempotency_key=idempotency_key)
        response = self._client._send(
            request,
            timeout=timeout,
            max_retries=max_retries,
        )
        return _parse_create_workflow(response)  # type: ignore[no-any-return]

    def get(
        self,
        id: str,
        *,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> models.WorkflowSummary:
        """GET /api/v1/workflows/{id}: Get a workflow"""
        request = _build_get_workflow(id)
        response = self._client._send(
            request,
            timeout=timeout,
            max_retries=max_retries,
        )
        return _parse_get_workflow(response)  # type: ignore[no-any-return]

    def archive(
        self,
        id: str,
        *,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> models.WorkflowSummary:
        """POST /api/v1/workflows/{id}/archive: Archive a workflow"""
        request = _build_archive_workflow(id)
        response = self._client._send(
            request,
            timeout=timeout,
            max_retries=max_retries,
        )
        return _parse_archive_workflow(response)  # type: ignore[no-any-return]

    def restore(
        self,
        id: str,
        *,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> models.WorkflowSummary:
        """POST /api/v1/workflows/{id}/restore: Restore an archived workflow"""
        request = _build_restore_workflow(id)
        response = self._client._send(
            request,
            timeout=timeout,
            max_retries=max_retries,
        )
        return _parse_restore_workflow(response)  # type: ignore[no-any-return]

    def run(
        self,
        id: str,
        body: models.RunWorkflowBody | Mapping[str, Any] | None = None,
        *,
        files: Mapping[str, FileInput] | None = None,
        idempotency_key: str | None = None,
        priority: int | None = None,
        version: str | None = None,
        wait_for_completion: int | None = None,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> models.RunWorkflowResponse:
        """POST /api/v1/workflows/{id}/run: Run a workflow"""
        request = _build_run_workflow(
            id,
            body,
            files=files,
            idempotency_key=idempotency_key,
            priority=priority,
            version=version,
            wait_for_completion=wait_for_completion,
        )
        response = self._client._send(
            request,
            timeout=timeout,
            max_retries=max_retries,
        )
        return _parse_run_workflow(response)  # type: ignore[no-any-return]

    def versions(
        self,
        id: str,
        *,
        limit: int | None = None,
        offset: int | None = None,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> models.ListVersionsResponse:
        """GET /api/v1/workflows/{id}/versions: List a workflow's released versions"""
        request = _build_list_workflow_versions(id, limit=limit, offset=offset)
        response = self._client._send(
            request,
            timeout=timeout,
            max_retries=max_retries,
        )
        return _parse_list_workflow_versions(response)  # type: ignore[no-any-return]

    def iter_versions(
        self,
        id: str,
        *,
        limit: int | None = None,
        offset: int | None = None,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> Iterator[models.WorkflowVersion]:
        """Every item of ``versions``, page after page: ``limit`` items a request (default
        100, the most the API allows) from ``offset`` (default 0) to the last page.

        Pages are fetched as the iteration reaches them, each with the call's ``timeout`` and
        retries. Offset paging: items created or deleted during the iteration shift the
        pages after them (an item may be skipped or seen twice)."""
        size = 100 if limit is None else limit
        start = 0 if offset is None else offset
        while True:
            page = self.versions(
                id,
                limit=size,
                offset=start,
                timeout=timeout,
                max_retries=max_retries,
            )
            items = page.data
            yield from items
            start += len(items)
            if not items or start >= page.total:
                return

    def release(
        self,
        id: str,
        body: models.ReleaseWorkflowVersionBody | Mapping[str, Any],
        *,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> models.WorkflowVersion:
        """POST /api/v1/workflows/{id}/versions: Release a new version of a workflow"""
        request = _build_release_workflow_version(id, body)
        response = self._client._send(
            request,
            timeout=timeout,
            max_retries=max_retries,
        )
        return _parse_release_workflow_version(response)  # type: ignore[no-any-return]


class _RawWorkflows:
    """``workflows`` operations answering a ``RawResponse``."""

    def __init__(self, client: ServiceClient) -> None:
        self._client = client
        self.executions = _RawWorkflowsExecutions(client)

    def list(
        self,
        *,
        search: str | None = None,
        name: str | None = None,
        kind: Literal["workflow", "block"] | None = None,
        include_archived: bool | None = None,
        limit: int | None = None,
        offset: int | None = None,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> RawResponse[models.ListWorkflowsResponse]:
        """GET /api/v1/workflows: List workflows"""
        request = _build_list_workflows(
            search=search,
            name=name,
            kind=kind,
            include_archived=include_archived,
            limit=limit,
            offset=offset,
        )
        response = self._client._send(
            request,
            timeout=timeout,
            max_retries=max_retries,
        )
        return RawResponse(response, _parse_list_workflows)

    def create(
        self,
        body: models.CreateWorkflowBody | Mapping[str, Any],
        *,
        idempotency_key: str | None = None,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> RawResponse[models.WorkflowSummary]:
        """POST /api/v1/workflows: Create a workflow"""
        request = _build_create_workflow(body, idempotency_key=idempotency_key)
        response = self._client._send(
            request,
            timeout=timeout,
            max_retries=max_retries,
        )
        return RawResponse(response, _parse_create_workflow)

    def get(
        self,
        id: str,
        *,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> RawResponse[models.WorkflowSummary]:
        """GET /api/v1/workflows/{id}: Get a workflow"""
        request = _build_get_workflow(id)
        response = self._client._send(
            request,
            timeout=timeout,
            max_retries=max_retries,
        )
        return RawResponse(response, _parse_get_workflow)

    def archive(
        self,
        id: str,
        *,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> RawResponse[models.WorkflowSummary]:
        """POST /api/v1/workflows/{id}/archive: Archive a workflow"""
        request = _build_archive_workflow(id)
        response = self._client._send(
            request,
            timeout=timeout,
            max_retries=max_retries,
        )
        return RawResponse(response, _parse_archive_workflow)

    def restore(
        self,
        id: str,
        *,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> RawResponse[models.WorkflowSummary]:
        """POST /api/v1/workflows/{id}/restore: Restore an archived workflow"""
        request = _build_restore_workflow(id)
        response = self._client._send(
            request,
            timeout=timeout,
            max_retries=max_retries,
        )
        return RawResponse(response, _parse_restore_workflow)

    def run(
        self,
        id: str,
        body: models.RunWorkflowBody | Mapping[str, Any] | None = None,
        *,
        files: Mapping[str, FileInput] | None = None,
        idempotency_key: str | None = None,
        priority: int | None = None,
        version: str | None = None,
        wait_for_completion: int | None = None,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> RawResponse[models.RunWorkflowResponse]:
        """POST /api/v1/workflows/{id}/run: Run a workflow"""
        request = _build_run_workflow(
            id,
            body,
            files=files,
            idempotency_key=idempotency_key,
            priority=priority,
            version=version,
            wait_for_completion=wait_for_completion,
        )
        response = self._client._send(
            request,
            timeout=timeout,
            max_retries=max_retries,
        )
        return RawResponse(response, _parse_run_workflow)

    def versions(
        self,
        id: str,
        *,
        limit: int | None = None,
        offset: int | None = None,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> RawResponse[models.ListVersionsResponse]:
        """GET /api/v1/workflows/{id}/versions: List a workflow's released versions"""
        request = _build_list_workflow_versions(id, limit=limit, offset=offset)
        response = self._client._send(
            request,
            timeout=timeout,
            max_retries=max_retries,
        )
        return RawResponse(response, _parse_list_workflow_versions)

    def release(
        self,
        id: str,
        body: models.ReleaseWorkflowVersionBody | Mapping[str, Any],
        *,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> RawResponse[models.WorkflowVersion]:
        """POST /api/v1/workflows/{id}/versions: Release a new version of a workflow"""
        request = _build_release_workflow_version(id, body)
        response = self._client._send(
            request,
            timeout=timeout,
            max_retries=max_retries,
        )
        return RawResponse(response, _parse_release_workflow_version)


class _Webhooks:
    """``webhooks`` operations."""

    def __init__(self, client: ServiceClient) -> None:
        self._client = client

    def list(
        self,
        *,
        limit: int | None = None,
        offset: int | None = None,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> models.ListWebhooksResponse:
        """GET /api/v1/webhooks: List webhook subscriptions"""
        request = _build_list_webhooks(limit=limit, offset=offset)
        response = self._client._send(
            request,
            timeout=timeout,
            max_retries=max_retries,
        )
        return _parse_list_webhooks(response)  # type: ignore[no-any-return]

    def iter_list(
        self,
        *,
        limit: int | None = None,
        offset: int | None = None,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> Iterator[models.Webhook]:
        """Every item of ``list``, page after page: ``limit`` items a request (default
        100, the most the API allows) from ``offset`` (default 0) to the last page.

        Pages are fetched as the iteration reaches them, each with the call's ``timeout`` and
        retries. Offset paging: items created or deleted during the iteration shift the
        pages after them (an item may be skipped or seen twice)."""
        size = 100 if limit is None else limit
        start = 0 if offset is None else offset
        while True:
            page = self.list(
                limit=size,
                offset=start,
                timeout=timeout,
                max_retries=max_retries,
            )
            items = page.data
            yield from items
            start += len(items)
            if not items or start >= page.total:
                return

    def create(
        self,
        body: models.CreateWebhookBody | Mapping[str, Any],
        *,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> models.CreatedWebhook:
        """POST /api/v1/webhooks: Subscribe to execution events"""
        request = _build_create_webhook(body)
        response = self._client._send(
            request,
            timeout=timeout,
            max_retries=max_retries,
        )
        return _parse_create_webhook(response)  # type: ignore[no-any-return]

    def get(
        self,
        webhook_id: str,
        *,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> models.Webhook:
        """GET /api/v1/webhooks/{webhookId}: Get a webhook subscription"""
        request = _build_get_webhook(webhook_id)
        response = self._client._send(
            request,
            timeout=timeout,
            max_retries=max_retries,
        )
        return _parse_get_webhook(response)  # type: ignore[no-any-return]

    def delete(
        self,
        webhook_id: str,
        *,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> None:
        """DELETE /api/v1/webhooks/{webhookId}: Delete a webhook subscription"""
        request = _build_delete_webhook(webhook_id)
        response = self._client._send(
            request,
            timeout=timeout,
            max_retries=max_retries,
        )
        return _parse_delete_webhook(response)  # type: ignore[no-any-return]

    def list_deliveries(
        self,
        webhook_id: str,
        *,
        status: Literal["pending", "delivered", "failed"] | None = None,
        limit: int | None = None,
        offset: int | None = None,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> models.ListWebhookDeliveriesResponse:
        """GET /api/v1/webhooks/{webhookId}/deliveries: List a subscription's deliveries"""
        request = _build_list_webhook_deliveries(
            webhook_id, status=status, limit=limit, offset=offset
        )
        response = self._client._send(
            request,
            timeout=timeout,
            max_retries=max_retries,
        )
        return _parse_list_webhook_deliveries(response)  # type: ignore[no-any-return]

    def iter_list_deliveries(
        self,
        webhook_id: str,
        *,
        status: Literal["pending", "delivered", "failed"] | None = None,
        limit: int | None = None,
        offset: int | None = None,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> Iterator[models.WebhookDelivery]:
        """Every item of ``list_deliveries``, page after page: ``limit`` items a request (default
        100, the most the API allows) from ``offset`` (default 0) to the last page.

        Pages are fetched as the iteration reaches them, each with the call's ``timeout`` and
        retries. Offset paging: items created or deleted during the iteration shift the
        pages after them (an item may be skipped or seen twice)."""
        size = 100 if limit is None else limit
        start = 0 if offset is None else offset
        while True:
            page = self.list_deliveries(
                webhook_id,
                status=status,
                limit=size,
                offset=start,
                timeout=timeout,
                max_retries=max_retries,
            )
            items = page.data
            yield from items
            start += len(items)
            if not items or start >= page.total:
                return


class _RawWebhooks:
    """``webhooks`` operations answering a ``RawResponse``."""

    def __init__(self, client: ServiceClient) -> None:
        self._client = client

    def list(
        self,
        *,
        limit: int | None = None,
        offset: int | None = None,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> RawResponse[models.ListWebhooksResponse]:
        """GET /api/v1/webhooks: List webhook subscriptions"""
        request = _build_list_webhooks(limit=limit, offset=offset)
        response = self._client._send(
            request,
            timeout=timeout,
            max_retries=max_retries,
        )
        return RawResponse(response, _parse_list_webhooks)

    def create(
        self,
        body: models.CreateWebhookBody | Mapping[str, Any],
        *,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> RawResponse[models.CreatedWebhook]:
        """POST /api/v1/webhooks: Subscribe to execution events"""
        request = _build_create_webhook(body)
        response = self._client._send(
            request,
            timeout=timeout,
            max_retries=max_retries,
        )
        return RawResponse(response, _parse_create_webhook)

    def get(
        self,
        webhook_id: str,
        *,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> RawResponse[models.Webhook]:
        """GET /api/v1/webhooks/{webhookId}: Get a webhook subscription"""
        request = _build_get_webhook(webhook_id)
        response = self._client._send(
            request,
            timeout=timeout,
            max_retries=max_retries,
        )
        return RawResponse(response, _parse_get_webhook)

    def delete(
        self,
        webhook_id: str,
        *,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> RawResponse[None]:
        """DELETE /api/v1/webhooks/{webhookId}: Delete a webhook subscription"""
        request = _build_delete_webhook(webhook_id)
        response = self._client._send(
            request,
            timeout=timeout,
            max_retries=max_retries,
        )
        return RawResponse(response, _parse_delete_webhook)

    def list_deliveries(
        self,
        webhook_id: str,
        *,
        status: Literal["pending", "delivered", "failed"] | None = None,
        limit: int | None = None,
        offset: int | None = None,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> RawResponse[models.ListWebhookDeliveriesResponse]:
        """GET /api/v1/webhooks/{webhookId}/deliveries: List a subscription's deliveries"""
        request = _build_list_webhook_deliveries(
            webhook_id, status=status, limit=limit, offset=offset
        )
        response = self._client._send(
            request,
            timeout=timeout,
            max_retries=max_retries,
        )
        return RawResponse(response, _parse_list_webhook_deliveries)


class _Schedules:
    """``schedules`` operations."""

    def __init__(self, client: ServiceClient) -> None:
        self._client = client

    def list(
        self,
        *,
        agent_id: str | None = None,
        workflow_id: str | None = None,
        limit: int | None = None,
        offset: int | None = None,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> models.ListSchedulesResponse:
        """GET /api/v1/schedules: List schedules"""
        request = _build_list_schedules(
            agent_id=agent_id, workflow_id=workflow_id, limit=limit, offset=offset
        )
        response = self._client._send(
            request,
            timeout=timeout,
            max_retries=max_retries,
        )
        return _parse_list_schedules(response)  # type: ignore[no-any-return]

    def iter_list(
        self,
        *,
        agent_id: str | None = None,
        workflow_id: str | None = None,
        limit: int | None = None,
        offset: int | None = None,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> Iterator[models.Schedule]:
        """Every item of ``list``, page after page: ``limit`` items a request (default
        200, the most the API allows) from ``offset`` (default 0) to the last page.

        Pages are fetched as the iteration reaches them, each with the call's ``timeout`` and
        retries. Offset paging: items created or deleted during the iteration shift the
        pages after them (an item may be skipped or seen twice)."""
        size = 200 if limit is None else limit
        start = 0 if offset is None else offset
        while True:
            page = self.list(
                agent_id=agent_id,
                workflow_id=workflow_id,
                limit=size,
                offset=start,
                timeout=timeout,
                max_retries=max_retries,
            )
            items = page.data
            yield from items
            start += len(items)
            if not items or start >= page.total:
                return

    def create(
        self,
        body: models.CreateScheduleBody | Mapping[str, Any],
        *,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> models.Schedule:
        """POST /api/v1/schedules: Create a schedule"""
        request = _build_create_schedule(body)
        response = self._client._send(
            request,
            timeout=timeout,
            max_retries=max_retries,
        )
        return _parse_create_schedule(response)  # type: ignore[no-any-return]

    def get(
        self,
        schedule_id: str,
        *,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> models.Schedule:
        """GET /api/v1/schedules/{scheduleId}: Get a schedule"""
        request = _build_get_schedule(schedule_id)
        response = self._client._send(
            request,
            timeout=timeout,
            max_retries=max_retries,
        )
        return _parse_get_schedule(response)  # type: ignore[no-any-return]

    def delete(
        self,
        schedule_id: str,
        *,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> None:
        """DELETE /api/v1/schedules/{scheduleId}: Delete a schedule"""
        request = _build_delete_schedule(schedule_id)
        response = self._client._send(
            request,
            timeout=timeout,
            max_retries=max_retries,
        )
        return _parse_delete_schedule(response)  # type: ignore[no-any-return]

    def update(
        self,
        schedule_id: str,
        body: models.UpdateScheduleBody | Mapping[str, Any],
        *,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> models.Schedule:
        """PATCH /api/v1/schedules/{scheduleId}: Change a schedule"""
        request = _build_update_schedule(schedule_id, body)
        response = self._client._send(
            request,
            timeout=timeout,
            max_retries=max_retries,
        )
        return _parse_update_schedule(response)  # type: ignore[no-any-return]


class _RawSchedules:
    """``schedules`` operations answering a ``RawResponse``."""

    def __init__(self, client: ServiceClient) -> None:
        self._client = client

    def list(
        self,
        *,
        agent_id: str | None = None,
        workflow_id: str | None = None,
        limit: int | None = None,
        offset: int | None = None,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> RawResponse[models.ListSchedulesResponse]:
        """GET /api/v1/schedules: List schedules"""
        request = _build_list_schedules(
            agent_id=agent_id, workflow_id=workflow_id, limit=limit, offset=offset
        )
        response = self._client._send(
            request,
            timeout=timeout,
            max_retries=max_retries,
        )
        return RawResponse(response, _parse_list_schedules)

    def create(
        self,
        body: models.CreateScheduleBody | Mapping[str, Any],
        *,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> RawResponse[models.Schedule]:
        """POST /api/v1/schedules: Create a schedule"""
        request = _build_create_schedule(body)
        response = self._client._send(
            request,
            timeout=timeout,
            max_retries=max_retries,
        )
        return RawResponse(response, _parse_create_schedule)

    def get(
        self,
        schedule_id: str,
        *,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> RawResponse[models.Schedule]:
        """GET /api/v1/schedules/{scheduleId}: Get a schedule"""
        request = _build_get_schedule(schedule_id)
        response = self._client._send(
            request,
            timeout=timeout,
            max_retries=max_retries,
        )
        return RawResponse(response, _parse_get_schedule)

    def delete(
        self,
        schedule_id: str,
        *,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> RawResponse[None]:
        """DELETE /api/v1/schedules/{scheduleId}: Delete a schedule"""
        request = _build_delete_schedule(schedule_id)
        response = self._client._send(
            request,
            timeout=timeout,
            max_retries=max_retries,
        )
        return RawResponse(response, _parse_delete_schedule)

    def update(
        self,
        schedule_id: str,
        body: models.UpdateScheduleBody | Mapping[str, Any],
        *,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> RawResponse[models.Schedule]:
        """PATCH /api/v1/schedules/{scheduleId}: Change a schedule"""
        request = _build_update_schedule(schedule_id, body)
        response = self._client._send(
            request,
            timeout=timeout,
            max_retries=max_retries,
        )
        return RawResponse(response, _parse_update_schedule)


class _RawServiceClient:
    """``client.with_raw_response``: the client's methods answering a ``RawResponse`` (status,
    headers, ``parse()``) instead of the parsed body; streamed methods are not among them."""

    def __init__(self, client: ServiceClient) -> None:
        self._client = client
        self.agents = _RawAgents(client)
        self.workflows = _RawWorkflows(client)
        self.webhooks = _RawWebhooks(client)
        self.schedules = _RawSchedules(client)


class ServiceClient:
    """Client of Agents and Workflows API.

    ``api_key`` (default ``$SERVICE_API_KEY``) is sent as a bearer token;
    ``base_url`` defaults to ``$SERVICE_BASE_URL``, else http://127.0.0.1:8090;
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
        self.with_raw_response = _RawServiceClient(self)
        self.agents = _Agents(self)
        self.workflows = _Workflows(self)
        self.webhooks = _Webhooks(self)
        self.schedules = _Schedules(self)

    @property
    def http_client(self) -> httpx.Client:
        """The ``httpx.Client`` under this client (e.g. for OpenTelemetry's
        ``HTTPXClientInstrumentor.instrument_client``)."""
        return self._http

    def close(self) -> None:
        """Close the connection pool."""
        self._http.close()

    def __enter__(self) -> ServiceClient:
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


class Async_AgentsExecutions:
    """``agentsexecutions`` operations."""

    def __init__(self, client: AsyncServiceClient) -> None:
        self._client = client

    async def list(
        self,
        agent_id: str,
        *,
        status: builtins.list[
            Literal[
                "created",
                "pending",
                "running",
                "waiting",
                "finalizing",
                "completed",
                "failed",
                "cancelled",
                "rejected",
            ]
        ]
        | None = None,
        batch_id: str | None = None,
        example_name: str | None = None,
        example_name_contains: str | None = None,
        created_after: datetime.datetime | None = None,
        created_before: datetime.datetime | None = None,
        completed_after: datetime.datetime | None = None,
        completed_before: datetime.datetime | None = None,
        feedback_status: Literal["open", "resolved", "ignored"] | None = None,
        feedback_rating: Literal["pass", "fail", "partial", "none"] | None = None,
        has_feedback: bool | None = None,
        no_feedback: bool | None = None,
        has_expected: bool | None = None,
        has_expected_json: bool | None = None,
        has_expected_files: bool | None = None,
        feedback_body_contains: str | None = None,
        feedback_created_after: datetime.datetime | None = None,
        feedback_created_before: datetime.datetime | None = None,
        feedback_updated_after: datetime.datetime | None = None,
        feedback_updated_before: datetime.datetime | None = None,
        feedback_resolved_after: datetime.datetime | None = None,
        feedback_resolved_before: datetime.datetime | None = None,
        promoted_to_example: bool | None = None,
        promoted_example_name: str | None = None,
        since_last_resolved: bool | None = None,
        include: builtins.list[Literal["feedback", "expected", "files", "attempts"]] | None = None,
        sort: Literal["createdAt", "completedAt", "status", "exampleName"] | None = None,
        order: Literal["asc", "desc"] | None = None,
        scan_limit: int | None = None,
        limit: int | None = None,
        offset: int | None = None,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> models.ListAgentExecutionsResponse:
        """GET /api/v1/agents/{agentId}/executions: List an agent's executions"""
        request = _build_list_agent_executions(
            agent_id,
            status=status,
            batch_id=batch_id,
            example_name=example_name,
            example_name_contains=example_name_contains,
            created_after=created_after,
            created_before=created_before,
            completed_after=completed_after,
            completed_before=completed_before,
            feedback_status=feedback_status,
            feedback_rating=feedback_rating,
            has_feedback=has_feedback,
            no_feedback=no_feedback,
            has_expected=has_expected,
            has_expected_json=has_expected_json,
            has_expected_files=has_expected_files,
            feedback_body_contains=feedback_body_contains,
            feedback_created_after=feedback_created_after,
            feedback_created_before=feedback_created_before,
            feedback_updated_after=feedback_updated_after,
            feedback_updated_before=feedback_updated_before,
            feedback_resolved_after=feedback_resolved_after,
            feedback_resolved_before=feedback_resolved_before,
            promoted_to_example=promoted_to_example,
            promoted_example_name=promoted_example_name,
            since_last_resolved=since_last_resolved,
            include=include,
            sort=sort,
            order=order,
            scan_limit=scan_limit,
            limit=limit,
            offset=offset,
        )
        response = await self._client._send(
            request,
            timeout=timeout,
            max_retries=max_retries,
        )
        return _parse_list_agent_executions(response)  # type: ignore[no-any-return]

    async def iter_list(
        self,
        agent_id: str,
        *,
        status: builtins.list[
            Literal[
                "created",
                "pending",
                "running",
                "waiting",
                "finalizing",
                "completed",
                "failed",
                "cancelled",
                "rejected",
            ]
        ]
        | None = None,
        batch_id: str | None = None,
        example_name: str | None = None,
        example_name_contains: str | None = None,
        created_after: datetime.datetime | None = None,
        created_before: datetime.datetime | None = None,
        completed_after: datetime.datetime | None = None,
        completed_before: datetime.datetime | None = None,
        feedback_status: Literal["open", "resolved", "ignored"] | None = None,
        feedback_rating: Literal["pass", "fail", "partial", "none"] | None = None,
        has_feedback: bool | None = None,
        no_feedback: bool | None = None,
        has_expected: bool | None = None,
        has_expected_json: bool | None = None,
        has_expected_files: bool | None = None,
        feedback_body_contains: str | None = None,
        feedback_created_after: datetime.datetime | None = None,
        feedback_created_before: datetime.datetime | None = None,
        feedback_updated_after: datetime.datetime | None = None,
        feedback_updated_before: datetime.datetime | None = None,
        feedback_resolved_after: datetime.datetime | None = None,
        feedback_resolved_before: datetime.datetime | None = None,
        promoted_to_example: bool | None = None,
        promoted_example_name: str | None = None,
        since_last_resolved: bool | None = None,
        include: builtins.list[Literal["feedback", "expected", "files", "attempts"]] | None = None,
        sort: Literal["createdAt", "completedAt", "status", "exampleName"] | None = None,
        order: Literal["asc", "desc"] | None = None,
        scan_limit: int | None = None,
        limit: int | None = None,
        offset: int | None = None,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> AsyncIterator[models.AgentExecutionSummary]:
        """Every item of ``list``, page after page: ``limit`` items a request (default
        200, the most the API allows) from ``offset`` (default 0) to the last page.

        Pages are fetched as the iteration reaches them, each with the call's ``timeout`` and
        retries. Offset paging: items created or deleted during the iteration shift the
        pages after them (an item may be skipped or seen twice)."""
        size = 200 if limit is None else limit
        start = 0 if offset is None else offset
        while True:
            page = await self.list(
                agent_id,
                status=status,
                batch_id=batch_id,
                example_name=example_name,
                example_name_contains=example_name_contains,
                created_after=created_after,
                created_before=created_before,
                completed_after=completed_after,
                completed_before=completed_before,
                feedback_status=feedback_status,
                feedback_rating=feedback_rating,
                has_feedback=has_feedback,
                no_feedback=no_feedback,
                has_expected=has_expected,
                has_expected_json=has_expected_json,
                has_expected_files=has_expected_files,
                feedback_body_contains=feedback_body_contains,
                feedback_created_after=feedback_created_after,
                feedback_created_before=feedback_created_before,
                feedback_updated_after=feedback_updated_after,
                feedback_updated_before=feedback_updated_before,
                feedback_resolved_after=feedback_resolved_after,
                feedback_resolved_before=feedback_resolved_before,
                promoted_to_example=promoted_to_example,
                promoted_example_name=promoted_example_name,
                since_last_resolved=since_last_resolved,
                include=include,
                sort=sort,
                order=order,
                scan_limit=scan_limit,
                limit=size,
                offset=start,
                timeout=timeout,
                max_retries=max_retries,
            )
            items = page.executions
            for item in items:
                yield item
            start += len(items)
            if not items or start >= page.total:
                return

    async def get(
        self,
        execution_id: str,
        *,
        include: builtins.list[Literal["feedback", "expected", "files", "attempts"]] | None = None,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> models.AgentExecutionResponse:
        """GET /api/v1/agents/executions/{executionId}: Get an agent execution"""
        request = _build_get_agent_execution(execution_id, include=include)
        response = await self._client._send(
            request,
            timeout=timeout,
            max_retries=max_retries,
        )
        return _parse_get_agent_execution(response)  # type: ignore[no-any-return]

    async def cancel(
        self,
        execution_id: str,
        *,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> models.CancelAgentExecutionResponse:
        """POST /api/v1/agents/executions/{executionId}/cancel: Cancel an agent execution"""
        request = _build_cancel_agent_execution(execution_id)
        response = await self._client._send(
            request,
            timeout=timeout,
            max_retries=max_retries,
        )
        return _parse_cancel_agent_execution(response)  # type: ignore[no-any-return]

    async def rerun(
        self,
        execution_id: str,
        *,
        idempotency_key: str | None = None,
        priority: int | None = None,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> models.RerunAgentExecutionResponse:
        """POST /api/v1/agents/executions/{executionId}/rerun: Rerun an agent execution"""
        request = _build_rerun_agent_execution(
            execution_id, idempotency_key=idempotency_key, priority=priority
        )
        response = await self._client._send(
            request,
            timeout=timeout,
            max_retries=max_retries,
        )
        return _parse_rerun_agent_execution(response)  # type: ignore[no-any-return]

    async def get_feedback(
        self,
        execution_id: str,
        *,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> models.AgentExecutionFeedbackDetail:
        """GET /api/v1/agents/executions/{executionId}/feedback: Get an execution's feedback and expected results"""
        request = _build_get_agent_execution_feedback(execution_id)
        response = await self._client._send(
            request,
            timeout=timeout,
            max_retries=max_retries,
        )
        return _parse_get_agent_execution_feedback(response)  # type: ignore[no-any-return]

    async def clear_feedback(
        self,
        execution_id: str,
        *,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> models.AgentExecutionFeedbackDetail:
        """DELETE /api/v1/agents/executions/{executionId}/feedback: Clear an execution's feedback and expected results"""
        request = _build_clear_agent_execution_feedback(execution_id)
        response = await self._client._send(
            request,
            timeout=timeout,
            max_retries=max_retries,
        )
        return _parse_clear_agent_execution_feedback(response)  # type: ignore[no-any-return]

    async def update_feedback(
        self,
        execution_id: str,
        body: models.UpdateAgentExecutionFeedbackBody | Mapping[str, Any],
        *,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> models.AgentExecutionFeedbackDetail:
        """PATCH /api/v1/agents/executions/{executionId}/feedback: Create or change an execution's feedback"""
        request = _build_update_agent_execution_feedback(execution_id, body)
        response = await self._client._send(
            request,
            timeout=timeout,
            max_retries=max_retries,
        )
        return _parse_update_agent_execution_feedback(response)  # type: ignore[no-any-return]

    async def list_expected(
        self,
        execution_id: str,
        *,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> models.AgentExecutionExpectedArtifacts:
        """GET /api/v1/agents/executions/{executionId}/expected: List an execution's expected artifacts"""
        request = _build_list_agent_execution_expected(execution_id)
        response = await self._client._send(
            request,
            timeout=timeout,
            max_retries=max_retries,
        )
        return _parse_list_agent_execution_expected(response)  # type: ignore[no-any-return]

    async def copy_output_to_expected(
        self,
        execution_id: str,
        body: models.CopyAgentExecutionOutputToExpectedBody | Mapping[str, Any],
        *,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> models.CreateExpectedFileResponse:
        """POST /api/v1/agents/executions/{executionId}/expected: Add an expected file (upload one, or copy an output file)"""
        request = _build_add_agent_execution_expected_file_copy_output_to_expected(
            execution_id, body
        )
        response = await self._client._send(
            request,
            timeout=timeout,
            max_retries=max_retries,
        )
        return _parse_add_agent_execution_expected_file(response)  # type: ignore[no-any-return]

    async def upload_expected(
        self,
        execution_id: str,
        file: FileInput,
        *,
        name: str | None = None,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> models.CreateExpectedFileResponse:
        """POST /api/v1/agents/executions/{executionId}/expected: Add an expected file (upload one, or copy an output file)"""
        request = _build_add_agent_execution_expected_file_upload_expected(
            execution_id, file, name=name
        )
        response = await self._client._send(
            request,
            timeout=timeout,
            max_retries=max_retries,
        )
        return _parse_add_agent_execution_expected_file(response)  # type: ignore[no-any-return]

    def download_expected(
        self,
        execution_id: str,
        filename: str,
        *,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> AsyncIterator[bytes]:
        """GET /api/v1/agents/executions/{executionId}/expected/{filename}: Download an expected file"""
        request = _build_download_agent_execution_expected_file(execution_id, filename)
        return self._client._iter(
            request,
            text=False,
            timeout=timeout,
            max_retries=max_retries,
        )

    async def delete_expected(
        self,
        execution_id: str,
        filename: str,
        *,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> None:
        """DELETE /api/v1/agents/executions/{executionId}/expected/{filename}: Delete an expected file"""
        request = _build_delete_agent_execution_expected_file(execution_id, filename)
        response = await self._client._send(
            request,
            timeout=timeout,
            max_retries=max_retries,
        )
        return _parse_delete_agent_execution_expected_file(response)  # type: ignore[no-any-return]

    async def rename_expected(
        self,
        execution_id: str,
        filename: str,
        body: models.RenameExpectedFileBody | Mapping[str, Any],
        *,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> models.RenameExpectedFileResponse:
        """PATCH /api/v1/agents/executions/{executionId}/expected/{filename}: Rename an expected file"""
        request = _build_rename_agent_execution_expected_file(execution_id, filename, body)
        response = await self._client._send(
            request,
            timeout=timeout,
            max_retries=max_retries,
        )
        return _parse_rename_agent_execution_expected_file(response)  # type: ignore[no-any-return]

    async def promote(
        self,
        execution_id: str,
        body: models.PromoteAgentExecutionBody | Mapping[str, Any],
        *,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> models.AgentExecutionPromotion:
        """PUT /api/v1/agents/executions/{executionId}/promotion: Promote an execution to a dataset example"""
        request = _build_promote_agent_execution(execution_id, body)
        response = await self._client._send(
            request,
            timeout=timeout,
            max_retries=max_retries,
        )
        return _parse_promote_agent_execution(response)  # type: ignore[no-any-return]

    async def demote(
        self,
        execution_id: str,
        *,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> models.AgentExecutionDemotion:
        """DELETE /api/v1/agents/executions/{executionId}/promotion: Withdraw an execution's promotion"""
        request = _build_demote_agent_execution(execution_id)
        response = await self._client._send(
            request,
            timeout=timeout,
            max_retries=max_retries,
        )
        return _parse_demote_agent_execution(response)  # type: ignore[no-any-return]

    def download_file(
        self,
        execution_id: str,
        kind: str,
        filename: str,
        *,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> AsyncIterator[bytes]:
        """GET /api/v1/agents/executions/{executionId}/files/{kind}/{filename}: Download an execution's file"""
        request = _build_download_agent_execution_file(execution_id, kind, filename)
        return self._client._iter(
            request,
            text=False,
            timeout=timeout,
            max_retries=max_retries,
        )


class _AsyncRawAgentsExecutions:
    """``agentsexecutions`` operations answering a ``RawResponse``."""

    def __init__(self, client: AsyncServiceClient) -> None:
        self._client = client

    async def list(
        self,
        agent_id: str,
        *,
        status: builtins.list[
            Literal[
                "created",
                "pending",
                "running",
                "waiting",
                "finalizing",
                "completed",
                "failed",
                "cancelled",
                "rejected",
            ]
        ]
        | None = None,
        batch_id: str | None = None,
        example_name: str | None = None,
        example_name_contains: str | None = None,
        created_after: datetime.datetime | None = None,
        created_before: datetime.datetime | None = None,
        completed_after: datetime.datetime | None = None,
        completed_before: datetime.datetime | None = None,
        feedback_status: Literal["open", "resolved", "ignored"] | None = None,
        feedback_rating: Literal["pass", "fail", "partial", "none"] | None = None,
        has_feedback: bool | None = None,
        no_feedback: bool | None = None,
        has_expected: bool | None = None,
        has_expected_json: bool | None = None,
        has_expected_files: bool | None = None,
        feedback_body_contains: str | None = None,
        feedback_created_after: datetime.datetime | None = None,
        feedback_created_before: datetime.datetime | None = None,
        feedback_updated_after: datetime.datetime | None = None,
        feedback_updated_before: datetime.datetime | None = None,
        feedback_resolved_after: datetime.datetime | None = None,
        feedback_resolved_before: datetime.datetime | None = None,
        promoted_to_example: bool | None = None,
        promoted_example_name: str | None = None,
        since_last_resolved: bool | None = None,
        include: builtins.list[Literal["feedback", "expected", "files", "attempts"]] | None = None,
        sort: Literal["createdAt", "completedAt", "status", "exampleName"] | None = None,
        order: Literal["asc", "desc"] | None = None,
        scan_limit: int | None = None,
        limit: int | None = None,
        offset: int | None = None,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> RawResponse[models.ListAgentExecutionsResponse]:
        """GET /api/v1/agents/{agentId}/executions: List an agent's executions"""
        request = _build_list_agent_executions(
            agent_id,
            status=status,
            batch_id=batch_id,
            example_name=example_name,
            example_name_contains=example_name_contains,
            created_after=created_after,
            created_before=created_before,
            completed_after=completed_after,
            completed_before=completed_before,
            feedback_status=feedback_status,
            feedback_rating=feedback_rating,
            has_feedback=has_feedback,
            no_feedback=no_feedback,
            has_expected=has_expected,
            has_expected_json=has_expected_json,
            has_expected_files=has_expected_files,
            feedback_body_contains=feedback_body_contains,
            feedback_created_after=feedback_created_after,
            feedback_created_before=feedback_created_before,
            feedback_updated_after=feedback_updated_after,
            feedback_updated_before=feedback_updated_before,
            feedback_resolved_after=feedback_resolved_after,
            feedback_resolved_before=feedback_resolved_before,
            promoted_to_example=promoted_to_example,
            promoted_example_name=promoted_example_name,
            since_last_resolved=since_last_resolved,
            include=include,
            sort=sort,
            order=order,
            scan_limit=scan_limit,
            limit=limit,
            offset=offset,
        )
        response = await self._client._send(
            request,
            timeout=timeout,
            max_retries=max_retries,
        )
        return RawResponse(response, _parse_list_agent_executions)

    async def get(
        self,
        execution_id: str,
        *,
        include: builtins.list[Literal["feedback", "expected", "files", "attempts"]] | None = None,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> RawResponse[models.AgentExecutionResponse]:
        """GET /api/v1/agents/executions/{executionId}: Get an agent execution"""
        request = _build_get_agent_execution(execution_id, include=include)
        response = await self._client._send(
            request,
            timeout=timeout,
            max_retries=max_retries,
        )
        return RawResponse(response, _parse_get_agent_execution)

    async def cancel(
        self,
        execution_id: str,
        *,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> RawResponse[models.CancelAgentExecutionResponse]:
        """POST /api/v1/agents/executions/{executionId}/cancel: Cancel an agent execution"""
        request = _build_cancel_agent_execution(execution_id)
        response = await self._client._send(
            request,
            timeout=timeout,
            max_retries=max_retries,
        )
        return RawResponse(response, _parse_cancel_agent_execution)

    async def rerun(
        self,
        execution_id: str,
        *,
        idempotency_key: str | None = None,
        priority: int | None = None,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> RawResponse[models.RerunAgentExecutionResponse]:
        """POST /api/v1/agents/executions/{executionId}/rerun: Rerun an agent execution"""
        request = _build_rerun_agent_execution(
            execution_id, idempotency_key=idempotency_key, priority=priority
        )
        response = await self._client._send(
            request,
            timeout=timeout,
            max_retries=max_retries,
        )
        return RawResponse(response, _parse_rerun_agent_execution)

    async def get_feedback(
        self,
        execution_id: str,
        *,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> RawResponse[models.AgentExecutionFeedbackDetail]:
        """GET /api/v1/agents/executions/{executionId}/feedback: Get an execution's feedback and expected results"""
        request = _build_get_agent_execution_feedback(execution_id)
        response = await self._client._send(
            request,
            timeout=timeout,
            max_retries=max_retries,
        )
        return RawResponse(response, _parse_get_agent_execution_feedback)

    async def clear_feedback(
        self,
        execution_id: str,
        *,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> RawResponse[models.AgentExecutionFeedbackDetail]:
        """DELETE /api/v1/agents/executions/{executionId}/feedback: Clear an execution's feedback and expected results"""
        request = _build_clear_agent_execution_feedback(execution_id)
        response = await self._client._send(
            request,
            timeout=timeout,
            max_retries=max_retries,
        )
        return RawResponse(response, _parse_clear_agent_execution_feedback)

    async def update_feedback(
        self,
        execution_id: str,
        body: models.UpdateAgentExecutionFeedbackBody | Mapping[str, Any],
        *,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> RawResponse[models.AgentExecutionFeedbackDetail]:
        """PATCH /api/v1/agents/executions/{executionId}/feedback: Create or change an execution's feedback"""
        request = _build_update_agent_execution_feedback(execution_id, body)
        response = await self._client._send(
            request,
            timeout=timeout,
            max_retries=max_retries,
        )
        return RawResponse(response, _parse_update_agent_execution_feedback)

    async def list_expected(
        self,
        execution_id: str,
        *,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> RawResponse[models.AgentExecutionExpectedArtifacts]:
        """GET /api/v1/agents/executions/{executionId}/expected: List an execution's expected artifacts"""
        request = _build_list_agent_execution_expected(execution_id)
        response = await self._client._send(
            request,
            timeout=timeout,
            max_retries=max_retries,
        )
        return RawResponse(response, _parse_list_agent_execution_expected)

    async def copy_output_to_expected(
        self,
        execution_id: str,
        body: models.CopyAgentExecutionOutputToExpectedBody | Mapping[str, Any],
        *,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> RawResponse[models.CreateExpectedFileResponse]:
        """POST /api/v1/agents/executions/{executionId}/expected: Add an expected file (upload one, or copy an output file)"""
        request = _build_add_agent_execution_expected_file_copy_output_to_expected(
            execution_id, body
        )
        response = await self._client._send(
            request,
            timeout=timeout,
            max_retries=max_retries,
        )
        return RawResponse(response, _parse_add_agent_execution_expected_file)

    async def upload_expected(
        self,
        execution_id: str,
        file: FileInput,
        *,
        name: str | None = None,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> RawResponse[models.CreateExpectedFileResponse]:
        """POST /api/v1/agents/executions/{executionId}/expected: Add an expected file (upload one, or copy an output file)"""
        request = _build_add_agent_execution_expected_file_upload_expected(
            execution_id, file, name=name
        )
        response = await self._client._send(
            request,
            timeout=timeout,
            max_retries=max_retries,
        )
        return RawResponse(response, _parse_add_agent_execution_expected_file)

    async def delete_expected(
        self,
        execution_id: str,
        filename: str,
        *,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> RawResponse[None]:
        """DELETE /api/v1/agents/executions/{executionId}/expected/{filename}: Delete an expected file"""
        request = _build_delete_agent_execution_expected_file(execution_id, filename)
        response = await self._client._send(
            request,
            timeout=timeout,
            max_retries=max_retries,
        )
        return RawResponse(response, _parse_delete_agent_execution_expected_file)

    async def rename_expected(
        self,
        execution_id: str,
        filename: str,
        body: models.RenameExpectedFileBody | Mapping[str, Any],
        *,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> RawResponse[models.RenameExpectedFileResponse]:
        """PATCH /api/v1/agents/executions/{executionId}/expected/{filename}: Rename an expected file"""
        request = _build_rename_agent_execution_expected_file(execution_id, filename, body)
        response = await self._client._send(
            request,
            timeout=timeout,
            max_retries=max_retries,
        )
        return RawResponse(response, _parse_rename_agent_execution_expected_file)

    async def promote(
        self,
        execution_id: str,
        body: models.PromoteAgentExecutionBody | Mapping[str, Any],
        *,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> RawResponse[models.AgentExecutionPromotion]:
        """PUT /api/v1/agents/executions/{executionId}/promotion: Promote an execution to a dataset example"""
        request = _build_promote_agent_execution(execution_id, body)
        response = await self._client._send(
            request,
            timeout=timeout,
            max_retries=max_retries,
        )
        return RawResponse(response, _parse_promote_agent_execution)

    async def demote(
        self,
        execution_id: str,
        *,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> RawResponse[models.AgentExecutionDemotion]:
        """DELETE /api/v1/agents/executions/{executionId}/promotion: Withdraw an execution's promotion"""
        request = _build_demote_agent_execution(execution_id)
        response = await self._client._send(
            request,
            timeout=timeout,
            max_retries=max_retries,
        )
        return RawResponse(response, _parse_demote_agent_execution)


class Async_Agents:
    """``agents`` operations."""

    def __init__(self, client: AsyncServiceClient) -> None:
        self._client = client
        self.executions = Async_AgentsExecutions(client)

    async def list(
        self,
        *,
        search: str | None = None,
        include_archived: bool | None = None,
        limit: int | None = None,
        offset: int | None = None,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> models.ListAgentsResponse:
        """GET /api/v1/agents: List agents"""
        request = _build_list_agents(
            search=search, include_archived=include_archived, limit=limit, offset=offset
        )
        response = await self._client._send(
            request,
            timeout=timeout,
            max_retries=max_retries,
        )
        return _parse_list_agents(response)  # type: ignore[no-any-return]

    async def iter_list(
        self,
        *,
        search: str | None = None,
        include_archived: bool | None = None,
        limit: int | None = None,
        offset: int | None = None,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> AsyncIterator[models.AgentSummary]:
        """Every item of ``list``, page after page: ``limit`` items a request (default
        200, the most the API allows) from ``offset`` (default 0) to the last page.

        Pages are fetched as the iteration reaches them, each with the call's ``timeout`` and
        retries. Offset paging: items created or deleted during the iteration shift the
        pages after them (an item may be skipped or seen twice)."""
        size = 200 if limit is None else limit
        start = 0 if offset is None else offset
        while True:
            page = await self.list(
                search=search,
                include_archived=include_archived,
                limit=size,
                offset=start,
                timeout=timeout,
                max_retries=max_retries,
            )
            items = page.data
            for item in items:
                yield item
            start += len(items)
            if not items or start >= page.total:
                return

    async def create(
        self,
        body: models.CreateAgentBody | Mapping[str, Any],
        *,
        idempotency_key: str | None = None,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> models.CreateAgentResponse:
        """POST /api/v1/agents: Create an agent"""
        request = _build_create_agent(body, idempotency_key=idempotency_key)
        response = await self._client._send(
            request,
            timeout=timeout,
            max_retries=max_retries,
        )
        return _parse_create_agent(response)  # type: ignore[no-any-return]

    async def get(
        self,
        agent_id: str,
        *,
        include: builtins.list[Literal["files", "dataset"]] | None = None,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> models.GetAgentResponse:
        """GET /api/v1/agents/{agentId}: Get an agent"""
        request = _build_get_agent(agent_id, include=include)
        response = await self._client._send(
            request,
            timeout=timeout,
            max_retries=max_retries,
        )
        return _parse_get_agent(response)  # type: ignore[no-any-return]

    async def update(
        self,
        agent_id: str,
        body: models.PatchAgentBody | Mapping[str, Any],
        *,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> models.PatchAgentResponse:
        """PATCH /api/v1/agents/{agentId}: Update an agent"""
        request = _build_update_agent(agent_id, body)
        response = await self._client._send(
            request,
            timeout=timeout,
            max_retries=max_retries,
        )
        return _parse_update_agent(response)  # type: ignore[no-any-return]

    async def archive(
        self,
        agent_id: str,
        *,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> models.AgentResponse:
        """POST /api/v1/agents/{agentId}/archive: Archive an agent"""
        request = _build_archive_agent(agent_id)
        response = await self._client._send(
            request,
            timeout=timeout,
            max_retries=max_retries,
        )
        return _parse_archive_agent(response)  # type: ignore[no-any-return]

    async def restore(
        self,
        agent_id: str,
        *,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> models.AgentResponse:
        """POST /api/v1/agents/{agentId}/restore: Restore an archived agent"""
        request = _build_restore_agent(agent_id)
        response = await self._client._send(
            request,
            timeout=timeout,
            max_retries=max_retries,
        )
        return _parse_restore_agent(response)  # type: ignore[no-any-return]

    async def run(
        self,
        agent_id: str,
        body: models.RunAgentBody | Mapping[str, Any] | None = None,
        *,
        files: Mapping[str, FileInput] | None = None,
        idempotency_key: str | None = None,
        priority: int | None = None,
        wait_for_completion: int | None = None,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> models.RunAgentResponse:
        """POST /api/v1/agents/{agentId}/run: Run an agent"""
        request = _build_run_agent(
            agent_id,
            body,
            files=files,
            idempotency_key=idempotency_key,
            priority=priority,
            wait_for_completion=wait_for_completion,
        )
        response = await self._client._send(
            request,
            timeout=timeout,
            max_retries=max_retries,
        )
        return _parse_run_agent(response)  # type: ignore[no-any-return]

    async def list_files(
        self,
        agent_id: str,
        *,
        path: str | None = None,
        prefix: str | None = None,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> models.AgentFilesAnswer:
        """GET /api/v1/agents/{agentId}/files: List the agent's live files, or read one"""
        request = _build_list_agent_files(agent_id, path=path, prefix=prefix)
        response = await self._client._send(
            request,
            timeout=timeout,
            max_retries=max_retries,
        )
        return _parse_list_agent_files(response)  # type: ignore[no-any-return]

    async def put_file(
        self,
        agent_id: str,
        body: models.AgentFileBody | Mapping[str, Any],
        *,
        path: str | None = None,
        prefix: str | None = None,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> models.PutAgentFileResponse:
        """PUT /api/v1/agents/{agentId}/files: Write one live file"""
        request = _build_put_agent_file(agent_id, body, path=path, prefix=prefix)
        response = await self._client._send(
            request,
            timeout=timeout,
            max_retries=max_retries,
        )
        return _parse_put_agent_file(response)  # type: ignore[no-any-return]

    async def upload_files(
        self,
        agent_id: str,
        body: models.AgentFilesBody | Mapping[str, Any],
        *,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> models.UploadAgentFilesResponse:
        """POST /api/v1/agents/{agentId}/files: Write several live files"""
        request = _build_upload_agent_files(agent_id, body)
        response = await self._client._send(
            request,
            timeout=timeout,
            max_retries=max_retries,
        )
        return _parse_upload_agent_files(response)  # type: ignore[no-any-return]


class _AsyncRawAgents:
    """``agents`` operations answering a ``RawResponse``."""

    def __init__(self, client: AsyncServiceClient) -> None:
        self._client = client
        self.executions = _AsyncRawAgentsExecutions(client)

    async def list(
        self,
        *,
        search: str | None = None,
        include_archived: bool | None = None,
        limit: int | None = None,
        offset: int | None = None,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> RawResponse[models.ListAgentsResponse]:
        """GET /api/v1/agents: List agents"""
        request = _build_list_agents(
            search=search, include_archived=include_archived, limit=limit, offset=offset
        )
        response = await self._client._send(
            request,
            timeout=timeout,
            max_retries=max_retries,
        )
        return RawResponse(response, _parse_list_agents)

    async def create(
        self,
        body: models.CreateAgentBody | Mapping[str, Any],
        *,
        idempotency_key: str | None = None,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> RawResponse[models.CreateAgentResponse]:
        """POST /api/v1/agents: Create an agent"""
        request = _build_create_agent(body, idempotency_key=idempotency_key)
        response = await self._client._send(
            request,
            timeout=timeout,
            max_retries=max_retries,
        )
        return RawResponse(response, _parse_create_agent)

    async def get(
        self,
        agent_id: str,
        *,
        include: builtins.list[Literal["files", "dataset"]] | None = None,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> RawResponse[models.GetAgentResponse]:
        """GET /api/v1/agents/{agentId}: Get an agent"""
        request = _build_get_agent(agent_id, include=include)
        response = await self._client._send(
            request,
            timeout=timeout,
            max_retries=max_retries,
        )
        return RawResponse(response, _parse_get_agent)

    async def update(
        self,
        agent_id: str,
        body: models.PatchAgentBody | Mapping[str, Any],
        *,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> RawResponse[models.PatchAgentResponse]:
        """PATCH /api/v1/agents/{agentId}: Update an agent"""
        request = _build_update_agent(agent_id, body)
        response = await self._client._send(
            request,
            timeout=timeout,
            max_retries=max_retries,
        )
        return RawResponse(response, _parse_update_agent)

    async def archive(
        self,
        agent_id: str,
        *,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> RawResponse[models.AgentResponse]:
        """POST /api/v1/agents/{agentId}/archive: Archive an agent"""
        request = _build_archive_agent(agent_id)
        response = await self._client._send(
            request,
            timeout=timeout,
            max_retries=max_retries,
        )
        return RawResponse(response, _parse_archive_agent)

    async def restore(
        self,
        agent_id: str,
        *,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> RawResponse[models.AgentResponse]:
        """POST /api/v1/agents/{agentId}/restore: Restore an archived agent"""
        request = _build_restore_agent(agent_id)
        response = await self._client._send(
            request,
            timeout=timeout,
            max_retries=max_retries,
        )
        return RawResponse(response, _parse_restore_agent)

    async def run(
        self,
        agent_id: str,
        body: models.RunAgentBody | Mapping[str, Any] | None = None,
        *,
        files: Mapping[str, FileInput] | None = None,
        idempotency_key: str | None = None,
        priority: int | None = None,
        wait_for_completion: int | None = None,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> RawResponse[models.RunAgentResponse]:
        """POST /api/v1/agents/{agentId}/run: Run an agent"""
        request = _build_run_agent(
            agent_id,
            body,
            files=files,
            idempotency_key=idempotency_key,
            priority=priority,
            wait_for_completion=wait_for_completion,
        )
        response = await self._client._send(
            request,
            timeout=timeout,
            max_retries=max_retries,
        )
        return RawResponse(response, _parse_run_agent)

    async def list_files(
        self,
        agent_id: str,
        *,
        path: str | None = None,
        prefix: str | None = None,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> RawResponse[models.AgentFilesAnswer]:
        """GET /api/v1/agents/{agentId}/files: List the agent's live files, or read one"""
        request = _build_list_agent_files(agent_id, path=path, prefix=prefix)
        response = await self._client._send(
            request,
            timeout=timeout,
            max_retries=max_retries,
        )
        return RawResponse(response, _parse_list_agent_files)

    async def put_file(
        self,
        agent_id: str,
        body: models.AgentFileBody | Mapping[str, Any],
        *,
        path: str | None = None,
        prefix: str | None = None,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> RawResponse[models.PutAgentFileResponse]:
        """PUT /api/v1/agents/{agentId}/files: Write one live file"""
        request = _build_put_agent_file(agent_id, body, path=path, prefix=prefix)
        response = await self._client._send(
            request,
            timeout=timeout,
            max_retries=max_retries,
        )
        return RawResponse(response, _parse_put_agent_file)

    async def upload_files(
        self,
        agent_id: str,
        body: models.AgentFilesBody | Mapping[str, Any],
        *,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> RawResponse[models.UploadAgentFilesResponse]:
        """POST /api/v1/agents/{agentId}/files: Write several live files"""
        request = _build_upload_agent_files(agent_id, body)
        response = await self._client._send(
            request,
            timeout=timeout,
            max_retries=max_retries,
        )
        return RawResponse(response, _parse_upload_agent_files)


class Async_WorkflowsExecutions(AsyncWorkflowsExecutionsExtension):
    """``workflowsexecutions`` operations."""

    def __init__(self, client: AsyncServiceClient) -> None:
        self._client = client

    async def list(
        self,
        id: str,
        *,
        status: builtins.list[
            Literal[
                "created",
                "pending",
                "running",
                "waiting",
                "finalizing",
                "completed",
                "failed",
                "cancelled",
                "rejected",
            ]
        ]
        | None = None,
        from_date: str | None = None,
        to_date: str | None = None,
        example_id: str | None = None,
        limit: int | None = None,
        offset: int | None = None,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> models.ListWorkflowExecutionsResponse:
        """GET /api/v1/workflows/{id}/executions: List a workflow's executions"""
        request = _build_list_workflow_executions(
            id,
            status=status,
            from_date=from_date,
            to_date=to_date,
            example_id=example_id,
            limit=limit,
            offset=offset,
        )
        response = await self._client._send(
            request,
            timeout=timeout,
            max_retries=max_retries,
        )
        return _parse_list_workflow_executions(response)  # type: ignore[no-any-return]

    async def iter_list(
        self,
        id: str,
        *,
        status: builtins.list[
            Literal[
                "created",
                "pending",
                "running",
                "waiting",
                "finalizing",
                "completed",
                "failed",
                "cancelled",
                "rejected",
            ]
        ]
        | None = None,
        from_date: str | None = None,
        to_date: str | None = None,
        example_id: str | None = None,
        limit: int | None = None,
        offset: int | None = None,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> AsyncIterator[models.ExecutionSummary]:
        """Every item of ``list``, page after page: ``limit`` items a request (default
        100, the most the API allows) from ``offset`` (default 0) to the last page.

        Pages are fetched as the iteration reaches them, each with the call's ``timeout`` and
        retries. Offset paging: items created or deleted during the iteration shift the
        pages after them (an item may be skipped or seen twice)."""
        size = 100 if limit is None else limit
        start = 0 if offset is None else offset
        while True:
            page = await self.list(
                id,
                status=status,
                from_date=from_date,
                to_date=to_date,
                example_id=example_id,
                limit=size,
                offset=start,
                timeout=timeout,
                max_retries=max_retries,
            )
            items = page.data
            for item in items:
                yield item
            start += len(items)
            if not items or start >= page.total:
                return

    async def get(
        self,
        execution_id: str,
        *,
        include_steps: bool | None = None,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> models.GetWorkflowExecutionResponse:
        """GET /api/v1/workflows/executions/{executionId}: Get a workflow execution"""
        request = _build_get_workflow_execution(execution_id, include_steps=include_steps)
        response = await self._client._send(
            request,
            timeout=timeout,
            max_retries=max_retries,
        )
        return _parse_get_workflow_execution(response)  # type: ignore[no-any-return]

    async def cancel(
        self,
        execution_id: str,
        *,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> models.CancelWorkflowExecutionResponse:
        """POST /api/v1/workflows/executions/{executionId}/cancel: Cancel a workflow execution"""
        request = _build_cancel_workflow_execution(execution_id)
        response = await self._client._send(
            request,
            timeout=timeout,
            max_retries=max_retries,
        )
        return _parse_cancel_workflow_execution(response)  # type: ignore[no-any-return]


class _AsyncRawWorkflowsExecutions:
    """``workflowsexecutions`` operations answering a ``RawResponse``."""

    def __init__(self, client: AsyncServiceClient) -> None:
        self._client = client

    async def list(
        self,
        id: str,
        *,
        status: builtins.list[
            Literal[
                "created",
                "pending",
                "running",
                "waiting",
                "finalizing",
                "completed",
                "failed",
                "cancelled",
                "rejected",
            ]
        ]
        | None = None,
        from_date: str | None = None,
        to_date: str | None = None,
        example_id: str | None = None,
        limit: int | None = None,
        offset: int | None = None,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> RawResponse[models.ListWorkflowExecutionsResponse]:
        """GET /api/v1/workflows/{id}/executions: List a workflow's executions"""
        request = _build_list_workflow_executions(
            id,
            status=status,
            from_date=from_date,
            to_date=to_date,
            example_id=example_id,
            limit=limit,
            offset=offset,
        )
        response = await self._client._send(
            request,
            timeout=timeout,
            max_retries=max_retries,
        )
        return RawResponse(response, _parse_list_workflow_executions)

    async def get(
        self,
        execution_id: str,
        *,
        include_steps: bool | None = None,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> RawResponse[models.GetWorkflowExecutionResponse]:
        """GET /api/v1/workflows/executions/{executionId}: Get a workflow execution"""
        request = _build_get_workflow_execution(execution_id, include_steps=include_steps)
        response = await self._client._send(
            request,
            timeout=timeout,
            max_retries=max_retries,
        )
        return RawResponse(response, _parse_get_workflow_execution)

    async def cancel(
        self,
        execution_id: str,
        *,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> RawResponse[models.CancelWorkflowExecutionResponse]:
        """POST /api/v1/workflows/executions/{executionId}/cancel: Cancel a workflow execution"""
        request = _build_cancel_workflow_execution(execution_id)
        response = await self._client._send(
            request,
            timeout=timeout,
            max_retries=max_retries,
        )
        return RawResponse(response, _parse_cancel_workflow_execution)


class Async_Workflows:
    """``workflows`` operations."""

    def __init__(self, client: AsyncServiceClient) -> None:
        self._client = client
        self.executions = Async_WorkflowsExecutions(client)

    async def list(
        self,
        *,
        search: str | None = None,
        name: str | None = None,
        kind: Literal["workflow", "block"] | None = None,
        include_archived: bool | None = None,
        limit: int | None = None,
        offset: int | None = None,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> models.ListWorkflowsResponse:
        """GET /api/v1/workflows: List workflows"""
        request = _build_list_workflows(
            search=search,
            name=name,
            kind=kind,
            include_archived=include_archived,
            limit=limit,
            offset=offset,
        )
        response = await self._client._send(
            request,
            timeout=timeout,
            max_retries=max_retries,
        )
        return _parse_list_workflows(response)  # type: ignore[no-any-return]

    async def iter_list(
        self,
        *,
        search: str | None = None,
        name: str | None = None,
        kind: Literal["workflow", "block"] | None = None,
        include_archived: bool | None = None,
        limit: int | None = None,
        offset: int | None = None,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> AsyncIterator[models.WorkflowSummary]:
        """Every item of ``list``, page after page: ``limit`` items a request (default
        100, the most the API allows) from ``offset`` (default 0) to the last page.

        Pages are fetched as the iteration reaches them, each with the call's ``timeout`` and
        retries. Offset paging: items created or deleted during the iteration shift the
        pages after them (an item may be skipped or seen twice)."""
        size = 100 if limit is None else limit
        start = 0 if offset is None else offset
        while True:
            page = await self.list(
                search=search,
                name=name,
                kind=kind,
                include_archived=include_archived,
                limit=size,
                offset=start,
                timeout=timeout,
                max_retries=max_retries,
            )
            items = page.data
            for item in items:
                yield item
            start += len(items)
            if not items or start >= page.total:
                return

    async def create(
        self,
        body: models.CreateWorkflowBody | Mapping[str, Any],
        *,
        idempotency_key: str | None = None,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> models.WorkflowSummary:
        """POST /api/v1/workflows: Create a workflow"""
        request = _build_create_workflow(body, idempotency_key=idempotency_key)
        response = await self._client._send(
            request,
            timeout=timeout,
            max_retries=max_retries,
        )
        return _parse_create_workflow(response)  # type: ignore[no-any-return]

    async def get(
        self,
        id: str,
        *,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> models.WorkflowSummary:
        """GET /api/v1/workflows/{id}: Get a workflow"""
        request = _build_get_workflow(id)
        response = await self._client._send(
            request,
            timeout=timeout,
            max_retries=max_retries,
        )
        return _parse_get_workflow(response)  # type: ignore[no-any-return]

    async def archive(
        self,
        id: str,
        *,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> models.WorkflowSummary:
        """POST /api/v1/workflows/{id}/archive: Archive a workflow"""
        request = _build_archive_workflow(id)
        response = await self._client._send(
            request,
            timeout=timeout,
            max_retries=max_retries,
        )
        return _parse_archive_workflow(response)  # type: ignore[no-any-return]

    async def restore(
        self,
        id: str,
        *,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> models.WorkflowSummary:
        """POST /api/v1/workflows/{id}/restore: Restore an archived workflow"""
        request = _build_restore_workflow(id)
        response = await self._client._send(
            request,
            timeout=timeout,
            max_retries=max_retries,
        )
        return _parse_restore_workflow(response)  # type: ignore[no-any-return]

    async def run(
        self,
        id: str,
        body: models.RunWorkflowBody | Mapping[str, Any] | None = None,
        *,
        files: Mapping[str, FileInput] | None = None,
        idempotency_key: str | None = None,
        priority: int | None = None,
        version: str | None = None,
        wait_for_completion: int | None = None,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> models.RunWorkflowResponse:
        """POST /api/v1/workflows/{id}/run: Run a workflow"""
        request = _build_run_workflow(
            id,
            body,
            files=files,
            idempotency_key=idempotency_key,
            priority=priority,
            version=version,
            wait_for_completion=wait_for_completion,
        )
        response = await self._client._send(
            request,
            timeout=timeout,
            max_retries=max_retries,
        )
        return _parse_run_workflow(response)  # type: ignore[no-any-return]

    async def versions(
        self,
        id: str,
        *,
        limit: int | None = None,
        offset: int | None = None,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> models.ListVersionsResponse:
        """GET /api/v1/workflows/{id}/versions: List a workflow's released versions"""
        request = _build_list_workflow_versions(id, limit=limit, offset=offset)
        response = await self._client._send(
            request,
            timeout=timeout,
            max_retries=max_retries,
        )
        return _parse_list_workflow_versions(response)  # type: ignore[no-any-return]

    async def iter_versions(
        self,
        id: str,
        *,
        limit: int | None = None,
        offset: int | None = None,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> AsyncIterator[models.WorkflowVersion]:
        """Every item of ``versions``, page after page: ``limit`` items a request (default
        100, the most the API allows) from ``offset`` (default 0) to the last page.

        Pages are fetched as the iteration reaches them, each with the call's ``timeout`` and
        retries. Offset paging: items created or deleted during the iteration shift the
        pages after them (an item may be skipped or seen twice)."""
        size = 100 if limit is None else limit
        start = 0 if offset is None else offset
        while True:
            page = await self.versions(
                id,
                limit=size,
                offset=start,
                timeout=timeout,
                max_retries=max_retries,
            )
            items = page.data
            for item in items:
                yield item
            start += len(items)
            if not items or start >= page.total:
                return

    async def release(
        self,
        id: str,
        body: models.ReleaseWorkflowVersionBody | Mapping[str, Any],
        *,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> models.WorkflowVersion:
        """POST /api/v1/workflows/{id}/versions: Release a new version of a workflow"""
        request = _build_release_workflow_version(id, body)
        response = await self._client._send(
            request,
            timeout=timeout,
            max_retries=max_retries,
        )
        return _parse_release_workflow_version(response)  # type: ignore[no-any-return]


class _AsyncRawWorkflows:
    """``workflows`` operations answering a ``RawResponse``."""

    def __init__(self, client: AsyncServiceClient) -> None:
        self._client = client
        self.executions = _AsyncRawWorkflowsExecutions(client)

    async def list(
        self,
        *,
        search: str | None = None,
        name: str | None = None,
        kind: Literal["workflow", "block"] | None = None,
        include_archived: bool | None = None,
        limit: int | None = None,
        offset: int | None = None,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> RawResponse[models.ListWorkflowsResponse]:
        """GET /api/v1/workflows: List workflows"""
        request = _build_list_workflows(
            search=search,
            name=name,
            kind=kind,
            include_archived=include_archived,
            limit=limit,
            offset=offset,
        )
        response = await self._client._send(
            request,
            timeout=timeout,
            max_retries=max_retries,
        )
        return RawResponse(response, _parse_list_workflows)

    async def create(
        self,
        body: models.CreateWorkflowBody | Mapping[str, Any],
        *,
        idempotency_key: str | None = None,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> RawResponse[models.WorkflowSummary]:
        """POST /api/v1/workflows: Create a workflow"""
        request = _build_create_workflow(body, idempotency_key=idempotency_key)
        response = await self._client._send(
            request,
            timeout=timeout,
            max_retries=max_retries,
        )
        return RawResponse(response, _parse_create_workflow)

    async def get(
        self,
        id: str,
        *,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> RawResponse[models.WorkflowSummary]:
        """GET /api/v1/workflows/{id}: Get a workflow"""
        request = _build_get_workflow(id)
        response = await self._client._send(
            request,
            timeout=timeout,
            max_retries=max_retries,
        )
        return RawResponse(response, _parse_get_workflow)

    async def archive(
        self,
        id: str,
        *,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> RawResponse[models.WorkflowSummary]:
        """POST /api/v1/workflows/{id}/archive: Archive a workflow"""
        request = _build_archive_workflow(id)
        response = await self._client._send(
            request,
            timeout=timeout,
            max_retries=max_retries,
        )
        return RawResponse(response, _parse_archive_workflow)

    async def restore(
        self,
        id: str,
        *,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> RawResponse[models.WorkflowSummary]:
        """POST /api/v1/workflows/{id}/restore: Restore an archived workflow"""
        request = _build_restore_workflow(id)
        response = await self._client._send(
            request,
            timeout=timeout,
            max_retries=max_retries,
        )
        return RawResponse(response, _parse_restore_workflow)

    async def run(
        self,
        id: str,
        body: models.RunWorkflowBody | Mapping[str, Any] | None = None,
        *,
        files: Mapping[str, FileInput] | None = None,
        idempotency_key: str | None = None,
        priority: int | None = None,
        version: str | None = None,
        wait_for_completion: int | None = None,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> RawResponse[models.RunWorkflowResponse]:
        """POST /api/v1/workflows/{id}/run: Run a workflow"""
        request = _build_run_workflow(
            id,
            body,
            files=files,
            idempotency_key=idempotency_key,
            priority=priority,
            version=version,
            wait_for_completion=wait_for_completion,
        )
        response = await self._client._send(
            request,
            timeout=timeout,
            max_retries=max_retries,
        )
        return RawResponse(response, _parse_run_workflow)

    async def versions(
        self,
        id: str,
        *,
        limit: int | None = None,
        offset: int | None = None,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> RawResponse[models.ListVersionsResponse]:
        """GET /api/v1/workflows/{id}/versions: List a workflow's released versions"""
        request = _build_list_workflow_versions(id, limit=limit, offset=offset)
        response = await self._client._send(
            request,
            timeout=timeout,
            max_retries=max_retries,
        )
        return RawResponse(response, _parse_list_workflow_versions)

    async def release(
        self,
        id: str,
        body: models.ReleaseWorkflowVersionBody | Mapping[str, Any],
        *,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> RawResponse[models.WorkflowVersion]:
        """POST /api/v1/workflows/{id}/versions: Release a new version of a workflow"""
        request = _build_release_workflow_version(id, body)
        response = await self._client._send(
            request,
            timeout=timeout,
            max_retries=max_retries,
        )
        return RawResponse(response, _parse_release_workflow_version)


class Async_Webhooks:
    """``webhooks`` operations."""

    def __init__(self, client: AsyncServiceClient) -> None:
        self._client = client

    async def list(
        self,
        *,
        limit: int | None = None,
        offset: int | None = None,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> models.ListWebhooksResponse:
        """GET /api/v1/webhooks: List webhook subscriptions"""
        request = _build_list_webhooks(limit=limit, offset=offset)
        response = await self._client._send(
            request,
            timeout=timeout,
            max_retries=max_retries,
        )
        return _parse_list_webhooks(response)  # type: ignore[no-any-return]

    async def iter_list(
        self,
        *,
        limit: int | None = None,
        offset: int | None = None,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> AsyncIterator[models.Webhook]:
        """Every item of ``list``, page after page: ``limit`` items a request (default
        100, the most the API allows) from ``offset`` (default 0) to the last page.

        Pages are fetched as the iteration reaches them, each with the call's ``timeout`` and
        retries. Offset paging: items created or deleted during the iteration shift the
        pages after them (an item may be skipped or seen twice)."""
        size = 100 if limit is None else limit
        start = 0 if offset is None else offset
        while True:
            page = await self.list(
                limit=size,
                offset=start,
                timeout=timeout,
                max_retries=max_retries,
            )
            items = page.data
            for item in items:
                yield item
            start += len(items)
            if not items or start >= page.total:
                return

    async def create(
        self,
        body: models.CreateWebhookBody | Mapping[str, Any],
        *,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> models.CreatedWebhook:
        """POST /api/v1/webhooks: Subscribe to execution events"""
        request = _build_create_webhook(body)
        response = await self._client._send(
            request,
            timeout=timeout,
            max_retries=max_retries,
        )
        return _parse_create_webhook(response)  # type: ignore[no-any-return]

    async def get(
        self,
        webhook_id: str,
        *,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> models.Webhook:
        """GET /api/v1/webhooks/{webhookId}: Get a webhook subscription"""
        request = _build_get_webhook(webhook_id)
        response = await self._client._send(
            request,
            timeout=timeout,
            max_retries=max_retries,
        )
        return _parse_get_webhook(response)  # type: ignore[no-any-return]

    async def delete(
        self,
        webhook_id: str,
        *,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> None:
        """DELETE /api/v1/webhooks/{webhookId}: Delete a webhook subscription"""
        request = _build_delete_webhook(webhook_id)
        response = await self._client._send(
            request,
            timeout=timeout,
            max_retries=max_retries,
        )
        return _parse_delete_webhook(response)  # type: ignore[no-any-return]

    async def list_deliveries(
        self,
        webhook_id: str,
        *,
        status: Literal["pending", "delivered", "failed"] | None = None,
        limit: int | None = None,
        offset: int | None = None,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> models.ListWebhookDeliveriesResponse:
        """GET /api/v1/webhooks/{webhookId}/deliveries: List a subscription's deliveries"""
        request = _build_list_webhook_deliveries(
            webhook_id, status=status, limit=limit, offset=offset
        )
        response = await self._client._send(
            request,
            timeout=timeout,
            max_retries=max_retries,
        )
        return _parse_list_webhook_deliveries(response)  # type: ignore[no-any-return]

    async def iter_list_deliveries(
        self,
        webhook_id: str,
        *,
        status: Literal["pending", "delivered", "failed"] | None = None,
        limit: int | None = None,
        offset: int | None = None,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> AsyncIterator[models.WebhookDelivery]:
        """Every item of ``list_deliveries``, page after page: ``limit`` items a request (default
        100, the most the API allows) from ``offset`` (default 0) to the last page.

        Pages are fetched as the iteration reaches them, each with the call's ``timeout`` and
        retries. Offset paging: items created or deleted during the iteration shift the
        pages after them (an item may be skipped or seen twice)."""
        size = 100 if limit is None else limit
        start = 0 if offset is None else offset
        while True:
            page = await self.list_deliveries(
                webhook_id,
                status=status,
                limit=size,
                offset=start,
                timeout=timeout,
                max_retries=max_retries,
            )
            items = page.data
            for item in items:
                yield item
            start += len(items)
            if not items or start >= page.total:
                return


class _AsyncRawWebhooks:
    """``webhooks`` operations answering a ``RawResponse``."""

    def __init__(self, client: AsyncServiceClient) -> None:
        self._client = client

    async def list(
        self,
        *,
        limit: int | None = None,
        offset: int | None = None,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> RawResponse[models.ListWebhooksResponse]:
        """GET /api/v1/webhooks: List webhook subscriptions"""
        request = _build_list_webhooks(limit=limit, offset=offset)
        response = await self._client._send(
            request,
            timeout=timeout,
            max_retries=max_retries,
        )
        return RawResponse(response, _parse_list_webhooks)

    async def create(
        self,
        body: models.CreateWebhookBody | Mapping[str, Any],
        *,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> RawResponse[models.CreatedWebhook]:
        """POST /api/v1/webhooks: Subscribe to execution events"""
        request = _build_create_webhook(body)
        response = await self._client._send(
            request,
            timeout=timeout,
            max_retries=max_retries,
        )
        return RawResponse(response, _parse_create_webhook)

    async def get(
        self,
        webhook_id: str,
        *,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> RawResponse[models.Webhook]:
        """GET /api/v1/webhooks/{webhookId}: Get a webhook subscription"""
        request = _build_get_webhook(webhook_id)
        response = await self._client._send(
            request,
            timeout=timeout,
            max_retries=max_retries,
        )
        return RawResponse(response, _parse_get_webhook)

    async def delete(
        self,
        webhook_id: str,
        *,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> RawResponse[None]:
        """DELETE /api/v1/webhooks/{webhookId}: Delete a webhook subscription"""
        request = _build_delete_webhook(webhook_id)
        response = await self._client._send(
            request,
            timeout=timeout,
            max_retries=max_retries,
        )
        return RawResponse(response, _parse_delete_webhook)

    async def list_deliveries(
        self,
        webhook_id: str,
        *,
        status: Literal["pending", "delivered", "failed"] | None = None,
        limit: int | None = None,
        offset: int | None = None,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> RawResponse[models.ListWebhookDeliveriesResponse]:
        """GET /api/v1/webhooks/{webhookId}/deliveries: List a subscription's deliveries"""
        request = _build_list_webhook_deliveries(
            webhook_id, status=status, limit=limit, offset=offset
        )
        response = await self._client._send(
            request,
            timeout=timeout,
            max_retries=max_retries,
        )
        return RawResponse(response, _parse_list_webhook_deliveries)


class Async_Schedules:
    """``schedules`` operations."""

    def __init__(self, client: AsyncServiceClient) -> None:
        self._client = client

    async def list(
        self,
        *,
        agent_id: str | None = None,
        workflow_id: str | None = None,
        limit: int | None = None,
        offset: int | None = None,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> models.ListSchedulesResponse:
        """GET /api/v1/schedules: List schedules"""
        request = _build_list_schedules(
            agent_id=agent_id, workflow_id=workflow_id, limit=limit, offset=offset
        )
        response = await self._client._send(
            request,
            timeout=timeout,
            max_retries=max_retries,
        )
        return _parse_list_schedules(response)  # type: ignore[no-any-return]

    async def iter_list(
        self,
        *,
        agent_id: str | None = None,
        workflow_id: str | None = None,
        limit: int | None = None,
        offset: int | None = None,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> AsyncIterator[models.Schedule]:
        """Every item of ``list``, page after page: ``limit`` items a request (default
        200, the most the API allows) from ``offset`` (default 0) to the last page.

        Pages are fetched as the iteration reaches them, each with the call's ``timeout`` and
        retries. Offset paging: items created or deleted during the iteration shift the
        pages after them (an item may be skipped or seen twice)."""
        size = 200 if limit is None else limit
        start = 0 if offset is None else offset
        while True:
            page = await self.list(
                agent_id=agent_id,
                workflow_id=workflow_id,
                limit=size,
                offset=start,
                timeout=timeout,
                max_retries=max_retries,
            )
            items = page.data
            for item in items:
                yield item
            start += len(items)
            if not items or start >= page.total:
                return

    async def create(
        self,
        body: models.CreateScheduleBody | Mapping[str, Any],
        *,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> models.Schedule:
        """POST /api/v1/schedules: Create a schedule"""
        request = _build_create_schedule(body)
        response = await self._client._send(
            request,
            timeout=timeout,
            max_retries=max_retries,
        )
        return _parse_create_schedule(response)  # type: ignore[no-any-return]

    async def get(
        self,
        schedule_id: str,
        *,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> models.Schedule:
        """GET /api/v1/schedules/{scheduleId}: Get a schedule"""
        request = _build_get_schedule(schedule_id)
        response = await self._client._send(
            request,
            timeout=timeout,
            max_retries=max_retries,
        )
        return _parse_get_schedule(response)  # type: ignore[no-any-return]

    async def delete(
        self,
        schedule_id: str,
        *,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> None:
        """DELETE /api/v1/schedules/{scheduleId}: Delete a schedule"""
        request = _build_delete_schedule(schedule_id)
        response = await self._client._send(
            request,
            timeout=timeout,
            max_retries=max_retries,
        )
        return _parse_delete_schedule(response)  # type: ignore[no-any-return]

    async def update(
        self,
        schedule_id: str,
        body: models.UpdateScheduleBody | Mapping[str, Any],
        *,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> models.Schedule:
        """PATCH /api/v1/schedules/{scheduleId}: Change a schedule"""
        request = _build_update_schedule(schedule_id, body)
        response = await self._client._send(
            request,
            timeout=timeout,
            max_retries=max_retries,
        )
        return _parse_update_schedule(response)  # type: ignore[no-any-return]


class _AsyncRawSchedules:
    """``schedules`` operations answering a ``RawResponse``."""

    def __init__(self, client: AsyncServiceClient) -> None:
        self._client = client

    async def list(
        self,
        *,
        agent_id: str | None = None,
        workflow_id: str | None = None,
        limit: int | None = None,
        offset: int | None = None,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> RawResponse[models.ListSchedulesResponse]:
        """GET /api/v1/schedules: List schedules"""
        request = _build_list_schedules(
            agent_id=agent_id, workflow_id=workflow_id, limit=limit, offset=offset
        )
        response = await self._client._send(
            request,
            timeout=timeout,
            max_retries=max_retries,
        )
        return RawResponse(response, _parse_list_schedules)

    async def create(
        self,
        body: models.CreateScheduleBody | Mapping[str, Any],
        *,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> RawResponse[models.Schedule]:
        """POST /api/v1/schedules: Create a schedule"""
        request = _build_create_schedule(body)
        response = await self._client._send(
            request,
            timeout=timeout,
            max_retries=max_retries,
        )
        return RawResponse(response, _parse_create_schedule)

    async def get(
        self,
        schedule_id: str,
        *,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> RawResponse[models.Schedule]:
        """GET /api/v1/schedules/{scheduleId}: Get a schedule"""
        request = _build_get_schedule(schedule_id)
        response = await self._client._send(
            request,
            timeout=timeout,
            max_retries=max_retries,
        )
        return RawResponse(response, _parse_get_schedule)

    async def delete(
        self,
        schedule_id: str,
        *,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> RawResponse[None]:
        """DELETE /api/v1/schedules/{scheduleId}: Delete a schedule"""
        request = _build_delete_schedule(schedule_id)
        response = await self._client._send(
            request,
            timeout=timeout,
            max_retries=max_retries,
        )
        return RawResponse(response, _parse_delete_schedule)

    async def update(
        self,
        schedule_id: str,
        body: models.UpdateScheduleBody | Mapping[str, Any],
        *,
        timeout: float | httpx.Timeout | None = None,
        max_retries: int | None = None,
    ) -> RawResponse[models.Schedule]:
        """PATCH /api/v1/schedules/{scheduleId}: Change a schedule"""
        request = _build_update_schedule(schedule_id, body)
        response = await self._client._send(
            request,
            timeout=timeout,
            max_retries=max_retries,
        )
        return RawResponse(response, _parse_update_schedule)


class _AsyncRawServiceClient:
    """``client.with_raw_response``: the client's methods answering a ``RawResponse`` (status,
    headers, ``parse()``) instead of the parsed body; streamed methods are not among them."""

    def __init__(self, client: AsyncServiceClient) -> None:
        self._client = client
        self.agents = _AsyncRawAgents(client)
        self.workflows = _AsyncRawWorkflows(client)
        self.webhooks = _AsyncRawWebhooks(client)
        self.schedules = _AsyncRawSchedules(client)


class AsyncServiceClient:
    """Asynchronous client of Agents and Workflows API.

    ``api_key`` (default ``$SERVICE_API_KEY``) is sent as a bearer token;
    ``base_url`` defaults to ``$SERVICE_BASE_URL``, else http://127.0.0.1:8090;
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
        self.with_raw_response = _AsyncRawServiceClient(self)
        self.agents = Async_Agents(self)
        self.workflows = Async_Workflows(self)
        self.webhooks = Async_Webhooks(self)
        self.schedules = Async_Schedules(self)

    @property
    def http_client(self) -> httpx.AsyncClient:
        """The ``httpx.AsyncClient`` under this client (e.g. for OpenTelemetry's
        ``HTTPXClientInstrumentor.instrument_client``)."""
        return self._http

    async def close(self) -> None:
        """Close the connection pool."""
        await self._http.aclose()

    async def __aenter__(self) -> AsyncServiceClient:
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
