"""Workflows and their released versions: create, release, get, list, list versions.

* **Create** (``POST /workflows``) parses the YAML (``parse_workflow``): an invalid definition
  is a 400 with one issue per problem, field ``body.yamlContent``, message
  ``line L, column C: …``. The YAML's ``name`` is the slug (409 when taken; ``executions`` is
  reserved). It needs the key's create right (the one that creates agents); a scoped key gets
  the new workflow in its scope, in the same transaction.
* **Release** (``POST /workflows/{id}/versions``): a new immutable version, numbered after the
  last, tagged ``body.version`` or its number (409 when the tag is used); it becomes the
  current version (``latest``), and the workflow's name, description and kind follow it. The
  YAML's ``name`` must be the workflow's slug.
* **Lists** are SQL: ``search`` (case-insensitive substring of the slug or name), ``name``
  (exact slug), ``kind``, by slug; versions newest first.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import anyio
from sqlalchemy import func, or_, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from generated.agents import models
from handlers.agents.domain.agents import RESERVED_SLUGS
from handlers.agents.domain.keys import WORKFLOW, Principal, grant
from handlers.agents.domain.workflow_store import (
    LATEST,
    find_workflow,
    new_version_id,
    new_workflow_id,
    version_entry,
    visible_workflows,
    workflow_summary,
)
from handlers.agents.storage.database import Database
from handlers.agents.storage.schema import Workflow, WorkflowVersion, utc_now
from handlers.agents.workflows.definition import WorkflowDefinition
from handlers.agents.workflows.parse import parse_workflow
from handlers.agents.workflows.yaml_nodes import WorkflowValidationError
from webrest import BadRequest, ErrorDetail, HttpError

__all__ = ["WorkflowCatalog", "parse_yaml"]

YAML_FIELD = ("body", "yamlContent")
MAX_ISSUES = 100


def parse_yaml(text: str) -> WorkflowDefinition:
    """The definition in ``text``; a 400 listing every problem with its line and column.

    CPU-bound (up to the YAML size limit and MAX_TOTAL_EVALUATION_SECONDS of constant
    expressions): async code calls it in a worker thread (``parse_yaml_off_loop``)."""
    try:
        return parse_workflow(text)
    except WorkflowValidationError as error:
        details = [ErrorDetail(YAML_FIELD, str(issue), "value_error") for issue in error.issues][
            :MAX_ISSUES
        ]
        count = len(error.issues)
        summary = f"The workflow definition is invalid ({count} problem{'s' if count > 1 else ''})"
        raise BadRequest(summary, details) from None


async def parse_yaml_off_loop(text: str) -> WorkflowDefinition:
    """``parse_yaml`` in a worker thread, so the event loop goes on serving meanwhile."""
    return await anyio.to_thread.run_sync(parse_yaml, text)


def _invalid(message: str) -> BadRequest:
    return BadRequest(message, [ErrorDetail(YAML_FIELD, message, "value_error")])


def _conflict(message: str, field: tuple[str, ...]) -> HttpError:
    return HttpError(409, message, [ErrorDetail(field, message, "conflict")])


@dataclass(frozen=True)
class _Release:
    definition: WorkflowDefinition
    yaml: str
    tag: str | None


def _add_version(
    session: Session, workflow: Workflow, release: _Release, principal: Principal
) -> WorkflowVersion:

    last = session.scalar(
        select(func.max(WorkflowVersion.number)).where(WorkflowVersion.workflow_id == workflow.id)
    )
    number = int(last or 0) + 1
    tag = release.tag or str(number)
    taken = session.scalar(
        select(WorkflowVersion.id).where(
            WorkflowVersion.workflow_id == workflow.id, WorkflowVersion.tag == tag
        )
    )
    if taken is not None:
        raise _conflict(f"Workflow '{workflow.slug}' already has a version '{tag}'",
                        ("body", "version"))  # fmt: skip
    now = utc_now()
    version = WorkflowVersion(
        id=new_version_id(),
        workflow_id=workflow.id,
        number=number,
        tag=tag,
        yaml_content=release.yaml,
        definition=release.definition.document,
        created_at=now,
        created_by_key=principal.key_id,
    )
    session.add(version)
    definition = release.definition
    workflow.current_version_id = version.id
    workflow.name = definition.title
    workflow.description = definition.description
    workflow.kind = definition.kind
    workflow.updated_at = now
    try:
        session.flush()
    except IntegrityError:  # a concurrent release took the number or the tag
        raise _conflict(f"Workflow '{workflow.slug}' was released concurrently; try again",
                        ("body", "version")) from None  # fmt: skip
    return version


class WorkflowCatalog:
    """The management operations, each one transaction."""

    def __init__(self, database: Database) -> None:
        self.database = database

    async def create(
        self, principal: Principal, body: models.CreateWorkflowBody
    ) -> models.WorkflowSummary:
        """A new workflow with its first version."""

        if not principal.can_create_agents:
            raise HttpError(403, "This API key may not create workflows")
        definition = await parse_yaml_off_loop(body.yaml_content)
        if definition.name in RESERVED_SLUGS:
            raise _invalid(f"The workflow name '{definition.name}' is reserved")
        release = _Release(definition, body.yaml_content, _tag(body.version))

        def work(session: Session) -> models.WorkflowSummary:
            taken = session.scalar(select(Workflow.id).where(Workflow.slug == definition.name))
            if taken is not None:
                raise _slug_taken(definition.name)
            now = utc_now()
            workflow = Workflow(
                id=new_workflow_id(),
                slug=definition.name,
                name=definition.title,
                kind=definition.kind,
                description=definition.description,
                current_version_id=None,
                created_at=now,
                updated_at=now,
            )
            session.add(workflow)
            try:
                session.flush()
            except IntegrityError:  # created by a concurrent request since the check
                raise _slug_taken(definition.name) from None
            version = _add_version(session, workflow, release, principal)
            if not principal.scope_all:
                grant(session, principal.key_id, WORKFLOW, workflow.id)
            return workflow_summary(workflow, version)

        return await self.database.write(work)

    async def release(
        self, principal: Principal, ref: str, body: models.ReleaseWorkflowVersionBody
    ) -> models.WorkflowVersion:
        """A new current version of the workflow ``ref``."""

        definition = await parse_yaml_off_loop(body.yaml_content)
        release = _Release(definition, body.yaml_content, _tag(body.version))

        def work(session: Session) -> models.WorkflowVersion:
            workflow = find_workflow(session, principal, ref, lock=True)
            if definition.name != workflow.slug:
                line = _name_line(body.yaml_content)
                raise _invalid(
                    f"line {line}, column 1: the workflow's name must stay '{workflow.slug}' "
                    f"(found '{definition.name}')"
                )
            version = _add_version(session, workflow, release, principal)
            return version_entry(version, workflow.current_version_id)

        return await self.database.write(work)

    async def get(self, principal: Principal, ref: str) -> models.WorkflowSummary:
        """The workflow with its current version."""

        def work(session: Session) -> models.WorkflowSummary:
            workflow = find_workflow(session, principal, ref)
            current = (
                session.get(WorkflowVersion, workflow.current_version_id)
                if workflow.current_version_id
                else None
            )
            return workflow_summary(workflow, current)

        return await self.database.read(work)

    async def list(
        self,
        principal: Principal,
        search: str | None,
        name: str | None,
        kind: str | None,
        limit: int,
        offset: int,
        include_archived: bool = False,
    ) -> models.ListWorkflowsResponse:
        """One page of the workflows the key may see, by slug; archived ones only with
        ``include_archived``."""

        conditions = [visible_workflows(principal)]
        if not include_archived:
            conditions.append(Workflow.archived_at.is_(None))
        if search:
            pattern = (
                "%"
                + search.lower().replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
                + "%"
            )
            conditions.append(
                or_(
                    func.lower(Workflow.slug).like(pattern, escape="\\"),
                    func.lower(func.coalesce(Workflow.name, "")).like(pattern, escape="\\"),
                )
            )
        if name:
            conditions.append(Workflow.slug == name)
        if kind:
            conditions.append(Workflow.kind == kind)

        def work(session: Session) -> models.ListWorkflowsResponse:
            total = session.scalar(select(func.count()).select_from(Workflow).where(*conditions))
            rows = session.execute(
                select(Workflow, WorkflowVersion)
                .outerjoin(WorkflowVersion, WorkflowVersion.id == Workflow.current_version_id)
                .where(*conditions)
                .order_by(Workflow.slug)
                .limit(limit)
                .offset(offset)
            ).all()
            return models.ListWorkflowsResponse(
                data=[workflow_summary(workflow, version) for workflow, version in rows],
                total=int(total or 0),
                limit=limit,
                offset=offset,
            )

        return await self.database.read(work)

    async def set_archived(
        self, principal: Principal, ref: str, archived: bool
    ) -> models.WorkflowSummary:
        """Archive (``archived``) or restore the workflow; doing it twice changes nothing.
        Needs the key's create right, as creating and releasing do."""
        if not principal.can_create_agents:
            verb = "archive" if archived else "restore"
            raise HttpError(403, f"This API key may not {verb} workflows")

        def work(session: Session) -> models.WorkflowSummary:
            workflow = find_workflow(session, principal, ref, lock=True)
            workflow.set_archived(archived)
            session.flush()
            current = (
                session.get(WorkflowVersion, workflow.current_version_id)
                if workflow.current_version_id
                else None
            )
            return workflow_summary(workflow, current)

        return await self.database.write(work)

    async def versions(
        self, principal: Principal, ref: str, limit: int, offset: int
    ) -> models.ListVersionsResponse:
        """The workflow's released versions, newest first."""

        def work(session: Session) -> models.ListVersionsResponse:
            workflow = find_workflow(session, principal, ref)
            condition = WorkflowVersion.workflow_id == workflow.id
            total = session.scalar(
                select(func.count()).select_from(WorkflowVersion).where(condition)
            )
            rows = session.scalars(
                select(WorkflowVersion)
                .where(condition)
                .order_by(WorkflowVersion.number.desc())
                .limit(limit)
                .offset(offset)
            ).all()
            return models.ListVersionsResponse(
                data=[version_entry(row, workflow.current_version_id) for row in rows],
                total=int(total or 0),
                limit=limit,
                offset=offset,
            )

        return await self.database.read(work)


def _name_line(text: str) -> int:
    """The line of the top-level ``name:`` key (1 when not found)."""
    for number, line in enumerate(text.splitlines(), start=1):
        if re.match(r"name\s*:", line):
            return number
    return 1


def _tag(value: object) -> str | None:
    """A release tag from a request; ``latest`` names the current version, never a tag."""
    if not isinstance(value, str) or not value:
        return None
    if value == LATEST:
        message = f"'{LATEST}' names the current version and cannot be a release tag"
        raise BadRequest(message, [ErrorDetail(("body", "version"), message, "value_error")])
    return value


def _slug_taken(slug: str) -> HttpError:
    message = f"A workflow named '{slug}' already exists"
    return _conflict(message, YAML_FIELD)
