"""The handlers of Rate limit service, HTTP port: implement this Protocol to serve the API.

Generated from specs/ratelimit.openapi.yaml by `make generate`; do not edit.
"""

from __future__ import annotations

import datetime  # noqa: F401
import uuid  # noqa: F401
from collections.abc import AsyncIterator, Mapping  # noqa: F401
from typing import Any, Literal, Protocol  # noqa: F401

from starlette.datastructures import UploadFile  # noqa: F401

from generated.ratelimit import models  # noqa: F401
from webrest import Response

__all__ = ["RatelimitHandlers"]


class RatelimitHandlers(Protocol):
    """One method per operation of specs/ratelimit.openapi.yaml.

    A method returns the documented success body (a model, or an async iterator of chunks for
    streamed responses) or a webrest ``Response`` for any other documented status. Raising
    ``webrest.HttpError`` answers in the API's error shape.
    """

    async def should_rate_limit(
        self,
        *,
        body: bytes,
    ) -> models.RateLimitResponse | Response:
        """POST /json: Decide whether a request is within its rate limits"""
        ...

    async def read_counters(
        self,
        *,
        body: bytes,
    ) -> models.CountersResponse | Response:
        """POST /counters: Read the state of a request's limits without counting"""
        ...

    async def healthcheck(
        self,
    ) -> AsyncIterator[str] | Response:
        """GET /healthcheck: Report whether the service is healthy"""
        ...
