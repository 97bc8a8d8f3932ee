"""FastAPI: path/query parameters and a pydantic body model."""

from __future__ import annotations

from fastapi import FastAPI
from pydantic import BaseModel


class Prompt(BaseModel):
    question: str
    context: str
    num_tokens: int = 50


app = FastAPI()


@app.get("/items/{item_id}")
async def item(item_id: int, q: str = "") -> dict[str, object]:
    return {"item_id": item_id, "q": q}


@app.post("/echo")
async def echo(prompt: Prompt) -> Prompt:
    return prompt
