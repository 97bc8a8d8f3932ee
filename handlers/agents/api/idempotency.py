"""``Idempotency-Key``: a repeated request gets the first answer instead of acting twice.

For the operations that create something (runs, reruns, agents, workflows), a request with an
``Idempotency-Key`` header is recorded per API key: the key, the operation and the SHA-256 of
the request (operation, path and query parameters, body, file parts). The first request inserts
the record before acting (the primary key (API key, idempotency key) makes concurrent firsts
one), acts, then stores its answer (status and body). Then, for ``RETENTION`` (24 h):

* the same key with the same request gets the stored answer again, with
  ``Idempotent-Replayed: true``, and nothing happens;
* the same key with another request is a 409;
* a repeat arriving while the first is still being answered waits for it (polling the
  record, at most ``IN_PROGRESS_WAIT_SECONDS``, then 409).

Error answers are not kept: the record is deleted when the request fails, so it may be sent
again with its key. Records older than ``RETENTION`` are replaced by a new request with their
key and deleted in passing (at most once a minute per process). An answer that could not be
stored after acting (the database went away) leaves the record unanswered: a repeat then waits
and gets a 409 rather than acting twice.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import time
from collections.abc import Awaitable, Callable
from datetime import timedelta
from functools import partial
from typing import Any, TypeVar

from pydantic import BaseModel
from sqlalchemy import delete, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from handlers.agents.domain.keys import Principal
from handlers.agents.storage.database import Database
from handlers.agents.storage.schema import IdempotencyRecord, utc_now
from webrest import ErrorDetail, HttpError, Response

__all__ = ["IdempotentRequests", "fingerprint"]

M = TypeVar("M", bound=BaseModel)

RETENTION = timedelta(hours=24)
IN_PROGRESS_WAIT_SECONDS = 10.0
POLL_SECONDS = 0.05
PURGE_EVERY_SECONDS = 60.0
REPLAYED_HEADER = "Idempotent-Replayed"


def fingerprint(operation: str, **parts: object) -> str:
    """The SHA-256 of a request: its operation and its parts (models by their wire JSON, bytes
    by their own SHA-256), in a canonical JSON."""

    def plain(value: object) -> object:
        if isinstance(value, BaseModel):
            return value.model_dump(mode="json", by_alias=True)
        if isinstance(value, bytes):
            return {"sha256": hashlib.sha256(value).hexdigest()}
        if isinstance(value, dict):
            return {str(key): plain(item) for key, item in value.items()}
        if isinstance(value, list | tuple):
            return [plain(item) for item in value]
        return value

    document = json.dumps(
        {"operation": operation, **{name: plain(value) for name, value in parts.items()}},
        sort_keys=True,
        separators=(",", ":"),
        default=str,
    )
    return hashlib.sha256(document.encode()).hexdigest()


def _conflict(message: str) -> HttpError:
    return HttpError(
        409, message, [ErrorDetail(("header", "Idempotency-Key"), message, "conflict")]
    )


class IdempotentRequests:
    """The records of one database."""

    def __init__(self, database: Database) -> None:
        self.database = database
        self._purged = 0.0

    async def once(
        self,
        principal: Principal,
        key: str | None,
        operation: str,
        request_sha256: str,
        status: int,
        act: Callable[[], Awaitable[M]],
    ) -> M | Response:
        """``act()``'s answer (``status`` and the model), or the recorded answer of the first
        request with ``key``; ``act`` runs at most once per key."""
        if key is None:
            return await act()
        await self._purge_now_and_then()
        claimed = await self.database.write(
            partial(
                _claim,
                key_id=principal.key_id,
                key=key,
                operation=operation,
                request_sha256=request_sha256,
            )
        )
        if not claimed:
            return await self._replay(principal.key_id, key, operation, request_sha256)
        try:
            answer = await act()
        except BaseException:
            await self.database.write(partial(_forget, key_id=principal.key_id, key=key))
            raise
        body = answer.model_dump(mode="json", by_alias=True)
        await self.database.write(
            partial(_answer, key_id=principal.key_id, key=key, status=status, body=body)
        )
        return answer

    async def _replay(self, key_id: str, key: str, operation: str, request_sha256: str) -> Response:
        deadline = time.monotonic() + IN_PROGRESS_WAIT_SECONDS
        while True:
            record = await self.database.read(partial(_record, key_id=key_id, key=key))
            if record is None:  # the first request failed meanwhile: nothing to replay
                raise _conflict(
                    "The request first sent with this Idempotency-Key failed: send it again"
                )
            if record.operation != operation or record.request_sha256 != request_sha256:
                raise _conflict(
                    "This Idempotency-Key was used for a different request: use a new key"
                )
            if record.status_code is not None:
                return (
                    Response.status(record.status_code)
                    .entity(record.response)
                    .header(REPLAYED_HEADER, "true")
                )
            if time.monotonic() >= deadline:
                raise _conflict(
                    "A request with this Idempotency-Key is still being answered: retry later"
                )
            await asyncio.sleep(POLL_SECONDS)

    async def _purge_now_and_then(self) -> None:
        now = time.monotonic()
        if now - self._purged >= PURGE_EVERY_SECONDS:
            self._purged = now
            await self.database.write(_purge)


def _claim(session: Session, key_id: str, key: str, operation: str, request_sha256: str) -> bool:
    """Insert the record of a first request; False when one (still valid) exists."""
    now = utc_now()
    existing = session.get(IdempotencyRecord, (key_id, key))
    if existing is not None:
        if existing.created_at > now - RETENTION:
            return False
        session.delete(existing)
        session.flush()
    try:
        with session.begin_nested():
            session.add(
                IdempotencyRecord(
                    key_id=key_id,
                    idempotency_key=key,
                    operation=operation,
                    request_sha256=request_sha256,
                    status_code=None,
                    response=None,
                    created_at=now,
                )
            )
    except IntegrityError:  # a concurrent first request inserted it
        return False
    return True


def _answer(session: Session, key_id: str, key: str, status: int, body: Any) -> None:
    record = session.get(IdempotencyRecord, (key_id, key))
    if record is not None:
        record.status_code, record.response = status, body


def _forget(session: Session, key_id: str, key: str) -> None:
    session.execute(
        delete(IdempotencyRecord).where(
            IdempotencyRecord.key_id == key_id,
            IdempotencyRecord.idempotency_key == key,
            IdempotencyRecord.status_code.is_(None),
        )
    )


def _record(session: Session, key_id: str, key: str) -> IdempotencyRecord | None:
    return session.scalars(
        select(IdempotencyRecord).where(
            IdempotencyRecord.key_id == key_id, IdempotencyRecord.idempotency_key == key
        )
    ).first()


def _purge(session: Session) -> None:
    session.execute(
        delete(IdempotencyRecord).where(IdempotencyRecord.created_at < utc_now() - RETENTION)
    )
