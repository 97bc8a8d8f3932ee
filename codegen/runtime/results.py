"""A handler's result as the response its operation documents."""

from __future__ import annotations

from collections.abc import AsyncIterable, Iterator

from pydantic import BaseModel

from webrest import Response

__all__ = ["success"]


def _wire(value: object) -> object:
    """Models as their wire JSON, by alias; optional fields left ``MISSING`` are omitted."""
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json", by_alias=True)
    if isinstance(value, list):
        return [_wire(item) for item in value]
    return value


def success(result: object, status: int, media_type: str | None = None) -> Response:
    """``result`` as-is when it is a ``Response``; a stream when it is an (async) iterator of
    text or bytes; nothing for 204; otherwise the entity, with the documented ``status``."""
    if isinstance(result, Response):
        return result
    if status == 204:
        return Response.no_content()
    if isinstance(result, (AsyncIterable, Iterator)):
        return Response.status(status).type(media_type or "application/octet-stream").stream(result)
    if isinstance(result, bytes):
        return Response.status(status).type(media_type or "application/octet-stream").body(result)
    response = Response.status(status).entity(_wire(result))
    if media_type is not None:
        response.type(media_type)
    return response
