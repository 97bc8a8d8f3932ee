"""The webhook delivery loop: sends the recorded deliveries (the outbox), signed, and retries.

Each process that runs it (``agents-server``; ``agents-worker`` too) claims the ``pending``
deliveries that are due: on PostgreSQL with ``FOR UPDATE SKIP LOCKED`` (processes never
claim the same row), on SQLite in a write transaction (``BEGIN IMMEDIATE``). Claiming counts
the attempt and pushes ``next_attempt_at`` past the attempt's longest duration (a lease): the
HTTP request runs outside any transaction, and when the process dies during it the delivery is
due again once the lease ends and is sent again, with the same ``webhook-id`` (at least once;
receivers deduplicate). Its outcome is written in a second transaction, guarded by the attempt
number, and only a 2xx answer marks it ``delivered``.

An attempt: the URL's host is resolved and checked by the egress guard
(:mod:`handlers.agents.egress`: loopback, private, link-local… refused unless
``AGENTS_EGRESS_ALLOW`` opens them), the connection goes to that address (the host kept in
``Host`` and as the TLS server name), the body is POSTed with the Standard Webhooks headers
(:mod:`handlers.agents.domain.webhook_signing`), redirects are not followed, and the whole
exchange is bounded by ``AGENTS_WEBHOOK_TIMEOUT``. Of the answer only the status and, for a
failure, the first :data:`MAX_ERROR_BODY_BYTES` bytes of the body are kept. Anything but a 2xx
(another status, a connection error or timeout, a refusal) is retried after
:func:`~handlers.agents.domain.webhook_signing.retry_delay`, until the delivery has had
``AGENTS_WEBHOOK_MAX_ATTEMPTS`` attempts: it is then ``failed``.

The loop wakes at once when this process records deliveries, and polls every
:data:`POLL_SECONDS` for those recorded elsewhere and for retries that fall due. Deliveries
that ended more than :data:`RETENTION_DAYS` ago are removed from the log.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import time
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import partial

import httpx
from sqlalchemy import delete, select, update
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.orm import Session

from handlers.agents.domain.webhook_signing import retry_delay, signature_headers
from handlers.agents.domain.webhooks import add_recorded_listener
from handlers.agents.egress import RESOLVE_TIMEOUT_SECONDS, EgressPolicy, EgressRefused, IPAddress
from handlers.agents.execution.background import BackgroundWork
from handlers.agents.settings import Settings
from handlers.agents.storage.database import Database
from handlers.agents.storage.schema import WebhookDelivery, WebhookSubscription, utc_now

__all__ = [
    "POLL_SECONDS",
    "DeliveryOutcome",
    "DeliverySchedule",
    "WebhookDeliverer",
    "webhook_delivery",
]

log = logging.getLogger("agents.webhooks")

POLL_SECONDS = 1.0
CONCURRENCY = 16
"""Attempts in flight at once in one process."""
MAX_ERROR_BODY_BYTES = 1024
MAX_ERROR_CHARS = 2000
LEASE_MARGIN_SECONDS = 30.0
"""A claimed delivery is due again this long after its attempt's longest duration."""
RETENTION_DAYS = 30
PRUNE_EVERY_SECONDS = 3600.0
USER_AGENT = "agents-webhooks/1"
_DEFAULT_PORTS = {"http": 80, "https": 443}


@dataclass(frozen=True)
class DeliverySchedule:
    """Retry schedule and limits (``AGENTS_WEBHOOK_*``)."""

    base_seconds: float = 5.0
    cap_seconds: float = 43200.0
    max_attempts: int = 10
    timeout_seconds: float = 10.0

    @classmethod
    def from_settings(cls, settings: Settings) -> DeliverySchedule:
        return cls(
            base_seconds=settings.webhook_retry_base_seconds,
            cap_seconds=settings.webhook_retry_cap_seconds,
            max_attempts=settings.webhook_max_attempts,
            timeout_seconds=settings.webhook_timeout_seconds,
        )

    @property
    def lease_seconds(self) -> float:
        """How long a claimed delivery stays claimed (resolution, the request, a margin)."""
        return RESOLVE_TIMEOUT_SECONDS + self.timeout_seconds + LEASE_MARGIN_SECONDS


@dataclass(frozen=True)
class _Claimed:
    id: str
    webhook_id: str
    url: str
    secret: str
    body: str
    attempt: int


@dataclass(frozen=True)
class DeliveryOutcome:
    """An attempt's result: the HTTP status (None without an answer) and, unless it was a
    2xx, why it failed."""

    status_code: int | None
    error: str | None

    @property
    def delivered(self) -> bool:
        return self.error is None


def _claim(session: Session, limit: int, lease_seconds: float) -> list[_Claimed]:
    now = utc_now()
    due = session.scalars(
        select(WebhookDelivery.id)
        .where(WebhookDelivery.status == "pending", WebhookDelivery.next_attempt_at <= now)
        .order_by(WebhookDelivery.next_attempt_at, WebhookDelivery.id)
        .limit(limit)
        .with_for_update(skip_locked=True)
    ).all()
    if not due:
        return []
    rows = session.execute(
        select(
            WebhookDelivery.id,
            WebhookDelivery.webhook_id,
            WebhookDelivery.body,
            WebhookDelivery.attempts,
            WebhookSubscription.url,
            WebhookSubscription.secret,
        )
        .join(WebhookSubscription, WebhookSubscription.id == WebhookDelivery.webhook_id)
        .where(WebhookDelivery.id.in_(due))
    ).all()
    session.execute(
        update(WebhookDelivery)
        .where(WebhookDelivery.id.in_(due))
        .values(
            attempts=WebhookDelivery.attempts + 1,
            next_attempt_at=now + timedelta(seconds=lease_seconds),
            last_attempt_at=now,
        )
        .execution_options(synchronize_session=False)
    )
    return [
        _Claimed(row.id, row.webhook_id, row.url, row.secret, row.body, row.attempts + 1)
        for row in rows
    ]


def _complete(
    session: Session, claimed: _Claimed, outcome: DeliveryOutcome, next_at: datetime | None
) -> bool:
    """Write the attempt's outcome (``next_at``: the next attempt, None: no more); False when
    the delivery is gone or was claimed again meanwhile."""
    now = utc_now()
    error = _clip(outcome.error or "")
    values: dict[str, object] = {"last_status_code": outcome.status_code}
    if outcome.delivered:
        values |= {"status": "delivered", "delivered_at": now, "next_attempt_at": None,
                   "last_error": None}  # fmt: skip
    elif next_at is None:
        values |= {"status": "failed", "next_attempt_at": None, "last_error": error}
    else:
        values |= {"next_attempt_at": next_at, "last_error": error}
    result = session.execute(
        update(WebhookDelivery)
        .where(
            WebhookDelivery.id == claimed.id,
            WebhookDelivery.status == "pending",
            WebhookDelivery.attempts == claimed.attempt,
        )
        .values(**values)
        .execution_options(synchronize_session=False)
    )
    return bool(getattr(result, "rowcount", 0))


def _prune(session: Session, before: datetime) -> None:
    session.execute(
        delete(WebhookDelivery)
        .where(
            WebhookDelivery.status.in_(("delivered", "failed")),
            WebhookDelivery.created_at < before,
        )
        .execution_options(synchronize_session=False)
    )


class WebhookDeliverer:
    """Claims due deliveries and sends them, :data:`CONCURRENCY` at once, until cancelled.

    ``client`` (None: one of its own, without keep-alive, proxies or redirects) is for tests;
    ``rng`` draws the jitter."""

    def __init__(
        self,
        database: Database,
        egress: EgressPolicy,
        schedule: DeliverySchedule | None = None,
        *,
        concurrency: int = CONCURRENCY,
        poll_seconds: float = POLL_SECONDS,
        client: httpx.AsyncClient | None = None,
        rng: random.Random | None = None,
    ) -> None:
        self.database = database
        self.egress = egress
        self.schedule = schedule or DeliverySchedule()
        self.concurrency = concurrency
        self.poll_seconds = poll_seconds
        self._client = client
        self._rng = rng
        self._event: asyncio.Event | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._pruned_at = -PRUNE_EVERY_SECONDS

    def wake(self) -> None:
        """Look for due deliveries now (from any thread)."""
        loop, event = self._loop, self._event
        if loop is None or event is None:
            return
        with contextlib.suppress(RuntimeError):  # the loop has stopped
            loop.call_soon_threadsafe(event.set)

    async def run(self) -> None:
        """Deliver until cancelled."""
        self._loop = asyncio.get_running_loop()
        self._event = asyncio.Event()
        remove = add_recorded_listener(self.wake)
        client = self._client or _new_client()
        tasks: set[asyncio.Task[None]] = set()
        try:
            while True:
                self._event.clear()
                await self._prune_now_and_then()
                free = self.concurrency - len(tasks)
                claimed = await self._claim(free) if free > 0 else []
                for delivery in claimed:
                    task = asyncio.create_task(self._attempt(client, delivery))
                    tasks.add(task)
                    task.add_done_callback(partial(self._finished, tasks))
                if claimed and len(claimed) == free:
                    continue  # perhaps more are due: claim again once a slot frees
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._event.wait(), self.poll_seconds)
        finally:
            remove()
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            if self._client is None:
                await client.aclose()

    def _finished(self, tasks: set[asyncio.Task[None]], task: asyncio.Task[None]) -> None:
        tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.error("webhook delivery failed unexpectedly: %r", task.exception())
        if self._event is not None:
            self._event.set()

    async def _claim(self, limit: int) -> list[_Claimed]:
        try:
            return await self.database.write(
                partial(_claim, limit=limit, lease_seconds=self.schedule.lease_seconds)
            )
        except SQLAlchemyError as error:
            log.warning("webhook deliveries could not be claimed: %s", str(error).splitlines()[0])
            return []

    async def deliver_due(self) -> int:
        """One pass (for tests and tools): send every delivery due now; how many were sent."""
        client = self._client or _new_client()
        try:
            claimed = await self._claim(self.concurrency)
            await asyncio.gather(*(self._attempt(client, delivery) for delivery in claimed))
            return len(claimed)
        finally:
            if self._client is None:
                await client.aclose()

    async def _attempt(self, client: httpx.AsyncClient, delivery: _Claimed) -> None:
        outcome = await self.send(client, delivery)
        schedule = self.schedule
        next_at: datetime | None = None
        delay = 0.0
        if not outcome.delivered and delivery.attempt < schedule.max_attempts:
            delay = retry_delay(delivery.attempt, schedule.base_seconds, schedule.cap_seconds,
                                self._rng)  # fmt: skip
            next_at = utc_now() + timedelta(seconds=delay)
        try:
            await self.database.write(partial(_complete, claimed=delivery, outcome=outcome,
                                              next_at=next_at))  # fmt: skip
        except SQLAlchemyError as error:  # the lease ends and the delivery is sent again
            log.warning("webhook delivery %s: outcome not stored: %s", delivery.id,
                        str(error).splitlines()[0])  # fmt: skip
            return
        where = f"{delivery.id} ({delivery.webhook_id}, attempt {delivery.attempt})"
        if outcome.delivered:
            log.debug("webhook delivery %s delivered (%s)", where, outcome.status_code)
        elif next_at is not None:
            log.info("webhook delivery %s failed: %s; next attempt in %.0f s", where,
                     _first_line(outcome.error), delay)  # fmt: skip
        else:
            log.warning("webhook delivery %s failed: %s; no attempts left", where,
                        _first_line(outcome.error))  # fmt: skip
        if next_at is not None and delay < self.poll_seconds and self._loop is not None:
            self._loop.call_later(delay, self.wake)  # sooner than the next poll

    async def send(self, client: httpx.AsyncClient, delivery: _Claimed) -> DeliveryOutcome:
        """One attempt: resolve and check the host, POST the signed body, judge the answer."""
        try:
            url = httpx.URL(delivery.url)
            host = url.raw_host.decode("ascii")
            port = url.port or _DEFAULT_PORTS[url.scheme]
        except (httpx.InvalidURL, KeyError, UnicodeError, ValueError):
            return DeliveryOutcome(None, f"invalid url {delivery.url!r}")
        try:
            address = await self.egress.resolve(host, port)
        except EgressRefused as refused:
            return DeliveryOutcome(None, f"refused by the egress guard: {refused}")
        body = delivery.body.encode()
        headers = {
            "content-type": "application/json",
            "user-agent": USER_AGENT,
            **signature_headers(delivery.secret, delivery.id, int(time.time()), body),
        }
        request = _pinned_request(client, url, address, headers, body,
                                  self.schedule.timeout_seconds)  # fmt: skip
        seconds = self.schedule.timeout_seconds
        try:
            async with asyncio.timeout(seconds):
                response = await client.send(request, stream=True, follow_redirects=False)
                try:
                    status = response.status_code
                    if 200 <= status < 300:
                        return DeliveryOutcome(status, None)
                    excerpt = await _excerpt(response)
                finally:
                    await response.aclose()
        except TimeoutError:
            return DeliveryOutcome(None, f"no answer within {seconds:g} s")
        except httpx.HTTPError as error:
            return DeliveryOutcome(None, f"{type(error).__name__}: {error}")
        return DeliveryOutcome(
            status, _clip(f"HTTP {status}: {excerpt}" if excerpt else f"HTTP {status}")
        )

    async def _prune_now_and_then(self) -> None:
        if time.monotonic() - self._pruned_at < PRUNE_EVERY_SECONDS:
            return
        self._pruned_at = time.monotonic()
        before = utc_now() - timedelta(days=RETENTION_DAYS)
        try:
            await self.database.write(partial(_prune, before=before))
        except SQLAlchemyError as error:
            log.warning("old webhook deliveries not pruned: %s", str(error).splitlines()[0])


def _new_client() -> httpx.AsyncClient:
    # no keep-alive: a connection is never reused for another name at the same address
    return httpx.AsyncClient(
        trust_env=False,
        follow_redirects=False,
        limits=httpx.Limits(max_keepalive_connections=0),
    )


def _pinned_request(
    client: httpx.AsyncClient,
    url: httpx.URL,
    address: IPAddress,
    headers: dict[str, str],
    body: bytes,
    seconds: float,
) -> httpx.Request:
    """A POST of ``url`` that connects to the checked ``address``: the host kept in ``Host``
    and, for https, as the TLS server name."""
    sent = httpx.Headers(headers)
    sent["Host"] = url.netloc.decode("ascii")
    extensions: dict[str, object] = {}
    if url.scheme == "https":
        extensions["sni_hostname"] = url.raw_host.decode("ascii")
    return client.build_request(
        "POST",
        url.copy_with(host=str(address)),
        headers=sent,
        content=body,
        timeout=seconds,
        extensions=extensions,
    )


async def _excerpt(response: httpx.Response) -> str:
    """The start of the answer's body (at most MAX_ERROR_BODY_BYTES), as text."""
    content = bytearray()
    async for chunk in response.aiter_bytes():
        content += chunk
        if len(content) >= MAX_ERROR_BODY_BYTES:
            break
    return bytes(content[:MAX_ERROR_BODY_BYTES]).decode("utf-8", errors="replace").strip()


def _clip(text: str) -> str:
    return text if len(text) <= MAX_ERROR_CHARS else text[: MAX_ERROR_CHARS - 1] + "…"


def _first_line(text: str | None) -> str:
    line = (text or "").splitlines()[0] if text else ""
    return line[:200]


def webhook_delivery(
    settings: Settings, database: Database, *, poll_seconds: float = POLL_SECONDS
) -> BackgroundWork:
    """The delivery loop of a process, for ``BackgroundTasks.add("webhooks", …)`` (in
    ``agents-server`` and ``agents-worker`` alike): schedule and egress from ``settings``."""
    deliverer = WebhookDeliverer(
        database,
        settings.egress,
        DeliverySchedule.from_settings(settings),
        poll_seconds=poll_seconds,
    )
    return deliverer.run
