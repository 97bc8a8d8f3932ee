"""The HTTP transport floor: a plain Starlette app whose ``POST /json`` parses the JSON body and
answers a fixed RateLimitResponse in proto3 JSON (one OK status per descriptor).

Served by ``python -m uvicorn bench.ratelimit.echo_http:app`` (see ``__main__``).
"""

from __future__ import annotations

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from bench.ratelimit.workload import MAX_DESCRIPTORS, echo_json

_BODIES = [echo_json(n) for n in range(MAX_DESCRIPTORS + 1)]


async def should_rate_limit(request: Request) -> Response:
    data = await request.json()
    descriptors = min(len(data.get("descriptors", ())), MAX_DESCRIPTORS)
    return Response(_BODIES[descriptors], media_type="application/json")


app = Starlette(routes=[Route("/json", should_rate_limit, methods=["POST"])])
