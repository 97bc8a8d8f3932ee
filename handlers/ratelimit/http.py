"""The HTTP port: ``/json`` (a decision in proto3 JSON), ``/counters`` (the state of a
request's limits, counting nothing: not upstream's) and ``/healthcheck``.

Implements the generated ``RatelimitHandlers``; answers exactly as the upstream does
(reference §2.19): 200 / 429 / 500 by overall code, ``Bad Request\\n`` for anything it cannot
decide, ``OK`` or an empty 500 for health.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from starlette.types import ASGIApp, Receive, Scope, Send

from generated.proto.envoy.service.ratelimit.v3 import rls_pb2
from generated.ratelimit import models
from generated.ratelimit.routes import create_app
from handlers.ratelimit.backends.base import BackendError
from handlers.ratelimit.health import Health
from handlers.ratelimit.limiter import LimitReading
from handlers.ratelimit.memo import ParsedBodies
from handlers.ratelimit.proto_json import decision_json, parse_request, response_json
from handlers.ratelimit.service import RateLimitService, ServiceError
from webrest import Response
from webrest.application import Application

log = logging.getLogger("ratelimit.http")

_TEXT = "text/plain; charset=utf-8"
_STATUS_BY_CODE = {
    rls_pb2.RateLimitResponse.OK: 200,
    rls_pb2.RateLimitResponse.OVER_LIMIT: 429,
}
# the upstream serves these paths on any method; the contract documents one each
_DOCUMENTED_METHODS = {"/json": "POST", "/healthcheck": "GET"}


def plain_error(status: int, text: str) -> Response:
    """Go's ``http.Error``: the text and a newline (webrest adds ``nosniff`` to every answer)."""
    return Response.status(status).type(_TEXT).body(text + "\n")


def _parse_with_serialization(body: bytes) -> tuple[rls_pb2.RateLimitRequest, bytes]:
    """The request in a ``/json`` body and its protobuf encoding (by which the service
    remembers the request's plan; kept here, it is not serialized per request)."""
    request = parse_request(body)
    return request, request.SerializeToString()


class HttpHandlers:
    """The ``RatelimitHandlers`` of the service."""

    def __init__(self, service: RateLimitService, health: Health) -> None:
        self._service = service
        self._health = health
        # the service never changes a request, so one parsed body serves every request with it
        self._requests = ParsedBodies(_parse_with_serialization)

    async def should_rate_limit(self, *, body: bytes) -> models.RateLimitResponse | Response:
        try:
            request, serialized = self._requests.get(body)
        except (ValueError, RecursionError) as error:  # RecursionError: nested too deeply
            log.debug("bad /json request: %s", error)
            return plain_error(400, "Bad Request")
        try:
            decision = await self._service.decide(request, message=False, serialized=serialized)
        except (ServiceError, BackendError) as error:
            log.debug("/json request failed: %s", error)
            return plain_error(400, "Bad Request")
        overall, codes, remaining, limits, now, response, resets = decision
        if response is None:
            body = decision_json(overall, codes, remaining, limits, now, resets)
        else:
            body = response_json(response)
        status = _STATUS_BY_CODE.get(overall, 500)
        return Response.status(status).type("application/json").body(body)

    async def read_counters(self, *, body: bytes) -> models.CountersResponse | Response:
        try:
            request, _ = self._requests.get(body)
        except (ValueError, RecursionError) as error:
            log.debug("bad /counters request: %s", error)
            return plain_error(400, "Bad Request")
        try:
            read = await self._service.read_counters(request)
        except (ServiceError, BackendError) as error:
            log.debug("/counters request failed: %s", error)
            return plain_error(400, "Bad Request")
        return counters_response(request, read)

    async def healthcheck(self) -> Response:
        if self._health.healthy():
            return Response.ok().type(_TEXT).body("OK")
        return Response.status(500).body(b"")


def counters_response(
    request: rls_pb2.RateLimitRequest,
    read: Sequence[tuple[str, Sequence[LimitReading]]],
) -> models.CountersResponse:
    """The ``/counters`` answer of what :meth:`RateLimitService.read_counters` read."""
    return models.CountersResponse(
        domain=request.domain,
        descriptors=[
            models.DescriptorCounters(
                entries=[
                    models.RateLimitDescriptorEntry(key=entry.key, value=entry.value)
                    for entry in descriptor.entries
                ],
                status=models.Status(status),
                limits=[_limit_counter(reading) for reading in readings],
            )
            for descriptor, (status, readings) in zip(request.descriptors, read, strict=True)
        ],
    )


def _limit_counter(reading: LimitReading) -> models.LimitCounter:
    limit = reading.limit
    return models.LimitCounter(
        name=limit.name or None,
        algorithm=models.Algorithm(limit.algorithm),
        requests_per_unit=limit.requests_per_unit,
        unit=models.WindowUnit(limit.unit.name),
        window_ms=limit.window_ms or limit.divider * 1000,
        burst=limit.burst or None,
        used=reading.used,
        remaining=reading.remaining,
        reset_ms=reading.reset_ms,
        deciding=reading.deciding,
        shadow_mode=limit.shadow_mode,
    )


class AnyMethod:
    """ASGI wrapper answering the documented paths on any method, as the upstream does."""

    def __init__(self, app: ASGIApp) -> None:
        self._app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            documented = _DOCUMENTED_METHODS.get(scope["path"])
            method = scope["method"]
            head_of_get = method == "HEAD" and documented == "GET"
            if documented is not None and method != documented and not head_of_get:
                scope = {**scope, "method": documented}
        await self._app(scope, receive, send)


def create_http_app(service: RateLimitService, health: Health, *, docs: bool = True) -> ASGIApp:
    """The HTTP port's ASGI application; ``docs``: Swagger UI at ``/docs``."""
    app: Application = create_app(
        HttpHandlers(service, health), docs_path="/docs" if docs else None
    )
    return AnyMethod(app)
