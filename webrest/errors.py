"""HTTP errors raised while routing, binding and invoking.

Every failure webrest detects itself is an :class:`HttpError`. Binding failures carry one
:class:`ErrorDetail` per invalid input, in the same shape as pydantic's errors, so an error
renderer can produce any API's error body (FastAPI-style ``detail[]``, a problem document, ...).
How they are rendered is :mod:`webrest.error_rendering`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from pydantic import ValidationError

__all__ = [
    "BadRequest",
    "ErrorDetail",
    "HttpError",
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


@dataclass(eq=False)
class HttpError(Exception):
    """An error answered with ``status``; ``message`` is safe to show to the client."""

    status: int
    message: str
    details: Sequence[ErrorDetail] = field(default_factory=tuple)
    headers: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
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
