"""The error shapes of our APIs, as webrest error renderers.

* ``fastapi-422`` (rag): invalid input is ``422 {"detail": [{type, loc, msg, input[, ctx]}]}``,
  byte-for-byte what FastAPI answers; other errors are ``{"detail": "<reason>"}``.
* ``envelope`` (agents): ``{"issues": [{field, message, code, severity}], "requestId"}`` with an
  ``x-request-id`` header on every response (see :func:`request_id_filter`).
* ``plain-text`` (ratelimit): ``text/plain`` bodies as Go's ``http.Error`` writes them.
"""

from __future__ import annotations

import uuid
from http import HTTPStatus

from webrest import ErrorDetail, FilterChain, HttpError, Request, Response

__all__ = ["envelope_renderer", "fastapi_renderer", "plain_text_renderer", "request_id_filter"]

REQUEST_ID = "request_id"

_ENVELOPE_CODES = {
    400: "invalid_value",
    401: "unauthorized",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    406: "not_acceptable",
    409: "conflict",
    413: "too_large",
    415: "unsupported_media_type",
    429: "rate_limited",
}


def _reason(status: int) -> str:
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return "Error"


def _as_validation(error: HttpError) -> HttpError:
    """A body of an undocumented type is invalid input, as FastAPI treats it (not a 415)."""
    if error.status == 415 or (error.status == 400 and not error.details):
        detail = ErrorDetail(("body",), error.message, "value_error", None)
        return HttpError(400, error.message, (detail,))
    return error


def fastapi_renderer(error: HttpError, request: Request) -> Response:
    """FastAPI's bodies: validation problems → 422 ``detail[]``, others → ``{"detail": text}``.

    413 keeps the ``detail[]`` shape (``type: file_too_large``), as the rag contract says.
    """
    error = _as_validation(error)
    if error.status == 413:
        too_large = {
            "type": "file_too_large",
            "loc": ["body", "file"],
            "msg": error.message,
            "input": None,
        }
        return Response.status(413).type("application/json").entity({"detail": [too_large]})
    if error.status == 400 and error.details:
        detail = []
        for item in error.details:
            entry: dict[str, object] = {
                "type": item.type,
                "loc": list(item.loc),
                "msg": item.msg,
                "input": item.input,
            }
            if item.ctx:
                entry["ctx"] = {key: _jsonable(value) for key, value in item.ctx.items()}
            detail.append(entry)
        return Response.status(422).type("application/json").entity({"detail": detail})
    message = _reason(error.status) if error.status >= 500 else error.message
    if error.status in (404, 405):
        message = _reason(error.status)
    return Response.status(error.status).type("application/json").entity({"detail": message})


def _jsonable(value: object) -> object:
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    return str(value)


def _detail_code(status: int) -> str:
    """The code of a located issue: ``invalid_value`` for a 400, else the status's own code
    (a 409 naming ``body.name`` is a ``conflict``)."""
    return "invalid_value" if status == 400 else _ENVELOPE_CODES.get(status, "invalid_value")


def envelope_renderer(error: HttpError, request: Request) -> Response:
    """``ApiErrorEnvelope``: one issue per invalid input, the request id in body and header."""
    request_id = str(request.value(REQUEST_ID) or _new_request_id())
    error = _as_validation(error)
    if error.details:
        issues = [
            {
                "field": ".".join(str(part) for part in item.loc) or "<root>",
                "message": item.msg,
                "code": "required" if item.type == "missing" else _detail_code(error.status),
                "severity": "error",
            }
            for item in error.details
        ]
    else:
        message = "Internal Server Error" if error.status >= 500 else error.message
        issues = [
            {
                "field": "<root>",
                "message": message,
                "code": _ENVELOPE_CODES.get(error.status, "server_error"),
                "severity": "error",
            }
        ]
    return (
        Response.status(error.status)
        .type("application/json")
        .entity({"issues": issues, "requestId": request_id})
        .header("x-request-id", request_id)
    )


def plain_text_renderer(error: HttpError, request: Request) -> Response:
    """Go's ``http.Error``: ``<Status Text>\\n`` as ``text/plain; charset=utf-8``; any problem
    with the request body (invalid, too large, wrong type) is a 400, as upstream answers."""
    status = 400 if error.status in (400, 413, 415) else error.status
    return Response.status(status).type("text/plain; charset=utf-8").body(_reason(status) + "\n")


def _new_request_id() -> str:
    return "req_" + uuid.uuid4().hex


async def request_id_filter(request: Request, chain: FilterChain) -> Response:
    """Give every request an id (the client's ``x-request-id`` when it sends a sane one),
    pass it to handlers as ``Value("request_id")`` and echo it in the response header."""
    given = request.headers.get("x-request-id", "")
    request_id = given if 0 < len(given) <= 128 and given.isprintable() else _new_request_id()
    request.pass_value(REQUEST_ID, request_id)
    response = await chain.proceed(request)
    response.header("x-request-id", request_id)
    return response
