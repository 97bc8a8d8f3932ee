"""Bearer authentication of every request, and the caller's principal for the handlers.

The filter runs after the request id filter, so its 401 carries the request id like every other
error. Handlers take no request, so the principal travels in a context variable set for the
duration of the request (:func:`current_principal`).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from functools import partial

from handlers.agents.domain.keys import Principal, authenticate
from handlers.agents.storage.database import Database
from webrest import FilterChain, HttpError, Request, Response

__all__ = ["ApiKeyAuth", "acting_as", "current_principal"]

_PRINCIPAL: ContextVar[Principal | None] = ContextVar("agents_principal", default=None)
_CHALLENGE = {"WWW-Authenticate": "Bearer"}


def current_principal() -> Principal:
    """The authenticated caller of the request being handled."""
    principal = _PRINCIPAL.get()
    if principal is None:  # a handler called outside an authenticated request
        raise HttpError(401, "Missing API key: send 'Authorization: Bearer <API_KEY>'", (), {})
    return principal


@contextmanager
def acting_as(principal: Principal) -> Iterator[None]:
    """Handle what runs inside as ``principal`` (the filter's doing; tests use it too)."""
    token = _PRINCIPAL.set(principal)
    try:
        yield
    finally:
        _PRINCIPAL.reset(token)


class ApiKeyAuth:
    """A webrest filter: 401 unless ``Authorization: Bearer <key>`` names a live key."""

    def __init__(self, database: Database) -> None:
        self._database = database

    async def __call__(self, request: Request, chain: FilterChain) -> Response:
        header = request.headers.get("authorization", "")
        scheme, _, token = header.partition(" ")
        token = token.strip()
        if not header:
            raise HttpError(
                401, "Missing API key: send 'Authorization: Bearer <API_KEY>'", (), _CHALLENGE
            )
        if scheme.lower() != "bearer" or not token:
            raise HttpError(401, "Invalid Authorization header: expected 'Bearer <API_KEY>'",
                            (), _CHALLENGE)  # fmt: skip
        principal = await self._database.read(partial(authenticate, token=token))
        if principal is None:
            raise HttpError(401, "Invalid or revoked API key", (), _CHALLENGE)
        with acting_as(principal):
            return await chain.proceed(request)
