"""A test implementation of the generated agents layer (``generated.agents``).

It exercises the generated routes (binding, validation, multipart, downloads, the error
envelope), not the agents service: small in-memory state, just enough for stateful fuzzing to
chain create agent → get → run → get execution → feedback → expected files, cancel and rerun.
Workflows are seeded with one workflow (``wf_demo``, slug ``demo``) and one released version.

A simulated worker advances a queued execution one status each time it is read (``pending →
running → completed``, or ``cancelled`` once a cancellation was requested), so cancelling meets
every row of its table. Every answer is a documented status with a schema-valid body; unknown
ids raise ``HttpError(404)``, which the generated routes render as an ``ApiErrorEnvelope``.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal, TypeVar

from pydantic import RootModel
from starlette.datastructures import UploadFile

from generated.agents import models as m
from generated.agents.handlers import AgentsHandlers
from webrest import FilterChain, HttpError, Request, Response

__all__ = ["API_KEY", "AgentsContract", "bearer_auth"]

API_KEY = "test-key"
ACTIVE = ("running", "waiting", "finalizing")
DEFAULT_CONFIG = {"entrypoint": ["python", "main.py"], "timeoutSeconds": 300}

Status = Literal[
    "created", "pending", "running", "waiting", "finalizing",
    "completed", "failed", "cancelled", "rejected",
]  # fmt: skip
Outcome = Literal["cancelled", "cancellation-requested", "already-terminal"]
STEP_STATUS = {
    "created": m.StepStatus.pending, "finalizing": m.StepStatus.running,
    "rejected": m.StepStatus.skipped,
}  # fmt: skip


async def bearer_auth(request: Request, chain: FilterChain) -> Response:
    """The spec's ``bearerAuth`` on every operation: 401 unless ``Bearer test-key``."""
    if request.headers.get("authorization") != f"Bearer {API_KEY}":
        raise HttpError(401, "Missing or invalid API key")
    return await chain.proceed(request)


def _now() -> datetime:
    return datetime.now(UTC)


def _aware(moment: datetime | None) -> datetime | None:
    return moment.replace(tzinfo=UTC) if moment is not None and moment.tzinfo is None else moment


def _value(item: object) -> str | None:
    """A nullable enum of a request body (a RootModel, an enum or None) as its string."""
    if isinstance(item, RootModel):
        item = item.root
    return str(item) if isinstance(item, str) else None


T = TypeVar("T")


def _page(items: Sequence[T], limit: int, offset: int) -> list[T]:
    return list(items[offset : offset + limit])


def _decode(content: str | None, content_base64: str | None) -> bytes:
    if content_base64:
        try:
            return base64.b64decode(content_base64)
        except (binascii.Error, ValueError):  # the pattern admits bad padding; keep the text
            return content_base64.encode()
    return (content or "").encode()


def _listing(files: Mapping[str, bytes]) -> list[m.ExecutionFile]:
    return [m.ExecutionFile(name=name, size_bytes=len(data)) for name, data in files.items()]


def _not_found(what: str) -> HttpError:
    return HttpError(404, f"{what} not found")


@dataclass
class Agent:
    id: str
    slug: str
    name: str
    description: str | None
    config: m.AgentConfig | None
    created_at: datetime
    updated_at: datetime
    files: dict[str, tuple[bytes, datetime]] = field(default_factory=dict)


@dataclass
class Feedback:
    body: str = ""
    rating: str | None = None
    status: str | None = "open"
    created_at: datetime = field(default_factory=_now)
    updated_at: datetime = field(default_factory=_now)
    resolved_at: datetime | None = None


@dataclass
class Run:
    """An agent execution (``agent_id``) or a workflow execution (``agent_id`` is the
    workflow's)."""

    id: str
    agent_id: str
    input: dict[str, Any]
    created_at: datetime = field(default_factory=_now)
    status: Status = "pending"
    metadata: dict[str, Any] | None = None
    source_execution_id: str | None = None
    trigger: str = "api"
    started_at: datetime | None = None
    completed_at: datetime | None = None
    cancel_requested_at: datetime | None = None
    output: Any = None
    error: str | None = None
    feedback: Feedback | None = None
    expected: Any = None
    expected_files: dict[str, bytes] = field(default_factory=dict)
    input_files: dict[str, bytes] = field(default_factory=dict)
    output_files: dict[str, bytes] = field(default_factory=dict)
    trace: bytes | None = None

    def advance(self) -> None:
        """One step of the simulated worker."""
        if self.status in ("created", "pending"):
            self.status, self.started_at = "running", _now()
        elif self.status in ACTIVE:
            self.finish("cancelled" if self.cancel_requested_at else "completed")

    def finish(self, status: Status) -> None:
        self.status, self.completed_at = status, _now()
        if status == "completed":
            self.output = {"echo": self.input}
            self.output_files["result.json"] = json.dumps(self.output).encode()
            self.trace = b'{"event": "completed"}\n'
        else:
            self.error = "Cancelled"

    @property
    def duration_ms(self) -> int | None:
        if self.started_at is None or self.completed_at is None:
            return None
        return int((self.completed_at - self.started_at).total_seconds() * 1000)

    def cancel(self) -> tuple[Outcome, Status]:
        """The cancel table: created/pending → cancelled; running → requested; terminal → as is."""
        was = self.status
        if was in ("created", "pending"):
            self.finish("cancelled")
            return "cancelled", was
        if was in ACTIVE:
            self.cancel_requested_at = self.cancel_requested_at or _now()
            return "cancellation-requested", was
        return "already-terminal", was


async def _read_files(files: Mapping[str, UploadFile], run: Run) -> None:
    """Multipart file parts: stored as input files and referenced from the input."""
    for name, upload in files.items():
        filename = upload.filename if upload.filename and len(upload.filename) <= 255 else name
        run.input_files[filename[:255]] = await upload.read()
        run.input[name] = {"$file": f"input/{filename}"}


class AgentsContract:
    """In-memory agents, agent executions, one seeded workflow and its executions."""

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        """Back to the seeded state (a stateful scenario starts from it, so that replaying a
        scenario meets the same answers)."""
        self.agents: dict[str, Agent] = {}
        self.runs: dict[str, Run] = {}
        self.workflow_runs: dict[str, Run] = {}
        self._ids = 0
        seeded = datetime(2026, 1, 1, tzinfo=UTC)
        definition = {"name": "demo", "steps": [{"id": "echo", "run": "echo"}]}
        yaml_content = "name: demo\nsteps:\n  - id: echo\n    run: echo\n"
        self.workflow = m.WorkflowSummary(
            id="wf_demo", slug="demo", name="Demo", description="Echoes its input.",
            kind=m.WorkflowKind.workflow, version_id="wfh_demo1", version="1.0.0",
            definition=definition, yaml_content=yaml_content, created_at=seeded,
            updated_at=seeded,
        )  # fmt: skip
        self.version = m.WorkflowVersion(
            id="wfh_demo1", workflow_id="wf_demo", version="1.0.0", definition=definition,
            yaml_content=yaml_content, is_current=True, created_at=seeded,
        )  # fmt: skip
        # The spec's example agent and executions, so that the examples phase reaches the
        # success answers of the execution operations (downloads, expected files) too.
        agent = Agent(
            id="agt_7Kq2mV9xLp3N", slug="invoice-extractor", name="Invoice extractor",
            description=None, config=None, created_at=seeded, updated_at=seeded,
        )  # fmt: skip
        agent.files["main.py"] = (b"print('{}')\n", seeded)
        self.agents[agent.id] = agent
        run = Run(id="aex_3Fh8sK2nQwZ4", agent_id=agent.id, input={"customer": "ACME"})
        run.input_files["invoice.pdf"] = b"%PDF-1.7"
        run.advance()
        run.finish("completed")
        run.output_files["totals.json"] = b'{"total": 1249.5}'
        run.expected_files["totals.json"] = b'{"total": 1264.5}'
        self.runs[run.id] = run
        self.workflow_runs["wfx_8Lm3Rt6YvK1p"] = Run(
            id="wfx_8Lm3Rt6YvK1p", agent_id="wf_demo", input={"amount": 1200}, created_at=seeded
        )

    # -- lookups and views ---------------------------------------------------------------------

    def _new_id(self, prefix: str) -> str:
        self._ids += 1
        return f"{prefix}_{self._ids}"

    def _agent(self, agent_id: str) -> Agent:
        agent = self.agents.get(agent_id) or next(
            (a for a in self.agents.values() if a.slug == agent_id), None
        )
        if agent is None:
            raise _not_found("Agent")
        return agent

    def _run(self, execution_id: str) -> Run:
        if execution_id not in self.runs:
            raise _not_found("Agent execution")
        return self.runs[execution_id]

    def _workflow(self, workflow_id: str) -> m.WorkflowSummary:
        if workflow_id not in (self.workflow.id, self.workflow.slug):
            raise _not_found("Workflow")
        return self.workflow

    def _workflow_run(self, execution_id: str) -> Run:
        if execution_id not in self.workflow_runs:
            raise _not_found("Workflow execution")
        return self.workflow_runs[execution_id]

    def _agent_view(self, agent: Agent) -> m.AgentSummary:
        runs = [run for run in self.runs.values() if run.agent_id == agent.id]
        stats = m.AgentStats(
            total_executions=len(runs),
            example_count=0,
            last_execution_at=max((run.created_at for run in runs), default=None),
            avg_duration_ms=None,
        )
        return m.AgentSummary(
            id=agent.id, slug=agent.slug, name=agent.name, description=agent.description,
            config=agent.config or m.AgentConfig.model_validate(DEFAULT_CONFIG), stats=stats,
            created_at=agent.created_at, updated_at=agent.updated_at,
        )  # fmt: skip

    @staticmethod
    def _feedback_view(feedback: Feedback | None) -> m.AgentExecutionFeedback | None:
        if feedback is None:
            return None
        return m.AgentExecutionFeedback.model_validate(
            {
                "body": feedback.body,
                "rating": feedback.rating,
                "status": feedback.status,
                "createdAt": feedback.created_at,
                "createdBy": "usr_test",
                "updatedAt": feedback.updated_at,
                "resolvedAt": feedback.resolved_at,
            }
        )

    @staticmethod
    def _expected_files(run: Run) -> list[m.ExpectedFile]:
        return [
            m.ExpectedFile(name=name, size_bytes=len(data))
            for name, data in sorted(run.expected_files.items())
        ]

    def _run_view(self, run: Run, include: Sequence[str] | None = ()) -> m.AgentExecutionSummary:
        parts = set(include or ())
        files = m.ExecutionFiles(
            input=_listing(run.input_files),
            output=_listing(run.output_files),
            has_issues=False,
            has_trace=run.trace is not None,
        )
        return m.AgentExecutionSummary(
            id=run.id, agent_id=run.agent_id, status=m.ExecutionStatus(run.status),
            created_at=run.created_at, started_at=run.started_at, completed_at=run.completed_at,
            cancel_requested_at=run.cancel_requested_at, duration_ms=run.duration_ms,
            input=run.input, output=run.output, schema_valid=None, error=run.error,
            metadata=run.metadata, batch_id=None, example_name=None,
            source_execution_id=run.source_execution_id,
            feedback=self._feedback_view(run.feedback) if "feedback" in parts else None,
            expected=run.expected if "expected" in parts else None,
            expected_files=self._expected_files(run) if "expected" in parts else None,
            files=files if "files" in parts else None,
        )  # fmt: skip

    def _feedback_detail(self, run: Run) -> m.AgentExecutionFeedbackDetail:
        return m.AgentExecutionFeedbackDetail(
            feedback=self._feedback_view(run.feedback),
            expected=run.expected,
            expected_files=self._expected_files(run),
        )

    def _workflow_run_view(self, run: Run) -> m.ExecutionSummary:
        return m.ExecutionSummary(
            id=run.id, workflow_id=run.agent_id, version_id=self.version.id,
            status=m.ExecutionStatus(run.status),
            trigger_type=m.TriggerType(m.TriggerTypeEnum(run.trigger)), trigger_input=run.input,
            example_id=None, result=run.output, error=run.error, created_at=run.created_at,
            started_at=run.started_at, completed_at=run.completed_at,
            duration_ms=run.duration_ms, workflow=m.WorkflowRef(id="wf_demo", name="Demo"),
        )  # fmt: skip

    # -- agents --------------------------------------------------------------------------------

    async def list_agents(
        self, *, search: str | None = None, limit: int = 50, offset: int = 0
    ) -> m.ListAgentsResponse | Response:
        needle = (search or "").lower()
        found = [
            a
            for a in reversed(self.agents.values())
            if needle in f"{a.name}\n{a.slug}\n{a.description or ''}".lower()
        ]
        return m.ListAgentsResponse(
            data=[self._agent_view(a) for a in _page(found, limit, offset)],
            total=len(found),
            limit=limit,
            offset=offset,
        )

    async def create_agent(self, *, body: m.CreateAgentBody) -> m.CreateAgentResponse | Response:
        # The service also reserves the slug `executions` (400); the schema admits it, so a
        # positive-data fuzzer may send it: this double accepts it.
        if any(a.slug == body.slug for a in self.agents.values()):
            raise HttpError(409, f"An agent with slug '{body.slug}' already exists")
        now = _now()
        config = body.config if isinstance(body.config, m.AgentConfig) else None
        agent = Agent(
            id=self._new_id("agt"), slug=body.slug, name=body.name,
            description=body.description if isinstance(body.description, str) else None,
            config=config, created_at=now, updated_at=now,
        )  # fmt: skip
        manifest = (config or m.AgentConfig.model_validate(DEFAULT_CONFIG)).model_dump_json()
        agent.files["main.py"] = (b"import json, sys\nprint(json.load(sys.stdin))\n", now)
        agent.files["agent.json"] = (manifest.encode(), now)
        self.agents[agent.id] = agent
        return m.CreateAgentResponse(agent=self._agent_view(agent))

    async def get_agent(
        self, *, agent_id: str, include: list[Literal["files", "dataset"]] | None = None
    ) -> m.GetAgentResponse | Response:
        agent = self._agent(agent_id)
        parts = set(include or ())
        files = [
            m.AgentFileEntry(path=path, size_bytes=len(data), updated_at=updated)
            for path, (data, updated) in sorted(agent.files.items())
        ]
        return m.GetAgentResponse(
            agent=self._agent_view(agent),
            files=files if "files" in parts else None,
            dataset=m.AgentDataset(example_count=0, examples=[]) if "dataset" in parts else None,
        )

    async def update_agent(
        self, *, agent_id: str, body: m.PatchAgentBody
    ) -> m.PatchAgentResponse | Response:
        agent = self._agent(agent_id)
        if isinstance(body.name, str):
            agent.name = body.name
        if "description" in body.model_fields_set:
            agent.description = body.description if isinstance(body.description, str) else None
        if isinstance(body.config, m.AgentConfig):
            agent.config = body.config
        agent.updated_at = _now()
        return m.PatchAgentResponse(agent=self._agent_view(agent))

    async def run_agent(
        self,
        *,
        agent_id: str,
        files: Mapping[str, UploadFile],
        wait_for_completion: int | None = None,
        body: m.RunAgentBody | None = None,
    ) -> m.RunAgentResponse | Response:
        agent = self._agent(agent_id)
        given = body.input if body is not None and isinstance(body.input, dict) else None
        metadata = body.metadata if body is not None and isinstance(body.metadata, dict) else None
        run = Run(id=self._new_id("aex"), agent_id=agent.id, input=dict(given or {}))
        run.metadata = metadata
        await _read_files(files, run)
        self.runs[run.id] = run
        if wait_for_completion is None:
            return m.RunAgentResponse(
                execution_id=run.id, status=m.RunAgentStatus.pending, output=None,
                schema_valid=None, error=None,
            )  # fmt: skip
        run.advance()
        run.finish("completed")
        return m.RunAgentResponse(
            execution_id=run.id, status=m.RunAgentStatus.completed, output=run.output,
            schema_valid=None, error=None,
        )  # fmt: skip

    async def list_agent_files(
        self, *, agent_id: str, path: str | None = None, prefix: str | None = None
    ) -> m.ListAgentFilesResponse | Response:
        agent = self._agent(agent_id)
        base = prefix.rstrip("/") + "/" if prefix else ""
        if path is not None:
            if base + path not in agent.files:
                raise _not_found("File")
            data = agent.files[base + path][0]
            return Response.ok().type("application/octet-stream").body(data)
        return m.ListAgentFilesResponse(
            files=[
                m.AgentFileEntry(path=name, size_bytes=len(data), updated_at=updated)
                for name, (data, updated) in sorted(agent.files.items())
                if name.startswith(base)
            ]
        )

    async def put_agent_file(
        self, *, agent_id: str, path: str, body: m.AgentFileBody, prefix: str | None = None
    ) -> m.PutAgentFileResponse | Response:
        agent = self._agent(agent_id)
        # The service answers 400 when both contents are given; the schema admits it, so a
        # positive-data fuzzer may send both: this double takes `contentBase64` then.
        stored = (prefix.rstrip("/") + "/" if prefix else "") + path
        content = body.content if isinstance(body.content, str) else None
        encoded = body.content_base64 if isinstance(body.content_base64, str) else None
        agent.files[stored] = (_decode(content, encoded), _now())
        return m.PutAgentFileResponse(ok=True, path=stored)

    async def upload_agent_files(
        self, *, agent_id: str, body: m.AgentFilesBody
    ) -> m.UploadAgentFilesResponse | Response:
        agent = self._agent(agent_id)
        for upload in body.files:
            content = upload.content if isinstance(upload.content, str) else None
            encoded = upload.content_base64 if isinstance(upload.content_base64, str) else None
            agent.files[upload.path] = (_decode(content, encoded), _now())
        return m.UploadAgentFilesResponse(ok=True, files=[m.File(f.path) for f in body.files])

    async def list_agent_executions(
        self,
        *,
        agent_id: str,
        status: list[Status] | None = None,
        batch_id: str | None = None,
        example_name: str | None = None,
        example_name_contains: str | None = None,
        created_after: datetime | None = None,
        created_before: datetime | None = None,
        completed_after: datetime | None = None,
        completed_before: datetime | None = None,
        feedback_status: Literal["open", "resolved", "ignored"] | None = None,
        feedback_rating: Literal["pass", "fail", "partial", "none"] | None = None,
        has_feedback: bool | None = None,
        no_feedback: bool | None = None,
        has_expected: bool | None = None,
        has_expected_json: bool | None = None,
        has_expected_files: bool | None = None,
        feedback_body_contains: str | None = None,
        feedback_created_after: datetime | None = None,
        feedback_created_before: datetime | None = None,
        feedback_updated_after: datetime | None = None,
        feedback_updated_before: datetime | None = None,
        feedback_resolved_after: datetime | None = None,
        feedback_resolved_before: datetime | None = None,
        promoted_to_example: bool | None = None,
        promoted_example_name: str | None = None,
        since_last_resolved: bool | None = None,
        include: list[Literal["feedback", "expected", "files"]] | None = None,
        sort: Literal["createdAt", "completedAt", "status", "exampleName"] = "createdAt",
        order: Literal["asc", "desc"] = "desc",
        scan_limit: int = 1000,
        limit: int = 50,
        offset: int = 0,
    ) -> m.ListAgentExecutionsResponse | Response:
        """Filters by status, creation time, feedback and expected results; batch, example
        and promotion filters match nothing (no execution of this double has them); the
        completion and feedback time bounds are accepted and not applied."""
        agent = self._agent(agent_id)
        runs = [run for run in self.runs.values() if run.agent_id == agent.id]
        after, before = _aware(created_after), _aware(created_before)
        resolved = [r.created_at for r in runs if r.feedback and r.feedback.status == "resolved"]
        checks: list[Callable[[Run], bool]] = [
            lambda r: status is None or r.status in status,
            lambda r: after is None or r.created_at >= after,
            lambda r: before is None or r.created_at <= before,
            lambda r: has_feedback is None or (r.feedback is not None) == has_feedback,
            lambda r: no_feedback is None or (r.feedback is None) == no_feedback,
            lambda r: feedback_status is None
            or bool(r.feedback and r.feedback.status == feedback_status),
            lambda r: feedback_rating is None
            or bool(r.feedback and (r.feedback.rating or "none") == feedback_rating),
            lambda r: feedback_body_contains is None
            or bool(r.feedback and feedback_body_contains in r.feedback.body),
            lambda r: has_expected is None
            or (r.expected is not None or bool(r.expected_files)) == has_expected,
            lambda r: has_expected_json is None or (r.expected is not None) == has_expected_json,
            lambda r: has_expected_files is None or bool(r.expected_files) == has_expected_files,
            lambda r: not (batch_id or example_name or example_name_contains),
            lambda r: not promoted_example_name,
            lambda r: not promoted_to_example,
            lambda r: not (since_last_resolved and resolved) or r.created_at > max(resolved),
        ]  # fmt: skip
        found = [run for run in runs[-scan_limit:] if all(check(run) for check in checks)]
        keys: dict[str, Callable[[Run], str]] = {
            "createdAt": lambda r: r.created_at.isoformat(),
            "completedAt": lambda r: r.completed_at.isoformat() if r.completed_at else "",
            "status": lambda r: r.status,
            "exampleName": lambda r: "",
        }
        found.sort(key=keys[sort], reverse=order == "desc")
        return m.ListAgentExecutionsResponse(
            executions=[self._run_view(run, include) for run in _page(found, limit, offset)],
            total=len(found),
            limit=limit,
            offset=offset,
            scan_limited=len(runs) > scan_limit,
            no_resolved_anchor=True if since_last_resolved and not resolved else None,
        )

    # -- agent executions ----------------------------------------------------------------------

    async def get_agent_execution(
        self,
        *,
        execution_id: str,
        include: list[Literal["feedback", "expected", "files"]] | None = None,
    ) -> m.AgentExecutionResponse | Response:
        run = self._run(execution_id)
        run.advance()
        return m.AgentExecutionResponse(execution=self._run_view(run, include))

    async def cancel_agent_execution(
        self, *, execution_id: str
    ) -> m.CancelAgentExecutionResponse | Response:
        run = self._run(execution_id)
        outcome, was = run.cancel()
        return m.CancelAgentExecutionResponse(
            execution_id=run.id, status=m.CancelOutcome(outcome),
            was_status=m.ExecutionStatus(was), execution=self._run_view(run),
        )  # fmt: skip

    async def rerun_agent_execution(
        self, *, execution_id: str
    ) -> m.RerunAgentExecutionResponse | Response:
        source = self._run(execution_id)
        run = Run(
            id=self._new_id("aex"), agent_id=source.agent_id, input=dict(source.input),
            metadata=source.metadata, source_execution_id=source.id,
            input_files=dict(source.input_files),
        )  # fmt: skip
        self.runs[run.id] = run
        return m.RerunAgentExecutionResponse(
            execution_id=run.id, source_execution_id=source.id, status=m.ExecutionStatus.pending
        )

    async def get_agent_execution_feedback(
        self, *, execution_id: str
    ) -> m.AgentExecutionFeedbackDetail | Response:
        return self._feedback_detail(self._run(execution_id))

    async def clear_agent_execution_feedback(
        self, *, execution_id: str
    ) -> m.AgentExecutionFeedbackDetail | Response:
        run = self._run(execution_id)
        run.feedback, run.expected = None, None
        run.expected_files.clear()
        return self._feedback_detail(run)

    async def update_agent_execution_feedback(
        self, *, execution_id: str, body: m.UpdateAgentExecutionFeedbackBody
    ) -> m.AgentExecutionFeedbackDetail | Response:
        run = self._run(execution_id)
        given = body.model_fields_set
        feedback = run.feedback or Feedback()
        if isinstance(body.body, str):
            feedback.body = body.body
        if "rating" in given:
            feedback.rating = _value(body.rating)
        if "status" in given:
            feedback.status = _value(body.status)
            if feedback.status == "resolved":
                feedback.resolved_at = _now()
        if "expected" in given:
            run.expected = body.expected
        feedback.updated_at = _now()
        run.feedback = feedback
        return self._feedback_detail(run)

    async def list_agent_execution_expected(
        self, *, execution_id: str
    ) -> m.AgentExecutionExpectedArtifacts | Response:
        run = self._run(execution_id)
        return m.AgentExecutionExpectedArtifacts(
            expected=run.expected, files=self._expected_files(run)
        )

    async def add_agent_execution_expected_file(
        self,
        *,
        execution_id: str,
        body: m.CopyAgentExecutionOutputToExpectedBody | None = None,
        file: UploadFile | None = None,
        name: str | None = None,
    ) -> m.CreateExpectedFileResponse | Response:
        run = self._run(execution_id)
        if body is not None:  # application/json: copy an output file
            if body.output_file_name not in run.output_files:
                raise _not_found("Output file")
            stored = body.expected_name if isinstance(body.expected_name, str) else None
            stored = stored or body.output_file_name
            run.expected_files[stored] = run.output_files[body.output_file_name]
        else:  # multipart/form-data: upload one
            assert file is not None  # the generated route requires the part
            stored = (name or file.filename or "expected")[:255]
            run.expected_files[stored] = await file.read()
        return m.CreateExpectedFileResponse(name=stored)

    async def download_agent_execution_expected_file(
        self, *, execution_id: str, filename: str
    ) -> AsyncIterator[bytes] | bytes | Response:
        run = self._run(execution_id)
        if filename not in run.expected_files:
            raise _not_found("Expected file")
        return run.expected_files[filename]

    async def delete_agent_execution_expected_file(
        self, *, execution_id: str, filename: str
    ) -> Response | None:
        run = self._run(execution_id)
        if run.expected_files.pop(filename, None) is None:
            raise _not_found("Expected file")
        return None

    async def rename_agent_execution_expected_file(
        self, *, execution_id: str, filename: str, body: m.RenameExpectedFileBody
    ) -> m.RenameExpectedFileResponse | Response:
        run = self._run(execution_id)
        if filename not in run.expected_files:
            raise _not_found("Expected file")
        if body.name != filename and body.name in run.expected_files:
            raise HttpError(409, f"An expected file named '{body.name}' already exists")
        run.expected_files[body.name] = run.expected_files.pop(filename)
        return m.RenameExpectedFileResponse(name=body.name, previous_name=filename)

    async def download_agent_execution_file(
        self,
        *,
        execution_id: str,
        kind: Literal["input", "output", "issues", "trace"],
        filename: str,
    ) -> AsyncIterator[bytes] | bytes | Response:
        run = self._run(execution_id)
        trace = {"trace.jsonl": run.trace} if run.trace is not None else {}
        found = {"input": run.input_files, "output": run.output_files, "issues": {}, "trace": trace}
        data = found[kind].get(filename)
        if data is None:
            raise _not_found("File")

        async def chunks() -> AsyncIterator[bytes]:  # streamed, as a large file would be
            yield data

        return chunks()

    # -- workflows -----------------------------------------------------------------------------

    async def list_workflows(
        self,
        *,
        search: str | None = None,
        name: str | None = None,
        kind: Literal["workflow", "block"] | None = None,
        limit: int = 50,
        offset: int = 0,
    ) -> m.ListWorkflowsResponse | Response:
        wf = self.workflow
        matches = (
            (search is None or search.lower() in f"{wf.slug}\n{wf.name}".lower())
            and name in (None, wf.slug)
            and kind in (None, "workflow")
        )
        found = [wf] if matches else []
        return m.ListWorkflowsResponse(
            data=_page(found, limit, offset), total=len(found), limit=limit, offset=offset
        )

    async def get_workflow(self, *, id: str) -> m.WorkflowSummary | Response:
        return self._workflow(id)

    async def run_workflow(
        self,
        *,
        id: str,
        files: Mapping[str, UploadFile],
        version: str = "latest",
        wait_for_completion: int | None = None,
        body: m.RunWorkflowBody | None = None,
    ) -> m.RunWorkflowResponse | Response:
        workflow = self._workflow(id)
        if version not in ("latest", self.version.id):
            raise _not_found("Workflow version")
        given = body.input if body is not None and isinstance(body.input, dict) else None
        trigger = _value(body.trigger) if body is not None else None
        run = Run(id=self._new_id("wfx"), agent_id=workflow.id, input=dict(given or {}))
        run.trigger = trigger or "api"
        await _read_files(files, run)
        self.workflow_runs[run.id] = run
        if wait_for_completion is None:
            return m.RunWorkflowResponse(execution_id=run.id, status=None, result=None, error=None)
        run.advance()
        run.finish("completed")
        return m.RunWorkflowResponse(
            execution_id=run.id, status=m.Status(m.StatusEnum.completed), result=run.output,
            error=None,
        )  # fmt: skip

    async def list_workflow_versions(
        self, *, id: str, limit: int = 50, offset: int = 0
    ) -> m.ListVersionsResponse | Response:
        self._workflow(id)
        return m.ListVersionsResponse(
            data=_page([self.version], limit, offset), total=1, limit=limit, offset=offset
        )

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
    ) -> m.ListWorkflowExecutionsResponse | Response:
        """Filters by status; the date bounds are accepted and not applied, and no execution of
        this double ran a dataset example."""
        workflow = self._workflow(id)
        found = [
            run
            for run in reversed(self.workflow_runs.values())
            if run.agent_id == workflow.id
            and (status is None or run.status in status)
            and example_id is None
        ]
        return m.ListWorkflowExecutionsResponse(
            data=[self._workflow_run_view(run) for run in _page(found, limit, offset)],
            total=len(found),
            limit=limit,
            offset=offset,
        )

    async def get_workflow_execution(
        self, *, execution_id: str, include_steps: bool = False
    ) -> m.GetWorkflowExecutionResponse | Response:
        run = self._workflow_run(execution_id)
        run.advance()
        if not include_steps:
            return m.GetWorkflowExecutionResponse(self._workflow_run_view(run))
        step = m.WorkflowStepResult(
            step_id="echo",
            status=STEP_STATUS.get(run.status, m.StepStatus(run.status)),
            input=run.input, output=run.output, started_at=run.started_at,
            completed_at=run.completed_at, duration_ms=run.duration_ms,
        )  # fmt: skip
        detail = m.WorkflowExecutionStatusResponse(
            execution_id=run.id, workflow_id=run.agent_id, version_id=self.version.id,
            status=m.ExecutionStatus(run.status), created_at=run.created_at,
            started_at=run.started_at, completed_at=run.completed_at,
            cancel_requested_at=run.cancel_requested_at, result=run.output, error=run.error,
            steps=[step],
        )  # fmt: skip
        return m.GetWorkflowExecutionResponse(detail)

    async def cancel_workflow_execution(
        self, *, execution_id: str
    ) -> m.CancelWorkflowExecutionResponse | Response:
        run = self._workflow_run(execution_id)
        outcome, was = run.cancel()
        return m.CancelWorkflowExecutionResponse(
            execution_id=run.id, status=m.CancelOutcome(outcome), was_status=m.ExecutionStatus(was)
        )


def _check() -> AgentsHandlers:
    return AgentsContract()  # mypy checks the Protocol conformance
