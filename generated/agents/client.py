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
        return _parse_list_agent_executions(self._client._send(request))  # type: ignore[no-any-return]

    def get(
        self,
        execution_id: str,
        *,
        include: builtins.list[Literal["feedback", "expected", "files", "attempts"]] | None = None,
    ) -> models.AgentExecutionResponse:
        """GET /api/v1/agents/executions/{executionId}: Get an agent execution"""
        request = _build_get_agent_execution(execution_id, include=include)
        return _parse_get_agent_execution(self._client._send(request))  # type: ignore[no-any-return]

    def cancel(
        self,
        execution_id: str,
    ) -> models.CancelAgentExecutionResponse:
        """POST /api/v1/agents/executions/{executionId}/cancel: Cancel an agent execution"""
        request = _build_cancel_agent_execution(execution_id)
        return _parse_cancel_agent_execution(self._client._send(request))  # type: ignore[no-any-return]

    def rerun(
        self,
        execution_id: str,
        *,
        idempotency_key: str | None = None,
        priority: int | None = None,
    ) -> models.RerunAgentExecutionResponse:
        """POST /api/v1/agents/executions/{executionId}/rerun: Rerun an agent execution"""
        request = _build_rerun_agent_execution(
            execution_id, idempotency_key=idempotency_key, priority=priority
        )
        return _parse_rerun_agent_execution(self._client._send(request))  # type: ignore[no-any-return]

    def get_feedback(
        self,
        execution_id: str,
    ) -> models.AgentExecutionFeedbackDetail:
        """GET /api/v1/agents/executions/{executionId}/feedback: Get an execution's feedback and expected results"""
        request = _build_get_agent_execution_feedback(execution_id)
        return _parse_get_agent_execution_feedback(self._client._send(request))  # type: ignore[no-any-return]

    def clear_feedback(
        self,
        execution_id: str,
    ) -> models.AgentExecutionFeedbackDetail:
        """DELETE /api/v1/agents/executions/{executionId}/feedback: Clear an execution's feedback and expected results"""
        request = _build_clear_agent_execution_feedback(execution_id)
        return _parse_clear_agent_execution_feedback(self._client._send(request))  # type: ignore[no-any-return]

    def update_feedback(
        self,
        execution_id: str,
        body: models.UpdateAgentExecutionFeedbackBody | Mapping[str, Any],
    ) -> models.AgentExecutionFeedbackDetail:
        """PATCH /api/v1/agents/executions/{executionId}/feedback: Create or change an execution's feedback"""
        request = _build_update_agent_execution_feedback(execution_id, body)
        return _parse_update_agent_execution_feedback(self._client._send(request))  # type: ignore[no-any-return]

    def list_expected(
        self,
        execution_id: str,
    ) -> models.AgentExecutionExpectedArtifacts:
        """GET /api/v1/agents/executions/{executionId}/expected: List an execution's expected artifacts"""
        request = _build_list_agent_execution_expected(execution_id)
        return _parse_list_agent_execution_expected(self._client._send(request))  # type: ignore[no-any-return]

    def copy_output_to_expected(
        self,
        execution_id: str,
        body: models.CopyAgentExecutionOutputToExpectedBody | Mapping[str, Any],
    ) -> models.CreateExpectedFileResponse:
        """POST /api/v1/agents/executions/{executionId}/expected: Add an expected file (upload one, or copy an output file)"""
        request = _build_add_agent_execution_expected_file_copy_output_to_expected(
            execution_id, body
        )
        return _parse_add_agent_execution_expected_file(self._client._send(request))  # type: ignore[no-any-return]

    def upload_expected(
        self,
        execution_id: str,
        file: FileInput,
        *,
        name: str | None = None,
    ) -> models.CreateExpectedFileResponse:
        """POST /api/v1/agents/executions/{executionId}/expected: Add an expected file (upload one, or copy an output file)"""
        request = _build_add_agent_execution_expected_file_upload_expected(
            execution_id, file, name=name
        )
        return _parse_add_agent_execution_expected_file(self._client._send(request))  # type: ignore[no-any-return]

    def download_expected(
        self,
        execution_id: str,
        filename: str,
    ) -> Iterator[bytes]:
        """GET /api/v1/agents/executions/{executionId}/expected/{filename}: Download an expected file"""
        request = _build_download_agent_execution_expected_file(execution_id, filename)
        return self._client._iter(request, text=False)

    def delete_expected(
        self,
        execution_id: str,
        filename: str,
    ) -> None:
        """DELETE /api/v1/agents/executions/{executionId}/expected/{filename}: Delete an expected file"""
        request = _build_delete_agent_execution_expected_file(execution_id, filename)
        return _parse_delete_agent_execution_expected_file(self._client._send(request))  # type: ignore[no-any-return]

    def rename_expected(
        self,
        execution_id: str,
        filename: str,
        body: models.RenameExpectedFileBody | Mapping[str, Any],
    ) -> models.RenameExpectedFileResponse:
        """PATCH /api/v1/agents/executions/{executionId}/expected/{filename}: Rename an expected file"""
        request = _build_rename_agent_execution_expected_file(execution_id, filename, body)
        return _parse_rename_agent_execution_expected_file(self._client._send(request))  # type: ignore[no-any-return]

    def promote(
        self,
        execution_id: str,
        body: models.PromoteAgentExecutionBody | Mapping[str, Any],
    ) -> models.AgentExecutionPromotion:
        """PUT /api/v1/agents/executions/{executionId}/promotion: Promote an execution to a dataset example"""
        request = _build_promote_agent_execution(execution_id, body)
        return _parse_promote_agent_execution(self._client._send(request))  # type: ignore[no-any-return]

    def demote(
        self,
        execution_id: str,
    ) -> models.AgentExecutionDemotion:
        """DELETE /api/v1/agents/executions/{executionId}/promotion: Withdraw an execution's promotion"""
        request = _build_demote_agent_execution(execution_id)
        return _parse_demote_agent_execution(self._client._send(request))  # type: ignore[no-any-return]

    def download_file(
        self,
        execution_id: str,
        kind: str,
        filename: str,
    ) -> Iterator[bytes]:
        """GET /api/v1/agents/executions/{executionId}/files/{kind}/{filename}: Download an execution's file"""
        request = _build_download_agent_execution_file(execution_id, kind, filename)
        return self._client._iter(request, text=False)


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
    ) -> models.ListAgentsResponse:
        """GET /api/v1/agents: List agents"""
        request = _build_list_agents(
            search=search, include_archived=include_archived, limit=limit, offset=offset
        )
        return _parse_list_agents(self._client._send(request))  # type: ignore[no-any-return]

    def create(
        self,
        body: models.CreateAgentBody | Mapping[str, Any],
        *,
        idempotency_key: str | None = None,
    ) -> models.CreateAgentResponse:
        """POST /api/v1/agents: Create an agent"""
        request = _build_create_agent(body, idempotency_key=idempotency_key)
        return _parse_create_agent(self._client._send(request))  # type: ignore[no-any-return]

    def get(
        self,
        agent_id: str,
        *,
        include: builtins.list[Literal["files", "dataset"]] | None = None,
    ) -> models.GetAgentResponse:
        """GET /api/v1/agents/{agentId}: Get an agent"""
        request = _build_get_agent(agent_id, include=include)
        return _parse_get_agent(self._client._send(request))  # type: ignore[no-any-return]

    def update(
        self,
        agent_id: str,
        body: models.PatchAgentBody | Mapping[str, Any],
    ) -> models.PatchAgentResponse:
        """PATCH /api/v1/agents/{agentId}: Update an agent"""
        request = _build_update_agent(agent_id, body)
        return _parse_update_agent(self._client._send(request))  # type: ignore[no-any-return]

    def archive(
        self,
        agent_id: str,
    ) -> models.AgentResponse:
        """POST /api/v1/agents/{agentId}/archive: Archive an agent"""
        request = _build_archive_agent(agent_id)
        return _parse_archive_agent(self._client._send(request))  # type: ignore[no-any-return]

    def restore(
        self,
        agent_id: str,
    ) -> models.AgentResponse:
        """POST /api/v1/agents/{agentId}/restore: Restore an archived agent"""
        request = _build_restore_agent(agent_id)
        return _parse_restore_agent(self._client._send(request))  # type: ignore[no-any-return]

    def run(
        self,
        agent_id: str,
        body: models.RunAgentBody | Mapping[str, Any] | None = None,
        *,
        files: Mapping[str, FileInput] | None = None,
        idempotency_key: str | None = None,
        priority: int | None = None,
        wait_for_completion: int | None = None,
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
        return _parse_run_agent(self._client._send(request))  # type: ignore[no-any-return]

    def list_files(
        self,
        agent_id: str,
        *,
        path: str | None = None,
        prefix: str | None = None,
    ) -> models.AgentFilesAnswer:
        """GET /api/v1/agents/{agentId}/files: List the agent's live files, or read one"""
        request = _build_list_agent_files(agent_id, path=path, prefix=prefix)
        return _parse_list_agent_files(self._client._send(request))  # type: ignore[no-any-return]

    def put_file(
        self,
        agent_id: str,
        body: models.AgentFileBody | Mapping[str, Any],
        *,
        path: str | None = None,
        prefix: str | None = None,
    ) -> models.PutAgentFileResponse:
        """PUT /api/v1/agents/{agentId}/files: Write one live file"""
        request = _build_put_agent_file(agent_id, body, path=path, prefix=prefix)
        return _parse_put_agent_file(self._client._send(request))  # type: ignore[no-any-return]

    def upload_files(
        self,
        agent_id: str,
        body: models.AgentFilesBody | Mapping[str, Any],
    ) -> models.UploadAgentFilesResponse:
        """POST /api/v1/agents/{agentId}/files: Write several live files"""
        request = _build_upload_agent_files(agent_id, body)
        return _parse_upload_agent_files(self._client._send(request))  # type: ignore[no-any-return]


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
        return _parse_list_workflow_executions(self._client._send(request))  # type: ignore[no-any-return]

    def get(
        self,
        execution_id: str,
        *,
        include_steps: bool | None = None,
    ) -> models.GetWorkflowExecutionResponse:
        """GET /api/v1/workflows/executions/{executionId}: Get a workflow execution"""
        request = _build_get_workflow_execution(execution_id, include_steps=include_steps)
        return _parse_get_workflow_execution(self._client._send(request))  # type: ignore[no-any-return]

    def cancel(
        self,
        execution_id: str,
    ) -> models.CancelWorkflowExecutionResponse:
        """POST /api/v1/workflows/executions/{executionId}/cancel: Cancel a workflow execution"""
        request = _build_cancel_workflow_execution(execution_id)
        return _parse_cancel_workflow_execution(self._client._send(request))  # type: ignore[no-any-return]


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
        return _parse_list_workflows(self._client._send(request))  # type: ignore[no-any-return]

    def create(
        self,
        body: models.CreateWorkflowBody | Mapping[str, Any],
        *,
        idempotency_key: str | None = None,
    ) -> models.WorkflowSummary:
        """POST /api/v1/workflows: Create a workflow"""
        request = _build_create_workflow(body, idempotency_key=idempotency_key)
        return _parse_create_workflow(self._client._send(request))  # type: ignore[no-any-return]

    def get(
        self,
        id: str,
    ) -> models.WorkflowSummary:
        """GET /api/v1/workflows/{id}: Get a workflow"""
        request = _build_get_workflow(id)
        return _parse_get_workflow(self._client._send(request))  # type: ignore[no-any-return]

    def archive(
        self,
        id: str,
    ) -> models.WorkflowSummary:
        """POST /api/v1/workflows/{id}/archive: Archive a workflow"""
        request = _build_archive_workflow(id)
        return _parse_archive_workflow(self._client._send(request))  # type: ignore[no-any-return]

    def restore(
        self,
        id: str,
    ) -> models.WorkflowSummary:
        """POST /api/v1/workflows/{id}/restore: Restore an archived workflow"""
        request = _build_restore_workflow(id)
        return _parse_restore_workflow(self._client._send(request))  # type: ignore[no-any-return]

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
        return _parse_run_workflow(self._client._send(request))  # type: ignore[no-any-return]

    def versions(
        self,
        id: str,
        *,
        limit: int | None = None,
        offset: int | None = None,
    ) -> models.ListVersionsResponse:
        """GET /api/v1/workflows/{id}/versions: List a workflow's released versions"""
        request = _build_list_workflow_versions(id, limit=limit, offset=offset)
        return _parse_list_workflow_versions(self._client._send(request))  # type: ignore[no-any-return]

    def release(
        self,
        id: str,
        body: models.ReleaseWorkflowVersionBody | Mapping[str, Any],
    ) -> models.WorkflowVersion:
        """POST /api/v1/workflows/{id}/versions: Release a new version of a workflow"""
        request = _build_release_workflow_version(id, body)
        return _parse_release_workflow_version(self._client._send(request))  # type: ignore[no-any-return]


class _Webhooks:
    """``webhooks`` operations."""

    def __init__(self, client: ServiceClient) -> None:
        self._client = client

    def list(
        self,
        *,
        limit: int | None = None,
        offset: int | None = None,
    ) -> models.ListWebhooksResponse:
        """GET /api/v1/webhooks: List webhook subscriptions"""
        request = _build_list_webhooks(limit=limit, offset=offset)
        return _parse_list_webhooks(self._client._send(request))  # type: ignore[no-any-return]

    def create(
        self,
        body: models.CreateWebhookBody | Mapping[str, Any],
    ) -> models.CreatedWebhook:
        """POST /api/v1/webhooks: Subscribe to execution events"""
        request = _build_create_webhook(body)
        return _parse_create_webhook(self._client._send(request))  # type: ignore[no-any-return]

    def get(
        self,
        webhook_id: str,
    ) -> models.Webhook:
        """GET /api/v1/webhooks/{webhookId}: Get a webhook subscription"""
        request = _build_get_webhook(webhook_id)
        return _parse_get_webhook(self._client._send(request))  # type: ignore[no-any-return]

    def delete(
        self,
        webhook_id: str,
    ) -> None:
        """DELETE /api/v1/webhooks/{webhookId}: Delete a webhook subscription"""
        request = _build_delete_webhook(webhook_id)
        return _parse_delete_webhook(self._client._send(request))  # type: ignore[no-any-return]

    def list_deliveries(
        self,
        webhook_id: str,
        *,
        status: Literal["pending", "delivered", "failed"] | None = None,
        limit: int | None = None,
        offset: int | None = None,
    ) -> models.ListWebhookDeliveriesResponse:
        """GET /api/v1/webhooks/{webhookId}/deliveries: List a subscription's deliveries"""
        request = _build_list_webhook_deliveries(
            webhook_id, status=status, limit=limit, offset=offset
        )
        return _parse_list_webhook_deliveries(self._client._send(request))  # type: ignore[no-any-return]


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
    ) -> models.ListSchedulesResponse:
        """GET /api/v1/schedules: List schedules"""
        request = _build_list_schedules(
            agent_id=agent_id, workflow_id=workflow_id, limit=limit, offset=offset
        )
        return _parse_list_schedules(self._client._send(request))  # type: ignore[no-any-return]

    def create(
        self,
        body: models.CreateScheduleBody | Mapping[str, Any],
    ) -> models.Schedule:
        """POST /api/v1/schedules: Create a schedule"""
        request = _build_create_schedule(body)
        return _parse_create_schedule(self._client._send(request))  # type: ignore[no-any-return]

    def get(
        self,
        schedule_id: str,
    ) -> models.Schedule:
        """GET /api/v1/schedules/{scheduleId}: Get a schedule"""
        request = _build_get_schedule(schedule_id)
        return _parse_get_schedule(self._client._send(request))  # type: ignore[no-any-return]

    def delete(
        self,
        schedule_id: str,
    ) -> None:
        """DELETE /api/v1/schedules/{scheduleId}: Delete a schedule"""
        request = _build_delete_schedule(schedule_id)
        return _parse_delete_schedule(self._client._send(request))  # type: ignore[no-any-return]

    def update(
        self,
        schedule_id: str,
        body: models.UpdateScheduleBody | Mapping[str, Any],
    ) -> models.Schedule:
        """PATCH /api/v1/schedules/{scheduleId}: Change a schedule"""
        request = _build_update_schedule(schedule_id, body)
        return _parse_update_schedule(self._client._send(request))  # type: ignore[no-any-return]


class ServiceClient:
    """Client of Agents and Workflows API.

    ``api_key`` (default ``$SERVICE_API_KEY``) is sent as a bearer token;
    ``base_url`` defaults to ``$SERVICE_BASE_URL``, else http://127.0.0.1:8090;
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
        self.agents = _Agents(self)
        self.workflows = _Workflows(self)
        self.webhooks = _Webhooks(self)
        self.schedules = _Schedules(self)

    def close(self) -> None:
        """Close the connection pool."""
        self._http.close()

    def __enter__(self) -> ServiceClient:
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
            raise ServiceTimeoutError(f"Request timed out: {exc}", status=0) from exc
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
            raise ServiceTimeoutError(f"Request timed out: {exc}", status=0) from exc


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
        return _parse_list_agent_executions(await self._client._send(request))  # type: ignore[no-any-return]

    async def get(
        self,
        execution_id: str,
        *,
        include: builtins.list[Literal["feedback", "expected", "files", "attempts"]] | None = None,
    ) -> models.AgentExecutionResponse:
        """GET /api/v1/agents/executions/{executionId}: Get an agent execution"""
        request = _build_get_agent_execution(execution_id, include=include)
        return _parse_get_agent_execution(await self._client._send(request))  # type: ignore[no-any-return]

    async def cancel(
        self,
        execution_id: str,
    ) -> models.CancelAgentExecutionResponse:
        """POST /api/v1/agents/executions/{executionId}/cancel: Cancel an agent execution"""
        request = _build_cancel_agent_execution(execution_id)
        return _parse_cancel_agent_execution(await self._client._send(request))  # type: ignore[no-any-return]

    async def rerun(
        self,
        execution_id: str,
        *,
        idempotency_key: str | None = None,
        priority: int | None = None,
    ) -> models.RerunAgentExecutionResponse:
        """POST /api/v1/agents/executions/{executionId}/rerun: Rerun an agent execution"""
        request = _build_rerun_agent_execution(
            execution_id, idempotency_key=idempotency_key, priority=priority
        )
        return _parse_rerun_agent_execution(await self._client._send(request))  # type: ignore[no-any-return]

    async def get_feedback(
        self,
        execution_id: str,
    ) -> models.AgentExecutionFeedbackDetail:
        """GET /api/v1/agents/executions/{executionId}/feedback: Get an execution's feedback and expected results"""
        request = _build_get_agent_execution_feedback(execution_id)
        return _parse_get_agent_execution_feedback(await self._client._send(request))  # type: ignore[no-any-return]

    async def clear_feedback(
        self,
        execution_id: str,
    ) -> models.AgentExecutionFeedbackDetail:
        """DELETE /api/v1/agents/executions/{executionId}/feedback: Clear an execution's feedback and expected results"""
        request = _build_clear_agent_execution_feedback(execution_id)
        return _parse_clear_agent_execution_feedback(await self._client._send(request))  # type: ignore[no-any-return]

    async def update_feedback(
        self,
        execution_id: str,
        body: models.UpdateAgentExecutionFeedbackBody | Mapping[str, Any],
    ) -> models.AgentExecutionFeedbackDetail:
        """PATCH /api/v1/agents/executions/{executionId}/feedback: Create or change an execution's feedback"""
        request = _build_update_agent_execution_feedback(execution_id, body)
        return _parse_update_agent_execution_feedback(await self._client._send(request))  # type: ignore[no-any-return]

    async def list_expected(
        self,
        execution_id: str,
    ) -> models.AgentExecutionExpectedArtifacts:
        """GET /api/v1/agents/executions/{executionId}/expected: List an execution's expected artifacts"""
        request = _build_list_agent_execution_expected(execution_id)
        return _parse_list_agent_execution_expected(await self._client._send(request))  # type: ignore[no-any-return]

    async def copy_output_to_expected(
        self,
        execution_id: str,
        body: models.CopyAgentExecutionOutputToExpectedBody | Mapping[str, Any],
    ) -> models.CreateExpectedFileResponse:
        """POST /api/v1/agents/executions/{executionId}/expected: Add an expected file (upload one, or copy an output file)"""
        request = _build_add_agent_execution_expected_file_copy_output_to_expected(
            execution_id, body
        )
        return _parse_add_agent_execution_expected_file(await self._client._send(request))  # type: ignore[no-any-return]

    async def upload_expected(
        self,
        execution_id: str,
        file: FileInput,
        *,
        name: str | None = None,
    ) -> models.CreateExpectedFileResponse:
        """POST /api/v1/agents/executions/{executionId}/expected: Add an expected file (upload one, or copy an output file)"""
        request = _build_add_agent_execution_expected_file_upload_expected(
            execution_id, file, name=name
        )
        return _parse_add_agent_execution_expected_file(await self._client._send(request))  # type: ignore[no-any-return]

    def download_expected(
        self,
        execution_id: str,
        filename: str,
    ) -> AsyncIterator[bytes]:
        """GET /api/v1/agents/executions/{executionId}/expected/{filename}: Download an expected file"""
        request = _build_download_agent_execution_expected_file(execution_id, filename)
        return self._client._iter(request, text=False)

    async def delete_expected(
        self,
        execution_id: str,
        filename: str,
    ) -> None:
        """DELETE /api/v1/agents/executions/{executionId}/expected/{filename}: Delete an expected file"""
        request = _build_delete_agent_execution_expected_file(execution_id, filename)
        return _parse_delete_agent_execution_expected_file(await self._client._send(request))  # type: ignore[no-any-return]

    async def rename_expected(
        self,
        execution_id: str,
        filename: str,
        body: models.RenameExpectedFileBody | Mapping[str, Any],
    ) -> models.RenameExpectedFileResponse:
        """PATCH /api/v1/agents/executions/{executionId}/expected/{filename}: Rename an expected file"""
        request = _build_rename_agent_execution_expected_file(execution_id, filename, body)
        return _parse_rename_agent_execution_expected_file(await self._client._send(request))  # type: ignore[no-any-return]

    async def promote(
        self,
        execution_id: str,
        body: models.PromoteAgentExecutionBody | Mapping[str, Any],
    ) -> models.AgentExecutionPromotion:
        """PUT /api/v1/agents/executions/{executionId}/promotion: Promote an execution to a dataset example"""
        request = _build_promote_agent_execution(execution_id, body)
        return _parse_promote_agent_execution(await self._client._send(request))  # type: ignore[no-any-return]

    async def demote(
        self,
        execution_id: str,
    ) -> models.AgentExecutionDemotion:
        """DELETE /api/v1/agents/executions/{executionId}/promotion: Withdraw an execution's promotion"""
        request = _build_demote_agent_execution(execution_id)
        return _parse_demote_agent_execution(await self._client._send(request))  # type: ignore[no-any-return]

    def download_file(
        self,
        execution_id: str,
        kind: str,
        filename: str,
    ) -> AsyncIterator[bytes]:
        """GET /api/v1/agents/executions/{executionId}/files/{kind}/{filename}: Download an execution's file"""
        request = _build_download_agent_execution_file(execution_id, kind, filename)
        return self._client._iter(request, text=False)


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
    ) -> models.ListAgentsResponse:
        """GET /api/v1/agents: List agents"""
        request = _build_list_agents(
            search=search, include_archived=include_archived, limit=limit, offset=offset
        )
        return _parse_list_agents(await self._client._send(request))  # type: ignore[no-any-return]

    async def create(
        self,
        body: models.CreateAgentBody | Mapping[str, Any],
        *,
        idempotency_key: str | None = None,
    ) -> models.CreateAgentResponse:
        """POST /api/v1/agents: Create an agent"""
        request = _build_create_agent(body, idempotency_key=idempotency_key)
        return _parse_create_agent(await self._client._send(request))  # type: ignore[no-any-return]

    async def get(
        self,
        agent_id: str,
        *,
        include: builtins.list[Literal["files", "dataset"]] | None = None,
    ) -> models.GetAgentResponse:
        """GET /api/v1/agents/{agentId}: Get an agent"""
        request = _build_get_agent(agent_id, include=include)
        return _parse_get_agent(await self._client._send(request))  # type: ignore[no-any-return]

    async def update(
        self,
        agent_id: str,
        body: models.PatchAgentBody | Mapping[str, Any],
    ) -> models.PatchAgentResponse:
        """PATCH /api/v1/agents/{agentId}: Update an agent"""
        request = _build_update_agent(agent_id, body)
        return _parse_update_agent(await self._client._send(request))  # type: ignore[no-any-return]

    async def archive(
        self,
        agent_id: str,
    ) -> models.AgentResponse:
        """POST /api/v1/agents/{agentId}/archive: Archive an agent"""
        request = _build_archive_agent(agent_id)
        return _parse_archive_agent(await self._client._send(request))  # type: ignore[no-any-return]

    async def restore(
        self,
        agent_id: str,
    ) -> models.AgentResponse:
        """POST /api/v1/agents/{agentId}/restore: Restore an archived agent"""
        request = _build_restore_agent(agent_id)
        return _parse_restore_agent(await self._client._send(request))  # type: ignore[no-any-return]

    async def run(
        self,
        agent_id: str,
        body: models.RunAgentBody | Mapping[str, Any] | None = None,
        *,
        files: Mapping[str, FileInput] | None = None,
        idempotency_key: str | None = None,
        priority: int | None = None,
        wait_for_completion: int | None = None,
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
        return _parse_run_agent(await self._client._send(request))  # type: ignore[no-any-return]

    async def list_files(
        self,
        agent_id: str,
        *,
        path: str | None = None,
        prefix: str | None = None,
    ) -> models.AgentFilesAnswer:
        """GET /api/v1/agents/{agentId}/files: List the agent's live files, or read one"""
        request = _build_list_agent_files(agent_id, path=path, prefix=prefix)
        return _parse_list_agent_files(await self._client._send(request))  # type: ignore[no-any-return]

    async def put_file(
        self,
        agent_id: str,
        body: models.AgentFileBody | Mapping[str, Any],
        *,
        path: str | None = None,
        prefix: str | None = None,
    ) -> models.PutAgentFileResponse:
        """PUT /api/v1/agents/{agentId}/files: Write one live file"""
        request = _build_put_agent_file(agent_id, body, path=path, prefix=prefix)
        return _parse_put_agent_file(await self._client._send(request))  # type: ignore[no-any-return]

    async def upload_files(
        self,
        agent_id: str,
        body: models.AgentFilesBody | Mapping[str, Any],
    ) -> models.UploadAgentFilesResponse:
        """POST /api/v1/agents/{agentId}/files: Write several live files"""
        request = _build_upload_agent_files(agent_id, body)
        return _parse_upload_agent_files(await self._client._send(request))  # type: ignore[no-any-return]


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
        return _parse_list_workflow_executions(await self._client._send(request))  # type: ignore[no-any-return]

    async def get(
        self,
        execution_id: str,
        *,
        include_steps: bool | None = None,
    ) -> models.GetWorkflowExecutionResponse:
        """GET /api/v1/workflows/executions/{executionId}: Get a workflow execution"""
        request = _build_get_workflow_execution(execution_id, include_steps=include_steps)
        return _parse_get_workflow_execution(await self._client._send(request))  # type: ignore[no-any-return]

    async def cancel(
        self,
        execution_id: str,
    ) -> models.CancelWorkflowExecutionResponse:
        """POST /api/v1/workflows/executions/{executionId}/cancel: Cancel a workflow execution"""
        request = _build_cancel_workflow_execution(execution_id)
        return _parse_cancel_workflow_execution(await self._client._send(request))  # type: ignore[no-any-return]


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
        return _parse_list_workflows(await self._client._send(request))  # type: ignore[no-any-return]

    async def create(
        self,
        body: models.CreateWorkflowBody | Mapping[str, Any],
        *,
        idempotency_key: str | None = None,
    ) -> models.WorkflowSummary:
        """POST /api/v1/workflows: Create a workflow"""
        request = _build_create_workflow(body, idempotency_key=idempotency_key)
        return _parse_create_workflow(await self._client._send(request))  # type: ignore[no-any-return]

    async def get(
        self,
        id: str,
    ) -> models.WorkflowSummary:
        """GET /api/v1/workflows/{id}: Get a workflow"""
        request = _build_get_workflow(id)
        return _parse_get_workflow(await self._client._send(request))  # type: ignore[no-any-return]

    async def archive(
        self,
        id: str,
    ) -> models.WorkflowSummary:
        """POST /api/v1/workflows/{id}/archive: Archive a workflow"""
        request = _build_archive_workflow(id)
        return _parse_archive_workflow(await self._client._send(request))  # type: ignore[no-any-return]

    async def restore(
        self,
        id: str,
    ) -> models.WorkflowSummary:
        """POST /api/v1/workflows/{id}/restore: Restore an archived workflow"""
        request = _build_restore_workflow(id)
        return _parse_restore_workflow(await self._client._send(request))  # type: ignore[no-any-return]

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
        return _parse_run_workflow(await self._client._send(request))  # type: ignore[no-any-return]

    async def versions(
        self,
        id: str,
        *,
        limit: int | None = None,
        offset: int | None = None,
    ) -> models.ListVersionsResponse:
        """GET /api/v1/workflows/{id}/versions: List a workflow's released versions"""
        request = _build_list_workflow_versions(id, limit=limit, offset=offset)
        return _parse_list_workflow_versions(await self._client._send(request))  # type: ignore[no-any-return]

    async def release(
        self,
        id: str,
        body: models.ReleaseWorkflowVersionBody | Mapping[str, Any],
    ) -> models.WorkflowVersion:
        """POST /api/v1/workflows/{id}/versions: Release a new version of a workflow"""
        request = _build_release_workflow_version(id, body)
        return _parse_release_workflow_version(await self._client._send(request))  # type: ignore[no-any-return]


class Async_Webhooks:
    """``webhooks`` operations."""

    def __init__(self, client: AsyncServiceClient) -> None:
        self._client = client

    async def list(
        self,
        *,
        limit: int | None = None,
        offset: int | None = None,
    ) -> models.ListWebhooksResponse:
        """GET /api/v1/webhooks: List webhook subscriptions"""
        request = _build_list_webhooks(limit=limit, offset=offset)
        return _parse_list_webhooks(await self._client._send(request))  # type: ignore[no-any-return]

    async def create(
        self,
        body: models.CreateWebhookBody | Mapping[str, Any],
    ) -> models.CreatedWebhook:
        """POST /api/v1/webhooks: Subscribe to execution events"""
        request = _build_create_webhook(body)
        return _parse_create_webhook(await self._client._send(request))  # type: ignore[no-any-return]

    async def get(
        self,
        webhook_id: str,
    ) -> models.Webhook:
        """GET /api/v1/webhooks/{webhookId}: Get a webhook subscription"""
        request = _build_get_webhook(webhook_id)
        return _parse_get_webhook(await self._client._send(request))  # type: ignore[no-any-return]

    async def delete(
        self,
        webhook_id: str,
    ) -> None:
        """DELETE /api/v1/webhooks/{webhookId}: Delete a webhook subscription"""
        request = _build_delete_webhook(webhook_id)
        return _parse_delete_webhook(await self._client._send(request))  # type: ignore[no-any-return]

    async def list_deliveries(
        self,
        webhook_id: str,
        *,
        status: Literal["pending", "delivered", "failed"] | None = None,
        limit: int | None = None,
        offset: int | None = None,
    ) -> models.ListWebhookDeliveriesResponse:
        """GET /api/v1/webhooks/{webhookId}/deliveries: List a subscription's deliveries"""
        request = _build_list_webhook_deliveries(
            webhook_id, status=status, limit=limit, offset=offset
        )
        return _parse_list_webhook_deliveries(await self._client._send(request))  # type: ignore[no-any-return]


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
    ) -> models.ListSchedulesResponse:
        """GET /api/v1/schedules: List schedules"""
        request = _build_list_schedules(
            agent_id=agent_id, workflow_id=workflow_id, limit=limit, offset=offset
        )
        return _parse_list_schedules(await self._client._send(request))  # type: ignore[no-any-return]

    async def create(
        self,
        body: models.CreateScheduleBody | Mapping[str, Any],
    ) -> models.Schedule:
        """POST /api/v1/schedules: Create a schedule"""
        request = _build_create_schedule(body)
        return _parse_create_schedule(await self._client._send(request))  # type: ignore[no-any-return]

    async def get(
        self,
        schedule_id: str,
    ) -> models.Schedule:
        """GET /api/v1/schedules/{scheduleId}: Get a schedule"""
        request = _build_get_schedule(schedule_id)
        return _parse_get_schedule(await self._client._send(request))  # type: ignore[no-any-return]

    async def delete(
        self,
        schedule_id: str,
    ) -> None:
        """DELETE /api/v1/schedules/{scheduleId}: Delete a schedule"""
        request = _build_delete_schedule(schedule_id)
        return _parse_delete_schedule(await self._client._send(request))  # type: ignore[no-any-return]

    async def update(
        self,
        schedule_id: str,
        body: models.UpdateScheduleBody | Mapping[str, Any],
    ) -> models.Schedule:
        """PATCH /api/v1/schedules/{scheduleId}: Change a schedule"""
        request = _build_update_schedule(schedule_id, body)
        return _parse_update_schedule(await self._client._send(request))  # type: ignore[no-any-return]


class AsyncServiceClient:
    """Asynchronous client of Agents and Workflows API.

    ``api_key`` (default ``$SERVICE_API_KEY``) is sent as a bearer token;
    ``base_url`` defaults to ``$SERVICE_BASE_URL``, else http://127.0.0.1:8090;
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
        self.agents = Async_Agents(self)
        self.workflows = Async_Workflows(self)
        self.webhooks = Async_Webhooks(self)
        self.schedules = Async_Schedules(self)

    async def close(self) -> None:
        """Close the connection pool."""
        await self._http.aclose()

    async def __aenter__(self) -> AsyncServiceClient:
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
            raise ServiceTimeoutError(f"Request timed out: {exc}", status=0) from exc
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
            raise ServiceTimeoutError(f"Request timed out: {exc}", status=0) from exc
