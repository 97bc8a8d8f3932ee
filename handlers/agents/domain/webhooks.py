"""Webhook subscriptions and the events recorded for them (the outbox).

* **Subscriptions** belong to the API key that created them; a key sees (gets, lists,
  deletes, reads the delivery log of) its own, a key with scope ``*`` every one, and anything
  else answers 404 like the rest of the API. The signing secret is returned by
  :meth:`WebhookStore.create` only. A key has at most :data:`MAX_SUBSCRIPTIONS_PER_KEY`.
* **Events** (:func:`record_events`) are recorded in the transaction that makes an execution
  terminal: one ``pending`` delivery per subscription that wants the event type, whose filters
  keep the agent (workflow), and whose owner key, not revoked, may see it at that moment. The
  body is serialized once and stored, so that every attempt sends (and signs) the same bytes.
  After the commit, the listeners of this process (:func:`add_recorded_listener`: the delivery
  loop) are told that deliveries are due.
* **The receiver's URL** passes the egress guard when the subscription is created (an address,
  or a name resolving to addresses, that it refuses is a 400; a name that does not resolve now
  is accepted) and again at every delivery.
"""

from __future__ import annotations

import asyncio
import json
import logging
import secrets
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import httpx
from sqlalchemy import delete, event, func, select, true
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from generated.agents import models
from handlers.agents.domain.agents import find_agent
from handlers.agents.domain.keys import AGENT, WORKFLOW, Principal
from handlers.agents.domain.webhook_signing import new_secret
from handlers.agents.domain.workflow_store import find_workflow
from handlers.agents.egress import EgressPolicy, EgressRefused, EgressUnresolved
from handlers.agents.storage.database import Database
from handlers.agents.storage.schema import (
    Agent,
    ApiKey,
    ApiKeyGrant,
    Execution,
    WebhookDelivery,
    WebhookSubscription,
    Workflow,
    WorkflowExecution,
    utc_now,
)
from webrest import BadRequest, ErrorDetail, HttpError

__all__ = [
    "EVENT_TYPES",
    "MAX_INLINE_OUTPUT_BYTES",
    "MAX_SUBSCRIPTIONS_PER_KEY",
    "WebhookStore",
    "add_recorded_listener",
    "event_type",
    "record_events",
    "timestamp_text",
]

log = logging.getLogger("agents.webhooks")

AGENT_EXECUTION = "agent_execution"
WORKFLOW_EXECUTION = "workflow_execution"
TERMINAL_STATUSES = ("completed", "failed", "cancelled", "rejected")
EVENT_TYPES = tuple(
    f"{kind}.{status}"
    for kind in (AGENT_EXECUTION, WORKFLOW_EXECUTION)
    for status in TERMINAL_STATUSES
)
MAX_INLINE_OUTPUT_BYTES = 256 * 1024
"""An output (result) whose JSON is longer is left out of the event, flagged as truncated."""
MAX_SUBSCRIPTIONS_PER_KEY = 100
URL_CHECK_SECONDS = 3.0
"""How long creating a subscription waits for the URL's host name to resolve (after that the
name is accepted; every delivery checks it again)."""
_WORKFLOW_PREFIX = "wfx_"


def timestamp_text(moment: datetime) -> str:
    """ISO 8601 in UTC with a ``Z``."""
    return moment.isoformat().replace("+00:00", "Z")


def event_type(execution_id: str, status: str) -> str | None:
    """``agent_execution.<status>`` or ``workflow_execution.<status>``; None when the status
    is not terminal."""
    if status not in TERMINAL_STATUSES:
        return None
    kind = WORKFLOW_EXECUTION if execution_id.startswith(_WORKFLOW_PREFIX) else AGENT_EXECUTION
    return f"{kind}.{status}"


# -- the outbox ----------------------------------------------------------------------------------

_listeners: list[Callable[[], None]] = []
_listeners_lock = threading.Lock()
_WAKE_REGISTERED = "agents_webhooks_wake"


def add_recorded_listener(listener: Callable[[], None]) -> Callable[[], None]:
    """Call ``listener`` (from any thread) after a transaction of this process that recorded
    deliveries commits; returns the function that removes it."""
    with _listeners_lock:
        _listeners.append(listener)

    def remove() -> None:
        with _listeners_lock:
            if listener in _listeners:
                _listeners.remove(listener)

    return remove


def _recorded(_session: Session) -> None:
    with _listeners_lock:
        listeners = list(_listeners)
    for listener in listeners:
        try:
            listener()
        except Exception:  # a stopped loop must not fail the committed transaction's caller
            log.debug("webhook listener failed", exc_info=True)


def _wake_after_commit(session: Session) -> None:
    if not session.info.get(_WAKE_REGISTERED):
        session.info[_WAKE_REGISTERED] = True
        event.listen(session, "after_commit", _recorded, once=True)


@dataclass(frozen=True)
class _Event:
    kind: str  # AGENT or WORKFLOW (the grant kind)
    type: str
    target_id: str
    target_slug: str
    data: dict[str, Any]


def _bounded(data: dict[str, Any], name: str, value: Any) -> None:
    """``data[name] = value`` unless its JSON is over MAX_INLINE_OUTPUT_BYTES; the flag
    ``<name>Truncated`` says which."""
    if len(json.dumps(value, separators=(",", ":"))) > MAX_INLINE_OUTPUT_BYTES:
        data[f"{name}Truncated"] = True
    else:
        data[name] = value
        data[f"{name}Truncated"] = False


def _common(row: Any) -> dict[str, Any]:
    return {
        "id": row.id,
        "status": row.status,
        "error": row.error,
        "createdAt": timestamp_text(row.created_at),
        "completedAt": None if row.completed_at is None else timestamp_text(row.completed_at),
        "durationMs": row.duration_ms,
    }


def _load_event(session: Session, execution_id: str) -> _Event | None:
    """The event of the execution as it is now (fresh from the database), or None when it is
    not terminal (or does not exist)."""
    if execution_id.startswith(_WORKFLOW_PREFIX):
        workflow_row = session.execute(
            select(
                WorkflowExecution.id,
                WorkflowExecution.status,
                WorkflowExecution.error,
                WorkflowExecution.created_at,
                WorkflowExecution.completed_at,
                WorkflowExecution.duration_ms,
                WorkflowExecution.result,
                Workflow.id.label("target_id"),
                Workflow.slug.label("target_slug"),
            )
            .join(Workflow, Workflow.id == WorkflowExecution.workflow_id)
            .where(WorkflowExecution.id == execution_id)
        ).first()
        if workflow_row is None:
            return None
        kind, row = WORKFLOW, workflow_row
        data = {"id": row.id, "workflowId": row.target_id, "workflowSlug": row.target_slug}
        data |= _common(row)
        _bounded(data, "result", row.result)
    else:
        agent_row = session.execute(
            select(
                Execution.id,
                Execution.status,
                Execution.error,
                Execution.created_at,
                Execution.completed_at,
                Execution.duration_ms,
                Execution.output,
                Agent.id.label("target_id"),
                Agent.slug.label("target_slug"),
            )
            .join(Agent, Agent.id == Execution.agent_id)
            .where(Execution.id == execution_id)
        ).first()
        if agent_row is None:
            return None
        kind, row = AGENT, agent_row
        data = {"id": row.id, "agentId": row.target_id, "agentSlug": row.target_slug}
        data |= _common(row)
        _bounded(data, "output", row.output)
    type_ = event_type(execution_id, row.status)
    if type_ is None:
        return None
    return _Event(kind, type_, row.target_id, row.target_slug, data)


_LIVE_SUBSCRIPTIONS = (
    select(
        WebhookSubscription.id,
        WebhookSubscription.key_id,
        WebhookSubscription.events,
        WebhookSubscription.agent_ids,
        WebhookSubscription.workflow_ids,
        ApiKey.scope_all,
    )
    .join(ApiKey, ApiKey.id == WebhookSubscription.key_id)
    .where(ApiKey.revoked_at.is_(None))
)
"""Built once: it runs in the ending transaction of every execution."""


def record_events(session: Session, execution_id: str) -> int:
    """Record the deliveries of the terminal execution ``execution_id`` in the caller's
    transaction; returns how many. Cheap when nothing subscribes (one query)."""
    subscriptions = session.execute(_LIVE_SUBSCRIPTIONS).all()
    if not subscriptions:
        return 0
    event = _load_event(session, execution_id)
    if event is None:
        return 0
    wanted = [
        row
        for row in subscriptions
        if event.type in row.events
        and _kept(row.agent_ids if event.kind == AGENT else row.workflow_ids, event.target_id)
    ]
    scoped = sorted({row.key_id for row in wanted if not row.scope_all})
    granted = set()
    if scoped:
        granted = set(
            session.scalars(
                select(ApiKeyGrant.key_id).where(
                    ApiKeyGrant.key_id.in_(scoped),
                    ApiKeyGrant.resource_kind == event.kind,
                    ApiKeyGrant.ref.in_([event.target_id, event.target_slug]),
                )
            )
        )
    chosen = [row for row in wanted if row.scope_all or row.key_id in granted]
    if not chosen:
        return 0
    now = utc_now()
    # ASCII JSON: any string the output holds (lone surrogates included) is sent as is
    body = json.dumps(
        {"type": event.type, "timestamp": timestamp_text(now), "data": event.data},
        separators=(",", ":"),
    )
    rows = [
        {
            "id": new_delivery_id(),
            "webhook_id": row.id,
            "event_type": event.type,
            "execution_id": execution_id,
            "body": body,
            "status": "pending",
            "attempts": 0,
            "next_attempt_at": now,
            "created_at": now,
        }
        for row in chosen
    ]
    recorded = _insert(session, rows)
    if recorded:
        _wake_after_commit(session)
    return recorded


def _insert(session: Session, rows: Sequence[dict[str, Any]]) -> int:
    """Insert the deliveries, in a savepoint so that none can fail the transaction ending the
    execution: one already recorded (the end announced twice) or whose subscription a
    concurrent transaction deleted is skipped."""
    try:
        with session.begin_nested():
            session.add_all(WebhookDelivery(**row) for row in rows)
        return len(rows)
    except IntegrityError:
        pass
    recorded = 0
    for row in rows:
        try:
            with session.begin_nested():
                session.add(WebhookDelivery(**row))
            recorded += 1
        except IntegrityError:
            continue
    return recorded


def _kept(filter_ids: Sequence[str] | None, target_id: str) -> bool:
    return not filter_ids or target_id in filter_ids


def new_webhook_id() -> str:
    """A fresh subscription id (``wh_`` and 24 hex digits)."""
    return "wh_" + secrets.token_hex(12)


def new_delivery_id() -> str:
    """A fresh delivery id (``msg_`` and 24 hex digits): the ``webhook-id`` header."""
    return "msg_" + secrets.token_hex(12)


# -- subscriptions -------------------------------------------------------------------------------


def webhook_not_found(webhook_id: str) -> HttpError:
    """The 404 of a subscription that does not exist or that the key may not see."""
    return HttpError(404, f"Webhook '{webhook_id}' not found")


def _visible(principal: Principal) -> Any:
    return true() if principal.scope_all else WebhookSubscription.key_id == principal.key_id


def _find(session: Session, principal: Principal, webhook_id: str) -> WebhookSubscription:
    row = session.scalars(
        select(WebhookSubscription).where(WebhookSubscription.id == webhook_id, _visible(principal))
    ).first()
    if row is None:
        raise webhook_not_found(webhook_id)
    return row


def _entry(row: WebhookSubscription) -> dict[str, Any]:
    return {
        "id": row.id,
        "keyId": row.key_id,
        "url": row.url,
        "events": list(row.events),
        "description": row.description,
        "agentIds": list(row.agent_ids),
        "workflowIds": list(row.workflow_ids),
        "createdAt": row.created_at,
    }


def _delivery_entry(row: WebhookDelivery) -> models.WebhookDelivery:
    return models.WebhookDelivery.model_validate(
        {
            "id": row.id,
            "webhookId": row.webhook_id,
            "eventType": row.event_type,
            "executionId": row.execution_id,
            "status": row.status,
            "attempts": row.attempts,
            "nextAttemptAt": row.next_attempt_at if row.status == "pending" else None,
            "lastAttemptAt": row.last_attempt_at,
            "lastStatusCode": row.last_status_code,
            "lastError": row.last_error,
            "createdAt": row.created_at,
            "deliveredAt": row.delivered_at,
        }
    )


MAX_QUOTED_CHARS = 200
"""Of a URL or host quoted in an error message."""


def _quoted(text: object) -> str:
    shown = str(text)
    return shown if len(shown) <= MAX_QUOTED_CHARS else shown[: MAX_QUOTED_CHARS - 1] + "…"


def _url_refusal(message: str) -> BadRequest:
    return BadRequest(message, [ErrorDetail(("body", "url"), message, "value_error")])


async def check_url(url: str, egress: EgressPolicy) -> str:
    """``url`` when it may receive deliveries: http(s) with a host, not refused by the egress
    guard as far as can be told now; a 400 (``body.url``) otherwise."""
    try:
        parsed = httpx.URL(url)
        host = parsed.host
    except (httpx.InvalidURL, UnicodeError, ValueError):
        raise _url_refusal(f"'{_quoted(url)}' is not a valid URL") from None
    if parsed.scheme not in ("http", "https") or not host:
        raise _url_refusal(f"'{_quoted(url)}' is not an http:// or https:// URL with a host")
    port = parsed.port or (443 if parsed.scheme == "https" else 80)
    try:
        await asyncio.wait_for(egress.resolve(host, port), URL_CHECK_SECONDS)
    except (EgressUnresolved, TimeoutError):
        pass  # perhaps later: every delivery checks again
    except EgressRefused as refused:
        raise _url_refusal(
            f"url '{_quoted(url)}' refused: {_quoted(refused)} (AGENTS_EGRESS_ALLOW opens "
            "such destinations)"
        ) from None
    return url


class WebhookStore:
    """The subscription operations of the API, each one transaction."""

    def __init__(self, database: Database, egress: EgressPolicy) -> None:
        self.database = database
        self.egress = egress

    async def create(
        self, principal: Principal, body: models.CreateWebhookBody
    ) -> models.CreatedWebhook:
        """A new subscription of the key, with its secret (shown only now)."""
        url = await check_url(body.url, self.egress)
        events = list(dict.fromkeys(event.value for event in body.events))
        agent_refs = [ref.root for ref in _given(body.agent_ids)]
        workflow_refs = [ref.root for ref in _given(body.workflow_ids)]
        description = body.description if isinstance(body.description, str) else None

        def work(session: Session) -> models.CreatedWebhook:
            count = session.scalar(
                select(func.count())
                .select_from(WebhookSubscription)
                .where(WebhookSubscription.key_id == principal.key_id)
            )
            if int(count or 0) >= MAX_SUBSCRIPTIONS_PER_KEY:
                limit = MAX_SUBSCRIPTIONS_PER_KEY
                raise HttpError(409, f"This API key has {limit} webhooks already: delete one first")
            agent_ids = _resolve(session, principal, agent_refs, AGENT)
            workflow_ids = _resolve(session, principal, workflow_refs, WORKFLOW)
            secret = new_secret()
            row = WebhookSubscription(
                id=new_webhook_id(),
                key_id=principal.key_id,
                url=url,
                description=description,
                events=events,
                agent_ids=agent_ids,
                workflow_ids=workflow_ids,
                secret=secret,
                created_at=utc_now(),
            )
            session.add(row)
            session.flush()
            return models.CreatedWebhook.model_validate({**_entry(row), "secret": secret})

        created = await self.database.write(work)
        log.info("webhook %s created by key %s for %s", created.id, principal.key_id,
                 ", ".join(events))  # fmt: skip
        return created

    async def list(
        self, principal: Principal, limit: int, offset: int
    ) -> models.ListWebhooksResponse:
        """One page of the subscriptions the key may see, newest first."""

        def work(session: Session) -> models.ListWebhooksResponse:
            condition = _visible(principal)
            total = session.scalar(
                select(func.count()).select_from(WebhookSubscription).where(condition)
            )
            rows = session.scalars(
                select(WebhookSubscription)
                .where(condition)
                .order_by(WebhookSubscription.created_at.desc(), WebhookSubscription.id.desc())
                .limit(limit)
                .offset(offset)
            ).all()
            return models.ListWebhooksResponse.model_validate(
                {
                    "data": [_entry(row) for row in rows],
                    "total": int(total or 0),
                    "limit": limit,
                    "offset": offset,
                }
            )

        return await self.database.read(work)

    async def get(self, principal: Principal, webhook_id: str) -> models.Webhook:
        """The subscription, without its secret."""

        def work(session: Session) -> models.Webhook:
            return models.Webhook.model_validate(_entry(_find(session, principal, webhook_id)))

        return await self.database.read(work)

    async def delete(self, principal: Principal, webhook_id: str) -> None:
        """End the subscription and drop its deliveries, pending ones included."""

        def work(session: Session) -> None:
            row = _find(session, principal, webhook_id)
            session.execute(delete(WebhookDelivery).where(WebhookDelivery.webhook_id == row.id))
            session.delete(row)

        await self.database.write(work)
        log.info("webhook %s deleted by key %s", webhook_id, principal.key_id)

    async def deliveries(
        self,
        principal: Principal,
        webhook_id: str,
        status: str | None,
        limit: int,
        offset: int,
    ) -> models.ListWebhookDeliveriesResponse:
        """One page of the subscription's delivery log, newest first."""

        def work(session: Session) -> models.ListWebhookDeliveriesResponse:
            row = _find(session, principal, webhook_id)
            conditions = [WebhookDelivery.webhook_id == row.id]
            if status is not None:
                conditions.append(WebhookDelivery.status == status)
            total = session.scalar(
                select(func.count()).select_from(WebhookDelivery).where(*conditions)
            )
            rows = session.scalars(
                select(WebhookDelivery)
                .where(*conditions)
                .order_by(WebhookDelivery.created_at.desc(), WebhookDelivery.id.desc())
                .limit(limit)
                .offset(offset)
            ).all()
            return models.ListWebhookDeliveriesResponse(
                data=[_delivery_entry(delivery) for delivery in rows],
                total=int(total or 0),
                limit=limit,
                offset=offset,
            )

        return await self.database.read(work)


def _given(value: object) -> list[Any]:
    """A list field of a request (absent: empty)."""
    return list(value) if isinstance(value, list) else []


def _resolve(session: Session, principal: Principal, refs: Sequence[str], kind: str) -> list[str]:
    """The ids of the agents (workflows) ``refs`` names, each one the key may see; a 400
    naming the first it may not."""
    ids: list[str] = []
    field = "agentIds" if kind == AGENT else "workflowIds"
    for index, ref in enumerate(refs):
        try:
            if kind == AGENT:
                found = find_agent(session, principal, ref).id
            else:
                found = find_workflow(session, principal, ref).id
        except HttpError as missing:
            if missing.status != 404:
                raise
            message = f"{'Agent' if kind == AGENT else 'Workflow'} '{ref}' not found"
            raise BadRequest(message, [ErrorDetail(("body", field, index), message,
                                                   "value_error")]) from None  # fmt: skip
        if found not in ids:
            ids.append(found)
    return ids
