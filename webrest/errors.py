"""HTTP errors raised while routing, binding and invoking.

Every failure webrest detects itself is an :class:`HttpError`. Binding failures carry one
:class:`ErrorDetail` per invalid input, in the same shape as pydantic's errors, so an error
renderer can produce any API's error body (FastAPI-style ``detail[]``, a problem document, ...).
How they are rendered is :mod:`webrest.error_rendering`.

A declaration that could not work (a path placeholder no parameter binds, a malformed media
type, an interceptor that is not callable, ...) is a :class:`RegistrationError`, raised while the
routes are declared or the :class:`webrest.RestApi` is built, never at request time.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from http import HTTPStatus

from pydantic import ValidationError

__all__ = [
    "BadRequest",
    "ErrorDetail",
    "HttpError",
    "RegistrationError",
    "reason_phrase",
    "validation_details",
]

Loc = tuple[str | int, ...]


@dataclass(frozen=True, slots=True)
class ErrorDetail:
    """One invalid input: where it is (``("query", "id")``, ``("body", "name")``), what is wrong."""

    loc: Loc
    msg: str
    type: str
    input: object = None
    ctx: dict[str, object] | None = None


class RegistrationError(TypeError, ValueError):
    """A route, resource, interceptor or filter declared so that it could not work.

    Raised when the routes are declared or the API is built, with the class, the method and
    the reason: ``Users.find: path placeholder {id} binds no parameter``. It is both a
    ``TypeError`` and a ``ValueError``, what the checks it replaces raised.
    """


def reason_phrase(status: int) -> str:
    """``402`` → ``"Payment Required"``; a code without a registered phrase gets a generic one
    (``"Client Error"`` for 4xx, ``"Server Error"`` for 5xx, else ``"Status <code>"``)."""
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        if 400 <= status < 500:
            return "Client Error"
        if 500 <= status < 600:
            return "Server Error"
        return f"Status {status}"


@dataclass(eq=False)
class HttpError(Exception):
    """An error answered with ``status``; ``message`` is safe to show to the client.

    Without a message (or with ``None`` or ``""``) the message is the status's reason phrase:
    ``HttpError(402)`` says ``"Payment Required"``. A status outside 100-599 is a
    ``ValueError`` where the error is made.
    """

    status: int
    message: str = ""
    details: Sequence[ErrorDetail] = field(default_factory=tuple)
    headers: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not 100 <= self.status <= 599:  # fail where it is raised, not when it is sent
            raise ValueError(f"{self.status!r} is not an HTTP status (100-599)")
        if not self.message:
            self.message = reason_phrase(self.status)
        super().__init__(self.status, self.message)

    def __str__(self) -> str:
        return f"{self.status} {self.message}"


def validation_details(exc: ValidationError, prefix: Loc = ()) -> list[ErrorDetail]:
    """pydantic's errors as details, located under ``prefix`` (``("body",)``)."""
    return [
        ErrorDetail(
            (*prefix, *error["loc"]),
            error["msg"],
            error["type"],
            error.get("input"),
            dict(error["ctx"]) if "ctx" in error else None,
        )
        for error in exc.errors(include_url=False)
    ]


class BadRequest(HttpError):
    """A 400: the request's parameters or body could not be bound to the method."""

    def __init__(self, message: str, details: Sequence[ErrorDetail] = ()) -> None:
        super().__init__(400, message, tuple(details))
