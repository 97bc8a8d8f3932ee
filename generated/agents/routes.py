"""The webrest routes of Agents and Workflows API: bind and validate requests, call the handlers,
answer in the API's error shape.

Generated from specs/agents.openapi.yaml by `make generate`; do not edit.
"""

from __future__ import annotations

import datetime  # noqa: F401
import json
import uuid  # noqa: F401
from collections.abc import Mapping  # noqa: F401
from pathlib import Path
from typing import Annotated, Any, Literal, cast  # noqa: F401

from pydantic import Field, TypeAdapter  # noqa: F401
from starlette.datastructures import UploadFile  # noqa: F401

from codegen.runtime import (  # noqa: F401
    RFC3339,
    FormField,
    bind_payload,
    envelope_renderer,
    request_id_filter,
    success,
    validate_body,
)
from generated.agents import models  # noqa: F401
from generated.agents.handlers import AgentsHandlers
from webrest import (  # noqa: F401
    DEFAULT_MAX_BODY_SIZE,
    Application,
    Delete,
    Entity,
    Get,
    Head,
    Header,
    Options,
    Param,
    Patch,
    Post,
    Put,
    Request,
    Resource,
    Response,
    RestApi,
    SeparatedBy,
)
from webrest.application import Lifespan

__all__ = ["OPENAPI", "AgentsRoutes", "create_api", "create_app"]

OPENAPI: dict[str, Any] = json.loads(
    (Path(__file__).with_name("openapi.json")).read_text(encoding="utf-8")
)
"""The contract these routes implement (specs/agents.openapi.yaml as JSON)."""

_CREATE_AGENT_BODY = TypeAdapter(models.CreateAgentBody)
_UPDATE_AGENT_BODY = TypeAdapter(models.PatchAgentBody)
_RUN_AGENT_BODY = TypeAdapter(models.RunAgentBody)
_PUT_AGENT_FILE_BODY = TypeAdapter(models.AgentFileBody)
_UPLOAD_AGENT_FILES_BODY = TypeAdapter(models.AgentFilesBody)
_UPDATE_AGENT_EXECUTION_FEEDBACK_BODY = TypeAdapter(models.UpdateAgentExecutionFeedbackBody)
_ADD_AGENT_EXECUTION_EXPECTED_FILE_BODY = TypeAdapter(models.CopyAgentExecutionOutputToExpectedBody)
_RENAME_AGENT_EXECUTION_EXPECTED_FILE_BODY = TypeAdapter(models.RenameExpectedFileBody)
_PROMOTE_AGENT_EXECUTION_BODY = TypeAdapter(models.PromoteAgentExecutionBody)
_CREATE_WORKFLOW_BODY = TypeAdapter(models.CreateWorkflowBody)
_RUN_WORKFLOW_BODY = TypeAdapter(models.RunWorkflowBody)
_RELEASE_WORKFLOW_VERSION_BODY = TypeAdapter(models.ReleaseWorkflowVersionBody)
_CREATE_WEBHOOK_BODY = TypeAdapter(models.CreateWebhookBody)
_CREATE_SCHEDULE_BODY = TypeAdapter(models.CreateScheduleBody)
_UPDATE_SCHEDULE_BODY = TypeAdapter(models.UpdateScheduleBody)

_RUN_AGENT_FORM = (FormField("files", "files", False),)
_ADD_AGENT_EXECUTION_EXPECTED_FILE_FORM = (
    FormField("file", "file", True),
    FormField(
        "name",
        "value",
        False,
        TypeAdapter(Annotated[str, Field(pattern="^[A-Za-z0-9._()-][A-Za-z0-9._() /-]{0,254}$")]),
        None,
    ),
)
_RUN_WORKFLOW_FORM = (FormField("files", "files", False),)


@Resource("")
class AgentsRoutes:
    """Every operation of specs/agents.openapi.yaml, delegating to a ``AgentsHandlers``."""

    def __init__(self, handlers: AgentsHandlers) -> None:
        self._handlers = handlers

    @Get(
        "/api/v1/agents",
        status=200,
        operation_id="list_agents",
        produces=("application/json",),
    )
    async def list_agents(
        self,
        request: Request,
        search: Annotated[str | None, Param("search"), Field(min_length=1, max_length=200)] = None,
        include_archived: Annotated[bool, Param("includeArchived")] = False,
        limit: Annotated[int, Param("limit"), Field(ge=1, le=200)] = 50,
        offset: Annotated[int, Param("offset"), Field(ge=0, le=1000000)] = 0,
    ) -> Response:
        """GET /api/v1/agents"""
        result = await self._handlers.list_agents(
            search=search, include_archived=include_archived, limit=limit, offset=offset
        )
        return success(result, 200, None)

    @Post(
        "/api/v1/agents",
        status=201,
        operation_id="create_agent",
        produces=("application/json",),
        consumes=("application/json",),
    )
    async def create_agent(
        self,
        request: Request,
        payload: Annotated[object, Entity],
        idempotency_key: Annotated[
            str | None, Header("Idempotency-Key"), Field(pattern="^[!-~]{1,255}$")
        ] = None,
    ) -> Response:
        """POST /api/v1/agents"""
        body = validate_body(_CREATE_AGENT_BODY, payload)
        result = await self._handlers.create_agent(
            idempotency_key=idempotency_key, body=cast("models.CreateAgentBody", body)
        )
        return success(result, 201, None)

    @Get(
        "/api/v1/agents/{agentId:[A-Za-z0-9_-]{1,64}}",
        status=200,
        operation_id="get_agent",
        produces=("application/json",),
    )
    async def get_agent(
        self,
        request: Request,
        agent_id: Annotated[str, Param("agentId"), Field(pattern="^[A-Za-z0-9_-]{1,64}$")],
        include: Annotated[
            list[Literal["files", "dataset"]] | None,
            Param("include"),
            Field(max_length=2),
            SeparatedBy(","),
        ] = None,
    ) -> Response:
        """GET /api/v1/agents/{agentId}"""
        result = await self._handlers.get_agent(agent_id=agent_id, include=include)
        return success(result, 200, None)

    @Patch(
        "/api/v1/agents/{agentId:[A-Za-z0-9_-]{1,64}}",
        status=200,
        operation_id="update_agent",
        produces=("application/json",),
        consumes=("application/json",),
    )
    async def update_agent(
        self,
        request: Request,
        agent_id: Annotated[str, Param("agentId"), Field(pattern="^[A-Za-z0-9_-]{1,64}$")],
        payload: Annotated[object, Entity],
    ) -> Response:
        """PATCH /api/v1/agents/{agentId}"""
        body = validate_body(_UPDATE_AGENT_BODY, payload)
        result = await self._handlers.update_agent(
            agent_id=agent_id, body=cast("models.PatchAgentBody", body)
        )
        return success(result, 200, None)

    @Post(
        "/api/v1/agents/{agentId:[A-Za-z0-9_-]{1,64}}/archive",
        status=200,
        operation_id="archive_agent",
        produces=("application/json",),
    )
    async def archive_agent(
        self,
        request: Request,
        agent_id: Annotated[str, Param("agentId"), Field(pattern="^[A-Za-z0-9_-]{1,64}$")],
    ) -> Response:
        """POST /api/v1/agents/{agentId}/archive"""
        result = await self._handlers.archive_agent(agent_id=agent_id)
        return success(result, 200, None)

    @Post(
        "/api/v1/agents/{agentId:[A-Za-z0-9_-]{1,64}}/restore",
        status=200,
        operation_id="restore_agent",
        produces=("application/json",),
    )
    async def restore_agent(
        self,
        request: Request,
        agent_id: Annotated[str, Param("agentId"), Field(pattern="^[A-Za-z0-9_-]{1,64}$")],
    ) -> Response:
        """POST /api/v1/agents/{agentId}/restore"""
        result = await self._handlers.restore_agent(agent_id=agent_id)
        return success(result, 200, None)

    @Post(
        "/api/v1/agents/{agentId:[A-Za-z0-9_-]{1,64}}/run",
        status=202,
        operation_id="run_agent",
        produces=("application/json",),
        consumes=("application/json", "multipart/form-data", "application/x-www-form-urlencoded"),
    )
    async def run_agent(
        self,
        request: Request,
        agent_id: Annotated[str, Param("agentId"), Field(pattern="^[A-Za-z0-9_-]{1,64}$")],
        idempotency_key: Annotated[
            str | None, Header("Idempotency-Key"), Field(pattern="^[!-~]{1,255}$")
        ] = None,
        priority: Annotated[int, Param("priority"), Field(ge=-100, le=100)] = 0,
        wait_for_completion: Annotated[
            int | None, Param("wait_for_completion"), Field(ge=1, le=600)
        ] = None,
        payload: Annotated[object, Entity] = None,
    ) -> Response:
        """POST /api/v1/agents/{agentId}/run"""
        body, form = bind_payload(
            request.headers.get("content-type"),
            payload,
            json_adapter=_RUN_AGENT_BODY,
            form_fields=_RUN_AGENT_FORM,
            json_field="_json",
            json_bare_field="input",
        )
        result = await self._handlers.run_agent(
            agent_id=agent_id,
            idempotency_key=idempotency_key,
            priority=priority,
            wait_for_completion=wait_for_completion,
            body=cast("models.RunAgentBody | None", body),
            files=cast("Mapping[str, UploadFile]", form["files"]),
        )
        return success(result, 202, None)

    @Get(
        "/api/v1/agents/{agentId:[A-Za-z0-9_-]{1,64}}/files",
        status=200,
        operation_id="list_agent_files",
        produces=("application/json",),
    )
    async def list_agent_files(
        self,
        request: Request,
        agent_id: Annotated[str, Param("agentId"), Field(pattern="^[A-Za-z0-9_-]{1,64}$")],
        path: Annotated[
            str | None, Param("path"), Field(pattern="^[A-Za-z0-9._()-][A-Za-z0-9._() /-]{0,511}$")
        ] = None,
        prefix: Annotated[
            str | None,
            Param("prefix"),
            Field(pattern="^[A-Za-z0-9._()-][A-Za-z0-9._() /-]{0,511}$"),
        ] = None,
    ) -> Response:
        """GET /api/v1/agents/{agentId}/files"""
        result = await self._handlers.list_agent_files(agent_id=agent_id, path=path, prefix=prefix)
        return success(result, 200, None)

    @Put(
        "/api/v1/agents/{agentId:[A-Za-z0-9_-]{1,64}}/files",
        status=200,
        operation_id="put_agent_file",
        produces=("application/json",),
        consumes=("application/json",),
    )
    async def put_agent_file(
        self,
        request: Request,
        agent_id: Annotated[str, Param("agentId"), Field(pattern="^[A-Za-z0-9_-]{1,64}$")],
        path: Annotated[
            str, Param("path"), Field(pattern="^[A-Za-z0-9._()-][A-Za-z0-9._() /-]{0,511}$")
        ],
        payload: Annotated[object, Entity],
        prefix: Annotated[
            str | None,
            Param("prefix"),
            Field(pattern="^[A-Za-z0-9._()-][A-Za-z0-9._() /-]{0,511}$"),
        ] = None,
    ) -> Response:
        """PUT /api/v1/agents/{agentId}/files"""
        body = validate_body(_PUT_AGENT_FILE_BODY, payload)
        result = await self._handlers.put_agent_file(
            agent_id=agent_id, path=path, prefix=prefix, body=cast("models.AgentFileBody", body)
        )
        return success(result, 200, None)

    @Post(
        "/api/v1/agents/{agentId:[A-Za-z0-9_-]{1,64}}/files",
        status=200,
        operation_id="upload_agent_files",
        produces=("application/json",),
        consumes=("application/json",),
    )
    async def upload_agent_files(
        self,
        request: Request,
        agent_id: Annotated[str, Param("agentId"), Field(pattern="^[A-Za-z0-9_-]{1,64}$")],
        payload: Annotated[object, Entity],
    ) -> Response:
        """POST /api/v1/agents/{agentId}/files"""
        body = validate_body(_UPLOAD_AGENT_FILES_BODY, payload)
        result = await self._handlers.upload_agent_files(
            agent_id=agent_id, body=cast("models.AgentFilesBody", body)
        )
        return success(result, 200, None)

    @Get(
        "/api/v1/agents/{agentId:[A-Za-z0-9_-]{1,64}}/executions",
        status=200,
        operation_id="list_agent_executions",
        produces=("application/json",),
    )
    async def list_agent_executions(
        self,
        request: Request,
        agent_id: Annotated[str, Param("agentId"), Field(pattern="^[A-Za-z0-9_-]{1,64}$")],
        status: Annotated[
            list[
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
            | None,
            Param("status"),
            Field(max_length=9),
            SeparatedBy(","),
        ] = None,
        batch_id: Annotated[
            str | None, Param("batchId"), Field(pattern="^[A-Za-z0-9_-]{1,64}$")
        ] = None,
        example_name: Annotated[
            str | None, Param("exampleName"), Field(min_length=1, max_length=200)
        ] = None,
        example_name_contains: Annotated[
            str | None, Param("exampleNameContains"), Field(min_length=1, max_length=200)
        ] = None,
        created_after: Annotated[datetime.datetime | None, Param("createdAfter"), RFC3339] = None,
        created_before: Annotated[datetime.datetime | None, Param("createdBefore"), RFC3339] = None,
        completed_after: Annotated[
            datetime.datetime | None, Param("completedAfter"), RFC3339
        ] = None,
        completed_before: Annotated[
            datetime.datetime | None, Param("completedBefore"), RFC3339
        ] = None,
        feedback_status: Annotated[
            Literal["open", "resolved", "ignored"] | None, Param("feedbackStatus")
        ] = None,
        feedback_rating: Annotated[
            Literal["pass", "fail", "partial", "none"] | None, Param("feedbackRating")
        ] = None,
        has_feedback: Annotated[bool | None, Param("hasFeedback")] = None,
        no_feedback: Annotated[bool | None, Param("noFeedback")] = None,
        has_expected: Annotated[bool | None, Param("hasExpected")] = None,
        has_expected_json: Annotated[bool | None, Param("hasExpectedJson")] = None,
        has_expected_files: Annotated[bool | None, Param("hasExpectedFiles")] = None,
        feedback_body_contains: Annotated[
            str | None, Param("feedbackBodyContains"), Field(min_length=1, max_length=200)
        ] = None,
        feedback_created_after: Annotated[
            datetime.datetime | None, Param("feedbackCreatedAfter"), RFC3339
        ] = None,
        feedback_created_before: Annotated[
            datetime.datetime | None, Param("feedbackCreatedBefore"), RFC3339
        ] = None,
        feedback_updated_after: Annotated[
            datetime.datetime | None, Param("feedbackUpdatedAfter"), RFC3339
        ] = None,
        feedback_updated_before: Annotated[
            datetime.datetime | None, Param("feedbackUpdatedBefore"), RFC3339
        ] = None,
        feedback_resolved_after: Annotated[
            datetime.datetime | None, Param("feedbackResolvedAfter"), RFC3339
        ] = None,
        feedback_resolved_before: Annotated[
            datetime.datetime | None, Param("feedbackResolvedBefore"), RFC3339
        ] = None,
        promoted_to_example: Annotated[bool | None, Param("promotedToExample")] = None,
        promoted_example_name: Annotated[
            str | None, Param("promotedExampleName"), Field(min_length=1, max_length=200)
        ] = None,
        since_last_resolved: Annotated[bool | None, Param("sinceLastResolved")] = None,
        include: Annotated[
            list[Literal["feedback", "expected", "files", "attempts"]] | None,
            Param("include"),
            Field(max_length=4),
            SeparatedBy(","),
        ] = None,
        sort: Annotated[
            Literal["createdAt", "completedAt", "status", "exampleName"], Param("sort")
        ] = "createdAt",
        order: Annotated[Literal["asc", "desc"], Param("order")] = "desc",
        scan_limit: Annotated[int, Param("scanLimit"), Field(ge=1, le=10000)] = 1000,
        limit: Annotated[int, Param("limit"), Field(ge=1, le=200)] = 50,
        offset: Annotated[int, Param("offset"), Field(ge=0, le=1000000)] = 0,
    ) -> Response:
        """GET /api/v1/agents/{agentId}/executions"""
        result = await self._handlers.list_agent_executions(
            agent_id=agent_id,
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
        return success(result, 200, None)

    @Get(
        "/api/v1/agents/executions/{executionId:[A-Za-z0-9_-]{1,64}}",
        status=200,
        operation_id="get_agent_execution",
        produces=("application/json",),
    )
    async def get_agent_execution(
        self,
        request: Request,
        execution_id: Annotated[str, Param("executionId"), Field(pattern="^[A-Za-z0-9_-]{1,64}$")],
        include: Annotated[
            list[Literal["feedback", "expected", "files", "attempts"]] | None,
            Param("include"),
            Field(max_length=4),
            SeparatedBy(","),
        ] = None,
    ) -> Response:
        """GET /api/v1/agents/executions/{executionId}"""
        result = await self._handlers.get_agent_execution(
            execution_id=execution_id, include=include
        )
        return success(result, 200, None)

    @Post(
        "/api/v1/agents/executions/{executionId:[A-Za-z0-9_-]{1,64}}/cancel",
        status=200,
        operation_id="cancel_agent_execution",
        produces=("application/json",),
    )
    async def cancel_agent_execution(
        self,
        request: Request,
        execution_id: Annotated[str, Param("executionId"), Field(pattern="^[A-Za-z0-9_-]{1,64}$")],
    ) -> Response:
        """POST /api/v1/agents/executions/{executionId}/cancel"""
        result = await self._handlers.cancel_agent_execution(execution_id=execution_id)
        return success(result, 200, None)

    @Post(
        "/api/v1/agents/executions/{executionId:[A-Za-z0-9_-]{1,64}}/rerun",
        status=202,
        operation_id="rerun_agent_execution",
        produces=("application/json",),
    )
    async def rerun_agent_execution(
        self,
        request: Request,
        execution_id: Annotated[str, Param("executionId"), Field(pattern="^[A-Za-z0-9_-]{1,64}$")],
        idempotency_key: Annotated[
            str | None, Header("Idempotency-Key"), Field(pattern="^[!-~]{1,255}$")
        ] = None,
        priority: Annotated[int, Param("priority"), Field(ge=-100, le=100)] = 0,
    ) -> Response:
        """POST /api/v1/agents/executions/{executionId}/rerun"""
        result = await self._handlers.rerun_agent_execution(
            execution_id=execution_id, idempotency_key=idempotency_key, priority=priority
        )
        return success(result, 202, None)

    @Get(
        "/api/v1/agents/executions/{executionId:[A-Za-z0-9_-]{1,64}}/feedback",
        status=200,
        operation_id="get_agent_execution_feedback",
        produces=("application/json",),
    )
    async def get_agent_execution_feedback(
        self,
        request: Request,
        execution_id: Annotated[str, Param("executionId"), Field(pattern="^[A-Za-z0-9_-]{1,64}$")],
    ) -> Response:
        """GET /api/v1/agents/executions/{executionId}/feedback"""
        result = await self._handlers.get_agent_execution_feedback(execution_id=execution_id)
        return success(result, 200, None)

    @Delete(
        "/api/v1/agents/executions/{executionId:[A-Za-z0-9_-]{1,64}}/feedback",
        status=200,
        operation_id="clear_agent_execution_feedback",
        produces=("application/json",),
    )
    async def clear_agent_execution_feedback(
        self,
        request: Request,
        execution_id: Annotated[str, Param("executionId"), Field(pattern="^[A-Za-z0-9_-]{1,64}$")],
    ) -> Response:
        """DELETE /api/v1/agents/executions/{executionId}/feedback"""
        result = await self._handlers.clear_agent_execution_feedback(execution_id=execution_id)
        return success(result, 200, None)

    @Patch(
        "/api/v1/agents/executions/{executionId:[A-Za-z0-9_-]{1,64}}/feedback",
        status=200,
        operation_id="update_agent_execution_feedback",
        produces=("application/json",),
        consumes=("application/json",),
    )
    async def update_agent_execution_feedback(
        self,
        request: Request,
        execution_id: Annotated[str, Param("executionId"), Field(pattern="^[A-Za-z0-9_-]{1,64}$")],
        payload: Annotated[object, Entity],
    ) -> Response:
        """PATCH /api/v1/agents/executions/{executionId}/feedback"""
        body = validate_body(_UPDATE_AGENT_EXECUTION_FEEDBACK_BODY, payload)
        result = await self._handlers.update_agent_execution_feedback(
            execution_id=execution_id, body=cast("models.UpdateAgentExecutionFeedbackBody", body)
        )
        return success(result, 200, None)

    @Get(
        "/api/v1/agents/executions/{executionId:[A-Za-z0-9_-]{1,64}}/expected",
        status=200,
        operation_id="list_agent_execution_expected",
        produces=("application/json",),
    )
    async def list_agent_execution_expected(
        self,
        request: Request,
        execution_id: Annotated[str, Param("executionId"), Field(pattern="^[A-Za-z0-9_-]{1,64}$")],
    ) -> Response:
        """GET /api/v1/agents/executions/{executionId}/expected"""
        result = await self._handlers.list_agent_execution_expected(execution_id=execution_id)
        return success(result, 200, None)

    @Post(
        "/api/v1/agents/executions/{executionId:[A-Za-z0-9_-]{1,64}}/expected",
        status=201,
        operation_id="add_agent_execution_expected_file",
        produces=("application/json",),
        consumes=("application/json", "multipart/form-data", "application/x-www-form-urlencoded"),
    )
    async def add_agent_execution_expected_file(
        self,
        request: Request,
        execution_id: Annotated[str, Param("executionId"), Field(pattern="^[A-Za-z0-9_-]{1,64}$")],
        payload: Annotated[object, Entity],
    ) -> Response:
        """POST /api/v1/agents/executions/{executionId}/expected"""
        body, form = bind_payload(
            request.headers.get("content-type"),
            payload,
            json_adapter=_ADD_AGENT_EXECUTION_EXPECTED_FILE_BODY,
            form_fields=_ADD_AGENT_EXECUTION_EXPECTED_FILE_FORM,
            json_field=None,
            forbid_extra=True,
        )
        result = await self._handlers.add_agent_execution_expected_file(
            execution_id=execution_id,
            body=cast("models.CopyAgentExecutionOutputToExpectedBody | None", body),
            file=cast("UploadFile | None", form["file"]),
            name=cast("str | None", form["name"]),
        )
        return success(result, 201, None)

    @Get(
        "/api/v1/agents/executions/{executionId:[A-Za-z0-9_-]{1,64}}/expected/{filename:[A-Za-z0-9._()-][A-Za-z0-9._() /-]{0,254}}",
        status=200,
        operation_id="download_agent_execution_expected_file",
        produces=("application/octet-stream",),
    )
    async def download_agent_execution_expected_file(
        self,
        request: Request,
        execution_id: Annotated[str, Param("executionId"), Field(pattern="^[A-Za-z0-9_-]{1,64}$")],
        filename: Annotated[
            str, Param("filename"), Field(pattern="^[A-Za-z0-9._()-][A-Za-z0-9._() /-]{0,254}$")
        ],
    ) -> Response:
        """GET /api/v1/agents/executions/{executionId}/expected/{filename}"""
        result = await self._handlers.download_agent_execution_expected_file(
            execution_id=execution_id, filename=filename
        )
        return success(result, 200, request.negotiated or "application/octet-stream")

    @Delete(
        "/api/v1/agents/executions/{executionId:[A-Za-z0-9_-]{1,64}}/expected/{filename:[A-Za-z0-9._()-][A-Za-z0-9._() /-]{0,254}}",
        status=204,
        operation_id="delete_agent_execution_expected_file",
    )
    async def delete_agent_execution_expected_file(
        self,
        request: Request,
        execution_id: Annotated[str, Param("executionId"), Field(pattern="^[A-Za-z0-9_-]{1,64}$")],
        filename: Annotated[
            str, Param("filename"), Field(pattern="^[A-Za-z0-9._()-][A-Za-z0-9._() /-]{0,254}$")
        ],
    ) -> Response:
        """DELETE /api/v1/agents/executions/{executionId}/expected/{filename}"""
        result = await self._handlers.delete_agent_execution_expected_file(
            execution_id=execution_id, filename=filename
        )
        return success(result, 204, None)

    @Patch(
        "/api/v1/agents/executions/{executionId:[A-Za-z0-9_-]{1,64}}/expected/{filename:[A-Za-z0-9._()-][A-Za-z0-9._() /-]{0,254}}",
        status=200,
        operation_id="rename_agent_execution_expected_file",
        produces=("application/json",),
        consumes=("application/json",),
    )
    async def rename_agent_execution_expected_file(
        self,
        request: Request,
        execution_id: Annotated[str, Param("executionId"), Field(pattern="^[A-Za-z0-9_-]{1,64}$")],
        filename: Annotated[
            str, Param("filename"), Field(pattern="^[A-Za-z0-9._()-][A-Za-z0-9._() /-]{0,254}$")
        ],
        payload: Annotated[object, Entity],
    ) -> Response:
        """PATCH /api/v1/agents/executions/{executionId}/expected/{filename}"""
        body = validate_body(_RENAME_AGENT_EXECUTION_EXPECTED_FILE_BODY, payload)
        result = await self._handlers.rename_agent_execution_expected_file(
            execution_id=execution_id,
            filename=filename,
            body=cast("models.RenameExpectedFileBody", body),
        )
        return success(result, 200, None)

    @Put(
        "/api/v1/agents/executions/{executionId:[A-Za-z0-9_-]{1,64}}/promotion",
        status=200,
        operation_id="promote_agent_execution",
        produces=("application/json",),
        consumes=("application/json",),
    )
    async def promote_agent_execution(
        self,
        request: Request,
        execution_id: Annotated[str, Param("executionId"), Field(pattern="^[A-Za-z0-9_-]{1,64}$")],
        payload: Annotated[object, Entity],
    ) -> Response:
        """PUT /api/v1/agents/executions/{executionId}/promotion"""
        body = validate_body(_PROMOTE_AGENT_EXECUTION_BODY, payload)
        result = await self._handlers.promote_agent_execution(
            execution_id=execution_id, body=cast("models.PromoteAgentExecutionBody", body)
        )
        return success(result, 200, None)

    @Delete(
        "/api/v1/agents/executions/{executionId:[A-Za-z0-9_-]{1,64}}/promotion",
        status=200,
        operation_id="demote_agent_execution",
        produces=("application/json",),
    )
    async def demote_agent_execution(
        self,
        request: Request,
        execution_id: Annotated[str, Param("executionId"), Field(pattern="^[A-Za-z0-9_-]{1,64}$")],
    ) -> Response:
        """DELETE /api/v1/agents/executions/{executionId}/promotion"""
        result = await self._handlers.demote_agent_execution(execution_id=execution_id)
        return success(result, 200, None)

    @Get(
        "/api/v1/agents/executions/{executionId:[A-Za-z0-9_-]{1,64}}/files/{kind}/{filename:[A-Za-z0-9._()-][A-Za-z0-9._() /-]{0,254}}",
        status=200,
        operation_id="download_agent_execution_file",
        produces=("application/octet-stream",),
    )
    async def download_agent_execution_file(
        self,
        request: Request,
        execution_id: Annotated[str, Param("executionId"), Field(pattern="^[A-Za-z0-9_-]{1,64}$")],
        kind: Annotated[Literal["input", "output", "issues", "trace"], Param("kind")],
        filename: Annotated[
            str, Param("filename"), Field(pattern="^[A-Za-z0-9._()-][A-Za-z0-9._() /-]{0,254}$")
        ],
    ) -> Response:
        """GET /api/v1/agents/executions/{executionId}/files/{kind}/{filename}"""
        result = await self._handlers.download_agent_execution_file(
            execution_id=execution_id, kind=kind, filename=filename
        )
        return success(result, 200, request.negotiated or "application/octet-stream")

    @Get(
        "/api/v1/workflows",
        status=200,
        operation_id="list_workflows",
        produces=("application/json",),
    )
    async def list_workflows(
        self,
        request: Request,
        search: Annotated[str | None, Param("search"), Field(min_length=1, max_length=200)] = None,
        name: Annotated[str | None, Param("name"), Field(pattern="^[A-Za-z0-9_-]{1,64}$")] = None,
        kind: Annotated[Literal["workflow", "block"] | None, Param("kind")] = None,
        include_archived: Annotated[bool, Param("includeArchived")] = False,
        limit: Annotated[int, Param("limit"), Field(ge=1, le=100)] = 50,
        offset: Annotated[int, Param("offset"), Field(ge=0, le=1000000)] = 0,
    ) -> Response:
        """GET /api/v1/workflows"""
        result = await self._handlers.list_workflows(
            search=search,
            name=name,
            kind=kind,
            include_archived=include_archived,
            limit=limit,
            offset=offset,
        )
        return success(result, 200, None)

    @Post(
        "/api/v1/workflows",
        status=201,
        operation_id="create_workflow",
        produces=("application/json",),
        consumes=("application/json",),
    )
    async def create_workflow(
        self,
        request: Request,
        payload: Annotated[object, Entity],
        idempotency_key: Annotated[
            str | None, Header("Idempotency-Key"), Field(pattern="^[!-~]{1,255}$")
        ] = None,
    ) -> Response:
        """POST /api/v1/workflows"""
        body = validate_body(_CREATE_WORKFLOW_BODY, payload)
        result = await self._handlers.create_workflow(
            idempotency_key=idempotency_key, body=cast("models.CreateWorkflowBody", body)
        )
        return success(result, 201, None)

    @Get(
        "/api/v1/workflows/{id:[A-Za-z0-9_-]{1,64}}",
        status=200,
        operation_id="get_workflow",
        produces=("application/json",),
    )
    async def get_workflow(
        self,
        request: Request,
        id: Annotated[str, Param("id"), Field(pattern="^[A-Za-z0-9_-]{1,64}$")],
    ) -> Response:
        """GET /api/v1/workflows/{id}"""
        result = await self._handlers.get_workflow(id=id)
        return success(result, 200, None)

    @Post(
        "/api/v1/workflows/{id:[A-Za-z0-9_-]{1,64}}/archive",
        status=200,
        operation_id="archive_workflow",
        produces=("application/json",),
    )
    async def archive_workflow(
        self,
        request: Request,
        id: Annotated[str, Param("id"), Field(pattern="^[A-Za-z0-9_-]{1,64}$")],
    ) -> Response:
        """POST /api/v1/workflows/{id}/archive"""
        result = await self._handlers.archive_workflow(id=id)
        return success(result, 200, None)

    @Post(
        "/api/v1/workflows/{id:[A-Za-z0-9_-]{1,64}}/restore",
        status=200,
        operation_id="restore_workflow",
        produces=("application/json",),
    )
    async def restore_workflow(
        self,
        request: Request,
        id: Annotated[str, Param("id"), Field(pattern="^[A-Za-z0-9_-]{1,64}$")],
    ) -> Response:
        """POST /api/v1/workflows/{id}/restore"""
        result = await self._handlers.restore_workflow(id=id)
        return success(result, 200, None)

    @Post(
        "/api/v1/workflows/{id:[A-Za-z0-9_-]{1,64}}/run",
        status=201,
        operation_id="run_workflow",
        produces=("application/json",),
        consumes=("application/json", "multipart/form-data", "application/x-www-form-urlencoded"),
    )
    async def run_workflow(
        self,
        request: Request,
        id: Annotated[str, Param("id"), Field(pattern="^[A-Za-z0-9_-]{1,64}$")],
        idempotency_key: Annotated[
            str | None, Header("Idempotency-Key"), Field(pattern="^[!-~]{1,255}$")
        ] = None,
        priority: Annotated[int, Param("priority"), Field(ge=-100, le=100)] = 0,
        version: Annotated[
            str, Param("version"), Field(pattern="^[A-Za-z0-9._-]{1,64}$")
        ] = "latest",
        wait_for_completion: Annotated[
            int | None, Param("wait_for_completion"), Field(ge=1, le=60)
        ] = None,
        payload: Annotated[object, Entity] = None,
    ) -> Response:
        """POST /api/v1/workflows/{id}/run"""
        body, form = bind_payload(
            request.headers.get("content-type"),
            payload,
            json_adapter=_RUN_WORKFLOW_BODY,
            form_fields=_RUN_WORKFLOW_FORM,
            json_field="_json",
        )
        result = await self._handlers.run_workflow(
            id=id,
            idempotency_key=idempotency_key,
            priority=priority,
            version=version,
            wait_for_completion=wait_for_completion,
            body=cast("models.RunWorkflowBody | None", body),
            files=cast("Mapping[str, UploadFile]", form["files"]),
        )
        return success(result, 201, None)

    @Get(
        "/api/v1/workflows/{id:[A-Za-z0-9_-]{1,64}}/versions",
        status=200,
        operation_id="list_workflow_versions",
        produces=("application/json",),
    )
    async def list_workflow_versions(
        self,
        request: Request,
        id: Annotated[str, Param("id"), Field(pattern="^[A-Za-z0-9_-]{1,64}$")],
        limit: Annotated[int, Param("limit"), Field(ge=1, le=100)] = 50,
        offset: Annotated[int, Param("offset"), Field(ge=0, le=1000000)] = 0,
    ) -> Response:
        """GET /api/v1/workflows/{id}/versions"""
        result = await self._handlers.list_workflow_versions(id=id, limit=limit, offset=offset)
        return success(result, 200, None)

    @Post(
        "/api/v1/workflows/{id:[A-Za-z0-9_-]{1,64}}/versions",
        status=201,
        operation_id="release_workflow_version",
        produces=("application/json",),
        consumes=("application/json",),
    )
    async def release_workflow_version(
        self,
        request: Request,
        id: Annotated[str, Param("id"), Field(pattern="^[A-Za-z0-9_-]{1,64}$")],
        payload: Annotated[object, Entity],
    ) -> Response:
        """POST /api/v1/workflows/{id}/versions"""
        body = validate_body(_RELEASE_WORKFLOW_VERSION_BODY, payload)
        result = await self._handlers.release_workflow_version(
            id=id, body=cast("models.ReleaseWorkflowVersionBody", body)
        )
        return success(result, 201, None)

    @Get(
        "/api/v1/workflows/{id:[A-Za-z0-9_-]{1,64}}/executions",
        status=200,
        operation_id="list_workflow_executions",
        produces=("application/json",),
    )
    async def list_workflow_executions(
        self,
        request: Request,
        id: Annotated[str, Param("id"), Field(pattern="^[A-Za-z0-9_-]{1,64}$")],
        status: Annotated[
            list[
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
            | None,
            Param("status"),
            Field(max_length=9),
            SeparatedBy(","),
        ] = None,
        from_date: Annotated[
            str | None,
            Param("fromDate"),
            Field(
                min_length=1,
                max_length=64,
                pattern="^(now\\(\\)([-+][0-9]{1,5}[smhdw])?|[0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])([Tt ]([01][0-9]|2[0-3]):[0-5][0-9](:[0-5][0-9](\\.[0-9]{1,9})?)?)?([Zz]|[+-]([01][0-9]|2[0-3]):?[0-5][0-9])?)$",
            ),
        ] = None,
        to_date: Annotated[
            str | None,
            Param("toDate"),
            Field(
                min_length=1,
                max_length=64,
                pattern="^(now\\(\\)([-+][0-9]{1,5}[smhdw])?|[0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])([Tt ]([01][0-9]|2[0-3]):[0-5][0-9](:[0-5][0-9](\\.[0-9]{1,9})?)?)?([Zz]|[+-]([01][0-9]|2[0-3]):?[0-5][0-9])?)$",
            ),
        ] = None,
        example_id: Annotated[
            str | None, Param("exampleId"), Field(pattern="^[A-Za-z0-9_-]{1,64}$")
        ] = None,
        limit: Annotated[int, Param("limit"), Field(ge=1, le=100)] = 50,
        offset: Annotated[int, Param("offset"), Field(ge=0, le=1000000)] = 0,
    ) -> Response:
        """GET /api/v1/workflows/{id}/executions"""
        result = await self._handlers.list_workflow_executions(
            id=id,
            status=status,
            from_date=from_date,
            to_date=to_date,
            example_id=example_id,
            limit=limit,
            offset=offset,
        )
        return success(result, 200, None)

    @Get(
        "/api/v1/workflows/executions/{executionId:[A-Za-z0-9_-]{1,64}}",
        status=200,
        operation_id="get_workflow_execution",
        produces=("application/json",),
    )
    async def get_workflow_execution(
        self,
        request: Request,
        execution_id: Annotated[str, Param("executionId"), Field(pattern="^[A-Za-z0-9_-]{1,64}$")],
        include_steps: Annotated[bool, Param("includeSteps")] = False,
    ) -> Response:
        """GET /api/v1/workflows/executions/{executionId}"""
        result = await self._handlers.get_workflow_execution(
            execution_id=execution_id, include_steps=include_steps
        )
        return success(result, 200, None)

    @Post(
        "/api/v1/workflows/executions/{executionId:[A-Za-z0-9_-]{1,64}}/cancel",
        status=200,
        operation_id="cancel_workflow_execution",
        produces=("application/json",),
    )
    async def cancel_workflow_execution(
        self,
        request: Request,
        execution_id: Annotated[str, Param("executionId"), Field(pattern="^[A-Za-z0-9_-]{1,64}$")],
    ) -> Response:
        """POST /api/v1/workflows/executions/{executionId}/cancel"""
        result = await self._handlers.cancel_workflow_execution(execution_id=execution_id)
        return success(result, 200, None)

    @Get(
        "/api/v1/webhooks",
        status=200,
        operation_id="list_webhooks",
        produces=("application/json",),
    )
    async def list_webhooks(
        self,
        request: Request,
        limit: Annotated[int, Param("limit"), Field(ge=1, le=100)] = 50,
        offset: Annotated[int, Param("offset"), Field(ge=0, le=1000000)] = 0,
    ) -> Response:
        """GET /api/v1/webhooks"""
        result = await self._handlers.list_webhooks(limit=limit, offset=offset)
        return success(result, 200, None)

    @Post(
        "/api/v1/webhooks",
        status=201,
        operation_id="create_webhook",
        produces=("application/json",),
        consumes=("application/json",),
    )
    async def create_webhook(
        self,
        request: Request,
        payload: Annotated[object, Entity],
    ) -> Response:
        """POST /api/v1/webhooks"""
        body = validate_body(_CREATE_WEBHOOK_BODY, payload)
        result = await self._handlers.create_webhook(body=cast("models.CreateWebhookBody", body))
        return success(result, 201, None)

    @Get(
        "/api/v1/webhooks/{webhookId:[A-Za-z0-9_-]{1,64}}",
        status=200,
        operation_id="get_webhook",
        produces=("application/json",),
    )
    async def get_webhook(
        self,
        request: Request,
        webhook_id: Annotated[str, Param("webhookId"), Field(pattern="^[A-Za-z0-9_-]{1,64}$")],
    ) -> Response:
        """GET /api/v1/webhooks/{webhookId}"""
        result = await self._handlers.get_webhook(webhook_id=webhook_id)
        return success(result, 200, None)

    @Delete(
        "/api/v1/webhooks/{webhookId:[A-Za-z0-9_-]{1,64}}",
        status=204,
        operation_id="delete_webhook",
    )
    async def delete_webhook(
        self,
        request: Request,
        webhook_id: Annotated[str, Param("webhookId"), Field(pattern="^[A-Za-z0-9_-]{1,64}$")],
    ) -> Response:
        """DELETE /api/v1/webhooks/{webhookId}"""
        result = await self._handlers.delete_webhook(webhook_id=webhook_id)
        return success(result, 204, None)

    @Get(
        "/api/v1/webhooks/{webhookId:[A-Za-z0-9_-]{1,64}}/deliveries",
        status=200,
        operation_id="list_webhook_deliveries",
        produces=("application/json",),
    )
    async def list_webhook_deliveries(
        self,
        request: Request,
        webhook_id: Annotated[str, Param("webhookId"), Field(pattern="^[A-Za-z0-9_-]{1,64}$")],
        status: Annotated[Literal["pending", "delivered", "failed"] | None, Param("status")] = None,
        limit: Annotated[int, Param("limit"), Field(ge=1, le=100)] = 50,
        offset: Annotated[int, Param("offset"), Field(ge=0, le=1000000)] = 0,
    ) -> Response:
        """GET /api/v1/webhooks/{webhookId}/deliveries"""
        result = await self._handlers.list_webhook_deliveries(
            webhook_id=webhook_id, status=status, limit=limit, offset=offset
        )
        return success(result, 200, None)

    @Get(
        "/api/v1/schedules",
        status=200,
        operation_id="list_schedules",
        produces=("application/json",),
    )
    async def list_schedules(
        self,
        request: Request,
        agent_id: Annotated[
            str | None, Param("agentId"), Field(pattern="^[A-Za-z0-9_-]{1,64}$")
        ] = None,
        workflow_id: Annotated[
            str | None, Param("workflowId"), Field(pattern="^[A-Za-z0-9_-]{1,64}$")
        ] = None,
        limit: Annotated[int, Param("limit"), Field(ge=1, le=200)] = 50,
        offset: Annotated[int, Param("offset"), Field(ge=0, le=1000000)] = 0,
    ) -> Response:
        """GET /api/v1/schedules"""
        result = await self._handlers.list_schedules(
            agent_id=agent_id, workflow_id=workflow_id, limit=limit, offset=offset
        )
        return success(result, 200, None)

    @Post(
        "/api/v1/schedules",
        status=201,
        operation_id="create_schedule",
        produces=("application/json",),
        consumes=("application/json",),
    )
    async def create_schedule(
        self,
        request: Request,
        payload: Annotated[object, Entity],
    ) -> Response:
        """POST /api/v1/schedules"""
        body = validate_body(_CREATE_SCHEDULE_BODY, payload)
        result = await self._handlers.create_schedule(body=cast("models.CreateScheduleBody", body))
        return success(result, 201, None)

    @Get(
        "/api/v1/schedules/{scheduleId:[A-Za-z0-9_-]{1,64}}",
        status=200,
        operation_id="get_schedule",
        produces=("application/json",),
    )
    async def get_schedule(
        self,
        request: Request,
        schedule_id: Annotated[str, Param("scheduleId"), Field(pattern="^[A-Za-z0-9_-]{1,64}$")],
    ) -> Response:
        """GET /api/v1/schedules/{scheduleId}"""
        result = await self._handlers.get_schedule(schedule_id=schedule_id)
        return success(result, 200, None)

    @Delete(
        "/api/v1/schedules/{scheduleId:[A-Za-z0-9_-]{1,64}}",
        status=204,
        operation_id="delete_schedule",
    )
    async def delete_schedule(
        self,
        request: Request,
        schedule_id: Annotated[str, Param("scheduleId"), Field(pattern="^[A-Za-z0-9_-]{1,64}$")],
    ) -> Response:
        """DELETE /api/v1/schedules/{scheduleId}"""
        result = await self._handlers.delete_schedule(schedule_id=schedule_id)
        return success(result, 204, None)

    @Patch(
        "/api/v1/schedules/{scheduleId:[A-Za-z0-9_-]{1,64}}",
        status=200,
        operation_id="update_schedule",
        produces=("application/json",),
        consumes=("application/json",),
    )
    async def update_schedule(
        self,
        request: Request,
        schedule_id: Annotated[str, Param("scheduleId"), Field(pattern="^[A-Za-z0-9_-]{1,64}$")],
        payload: Annotated[object, Entity],
    ) -> Response:
        """PATCH /api/v1/schedules/{scheduleId}"""
        body = validate_body(_UPDATE_SCHEDULE_BODY, payload)
        result = await self._handlers.update_schedule(
            schedule_id=schedule_id, body=cast("models.UpdateScheduleBody", body)
        )
        return success(result, 200, None)


def create_api(handlers: AgentsHandlers, *, max_body_size: int | None = None) -> RestApi:
    """The API's routes over ``handlers``, rendering errors in the API's shape."""
    return RestApi(
        AgentsRoutes(handlers),
        error_renderer=envelope_renderer,
        max_body_size=max_body_size,
        lenient_accept=True,
    )


def create_app(
    handlers: AgentsHandlers,
    *,
    max_body_size: int | None = DEFAULT_MAX_BODY_SIZE,
    lifespan: Lifespan | None = None,
    docs_path: str | None = "/docs",
) -> Application:
    """An ASGI application serving the API, its contract at ``/openapi.json`` and Swagger UI
    over it at ``docs_path`` (``None``: no docs page)."""
    return Application(
        {"/": create_api(handlers, max_body_size=max_body_size)},
        error_renderer=envelope_renderer,
        max_body_size=max_body_size,
        openapi=OPENAPI,
        docs_path=docs_path,
        lifespan=lifespan,
        filters=[request_id_filter],
    )
