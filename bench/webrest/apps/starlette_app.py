"""Plain Starlette: the baseline (no validation, no dependency injection)."""

from __future__ import annotations

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route


async def item(request: Request) -> JSONResponse:
    item_id = int(request.path_params["item_id"])
    q = request.query_params.get("q", "")
    return JSONResponse({"item_id": item_id, "q": q})


async def echo(request: Request) -> JSONResponse:
    data = await request.json()
    return JSONResponse(data)


app = Starlette(
    routes=[
        Route("/items/{item_id:int}", item, methods=["GET"]),
        Route("/echo", echo, methods=["POST"]),
    ]
)
