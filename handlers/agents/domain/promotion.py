"""Promotion of a reviewed agent execution to a dataset example of its agent.

``PUT /agents/executions/{id}/promotion`` (:mod:`handlers.agents.api.promotions`) and
``agents-admin promote EXECUTION_ID --name NAME`` promote; ``DELETE …/promotion`` and
``agents-admin demote EXECUTION_ID`` withdraw it. What the API shows of it:

* the feedback's ``promotedExampleName``, which the execution list filters
  ``promotedToExample`` / ``promotedExampleName`` read (``execution_feedback
  .promoted_example_name``, indexed per agent);
* the agent's dataset (``GET /agents/{id}?include=dataset``: ``dataset_examples`` rows) and its
  ``stats.exampleCount``.

Rules: the execution must have ended (``completed``, ``failed``, ``cancelled`` or ``rejected``)
and have feedback (its review: the example's expected results are the execution's expected
JSON and files). An execution is promoted to at most one example; promoting it again under the
same name changes nothing, under another name is refused (demote it first). Example names are
unique per agent: 1 to 200 characters, no control, zero-width or bidirectional formatting
character, no leading or trailing space (:data:`EXAMPLE_NAME`).
Clearing the feedback (``DELETE …/feedback``) removes the expected results the example is made
of, so it withdraws the promotion too (:func:`withdraw_promotion`).
"""

from __future__ import annotations

import argparse
import re
import sys
from dataclasses import dataclass
from datetime import datetime
from functools import partial

from sqlalchemy import delete, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from handlers.agents.storage.database import Database
from handlers.agents.storage.schema import (
    Agent,
    DatasetExample,
    Execution,
    ExecutionFeedback,
    utc_now,
)

__all__ = [
    "PROMOTION_COMMANDS",
    "PromotedExample",
    "PromotionError",
    "add_promotion_commands",
    "EXAMPLE_NAME",
    "check_example_name",
    "demote",
    "promote",
    "run_promotion_command",
    "withdraw_promotion",
]

MAX_EXAMPLE_NAME = 200
_INVISIBLE_CHARS = r"\x00-\x1f\x7f-\x9f\u200b-\u200f\u2028-\u202e\u2060-\u206f\ufeff"
"""C0 and C1 controls, zero-width and bidirectional formatting characters, line and paragraph
separators and the byte order mark: characters that hide or rearrange what a name shows."""
_INVISIBLE = re.compile(f"[{_INVISIBLE_CHARS}]")
EXAMPLE_NAME = re.compile(
    f"^[^\\s{_INVISIBLE_CHARS}](?:[^{_INVISIBLE_CHARS}]{{0,{MAX_EXAMPLE_NAME - 2}}}"
    f"[^\\s{_INVISIBLE_CHARS}])?$"
)
"""A dataset example's name: 1 to 200 characters, none of the invisible ones, no space at
either end. The spec's ``PromoteAgentExecutionBody.name`` pattern is this one (a test checks)."""
TERMINAL = frozenset({"completed", "failed", "cancelled", "rejected"})
PROMOTION_COMMANDS = frozenset({"promote", "demote"})


class PromotionError(ValueError):
    """A promotion or demotion that cannot be done, and why."""


@dataclass(frozen=True)
class PromotedExample:
    """A dataset example made from an execution."""

    agent_id: str
    agent_slug: str
    name: str
    execution_id: str
    created_at: datetime


def check_example_name(name: str) -> str:
    """``name`` when it can name a dataset example (:data:`EXAMPLE_NAME`); otherwise
    :class:`PromotionError` saying why."""
    if not name or len(name) > MAX_EXAMPLE_NAME:
        raise PromotionError(f"An example name has 1 to {MAX_EXAMPLE_NAME} characters")
    if _INVISIBLE.search(name):
        raise PromotionError(
            f"The example name {name!r} contains a control or invisible formatting character"
        )
    if name != name.strip():
        raise PromotionError(f"The example name {name!r} has leading or trailing space")
    assert EXAMPLE_NAME.fullmatch(name)  # the same rule, as the spec's pattern states it
    return name


def _reviewed_execution(session: Session, execution_id: str) -> tuple[Execution, ExecutionFeedback]:
    execution = session.get(Execution, execution_id, with_for_update=True)
    if execution is None:
        raise PromotionError(f"No execution {execution_id!r}")
    feedback = session.get(ExecutionFeedback, execution_id)
    if feedback is None:
        raise PromotionError(
            f"Execution {execution_id!r} has no feedback: review it (feedback and expected "
            "results) before promoting it"
        )
    return execution, feedback


def promote(session: Session, execution_id: str, name: str) -> PromotedExample:
    """Make execution ``execution_id`` the dataset example ``name`` of its agent."""
    check_example_name(name)
    execution, feedback = _reviewed_execution(session, execution_id)
    if execution.status not in TERMINAL:
        raise PromotionError(
            f"Execution {execution_id!r} is {execution.status}: only an execution that has "
            "ended can be promoted"
        )
    slug = session.scalars(select(Agent.slug).where(Agent.id == execution.agent_id)).one()
    existing = session.get(DatasetExample, (execution.agent_id, name))
    if feedback.promoted_example_name is not None:
        if feedback.promoted_example_name == name and existing is not None:
            return PromotedExample(
                execution.agent_id, slug, name, execution.id, existing.created_at
            )
        raise PromotionError(
            f"Execution {execution_id!r} is already the example "
            f"{feedback.promoted_example_name!r}: demote it first"
        )
    if existing is not None:
        raise PromotionError(f"Agent {slug!r} already has an example named {name!r}")
    now = utc_now()
    session.add(
        DatasetExample(
            agent_id=execution.agent_id, name=name, source_execution_id=execution.id, created_at=now
        )
    )
    feedback.promoted_example_name = name
    feedback.updated_at = now
    try:
        session.flush()
    except IntegrityError:  # the same name promoted concurrently
        raise PromotionError(f"Agent {slug!r} already has an example named {name!r}") from None
    return PromotedExample(execution.agent_id, slug, name, execution.id, now)


def withdraw_promotion(session: Session, execution_id: str) -> list[str]:
    """Delete the examples made from ``execution_id`` and unmark its feedback; their names."""
    names = list(
        session.scalars(
            delete(DatasetExample)
            .where(DatasetExample.source_execution_id == execution_id)
            .returning(DatasetExample.name)
        )
    )
    session.execute(
        update(ExecutionFeedback)
        .where(
            ExecutionFeedback.execution_id == execution_id,
            ExecutionFeedback.promoted_example_name.is_not(None),
        )
        .values(promoted_example_name=None, updated_at=utc_now())
    )
    return sorted(names)


def demote(session: Session, execution_id: str) -> list[str]:
    """Withdraw the promotion of ``execution_id``; the example names removed (none: a no-op)."""
    if session.get(Execution, execution_id, with_for_update=True) is None:
        raise PromotionError(f"No execution {execution_id!r}")
    return withdraw_promotion(session, execution_id)


# -- agents-admin commands -----------------------------------------------------------------------


def add_promotion_commands(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """``promote`` and ``demote`` as ``agents-admin`` sub-commands."""
    promote_command = commands.add_parser(
        "promote", help="make a reviewed execution a dataset example of its agent"
    )
    promote_command.add_argument("execution_id", metavar="EXECUTION_ID")
    promote_command.add_argument("--name", required=True, help="the example's name (unique)")
    demote_command = commands.add_parser(
        "demote", help="withdraw an execution's promotion (deletes its example)"
    )
    demote_command.add_argument("execution_id", metavar="EXECUTION_ID")


def run_promotion_command(database: Database, args: argparse.Namespace) -> int:
    """Run ``promote`` or ``demote``: 0 done, 1 refused (the reason on stderr)."""
    try:
        if args.command == "promote":
            example = database.write_sync(
                partial(promote, execution_id=args.execution_id, name=args.name)
            )
            print(
                f"promoted {example.execution_id} to example {example.name!r} of agent "
                f"{example.agent_slug} ({example.created_at.isoformat()})"
            )
            return 0
        names = database.write_sync(partial(demote, execution_id=args.execution_id))
        if names:
            print(f"demoted {args.execution_id}: removed example {', '.join(map(repr, names))}")
        else:
            print(f"{args.execution_id} was not promoted: nothing changed")
        return 0
    except PromotionError as error:
        print(f"agents-admin: {error}", file=sys.stderr)
        return 1
