"""Feedback on agent executions: reading, creating or changing, and clearing it.

Feedback is one row per execution (``execution_feedback``): a body, a rating (``pass``,
``fail``, ``partial`` or none), a triage status (``open``, ``resolved``, ``ignored`` or none)
and who/when. The expected JSON lives on the execution and the expected files are its
``execution_files`` of kind ``expected`` (see :mod:`handlers.agents.domain.expected`); the feedback
endpoints show all three together.

* ``PATCH`` creates the feedback when absent (a new one starts ``open`` unless a status is
  given); omitted fields are kept; ``rating: null`` / ``status: null`` clear them;
  ``body: null`` empties the body; ``expected: null`` clears the expected JSON (expected files
  are kept). Every ``PATCH`` stamps ``updatedAt``.
* ``resolvedAt`` / ``resolvedBy`` are stamped when the status becomes ``resolved`` (kept while it
  stays resolved) and cleared when it changes to anything else: they describe the current
  resolution, so the list filters on resolution times never match reopened feedback.
* ``DELETE`` removes the feedback, the expected JSON and every expected file, and withdraws the
  execution's promotion to a dataset example (:mod:`handlers.agents.domain.promotion`), in one
  transaction. Idempotent.

Attribution (``createdBy``, ``resolvedBy``) is the API key's id; keys carry no e-mail address
or session, so those fields are ``null``. An execution of an agent outside the key's scope
answers 404 exactly like an unknown one.
"""

from __future__ import annotations

from datetime import datetime
from enum import Enum
from functools import partial
from typing import Any

from pydantic import RootModel
from sqlalchemy import delete, select
from sqlalchemy.orm import Session

from generated.agents import models
from handlers.agents.domain.agents import visible
from handlers.agents.domain.keys import Principal
from handlers.agents.domain.promotion import withdraw_promotion
from handlers.agents.storage.database import Database
from handlers.agents.storage.schema import (
    Agent,
    Execution,
    ExecutionFeedback,
    ExecutionFile,
    utc_now,
)
from webrest import BadRequest, ErrorDetail, HttpError

__all__ = [
    "EXPECTED",
    "FeedbackStore",
    "execution_not_found",
    "expected_file_entries",
    "feedback_entry",
    "find_execution",
]

EXPECTED = "expected"
"""The ``execution_files.kind`` of expected files."""


def execution_not_found(execution_id: str) -> HttpError:
    """The 404 of an execution that does not exist or whose agent the key may not see."""
    return HttpError(404, f"Execution '{execution_id}' not found")


def find_execution(
    session: Session, principal: Principal, execution_id: str, *, lock: bool = False
) -> Execution:
    """The execution ``execution_id`` of an agent the key may see; 404 otherwise.

    ``lock`` takes the row's write lock (PostgreSQL; SQLite write transactions are exclusive
    already), serializing the changes to one execution's feedback and expected results.
    """
    query = (
        select(Execution)
        .join(Agent, Agent.id == Execution.agent_id)
        .where(Execution.id == execution_id, visible(principal))
    )
    if lock:
        query = query.with_for_update(of=Execution)
    execution = session.scalars(query).first()
    if execution is None:
        raise execution_not_found(execution_id)
    return execution


def _rating(value: str | None) -> models.FeedbackRating | None:
    return None if value is None else models.FeedbackRating(models.FeedbackRatingEnum(value))


def _status(value: str | None) -> models.FeedbackStatus | None:
    return None if value is None else models.FeedbackStatus(models.FeedbackStatusEnum(value))


def feedback_entry(row: ExecutionFeedback) -> models.AgentExecutionFeedback:
    """A feedback row as the API shows it."""
    return models.AgentExecutionFeedback(
        body=row.body,
        rating=_rating(row.rating),
        status=_status(row.status),
        created_at=row.created_at,
        created_by=row.created_by,
        created_by_email=None,
        updated_at=row.updated_at,
        resolved_at=row.resolved_at,
        resolved_by=row.resolved_by,
        resolved_by_email=None,
        resolved_by_session_id=None,
        promoted_example_name=row.promoted_example_name,
    )


def expected_file_entries(session: Session, execution_id: str) -> list[models.ExpectedFile]:
    """The execution's expected files, by name."""
    rows = session.scalars(
        select(ExecutionFile)
        .where(ExecutionFile.execution_id == execution_id, ExecutionFile.kind == EXPECTED)
        .order_by(ExecutionFile.name)
    ).all()
    return [
        models.ExpectedFile(name=row.name, size_bytes=row.size_bytes, content_type=row.content_type)
        for row in rows
    ]


def _detail(
    session: Session, execution: Execution, row: ExecutionFeedback | None
) -> models.AgentExecutionFeedbackDetail:
    return models.AgentExecutionFeedbackDetail(
        feedback=None if row is None else feedback_entry(row),
        expected=execution.expected,
        expected_files=expected_file_entries(session, execution.id),
    )


def _choice(value: object) -> str | None:
    """The string of a rating or status given in a body (a root model, an enum or ``None``)."""
    if isinstance(value, RootModel):
        value = value.root
    if value is None:
        return None
    return str(value.value) if isinstance(value, Enum) else str(value)


def _set_status(
    row: ExecutionFeedback, status: str | None, principal: Principal, now: datetime
) -> None:
    if status == "resolved":
        if row.status != "resolved" or row.resolved_at is None:
            row.resolved_at, row.resolved_by = now, principal.key_id
    else:
        row.resolved_at, row.resolved_by = None, None
    row.status = status


def _update(
    session: Session,
    principal: Principal,
    execution_id: str,
    given: set[str],
    values: dict[str, Any],
) -> models.AgentExecutionFeedbackDetail:
    execution = find_execution(session, principal, execution_id, lock=True)
    now = utc_now()
    row = session.get(ExecutionFeedback, execution.id)
    if row is None:
        row = ExecutionFeedback(
            execution_id=execution.id,
            agent_id=execution.agent_id,
            body="",
            rating=None,
            status="open",
            created_at=now,
            created_by=principal.key_id,
            updated_at=now,
            resolved_at=None,
            resolved_by=None,
            promoted_example_name=None,
        )
        session.add(row)
    if "body" in given:
        row.body = values["body"] or ""
    if "rating" in given:
        row.rating = _choice(values["rating"])
    if "status" in given:
        _set_status(row, _choice(values["status"]), principal, now)
    if "expected" in given:
        execution.expected = values["expected"]
    row.updated_at = now
    session.flush()
    return _detail(session, execution, row)


def _clear(
    session: Session, principal: Principal, execution_id: str
) -> models.AgentExecutionFeedbackDetail:
    execution = find_execution(session, principal, execution_id, lock=True)
    withdraw_promotion(session, execution.id)
    session.execute(delete(ExecutionFeedback).where(ExecutionFeedback.execution_id == execution.id))
    session.execute(
        delete(ExecutionFile).where(
            ExecutionFile.execution_id == execution.id, ExecutionFile.kind == EXPECTED
        )
    )
    execution.expected = None
    return models.AgentExecutionFeedbackDetail(feedback=None, expected=None, expected_files=[])


ALIASES = {"feedback": "body", "feedback_rating": "rating", "feedback_status": "status"}
"""The ``eigenpal`` SDK's spellings of the feedback fields: alias -> field."""


def _with_aliases_resolved(
    body: models.UpdateAgentExecutionFeedbackBody,
) -> tuple[set[str], dict[str, Any]]:
    """The fields ``body`` gives and their values, each alias folded into its field; a field
    and its alias together is a 400 naming the alias (the spec's ``FeedbackFieldAndAlias``)."""
    given = set(body.model_fields_set)
    values = {name: getattr(body, name) for name in given}
    for alias, name in ALIASES.items():
        if alias not in given:
            continue
        value = values.pop(alias)
        given.discard(alias)
        if name in given:
            wire = models.UpdateAgentExecutionFeedbackBody.model_fields[alias].alias or alias
            message = f"{wire} is an alias of {name}: give one of them"
            raise BadRequest(message, [ErrorDetail(("body", wire), message, "value_error")])
        given.add(name)
        values[name] = value
    return given, values


class FeedbackStore:
    """The feedback operations of one database; each is one transaction."""

    def __init__(self, database: Database) -> None:
        self.database = database

    async def get(
        self, principal: Principal, execution_id: str
    ) -> models.AgentExecutionFeedbackDetail:
        """The feedback (``None`` when there is none), expected JSON and expected files."""

        def work(session: Session) -> models.AgentExecutionFeedbackDetail:
            execution = find_execution(session, principal, execution_id)
            return _detail(session, execution, session.get(ExecutionFeedback, execution.id))

        return await self.database.read(work)

    async def update(
        self,
        principal: Principal,
        execution_id: str,
        body: models.UpdateAgentExecutionFeedbackBody,
    ) -> models.AgentExecutionFeedbackDetail:
        """Create the feedback or change the fields ``body`` gives."""
        given, values = _with_aliases_resolved(body)
        work = partial(
            _update, principal=principal, execution_id=execution_id, given=given, values=values
        )
        return await self.database.write(work)

    async def clear(
        self, principal: Principal, execution_id: str
    ) -> models.AgentExecutionFeedbackDetail:
        """Remove the feedback, the expected JSON and the expected files (idempotent)."""
        return await self.database.write(
            partial(_clear, principal=principal, execution_id=execution_id)
        )
