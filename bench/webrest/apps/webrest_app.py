"""webrest: a resource class with a GET and a POST method."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel

from webrest import Application, Get, Param, Post, Resource, RestApi


class Prompt(BaseModel):
    question: str
    context: str
    num_tokens: int = 50


@Resource("")
class Bench:
    @Get("/items/{item_id}")
    def item(self, item_id: int, q: Annotated[str, Param] = "") -> dict[str, object]:
        return {"item_id": item_id, "q": q}

    @Post("/echo")
    def echo(self, prompt: Prompt) -> Prompt:
        return prompt


app = Application({"/": RestApi(Bench())})
