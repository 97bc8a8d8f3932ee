"""The service's implementation of the generated ``AgentsHandlers`` Protocol.

Agents, their workspace files, and executions' feedback and expected results
(:mod:`handlers.agents.domain.feedback`, :mod:`handlers.agents.domain.expected`); runs and
executions (:mod:`handlers.agents.api.runs`, :mod:`handlers.agents.api.executions`,
:mod:`handlers.agents.api.execution_list`); workflows, their versions, runs and executions
(:mod:`handlers.agents.domain.workflow_catalog`, :mod:`handlers.agents.api.workflow_runs`,
:mod:`handlers.agents.api.workflow_executions`); webhook subscriptions and their delivery logs
(:mod:`handlers.agents.domain.webhooks`).
"""

from __future__ import annotations

import datetime
from collections.abc import AsyncIterator, Mapping
from typing import Literal

from starlette.datastructures import UploadFile

from generated.agents import models
from generated.agents.handlers import AgentsHandlers
from handlers.agents.api.auth import current_principal
from handlers.agents.api.execution_list import ExecutionListQuery, list_executions
from handlers.agents.api.executions import ExecutionQueries
from handlers.agents.api.idempotency import IdempotentRequests, fingerprint
from handlers.agents.api.promotions import Promotions
from handlers.agents.api.runs import AgentRuns
from handlers.agents.api.workflow_executions import WorkflowExecutionQueries
from handlers.agents.api.workflow_runs import WorkflowRuns
from handlers.agents.domain.agents import AgentStore
from handlers.agents.domain.expected import ExpectedFiles
from handlers.agents.domain.feedback import FeedbackStore
from handlers.agents.domain.files import AgentFiles
from handlers.agents.domain.schedules import ScheduleStore
from handlers.agents.domain.webhooks import WebhookStore
from handlers.agents.domain.workflow_catalog import WorkflowCatalog
from handlers.agents.execution.engine import ExecutionEngine
from webrest import Response

__all__ = ["AgentsHttpHandlers"]

Status = Literal[
    "created", "pending", "running", "waiting", "finalizing",
    "completed", "failed", "cancelled", "rejected",
]  # fmt: skip
Include = Literal["feedback", "expected", "files", "attempts"]


class AgentsHttpHandlers:
    """Every operation of the agents API, for the caller the auth filter identified."""

    def __init__(self, agents: AgentStore, files: AgentFiles, engine: ExecutionEngine) -> None:
        self.agents = agents
        self.files = files
        self.runs = AgentRuns(agents.database, agents.blobs, engine)
        self.executions = ExecutionQueries(agents.database, agents.blobs, engine)
        self.workflows = WorkflowCatalog(agents.database)
        self.workflow_runs = WorkflowRuns(agents.database, agents.blobs, engine)
        self.workflow_executions = WorkflowExecutionQueries(agents.database, engine)
        self.promotions = Promotions(agents.database)
        self.idempotency = IdempotentRequests(agents.database)
        self.schedules = ScheduleStore(agents.database)
        self.webhooks = WebhookStore(agents.database, engine.settings.egress)

    # -- agents --------------------------------------------------------------------------------

    async def list_agents(
        self,
        *,
        search: str | None = None,
        include_archived: bool = False,
        limit: int = 50,
        offset: int = 0,
    ) -> models.ListAgentsResponse | Response:
        principal = current_principal()
        return await self.agents.list_visible(principal, search, limit, offset, include_archived)

    async def create_agent(
        self, *, body: models.CreateAgentBody, idempotency_key: str | None = None
    ) -> models.CreateAgentResponse | Response:
        principal = current_principal()

        async def act() -> models.CreateAgentResponse:
            return models.CreateAgentResponse(agent=await self.agents.create(principal, body))

        request = fingerprint("create_agent", body=body)
        return await self.idempotency.once(
            principal, idempotency_key, "create_agent", request, 201, act
        )

    async def get_agent(
        self, *, agent_id: str, include: list[Literal["files", "dataset"]] | None = None
    ) -> models.GetAgentResponse | Response:
        return await self.agents.get(current_principal(), agent_id, include)

    async def update_agent(
        self, *, agent_id: str, body: models.PatchAgentBody
    ) -> models.PatchAgentResponse | Response:
        agent = await self.agents.update(current_principal(), agent_id, body)
        return models.PatchAgentResponse(agent=agent)

    async def archive_agent(self, *, agent_id: str) -> models.AgentResponse | Response:
        agent = await self.agents.set_archived(current_principal(), agent_id, archived=True)
        return models.AgentResponse(agent=agent)

    async def restore_agent(self, *, agent_id: str) -> models.AgentResponse | Response:
        agent = await self.agents.set_archived(current_principal(), agent_id, archived=False)
        return models.AgentResponse(agent=agent)

    async def run_agent(
        self,
        *,
        agent_id: str,
        files: Mapping[str, UploadFile],
        wait_for_completion: int | None = None,
        body: models.RunAgentBody | None = None,
        idempotency_key: str | None = None,
        priority: int = 0,
    ) -> models.RunAgentResponse | Response:
        principal = current_principal()

        async def act() -> models.RunAgentResponse:
            return await self.runs.run(
                principal, agent_id, body, files, wait_for_completion, priority
            )

        request = fingerprint(
            "run_agent",
            agent=agent_id,
            wait=wait_for_completion,
            priority=priority,
            body=body,
            files=await _file_parts(files) if idempotency_key is not None else None,
        )
        return await self.idempotency.once(
            principal, idempotency_key, "run_agent", request, 202, act
        )

    # -- files ---------------------------------------------------------------------------------

    async def list_agent_files(
        self, *, agent_id: str, path: str | None = None, prefix: str | None = None
    ) -> models.AgentFilesAnswer | Response:
        return await self.files.list_or_read(current_principal(), agent_id, path, prefix)

    async def put_agent_file(
        self,
        *,
        agent_id: str,
        path: str,
        body: models.AgentFileBody,
        prefix: str | None = None,
    ) -> models.PutAgentFileResponse | Response:
        return await self.files.put(current_principal(), agent_id, path, prefix, body)

    async def upload_agent_files(
        self, *, agent_id: str, body: models.AgentFilesBody
    ) -> models.UploadAgentFilesResponse | Response:
        return await self.files.upload(current_principal(), agent_id, body)

    # -- agent executions (next issue) ---------------------------------------------------------

    async def list_agent_executions(
        self,
        *,
        agent_id: str,
        status: list[Status] | None = None,
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
        include: list[Include] | None = None,
        sort: Literal["createdAt", "completedAt", "status", "exampleName"] = "createdAt",
        order: Literal["asc", "desc"] = "desc",
        scan_limit: int = 1000,
        limit: int = 50,
        offset: int = 0,
    ) -> models.ListAgentExecutionsResponse | Response:
        query = ExecutionListQuery(
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
        return await list_executions(self.agents.database, current_principal(), agent_id, query)

    async def get_agent_execution(
        self, *, execution_id: str, include: list[Include] | None = None
    ) -> models.AgentExecutionResponse | Response:
        return await self.executions.get(current_principal(), execution_id, include)

    async def cancel_agent_execution(
        self, *, execution_id: str
    ) -> models.CancelAgentExecutionResponse | Response:
        return await self.executions.cancel(current_principal(), execution_id)

    async def rerun_agent_execution(
        self, *, execution_id: str, idempotency_key: str | None = None, priority: int = 0
    ) -> models.RerunAgentExecutionResponse | Response:
        principal = current_principal()

        async def act() -> models.RerunAgentExecutionResponse:
            return await self.runs.rerun(principal, execution_id, priority)

        request = fingerprint("rerun", execution=execution_id, priority=priority)
        return await self.idempotency.once(
            principal, idempotency_key, "rerun_agent_execution", request, 202, act
        )

    async def get_agent_execution_feedback(
        self, *, execution_id: str
    ) -> models.AgentExecutionFeedbackDetail | Response:
        return await FeedbackStore(self.agents.database).get(current_principal(), execution_id)

    async def clear_agent_execution_feedback(
        self, *, execution_id: str
    ) -> models.AgentExecutionFeedbackDetail | Response:
        return await FeedbackStore(self.agents.database).clear(current_principal(), execution_id)

    async def update_agent_execution_feedback(
        self, *, execution_id: str, body: models.UpdateAgentExecutionFeedbackBody
    ) -> models.AgentExecutionFeedbackDetail | Response:
        feedback = FeedbackStore(self.agents.database)
        return await feedback.update(current_principal(), execution_id, body)

    async def list_agent_execution_expected(
        self, *, execution_id: str
    ) -> models.AgentExecutionExpectedArtifacts | Response:
        return await self._expected().list(current_principal(), execution_id)

    async def add_agent_execution_expected_file(
        self,
        *,
        execution_id: str,
        body: models.CopyAgentExecutionOutputToExpectedBody | None = None,
        file: UploadFile | None = None,
        name: str | None = None,
    ) -> models.CreateExpectedFileResponse | Response:
        return await self._expected().add(current_principal(), execution_id, body, file, name)

    async def download_agent_execution_expected_file(
        self, *, execution_id: str, filename: str
    ) -> AsyncIterator[bytes] | bytes | Response:
        return await self._expected().download(current_principal(), execution_id, filename)

    async def delete_agent_execution_expected_file(
        self, *, execution_id: str, filename: str
    ) -> Response | None:
        await self._expected().delete(current_principal(), execution_id, filename)
        return None

    async def rename_agent_execution_expected_file(
        self, *, execution_id: str, filename: str, body: models.RenameExpectedFileBody
    ) -> models.RenameExpectedFileResponse | Response:
        expected = self._expected()
        return await expected.rename(current_principal(), execution_id, filename, body)

    async def promote_agent_execution(
        self, *, execution_id: str, body: models.PromoteAgentExecutionBody
    ) -> models.AgentExecutionPromotion | Response:
        return await self.promotions.promote(current_principal(), execution_id, body.name)

    async def demote_agent_execution(
        self, *, execution_id: str
    ) -> models.AgentExecutionDemotion | Response:
        return await self.promotions.demote(current_principal(), execution_id)

    def _expected(self) -> ExpectedFiles:
        return ExpectedFiles(self.agents.database, self.agents.blobs)

    async def download_agent_execution_file(
        self,
        *,
        execution_id: str,
        kind: Literal["input", "output", "issues", "trace"],
        filename: str,
    ) -> AsyncIterator[bytes] | bytes | Response:
        return await self.executions.download(current_principal(), execution_id, kind, filename)

    # -- workflows -----------------------------------------------------------------------------

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
        return await self.workflows.list(
            current_principal(), search, name, kind, limit, offset, include_archived
        )

    async def create_workflow(
        self, *, body: models.CreateWorkflowBody, idempotency_key: str | None = None
    ) -> models.WorkflowSummary | Response:
        principal = current_principal()

        async def act() -> models.WorkflowSummary:
            return await self.workflows.create(principal, body)

        request = fingerprint("create_workflow", body=body)
        return await self.idempotency.once(
            principal, idempotency_key, "create_workflow", request, 201, act
        )

    async def get_workflow(self, *, id: str) -> models.WorkflowSummary | Response:
        return await self.workflows.get(current_principal(), id)

    async def archive_workflow(self, *, id: str) -> models.WorkflowSummary | Response:
        return await self.workflows.set_archived(current_principal(), id, archived=True)

    async def restore_workflow(self, *, id: str) -> models.WorkflowSummary | Response:
        return await self.workflows.set_archived(current_principal(), id, archived=False)

    async def run_workflow(
        self,
        *,
        id: str,
        files: Mapping[str, UploadFile],
        version: str = "latest",
        wait_for_completion: int | None = None,
        body: models.RunWorkflowBody | None = None,
        idempotency_key: str | None = None,
        priority: int = 0,
    ) -> models.RunWorkflowResponse | Response:
        principal = current_principal()

        async def act() -> models.RunWorkflowResponse:
            return await self.workflow_runs.run(
                principal, id, body, files, version, wait_for_completion, priority
            )

        request = fingerprint(
            "run_workflow",
            workflow=id,
            version=version,
            wait=wait_for_completion,
            priority=priority,
            body=body,
            files=await _file_parts(files) if idempotency_key is not None else None,
        )
        return await self.idempotency.once(
            principal, idempotency_key, "run_workflow", request, 201, act
        )

    async def list_workflow_versions(
        self, *, id: str, limit: int = 50, offset: int = 0
    ) -> models.ListVersionsResponse | Response:
        return await self.workflows.versions(current_principal(), id, limit, offset)

    async def release_workflow_version(
        self, *, id: str, body: models.ReleaseWorkflowVersionBody
    ) -> models.WorkflowVersion | Response:
        return await self.workflows.release(current_principal(), id, body)

    async def list_workflow_executions(
        self,
        *,
        id: str,
        status: list[Status] | None = None,
        from_date: str | None = None,
        to_date: str | None = None,
        example_id: str | None = None,
        limit: int = 50,
        offset: int = 0,
    ) -> models.ListWorkflowExecutionsResponse | Response:
        return await self.workflow_executions.list(
            current_principal(), id, status, from_date, to_date, example_id, limit, offset
        )

    async def get_workflow_execution(
        self, *, execution_id: str, include_steps: bool = False
    ) -> models.GetWorkflowExecutionResponse | Response:
        principal = current_principal()
        return await self.workflow_executions.get(principal, execution_id, include_steps)

    async def cancel_workflow_execution(
        self, *, execution_id: str
    ) -> models.CancelWorkflowExecutionResponse | Response:
        return await self.workflow_executions.cancel(current_principal(), execution_id)

    # -- webhooks ------------------------------------------------------------------------------

    async def list_webhooks(
        self, *, limit: int = 50, offset: int = 0
    ) -> models.ListWebhooksResponse | Response:
        return await self.webhooks.list(current_principal(), limit, offset)

    async def create_webhook(
        self, *, body: models.CreateWebhookBody
    ) -> models.CreatedWebhook | Response:
        return await self.webhooks.create(current_principal(), body)

    async def get_webhook(self, *, webhook_id: str) -> models.Webhook | Response:
        return await self.webhooks.get(current_principal(), webhook_id)

    async def delete_webhook(self, *, webhook_id: str) -> Response | None:
        await self.webhooks.delete(current_principal(), webhook_id)
        return None

    async def list_webhook_deliveries(
        self,
        *,
        webhook_id: str,
        status: Literal["pending", "delivered", "failed"] | None = None,
        limit: int = 50,
        offset: int = 0,
    ) -> models.ListWebhookDeliveriesResponse | Response:
        principal = current_principal()
        return await self.webhooks.deliveries(principal, webhook_id, status, limit, offset)

    # -- schedules -----------------------------------------------------------------------------

    async def list_schedules(
        self,
        *,
        agent_id: str | None = None,
        workflow_id: str | None = None,
        limit: int = 50,
        offset: int = 0,
    ) -> models.ListSchedulesResponse | Response:
        principal = current_principal()
        return await self.schedules.list(principal, agent_id, workflow_id, limit, offset)

    async def create_schedule(
        self, *, body: models.CreateScheduleBody
    ) -> models.Schedule | Response:
        return await self.schedules.create(current_principal(), body)

    async def get_schedule(self, *, schedule_id: str) -> models.Schedule | Response:
        return await self.schedules.get(current_principal(), schedule_id)

    async def update_schedule(
        self, *, schedule_id: str, body: models.UpdateScheduleBody
    ) -> models.Schedule | Response:
        return await self.schedules.update(current_principal(), schedule_id, body)

    async def delete_schedule(self, *, schedule_id: str) -> Response | None:
        await self.schedules.delete(current_principal(), schedule_id)
        return None


async def _file_parts(files: Mapping[str, UploadFile]) -> dict[str, object]:
    """The multipart file parts of a request as its fingerprint sees them (name, type and
    content); each part is read and rewound for the handler."""
    parts: dict[str, object] = {}
    for field, upload in files.items():
        content = await upload.read()
        await upload.seek(0)
        parts[field] = {"name": upload.filename, "type": upload.content_type, "data": content}
    return parts


def _check(handlers: AgentsHttpHandlers) -> AgentsHandlers:
    return handlers  # mypy checks the Protocol conformance
