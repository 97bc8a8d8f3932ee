"""Promotion of a reviewed execution to a dataset example, through the API.

``PUT /agents/executions/{id}/promotion`` and ``DELETE …/promotion`` are the API form of
``agents-admin promote`` and ``demote``: the same rules (:mod:`handlers.agents.domain.promotion`)
in one transaction, for an execution of an agent the key may see (404 otherwise, as for every
execution operation). A name that cannot name an example is a 400 on ``body.name``; every other
refusal (the execution has not ended, has no feedback, is another example already, or the name
is taken) is a 409.
"""

from __future__ import annotations

from sqlalchemy.orm import Session

from generated.agents import models
from handlers.agents.domain.feedback import find_execution
from handlers.agents.domain.keys import Principal
from handlers.agents.domain.promotion import (
    PromotionError,
    check_example_name,
    demote,
    promote,
)
from handlers.agents.storage.database import Database
from webrest import BadRequest, ErrorDetail, HttpError

__all__ = ["Promotions"]


class Promotions:
    """Promoting and demoting executions for a key."""

    def __init__(self, database: Database) -> None:
        self.database = database

    async def promote(
        self, principal: Principal, execution_id: str, name: str
    ) -> models.AgentExecutionPromotion:
        """Make the execution the example ``name`` of its agent (idempotent for one name)."""
        try:
            check_example_name(name)
        except PromotionError as error:
            message = str(error)
            detail = ErrorDetail(("body", "name"), message, "value_error")
            raise BadRequest(message, [detail]) from None

        def work(session: Session) -> models.AgentExecutionPromotion:
            execution = find_execution(session, principal, execution_id, lock=True)
            try:
                example = promote(session, execution.id, name)
            except PromotionError as error:
                raise HttpError(409, str(error)) from None
            return models.AgentExecutionPromotion(
                execution_id=example.execution_id,
                agent_id=example.agent_id,
                example_name=example.name,
                created_at=example.created_at,
            )

        return await self.database.write(work)

    async def demote(
        self, principal: Principal, execution_id: str
    ) -> models.AgentExecutionDemotion:
        """Withdraw the execution's promotion; the example names removed."""

        def work(session: Session) -> models.AgentExecutionDemotion:
            execution = find_execution(session, principal, execution_id, lock=True)
            names = demote(session, execution.id)
            return models.AgentExecutionDemotion(execution_id=execution.id, removed_examples=names)

        return await self.database.write(work)
