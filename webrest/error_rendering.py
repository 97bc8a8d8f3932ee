"""How an :class:`~webrest.errors.HttpError` becomes the response the client sees.

The errors themselves (:mod:`webrest.errors`) know nothing of requests and responses: routing,
binding and the request's body limit raise them; the application and each API render them
here, with the renderer they were given or :func:`default_error_renderer`.
"""

from __future__ import annotations

from typing import Protocol

from webrest.errors import HttpError
from webrest.request import Request
from webrest.response import Response

__all__ = ["ErrorRenderer", "default_error_renderer", "with_error_headers"]


class ErrorRenderer(Protocol):
    """Turns an error into the response the client sees (written in the negotiated format).

    The error's own headers (``Allow`` of a 405, ...) are added to whatever it returns.
    """

    def __call__(self, error: HttpError, request: Request) -> Response: ...


def default_error_renderer(error: HttpError, request: Request) -> Response:
    """``{"status": code, "message": text}``, the upstream library's error body."""
    return Response.error(error.status, error.message)


def with_error_headers(response: Response, error: HttpError) -> Response:
    """``response`` carrying the error's headers (they win over the renderer's own)."""
    for name, value in error.headers.items():
        response.header(name, value)
    return response
