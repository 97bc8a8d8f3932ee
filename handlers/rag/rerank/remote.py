"""A client of a remote ``/rerank`` endpoint, the request shape Cohere, Jina, vLLM and
Infinity share.

Request: ``POST <url>`` with ``{"model": ..., "query": ..., "documents": [...], "top_n": n,
"return_documents": false}`` (``model`` left out when none is configured; a bearer token when
one is). Answer: ``{"results": [{"index": i, "relevance_score": s}, ...]}`` with every index
from 0 to n - 1 exactly once, in any order; other fields are ignored.

Bounded, as anything that talks to another machine must be: the whole call (connection,
request, answer) has ``timeout`` seconds; an answer is read up to :data:`MAX_RESPONSE_BYTES`
(about 60 bytes per result are needed) and refused beyond; the query and passages are cut as
:func:`~handlers.rag.rerank.base.clipped` says. No retry: a failed call raises
:class:`~handlers.rag.rerank.base.RerankError` at once and the search keeps its fused order.
"""

from __future__ import annotations

import asyncio
import json
import math
from collections.abc import Mapping, Sequence
from typing import Any

import httpx

from handlers.rag.rerank.base import RerankError, clipped

__all__ = ["MAX_RESPONSE_BYTES", "RemoteReranker"]

MAX_RESPONSE_BYTES = 1024 * 1024
"""Most bytes of an answer read (documents echoed back included); a longer one is refused."""
_ERROR_EXCERPT = 200  # characters of an error answer quoted in the exception


class RemoteReranker:
    """The :class:`~handlers.rag.rerank.base.Reranker` of a ``/rerank`` endpoint."""

    def __init__(
        self,
        url: str,
        *,
        model: str = "",
        api_key: str | None = None,
        timeout: float = 10.0,
        max_response_bytes: int = MAX_RESPONSE_BYTES,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        if timeout <= 0:
            raise ValueError(f"timeout must be positive, got {timeout}")
        headers = {"Accept": "application/json"}
        if api_key:
            headers["Authorization"] = f"Bearer {api_key}"
        self._url = url
        self._model = model
        self._timeout = timeout
        self._max_response_bytes = max_response_bytes
        self._client = httpx.AsyncClient(
            headers=headers,
            timeout=httpx.Timeout(timeout),
            follow_redirects=False,
            transport=transport,
            trust_env=False,  # no proxy from the environment: the URL is what is called
        )

    @property
    def name(self) -> str:
        return self._model or self._url

    async def rerank(self, query: str, passages: Sequence[str]) -> list[float]:
        if self._client.is_closed:
            raise RerankError("the reranker is closed")
        if not passages:
            return []
        query, documents = clipped(query, passages)
        body: dict[str, Any] = {
            "query": query,
            "documents": documents,
            "top_n": len(documents),
            "return_documents": False,
        }
        if self._model:
            body["model"] = self._model
        try:
            async with asyncio.timeout(self._timeout):
                status, content = await self._post(body)
        except TimeoutError:
            raise RerankError(
                f"the rerank endpoint did not answer within {self._timeout:g} s"
            ) from None
        except httpx.HTTPError as exc:
            raise RerankError(f"the rerank endpoint cannot be reached: {exc!r}") from exc
        if status != 200:
            excerpt = content[:_ERROR_EXCERPT].decode("utf-8", "replace")
            raise RerankError(f"the rerank endpoint answered {status}: {excerpt!r}")
        return _scores(content, len(documents))

    async def close(self) -> None:
        await self._client.aclose()

    async def _post(self, body: Mapping[str, Any]) -> tuple[int, bytes]:
        """The answer's status and body, read up to the limit (an error answer's start only)."""
        async with self._client.stream("POST", self._url, json=body) as response:
            limit = self._max_response_bytes if response.status_code == 200 else _ERROR_EXCERPT
            declared = response.headers.get("content-length", "")
            if declared.isdigit() and int(declared) > limit and response.status_code == 200:
                raise RerankError(
                    f"the rerank endpoint's answer is {declared} bytes (at most {limit})"
                )
            content = bytearray()
            async for piece in response.aiter_bytes():
                content += piece
                if len(content) > limit:
                    if response.status_code == 200:
                        raise RerankError(
                            f"the rerank endpoint's answer is longer than {limit} bytes"
                        )
                    break
            return response.status_code, bytes(content)


def _scores(content: bytes, count: int) -> list[float]:
    """The scores of an answer, by document index; :class:`RerankError` for anything else."""
    try:
        answer = json.loads(content)
    except ValueError:  # also UnicodeDecodeError
        raise RerankError("the rerank endpoint's answer is not JSON") from None
    results = answer.get("results") if isinstance(answer, dict) else None
    if not isinstance(results, list):
        raise RerankError("the rerank endpoint's answer has no list of results")
    scores: list[float | None] = [None] * count
    for result in results:
        index = result.get("index") if isinstance(result, dict) else None
        score = result.get("relevance_score") if isinstance(result, dict) else None
        if not isinstance(index, int) or isinstance(index, bool) or not 0 <= index < count:
            raise RerankError(f"the rerank endpoint gave a result without a valid index: {index!r}")
        if (
            not isinstance(score, int | float)
            or isinstance(score, bool)
            or not math.isfinite(score)
        ):
            raise RerankError(f"the rerank endpoint gave document {index} the score {score!r}")
        if scores[index] is not None:
            raise RerankError(f"the rerank endpoint scored document {index} twice")
        scores[index] = float(score)
    missing = [index for index, score in enumerate(scores) if score is None]
    if missing:
        raise RerankError(f"the rerank endpoint left out {len(missing)} of {count} documents")
    return [score for score in scores if score is not None]
