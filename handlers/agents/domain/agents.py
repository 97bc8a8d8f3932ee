"""Agents: listing (with execution statistics), creating, reading and updating them.

Every operation acts for a :class:`~handlers.agents.domain.keys.Principal`: an agent outside
the key's scope is answered exactly like one that does not exist (404), and lists only hold what
the key may see. Each operation is one database transaction; file contents are written to the blob
store before it.
"""

from __future__ import annotations

import hashlib
import secrets
from collections import defaultdict
from collections.abc import Sequence
from datetime import datetime
from typing import Any, Literal

import anyio
from sqlalchemy import ColumnElement, and_, case, false, func, or_, select, true
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from generated.agents import models
from handlers.agents.domain.keys import AGENT, Principal, grant
from handlers.agents.domain.manifest import (
    MANIFEST_PATH,
    STARTER_FILES,
    config_model,
    entrypoint_source,
    manifest_bytes,
    normalize_config,
)
from handlers.agents.domain.snapshots import refresh_workspace, workspace_manifest
from handlers.agents.storage.blobs import BlobStore
from handlers.agents.storage.database import Database
from handlers.agents.storage.schema import (
    Agent,
    AgentFile,
    DatasetExample,
    Execution,
    ExecutionFile,
    utc_now,
)
from webrest import BadRequest, ErrorDetail, HttpError

__all__ = [
    "RESERVED_SLUGS",
    "AgentStore",
    "agent_archived",
    "agent_not_found",
    "find_agent",
    "file_entry",
]

RESERVED_SLUGS = frozenset({"executions"})
MAX_DATASET_EXAMPLES = 1000


def agent_not_found(ref: str) -> HttpError:
    """The 404 of an agent that does not exist or that the key may not see."""
    return HttpError(404, f"Agent '{ref}' not found")


def agent_archived(agent: Agent) -> HttpError:
    """The 409 of a run of an archived agent."""
    message = f"Agent '{agent.slug}' is archived: restore it to run it"
    return HttpError(409, message, [ErrorDetail(("path", "agentId"), message, "conflict")])


def visible(principal: Principal) -> ColumnElement[bool]:
    """SQL condition: the agent is in the key's scope."""
    if principal.scope_all:
        return true()
    if not principal.agents:
        return false()
    refs = sorted(principal.agents)
    return or_(Agent.id.in_(refs), Agent.slug.in_(refs))


def find_agent(session: Session, principal: Principal, ref: str, *, lock: bool = False) -> Agent:
    """The agent with id or slug ``ref`` that the key may see; 404 otherwise."""
    query = select(Agent).where(or_(Agent.id == ref, Agent.slug == ref), visible(principal))
    if lock:
        query = query.with_for_update()
    agent = session.scalars(query).first()
    if agent is None:
        raise agent_not_found(ref)
    return agent


def file_entry(row: AgentFile) -> models.AgentFileEntry:
    """A workspace file row as the API shows it."""
    return models.AgentFileEntry(
        path=row.path,
        size_bytes=row.size_bytes,
        content_type=row.content_type,
        updated_at=row.updated_at,
    )


def _stats(session: Session, agent_ids: Sequence[str]) -> dict[str, models.AgentStats]:
    if not agent_ids:
        return {}
    completed = Execution.status == "completed"
    rows = session.execute(
        select(
            Execution.agent_id,
            func.count(),
            func.max(Execution.created_at),
            func.avg(case((completed, Execution.duration_ms))),
        )
        .where(Execution.agent_id.in_(agent_ids))
        .group_by(Execution.agent_id)
    ).all()
    examples: dict[str, int] = {
        agent_id: count
        for agent_id, count in session.execute(
            select(DatasetExample.agent_id, func.count())
            .where(DatasetExample.agent_id.in_(agent_ids))
            .group_by(DatasetExample.agent_id)
        )
    }
    stats = {
        agent_id: models.AgentStats(
            total_executions=0,
            example_count=examples.get(agent_id, 0),
            last_execution_at=None,
            avg_duration_ms=None,
            avg_credits=None,
        )
        for agent_id in agent_ids
    }
    for agent_id, count, last, average in rows:
        stats[agent_id] = models.AgentStats(
            total_executions=count,
            example_count=examples.get(agent_id, 0),
            last_execution_at=last,
            avg_duration_ms=None if average is None else float(average),
            avg_credits=None,  # no credits are metered here (see the spec)
        )
    return stats


def _workspace_facts(session: Session, agents: Sequence[Agent]) -> dict[str, tuple[str, bool]]:
    """Each agent's workspace revision (``latestCommit``) and whether its entrypoint's source
    file is present (or it names none): one query for the sources, one for the agents whose
    snapshot hash is not stored yet."""
    sources = {agent.id: entrypoint_source(agent.config) for agent in agents}
    wanted = {(agent_id, path) for agent_id, path in sources.items() if path is not None}
    present: set[tuple[str, str]] = set()
    if wanted:
        rows = session.execute(
            select(AgentFile.agent_id, AgentFile.path).where(
                AgentFile.agent_id.in_({agent_id for agent_id, _ in wanted}),
                AgentFile.path.in_({path for _, path in wanted}),
            )
        )
        present = {(agent_id, path) for agent_id, path in rows} & wanted
    unknown = [agent.id for agent in agents if agent.workspace_sha256 is None]
    computed: defaultdict[str, dict[str, str]] = defaultdict(dict)
    if unknown:  # agents stored before the hash was kept: computed, not stored (a read)
        for agent_id, path, digest in session.execute(
            select(AgentFile.agent_id, AgentFile.path, AgentFile.blob_sha256).where(
                AgentFile.agent_id.in_(unknown)
            )
        ):
            computed[agent_id][path] = digest
    facts: dict[str, tuple[str, bool]] = {}
    for agent in agents:
        revision = (
            agent.workspace_sha256
            or hashlib.sha256(workspace_manifest(computed[agent.id])).hexdigest()
        )
        source = sources[agent.id]
        facts[agent.id] = (revision, source is None or (agent.id, source) in present)
    return facts


def summary(
    agent: Agent, stats: models.AgentStats, revision: str, source_present: bool
) -> models.AgentSummary:
    """An agent row as the API shows it; ``revision`` is its workspace's snapshot hash."""
    return models.AgentSummary(
        id=agent.id,
        slug=agent.slug,
        name=agent.name,
        description=agent.description,
        config=config_model(agent.config),
        stats=stats,
        source_integrity=(
            models.SourceIntegrity.healthy
            if source_present
            else models.SourceIntegrity.source_missing
        ),
        latest_version=None,
        latest_commit=revision,
        archived_at=agent.archived_at,
        created_at=agent.created_at,
        updated_at=agent.updated_at,
    )


def _summaries(session: Session, agents: Sequence[Agent]) -> list[models.AgentSummary]:
    stats, facts = (
        _stats(session, [agent.id for agent in agents]),
        _workspace_facts(session, agents),
    )
    return [summary(agent, stats[agent.id], *facts[agent.id]) for agent in agents]


def _summary_of(session: Session, agent: Agent) -> models.AgentSummary:
    return _summaries(session, [agent])[0]


def _dataset(session: Session, agent_id: str) -> models.AgentDataset:
    expected_file = (
        select(ExecutionFile.name)
        .where(
            ExecutionFile.execution_id == DatasetExample.source_execution_id,
            ExecutionFile.kind == "expected",
        )
        .exists()
    )
    rows = session.execute(
        select(DatasetExample, Execution.expected.is_not(None), expected_file)
        .outerjoin(Execution, Execution.id == DatasetExample.source_execution_id)
        .where(DatasetExample.agent_id == agent_id)
        .order_by(DatasetExample.created_at.desc(), DatasetExample.name)
        .limit(MAX_DATASET_EXAMPLES)
    ).all()
    count = session.scalar(
        select(func.count()).select_from(DatasetExample).where(DatasetExample.agent_id == agent_id)
    )
    examples = [
        models.AgentDatasetExample(
            name=example.name,
            source_execution_id=example.source_execution_id,
            has_expected=(
                None if example.source_execution_id is None else bool(json_set or file_set)
            ),
            created_at=example.created_at,
        )
        for example, json_set, file_set in rows
    ]
    return models.AgentDataset(example_count=count or 0, examples=examples)


class AgentStore:
    """The agent operations, over the database and the blob store."""

    def __init__(self, database: Database, blobs: BlobStore) -> None:
        self.database = database
        self.blobs = blobs

    async def list_visible(
        self,
        principal: Principal,
        search: str | None,
        limit: int,
        offset: int,
        include_archived: bool = False,
    ) -> models.ListAgentsResponse:
        """One page of the agents the key sees, newest first, optionally searched; archived
        ones only with ``include_archived``."""

        def work(session: Session) -> models.ListAgentsResponse:
            condition = visible(principal)
            if not include_archived:
                condition = and_(condition, Agent.archived_at.is_(None))
            if search:
                needle = search.lower()
                condition = and_(
                    condition,
                    or_(
                        func.lower(Agent.name).contains(needle, autoescape=True),
                        func.lower(Agent.slug).contains(needle, autoescape=True),
                        func.lower(Agent.description).contains(needle, autoescape=True),
                    ),
                )
            total = session.scalar(select(func.count()).select_from(Agent).where(condition))
            agents = session.scalars(
                select(Agent)
                .where(condition)
                .order_by(Agent.created_at.desc(), Agent.id.desc())
                .limit(limit)
                .offset(offset)
            ).all()
            return models.ListAgentsResponse(
                data=_summaries(session, agents),
                total=total or 0,
                limit=limit,
                offset=offset,
            )

        return await self.database.read(work)

    async def create(
        self, principal: Principal, body: models.CreateAgentBody
    ) -> models.AgentSummary:
        """A new agent with its starter workspace (``agent.json`` and ``main.py``)."""
        if not principal.can_create_agents:
            raise HttpError(403, "This API key may not create agents")
        if body.slug in RESERVED_SLUGS:
            message = f"The slug '{body.slug}' is reserved"
            raise BadRequest(message, [ErrorDetail(("body", "slug"), message, "value_error")])
        config = normalize_config(
            body.config if isinstance(body.config, models.AgentConfig) else None
        )
        files = {MANIFEST_PATH: (manifest_bytes(config), "application/json"), **STARTER_FILES}
        digests = await anyio.to_thread.run_sync(self._store_blobs, [c for c, _ in files.values()])
        description = body.description if isinstance(body.description, str) else None

        def work(session: Session) -> models.AgentSummary:
            if session.scalar(select(Agent.id).where(Agent.slug == body.slug)) is not None:
                raise _slug_taken(body.slug)
            now = utc_now()
            agent = Agent(
                id="agt_" + secrets.token_hex(12),
                slug=body.slug,
                name=body.name,
                description=description,
                config=config,
                created_at=now,
                updated_at=now,
            )
            session.add(agent)
            try:
                session.flush()
            except IntegrityError:  # created by a concurrent request since the check
                raise _slug_taken(body.slug) from None
            for (path, (data, media_type)), digest in zip(files.items(), digests, strict=True):
                session.add(
                    AgentFile(
                        agent_id=agent.id,
                        path=path,
                        blob_sha256=digest,
                        size_bytes=len(data),
                        content_type=media_type,
                        updated_at=now,
                    )
                )
            refresh_workspace(session, self.blobs, agent)
            if not principal.scope_all:
                grant(session, principal.key_id, AGENT, agent.id)
            return _summary_of(session, agent)

        return await self.database.write(work)

    async def get(
        self,
        principal: Principal,
        ref: str,
        include: Sequence[Literal["files", "dataset"]] | None,
    ) -> models.GetAgentResponse:
        """The agent, with the optional sections asked for."""
        sections = set(include or ())

        def work(session: Session) -> models.GetAgentResponse:
            agent = find_agent(session, principal, ref)
            files: list[models.AgentFileEntry] | None = None
            if "files" in sections:
                rows = session.scalars(
                    select(AgentFile).where(AgentFile.agent_id == agent.id).order_by(AgentFile.path)
                ).all()
                files = [file_entry(row) for row in rows]
            dataset = _dataset(session, agent.id) if "dataset" in sections else None
            return models.GetAgentResponse(
                agent=_summary_of(session, agent), files=files, dataset=dataset
            )

        return await self.database.read(work)

    async def update(
        self, principal: Principal, ref: str, body: models.PatchAgentBody
    ) -> models.AgentSummary:
        """Change the given fields; a new config also rewrites ``agent.json``."""
        given = body.model_fields_set
        config: dict[str, Any] | None = None
        digest: str = ""
        manifest = b""
        if "config" in given and isinstance(body.config, models.AgentConfig):
            config = normalize_config(body.config)
            manifest = manifest_bytes(config)
            digest = await anyio.to_thread.run_sync(self.blobs.put, manifest)

        def work(session: Session) -> models.AgentSummary:
            agent = find_agent(session, principal, ref, lock=True)
            now = utc_now()
            if "name" in given and isinstance(body.name, str):
                agent.name = body.name
            if "description" in given:
                agent.description = body.description if isinstance(body.description, str) else None
            if config is not None:
                agent.config = config
                write_file_row(session, agent.id, MANIFEST_PATH, digest, len(manifest),
                               "application/json", now)  # fmt: skip
                refresh_workspace(session, self.blobs, agent)
            agent.updated_at = now
            session.flush()
            return _summary_of(session, agent)

        return await self.database.write(work)

    async def set_archived(
        self, principal: Principal, ref: str, archived: bool
    ) -> models.AgentSummary:
        """Archive (``archived``) or restore the agent; doing it twice changes nothing."""

        def work(session: Session) -> models.AgentSummary:
            agent = find_agent(session, principal, ref, lock=True)
            agent.set_archived(archived)
            session.flush()
            return _summary_of(session, agent)

        return await self.database.write(work)

    def _store_blobs(self, contents: Sequence[bytes]) -> list[str]:
        return [self.blobs.put(data) for data in contents]


def write_file_row(
    session: Session,
    agent_id: str,
    path: str,
    digest: str,
    size: int,
    content_type: str | None,
    now: datetime,
) -> None:
    """Create or replace the row of one workspace file."""
    row = session.get(AgentFile, (agent_id, path))
    if row is None:
        session.add(
            AgentFile(
                agent_id=agent_id,
                path=path,
                blob_sha256=digest,
                size_bytes=size,
                content_type=content_type,
                updated_at=now,
            )
        )
    else:
        row.blob_sha256, row.size_bytes = digest, size
        row.content_type, row.updated_at = content_type, now


def _slug_taken(slug: str) -> HttpError:
    return HttpError(409, f"An agent with slug '{slug}' already exists")
