"""The rag API's validation errors are byte-for-byte FastAPI's.

A FastAPI application declared over the same generated models answers the same invalid
requests; status and JSON body must be equal (the rag contract promises FastAPI's 422).
"""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from fastapi import FastAPI, File, UploadFile

from generated.rag import models
from tests.contract.implementations import rag_app


def _fastapi_app() -> FastAPI:
    app = FastAPI()

    @app.post("/generate")
    async def generate(prompt: models.Prompt) -> dict[str, str]:
        return {}

    @app.post("/documentSearch")
    async def document_search(search: models.DocumentSearch) -> list[dict[str, Any]]:
        return []

    @app.post("/uploadDocument")
    async def upload_document(file: UploadFile = File(...)) -> dict[str, str]:
        return {}

    return app


INVALID: list[tuple[str, dict[str, Any]]] = [
    ("/generate", {"json": {"context": "c", "num_tokens": "x", "zzz": 1}}),
    ("/generate", {"json": {"question": "", "context": "c", "num_tokens": 0}}),
    ("/generate", {"json": {"question": "q", "context": 5, "use_knowledge_base": "yes"}}),
    ("/generate", {"json": {"question": "q" * 4001, "context": "", "num_tokens": 1025}}),
    ("/generate", {"json": {"question": "q", "context": "", "num_tokens": 1.5}}),
    ("/generate", {"json": [1, 2]}),
    ("/generate", {"json": None}),
    ("/generate", {"content": b"{not json", "headers": {"content-type": "application/json"}}),
    ("/generate", {"content": b"", "headers": {"content-type": "application/json"}}),
    ("/documentSearch", {"json": {"content": "", "num_docs": 0}}),
    ("/documentSearch", {"json": {"num_docs": "4"}}),
    ("/documentSearch", {"json": {"content": "x", "num_docs": 101}}),
    (
        "/uploadDocument",
        {
            "content": b"--b--\r\n",
            "headers": {"content-type": "multipart/form-data; boundary=b"},
        },
    ),
]


@pytest.mark.parametrize(("path", "request_kwargs"), INVALID)
async def test_validation_errors_are_fastapis(path: str, request_kwargs: dict[str, Any]) -> None:
    answers = []
    for app in (rag_app(), _fastapi_app()):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
            response = await client.post(path, **request_kwargs)
        answers.append((response.status_code, response.json()))
    ours, fastapi = answers
    assert ours == fastapi
    assert ours[0] == 422


async def test_unknown_form_fields_are_rejected_where_fastapi_ignores_them() -> None:
    """The one deliberate difference, documented in the rag spec: the upload form is closed
    (``additionalProperties: false``), so an unknown field is reported beside the rest."""
    transport = httpx.ASGITransport(app=rag_app())
    async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
        response = await client.post("/uploadDocument", data={"other": "field"})
    assert response.status_code == 422
    assert response.json()["detail"] == [
        {
            "type": "extra_forbidden",
            "loc": ["body", "other"],
            "msg": "Extra inputs are not permitted",
            "input": "field",
        },
        {"type": "missing", "loc": ["body", "file"], "msg": "Field required", "input": None},
    ]
