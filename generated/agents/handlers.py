"""The handlers of Agents and Workflows API: implement this Protocol to serve the API.

Generated from specs/agents.openapi.yaml by `make generate`; do not edit.
"""

from __future__ import annotations

import datetime  # noqa: F401
import uuid  # noqa: F401
from collections.abc import AsyncIterator, Mapping  # noqa: F401
from typing import Any, Literal, Protocol  # noqa: F401

from starlette.datastructures import UploadFile  # noqa: F401

from generated.agents import models  # noqa: F401
from webrest import Response

__all__ = ["AgentsHandlers"]


class AgentsHandlers(Protocol):
    """One method per operation of specs/agents.openapi.yaml.

    A method returns the documented success body (a model, or an async iterator of chunks for
    streamed responses) or a webrest ``Response`` for any other documented status. Raising
    ``webrest.HttpError`` answers in the API's error shape.
    """

    async def list_agents(
        self,
        *,
        search: str | None = None,
        include_archived: bool = False,
        limit: int = 50,
        offset: int = 0,
    ) -> models.ListAgentsResponse | Response:
        """GET /api/v1/agents: List agents"""
        ...

    async def create_agent(
        self,
        *,
        body: models.CreateAgentBody,
        idempotency_key: str | None = None,
    ) -> models.CreateAgentResponse | Response:
        """POST /api/v1/agents: Create an agent"""
        ...

    async def get_agent(
        self,
        *,
        agent_id: str,
        include: list[Literal["files", "dataset"]] | None = None,
    ) -> models.GetAgentResponse | Response:
        """GET /api/v1/agents/{agentId}: Get an agent"""
        ...

    async def update_agent(
        self,
        *,
        agent_id: str,
        body: models.PatchAgentBody,
    ) -> models.PatchAgentResponse | Response:
        """PATCH /api/v1/agents/{agentId}: Update an agent"""
        ...

    async def archive_agent(
        self,
        *,
        agent_id: str,
    ) -> models.AgentResponse | Response:
        """POST /api/v1/agents/{agentId}/archive: Archive an agent"""
        ...

    async def restore_agent(
        self,
        *,
        agent_id: str,
    ) -> models.AgentResponse | Response:
        """POST /api/v1/agents/{agentId}/restore: Restore an archived agent"""
        ...

    async def run_agent(
        self,
        *,
        agent_id: str,
        files: Mapping[str, UploadFile],
        idempotency_key: str | None = None,
        priority: int = 0,
        wait_for_completion: int | None = None,
        body: models.RunAgentBody | None = None,
    ) -> models.RunAgentResponse | Response:
        """POST /api/v1/agents/{agentId}/run: Run an agent"""
        ...

    async def list_agent_files(
        self,
        *,
        agent_id: str,
        path: str | None = None,
        prefix: str | None = None,
    ) -> models.AgentFilesAnswer | Response:
        """GET /api/v1/agents/{agentId}/files: List the agent's live files, or read one"""
        ...

    async def put_agent_file(
        self,
        *,
        agent_id: str,
        path: str,
        body: models.AgentFileBody,
        prefix: str | None = None,
    ) -> models.PutAgentFileResponse | Response:
        """PUT /api/v1/agents/{agentId}/files: Write one live file"""
        ...

    async def upload_agent_files(
        self,
        *,
        agent_id: str,
        body: models.AgentFilesBody,
    ) -> models.UploadAgentFilesResponse | Response:
        """POST /api/v1/agents/{agentId}/files: Write several live files"""
        ...

    async def list_agent_executions(
        self,
        *,
        agent_id: str,
        status: list[
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
        include: list[Literal["feedback", "expected", "files", "attempts"]] | None = None,
        sort: Literal["createdAt", "completedAt", "status", "exampleName"] = "createdAt",
        order: Literal["asc", "desc"] = "desc",
        scan_limit: int = 1000,
        limit: int = 50,
        offset: int = 0,
    ) -> models.ListAgentExecutionsResponse | Response:
        """GET /api/v1/agents/{agentId}/executions: List an agent's executions"""
        ...

    async def get_agent_execution(
        self,
        *,
        execution_id: str,
        include: list[Literal["feedback", "expected", "files", "attempts"]] | None = None,
    ) -> models.AgentExecutionResponse | Response:
        """GET /api/v1/agents/executions/{executionId}: Get an agent execution"""
        ...

    async def cancel_agent_execution(
        self,
        *,
        execution_id: str,
    ) -> models.CancelAgentExecutionResponse | Response:
        """POST /api/v1/agents/executions/{executionId}/cancel: Cancel an agent execution"""
        ...

    async def rerun_agent_execution(
        self,
        *,
        execution_id: str,
        idempotency_key: str | None = None,
        priority: int = 0,
    ) -> models.RerunAgentExecutionResponse | Response:
        """POST /api/v1/agents/executions/{executionId}/rerun: Rerun an agent execution"""
        ...

    async def get_agent_execution_feedback(
        self,
        *,
        execution_id: str,
    ) -> models.AgentExecutionFeedbackDetail | Response:
        """GET /api/v1/agents/executions/{executionId}/feedback: Get an execution's feedback and expected results"""
        ...

    async def clear_agent_execution_feedback(
        self,
        *,
        execution_id: str,
    ) -> models.AgentExecutionFeedbackDetail | Response:
        """DELETE /api/v1/agents/executions/{executionId}/feedback: Clear an execution's feedback and expected results"""
        ...

    async def update_agent_execution_feedback(
        self,
        *,
        execution_id: str,
        body: models.UpdateAgentExecutionFeedbackBody,
    ) -> models.AgentExecutionFeedbackDetail | Response:
        """PATCH /api/v1/agents/executions/{executionId}/feedback: Create or change an execution's feedback"""
        ...

    async def list_agent_execution_expected(
        self,
        *,
        execution_id: str,
    ) -> models.AgentExecutionExpectedArtifacts | Response:
        """GET /api/v1/agents/executions/{executionId}/expected: List an execution's expected artifacts"""
        ...

    async def add_agent_execution_expected_file(
        self,
        *,
        execution_id: str,
        body: models.CopyAgentExecutionOutputToExpectedBody | None = None,
        file: UploadFile | None = None,
        name: str | None = None,
    ) -> models.CreateExpectedFileResponse | Response:
        """POST /api/v1/agents/executions/{executionId}/expected: Add an expected file (upload one, or copy an output file)"""
        ...

    async def download_agent_execution_expected_file(
        self,
        *,
        execution_id: str,
        filename: str,
    ) -> AsyncIterator[bytes] | bytes | Response:
        """GET /api/v1/agents/executions/{executionId}/expected/{filename}: Download an expected file"""
        ...

    async def delete_agent_execution_expected_file(
        self,
        *,
        execution_id: str,
        filename: str,
    ) -> None | Response:
        """DELETE /api/v1/agents/executions/{executionId}/expected/{filename}: Delete an expected file"""
        ...

    async def rename_agent_execution_expected_file(
        self,
        *,
        execution_id: str,
        filename: str,
        body: models.RenameExpectedFileBody,
    ) -> models.RenameExpectedFileResponse | Response:
        """PATCH /api/v1/agents/executions/{executionId}/expected/{filename}: Rename an expected file"""
        ...

    async def promote_agent_execution(
        self,
        *,
        execution_id: str,
        body: models.PromoteAgentExecutionBody,
    ) -> models.AgentExecutionPromotion | Response:
        """PUT /api/v1/agents/executions/{executionId}/promotion: Promote an execution to a dataset example"""
        ...

    async def demote_agent_execution(
        self,
        *,
        execution_id: str,
    ) -> models.AgentExecutionDemotion | Response:
        """DELETE /api/v1/agents/executions/{executionId}/promotion: Withdraw an execution's promotion"""
        ...

    async def download_agent_execution_file(
        self,
        *,
        execution_id: str,
        kind: Literal["input", "output", "issues", "trace"],
        filename: str,
    ) -> AsyncIterator[bytes] | bytes | Response:
        """GET /api/v1/agents/executions/{executionId}/files/{kind}/{filename}: Download an execution's file"""
        ...

    async def list_workflows(
        self,
        *,
        search: str | None = None,
        name: str | None = None,
        kind: Literal["workflow", "block"] | None = None,
        include_archived: bool = False,
        limit: int = 50,
        offset: int = 0,
    ) -> models.ListWorkflowsResponse | Response:
        """GET /api/v1/workflows: List workflows"""
        ...

    async def create_workflow(
        self,
        *,
        body: models.CreateWorkflowBody,
        idempotency_key: str | None = None,
    ) -> models.WorkflowSummary | Response:
        """POST /api/v1/workflows: Create a workflow"""
        ...

    async def get_workflow(
        self,
        *,
        id: str,
    ) -> models.WorkflowSummary | Response:
        """GET /api/v1/workflows/{id}: Get a workflow"""
        ...

    async def archive_workflow(
        self,
        *,
        id: str,
    ) -> models.WorkflowSummary | Response:
        """POST /api/v1/workflows/{id}/archive: Archive a workflow"""
        ...

    async def restore_workflow(
        self,
        *,
        id: str,
    ) -> models.WorkflowSummary | Response:
        """POST /api/v1/workflows/{id}/restore: Restore an archived workflow"""
        ...

    async def run_workflow(
        self,
        *,
        id: str,
        files: Mapping[str, UploadFile],
        idempotency_key: str | None = None,
        priority: int = 0,
        version: str = "latest",
        wait_for_completion: int | None = None,
        body: models.RunWorkflowBody | None = None,
    ) -> models.RunWorkflowResponse | Response:
        """POST /api/v1/workflows/{id}/run: Run a workflow"""
        ...

    async def list_workflow_versions(
        self,
        *,
        id: str,
        limit: int = 50,
        offset: int = 0,
    ) -> models.ListVersionsResponse | Response:
        """GET /api/v1/workflows/{id}/versions: List a workflow's released versions"""
        ...

    async def release_workflow_version(
        self,
        *,
        id: str,
        body: models.ReleaseWorkflowVersionBody,
    ) -> models.WorkflowVersion | Response:
        """POST /api/v1/workflows/{id}/versions: Release a new version of a workflow"""
        ...

    async def list_workflow_executions(
        self,
        *,
        id: str,
        status: list[
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
        limit: int = 50,
        offset: int = 0,
    ) -> models.ListWorkflowExecutionsResponse | Response:
        """GET /api/v1/workflows/{id}/executions: List a workflow's executions"""
        ...

    async def get_workflow_execution(
        self,
        *,
        execution_id: str,
        include_steps: bool = False,
    ) -> models.GetWorkflowExecutionResponse | Response:
        """GET /api/v1/workflows/executions/{executionId}: Get a workflow execution"""
        ...

    async def cancel_workflow_execution(
        self,
        *,
        execution_id: str,
    ) -> models.CancelWorkflowExecutionResponse | Response:
        """POST /api/v1/workflows/executions/{executionId}/cancel: Cancel a workflow execution"""
        ...

    async def list_webhooks(
        self,
        *,
        limit: int = 50,
        offset: int = 0,
    ) -> models.ListWebhooksResponse | Response:
        """GET /api/v1/webhooks: List webhook subscriptions"""
        ...

    async def create_webhook(
        self,
        *,
        body: models.CreateWebhookBody,
    ) -> models.CreatedWebhook | Response:
        """POST /api/v1/webhooks: Subscribe to execution events"""
        ...

    async def get_webhook(
        self,
        *,
        webhook_id: str,
    ) -> models.Webhook | Response:
        """GET /api/v1/webhooks/{webhookId}: Get a webhook subscription"""
        ...

    async def delete_webhook(
        self,
        *,
        webhook_id: str,
    ) -> None | Response:
        """DELETE /api/v1/webhooks/{webhookId}: Delete a webhook subscription"""
        ...

    async def list_webhook_deliveries(
        self,
        *,
        webhook_id: str,
        status: Literal["pending", "delivered", "failed"] | None = None,
        limit: int = 50,
        offset: int = 0,
    ) -> models.ListWebhookDeliveriesResponse | Response:
        """GET /api/v1/webhooks/{webhookId}/deliveries: List a subscription's deliveries"""
        ...

    async def list_schedules(
        self,
        *,
        agent_id: str | None = None,
        workflow_id: str | None = None,
        limit: int = 50,
        offset: int = 0,
    ) -> models.ListSchedulesResponse | Response:
        """GET /api/v1/schedules: List schedules"""
        ...

    async def create_schedule(
        self,
        *,
        body: models.CreateScheduleBody,
    ) -> models.Schedule | Response:
        """POST /api/v1/schedules: Create a schedule"""
        ...

    async def get_schedule(
        self,
        *,
        schedule_id: str,
    ) -> models.Schedule | Response:
        """GET /api/v1/schedules/{scheduleId}: Get a schedule"""
        ...

    async def delete_schedule(
        self,
        *,
        schedule_id: str,
    ) -> None | Response:
        """DELETE /api/v1/schedules/{scheduleId}: Delete a schedule"""
        ...

    async def update_schedule(
        self,
        *,
        schedule_id: str,
        body: models.UpdateScheduleBody,
    ) -> models.Schedule | Response:
        """PATCH /api/v1/schedules/{scheduleId}: Change a schedule"""
        ...
