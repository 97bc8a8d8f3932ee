"""Litestar: path/query parameters and a pydantic body model, debug and OpenAPI off."""

from __future__ import annotations

from litestar import Litestar, get, post
from pydantic import BaseModel


class Prompt(BaseModel):
    question: str
    context: str
    num_tokens: int = 50


@get("/items/{item_id:int}")
async def item(item_id: int, q: str = "") -> dict[str, object]:
    return {"item_id": item_id, "q": q}


# Litestar answers POST with 201 by default; the other frameworks answer 200.
@post("/echo", status_code=200)
async def echo(data: Prompt) -> Prompt:
    return data


app = Litestar(route_handlers=[item, echo], debug=False, openapi_config=None)
