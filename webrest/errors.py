"""HTTP errors raised while routing, binding and invoking, and how they are rendered.

Every failure webrest detects itself is an :class:`HttpError`. Binding failures carry one
:class:`ErrorDetail` per invalid input, in the same shape as pydantic's errors, so an error
renderer can produce any API's error body (FastAPI-style ``detail[]``, a problem document, ...).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from pydantic import ValidationError

if TYPE_CHECKING:
    from webrest.request import Request
    from webrest.response import Response

__all__ = [
    "BadRequest",
    "ErrorDetail",
    "ErrorRenderer",
    "HttpError",
    "default_error_renderer",
    "validation_details",
    "with_error_headers",
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


class ErrorRenderer(Protocol):
    """Turns an error into the response the client sees (written in the negotiated format).

    The error's own headers (``Allow`` of a 405, ...) are added to whatever it returns.
    """

    def __call__(self, error: HttpError, request: Request) -> Response: ...


def default_error_renderer(error: HttpError, request: Request) -> Response:
    """``{"status": code, "message": text}``, the upstream library's error body."""
    from webrest.response import Response

    return Response.error(error.status, error.message)


def with_error_headers(response: Response, error: HttpError) -> Response:
    """``response`` carrying the error's headers (they win over the renderer's own)."""
    for name, value in error.headers.items():
        response.header(name, value)
    return response
