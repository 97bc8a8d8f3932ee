"""The execution list of an agent: every filter, sort and page in SQL.

Filters combine with AND; time bounds are inclusive. They fall in two groups:

* **indexed** (``executions`` indexes on ``(agent_id, …)``): ``status``, ``batchId``,
  ``exampleName``, ``createdAfter/Before``, ``completedAfter/Before`` and the
  ``sinceLastResolved`` bound (created strictly after the newest execution whose feedback is
  ``resolved``; ``noResolvedAnchor: true`` and no bound when there is none);
* **scanned** (feedback, expected and text filters): evaluated only over the ``scanLimit``
  newest executions that pass the indexed filters; ``scanLimited`` says that bound cut the
  scan, and ``total`` then counts the matches among the scanned executions. Feedback filters
  are ``EXISTS`` subqueries on ``execution_feedback`` (one row per execution).

Boolean filters act both ways: ``hasFeedback=false`` keeps executions without feedback (like
``noFeedback=true``), ``promotedToExample=false`` those not promoted, and so on;
``sinceLastResolved=false`` applies no bound. ``feedbackRating=none`` is feedback without a
rating. Sorting by ``status`` follows the lifecycle (created … finalizing, then completed,
failed, cancelled, rejected); ties (and absent values, always last) fall back to creation
time, then id, in the same direction.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from sqlalchemy import ColumnElement, and_, case, exists, func, not_, select
from sqlalchemy.orm import Session

from generated.agents import models
from handlers.agents.api.executions import Include, summaries
from handlers.agents.domain.agents import find_agent
from handlers.agents.domain.feedback import EXPECTED
from handlers.agents.domain.keys import Principal
from handlers.agents.storage.database import Database
from handlers.agents.storage.schema import Execution, ExecutionFeedback, ExecutionFile

__all__ = ["ExecutionListQuery", "list_executions"]

STATUS_ORDER = (
    "created", "pending", "running", "waiting", "finalizing",
    "completed", "failed", "cancelled", "rejected",
)  # fmt: skip


@dataclass(frozen=True)
class ExecutionListQuery:
    """The list operation's parameters (see the spec's ``list_agent_executions``)."""

    status: Sequence[str] | None = None
    batch_id: str | None = None
    example_name: str | None = None
    example_name_contains: str | None = None
    created_after: datetime | None = None
    created_before: datetime | None = None
    completed_after: datetime | None = None
    completed_before: datetime | None = None
    feedback_status: str | None = None
    feedback_rating: str | None = None
    has_feedback: bool | None = None
    no_feedback: bool | None = None
    has_expected: bool | None = None
    has_expected_json: bool | None = None
    has_expected_files: bool | None = None
    feedback_body_contains: str | None = None
    feedback_created_after: datetime | None = None
    feedback_created_before: datetime | None = None
    feedback_updated_after: datetime | None = None
    feedback_updated_before: datetime | None = None
    feedback_resolved_after: datetime | None = None
    feedback_resolved_before: datetime | None = None
    promoted_to_example: bool | None = None
    promoted_example_name: str | None = None
    since_last_resolved: bool | None = None
    include: Sequence[Include] | None = None
    sort: Literal["createdAt", "completedAt", "status", "exampleName"] = "createdAt"
    order: Literal["asc", "desc"] = "desc"
    scan_limit: int = 1000
    limit: int = 50
    offset: int = 0


def _bounds(column: Any, after: datetime | None, before: datetime | None) -> list[Any]:
    conditions = []
    if after is not None:
        conditions.append(column >= after)
    if before is not None:
        conditions.append(column <= before)
    return conditions


def _either(flag: bool, condition: ColumnElement[bool]) -> ColumnElement[bool]:
    return condition if flag else not_(condition)


def _indexed(query: ExecutionListQuery, agent_id: str) -> list[ColumnElement[bool]]:
    conditions: list[ColumnElement[bool]] = [Execution.agent_id == agent_id]
    if query.status:
        conditions.append(Execution.status.in_(list(query.status)))
    if query.batch_id is not None:
        conditions.append(Execution.batch_id == query.batch_id)
    if query.example_name is not None:
        conditions.append(Execution.example_name == query.example_name)
    conditions += _bounds(Execution.created_at, query.created_after, query.created_before)
    conditions += _bounds(Execution.completed_at, query.completed_after, query.completed_before)
    return conditions


def _feedback_row(query: ExecutionListQuery) -> list[Any]:
    row: list[Any] = []
    if query.feedback_status is not None:
        row.append(ExecutionFeedback.status == query.feedback_status)
    if query.feedback_rating == "none":
        row.append(ExecutionFeedback.rating.is_(None))
    elif query.feedback_rating is not None:
        row.append(ExecutionFeedback.rating == query.feedback_rating)
    if query.feedback_body_contains is not None:
        needle = query.feedback_body_contains.lower()
        row.append(func.lower(ExecutionFeedback.body).contains(needle, autoescape=True))
    row += _bounds(ExecutionFeedback.created_at, query.feedback_created_after,
                   query.feedback_created_before)  # fmt: skip
    row += _bounds(ExecutionFeedback.updated_at, query.feedback_updated_after,
                   query.feedback_updated_before)  # fmt: skip
    row += _bounds(ExecutionFeedback.resolved_at, query.feedback_resolved_after,
                   query.feedback_resolved_before)  # fmt: skip
    if query.promoted_example_name is not None:
        row.append(ExecutionFeedback.promoted_example_name == query.promoted_example_name)
    if query.promoted_to_example:
        row.append(ExecutionFeedback.promoted_example_name.is_not(None))
    return row


def _feedback_exists(*conditions: Any) -> ColumnElement[bool]:
    return exists().where(ExecutionFeedback.execution_id == Execution.id, *conditions)


def _scanned(query: ExecutionListQuery) -> list[ColumnElement[bool]]:
    conditions: list[ColumnElement[bool]] = []
    if query.example_name_contains is not None:
        needle = query.example_name_contains.lower()
        conditions.append(func.lower(Execution.example_name).contains(needle, autoescape=True))
    row = _feedback_row(query)
    if row:
        conditions.append(_feedback_exists(*row))
    if query.has_feedback is not None:
        conditions.append(_either(query.has_feedback, _feedback_exists()))
    if query.no_feedback is not None:
        conditions.append(_either(not query.no_feedback, _feedback_exists()))
    if query.promoted_to_example is False:
        promoted = ExecutionFeedback.promoted_example_name.is_not(None)
        conditions.append(not_(_feedback_exists(promoted)))
    expected_json = Execution.expected.is_not(None)
    expected_files = (
        exists()
        .where(ExecutionFile.execution_id == Execution.id, ExecutionFile.kind == EXPECTED)
        .correlate(Execution)
    )
    if query.has_expected_json is not None:
        conditions.append(_either(query.has_expected_json, expected_json))
    if query.has_expected_files is not None:
        conditions.append(_either(query.has_expected_files, expected_files))
    if query.has_expected is not None:
        conditions.append(_either(query.has_expected, expected_json | expected_files))
    return conditions


def _resolved_anchor(session: Session, agent_id: str) -> datetime | None:
    return session.scalar(
        select(func.max(Execution.created_at))
        .join(ExecutionFeedback, ExecutionFeedback.execution_id == Execution.id)
        .where(ExecutionFeedback.agent_id == agent_id, ExecutionFeedback.status == "resolved")
    )


def _ordering(query: ExecutionListQuery) -> list[Any]:
    status_rank = case(
        {status: rank for rank, status in enumerate(STATUS_ORDER)}, value=Execution.status
    )
    key: Any = {
        "createdAt": Execution.created_at,
        "completedAt": Execution.completed_at,
        "status": status_rank,
        "exampleName": Execution.example_name,
    }[query.sort]
    columns = [key] if query.sort == "createdAt" else [key, Execution.created_at]
    ordered = [c.asc() if query.order == "asc" else c.desc() for c in [*columns, Execution.id]]
    ordered[0] = ordered[0].nulls_last()
    return ordered


def _page(session: Session, principal: Principal, agent_ref: str,
          query: ExecutionListQuery) -> models.ListAgentExecutionsResponse:  # fmt: skip
    agent = find_agent(session, principal, agent_ref)
    conditions = _indexed(query, agent.id)
    no_anchor: bool | None = None
    if query.since_last_resolved:
        anchor = _resolved_anchor(session, agent.id)
        no_anchor = anchor is None
        if anchor is not None:
            conditions.append(Execution.created_at > anchor)
    scan_limited = False
    scanned = _scanned(query)
    if scanned:
        newest_first = (Execution.created_at.desc(), Execution.id.desc())
        newest = (
            select(Execution.id).where(*conditions).order_by(*newest_first).limit(query.scan_limit)
        )
        # ordered like the index, so the count stops after scan_limit + 1 rows instead of
        # scanning the table for matches
        more = (
            select(Execution.id)
            .where(*conditions)
            .order_by(*newest_first)
            .limit(query.scan_limit + 1)
            .subquery()
        )
        seen = session.scalar(select(func.count()).select_from(more)) or 0
        scan_limited = seen > query.scan_limit
        conditions = [Execution.id.in_(newest), *scanned]
    where = and_(*conditions)
    total = session.scalar(select(func.count()).select_from(Execution).where(where)) or 0
    rows = session.scalars(
        select(Execution)
        .where(where)
        .order_by(*_ordering(query))
        .limit(query.limit)
        .offset(query.offset)
    ).all()
    return models.ListAgentExecutionsResponse(
        executions=summaries(session, rows, query.include),
        total=total,
        limit=query.limit,
        offset=query.offset,
        scan_limited=scan_limited,
        no_resolved_anchor=no_anchor,
    )


async def list_executions(
    database: Database, principal: Principal, agent_ref: str, query: ExecutionListQuery
) -> models.ListAgentExecutionsResponse:
    """One page of the agent's executions (404 when the key does not see the agent)."""

    def work(session: Session) -> models.ListAgentExecutionsResponse:
        return _page(session, principal, agent_ref, query)

    return await database.read(work)
