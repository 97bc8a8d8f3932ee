"""Test implementations of the generated handler Protocols.

They exercise the generated layer (binding, validation, error shapes, streaming), not a
service: each returns documented, schema-valid answers from small in-memory state. When a
service's real handlers land, the contract tests run against those instead.
"""

from __future__ import annotations

import hashlib
from collections.abc import AsyncIterator

from starlette.datastructures import UploadFile

from generated.rag import models as rag
from generated.rag.handlers import RagHandlers
from generated.ratelimit import models as ratelimit
from generated.ratelimit.handlers import RatelimitHandlers
from webrest import Response


class RagContract:
    """Stores uploaded files' names; answers by echoing; searches by substring."""

    def __init__(self) -> None:
        self.documents: dict[str, tuple[str, bytes]] = {}

    async def upload_document(self, *, file: UploadFile) -> rag.UploadResult | Response:
        data = await file.read()
        name = file.filename or "upload"
        document_id = hashlib.sha256(name.encode()).hexdigest()[:16]
        self.documents[document_id] = (name, data)
        return rag.UploadResult(
            document_id=document_id,
            filename=name,
            chunks=1 if data else 0,
            message="File uploaded successfully",
        )

    async def generate(self, *, body: rag.Prompt, media_type: str) -> AsyncIterator[str] | Response:
        async def deltas() -> AsyncIterator[str]:
            words = body.question.split()[: body.num_tokens] or ["?"]
            for word in words:
                if media_type == "text/event-stream":
                    yield 'data: {"delta": "' + word.replace('"', "") + ' "}\n\n'
                else:
                    yield word + " "

        return deltas()

    async def document_search(
        self, *, body: rag.DocumentSearch
    ) -> list[rag.SearchResult] | Response:
        hits = [
            rag.SearchResult(
                score=1.0,
                source=name,
                content=data[:200].decode("utf-8", "replace"),
                document_id=document_id,
                page=None,
                chunk=0,
            )
            for document_id, (name, data) in self.documents.items()
        ]
        return hits[: body.num_docs]


class RatelimitContract:
    """Every descriptor is within its limit, except domain ``over`` which is over."""

    async def should_rate_limit(
        self, *, body: ratelimit.RateLimitRequest
    ) -> ratelimit.RateLimitResponse | Response:
        over = body.domain == "over"
        return ratelimit.RateLimitResponse.model_validate(
            {"overallCode": "OVER_LIMIT" if over else "OK"}
        )

    async def healthcheck(self) -> AsyncIterator[str] | Response:
        return Response.ok().type("text/plain").body("OK")


def _check() -> tuple[RagHandlers, RatelimitHandlers]:
    return RagContract(), RatelimitContract()  # mypy checks the Protocol conformance
