"""The reranker's settings, read from the environment like the service's own.

:class:`RerankSettings` is a :class:`~handlers.common.settings.ServiceSettings`: the service's
``Settings`` can inherit it (``class Settings(RerankSettings)``), so that its variables are
read, checked and listed in ``docs/settings.md`` with the others. This module imports neither
torch nor the service's settings module (which may import it).

Which reranker runs (:attr:`RerankSettings.choice`):

- ``RAG_RERANK=off``: none;
- ``auto`` (the default): the endpoint when ``RAG_RERANK_URL`` is set, else the local
  cross-encoder when ``RAG_RERANK_MODEL`` is set, else none;
- ``on``: the same, but one of them must be set (the server refuses to start otherwise).

Setting both ``RAG_RERANK_URL`` and ``RAG_RERANK_MODEL`` is refused: which one would score
would be a guess.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal, Self

from pydantic import AnyHttpUrl, BeforeValidator, Field, SecretStr, model_validator

from handlers.common.settings import ServiceSettings

__all__ = ["RERANK_MODES", "RerankChoice", "RerankMode", "RerankSettings"]

RERANK_MODES = ("auto", "on", "off")
RerankMode = Literal["auto", "on", "off"]
RerankChoice = Literal["remote", "local", "none"]


def _mode(value: object) -> object:
    """One of :data:`RERANK_MODES`, in any case (``true``/``false`` and the like too)."""
    if not isinstance(value, str):
        return value
    text = value.strip().lower()
    aliases = {"1": "on", "true": "on", "yes": "on", "0": "off", "false": "off", "no": "off"}
    text = aliases.get(text, text)
    if text not in RERANK_MODES:
        raise ValueError("expected one of " + ", ".join(RERANK_MODES))
    return text


def _directory(value: object) -> object:
    return Path(value.strip()).expanduser() if isinstance(value, str) else value


class RerankSettings(ServiceSettings):
    """The reranker's variables (``RAG_RERANK*``)."""

    rerank: Annotated[RerankMode, BeforeValidator(_mode)] = Field(
        "auto",
        validation_alias="RAG_RERANK",
        description="rerank the fused search results with a cross-encoder: `auto` (when "
        "`RAG_RERANK_URL` or `RAG_RERANK_MODEL` is set), `on` (one of them must be set) or "
        "`off`",
    )
    rerank_model: Annotated[Path | None, BeforeValidator(_directory)] = Field(
        None,
        validation_alias="RAG_RERANK_MODEL",
        description="local cross-encoder: the path of a transformers sequence-classification "
        "model directory (e.g. a copy of `cross-encoder/ms-marco-MiniLM-L6-v2`), run on the "
        "CPU; never downloaded",
    )
    rerank_url: AnyHttpUrl | None = Field(
        None,
        validation_alias="RAG_RERANK_URL",
        description="remote reranker: the URL of a `/rerank` endpoint (Cohere, Jina, vLLM or "
        "Infinity request shape: `{model, query, documents, top_n}` answered with `{results: "
        "[{index, relevance_score}]}`)",
    )
    rerank_remote_model: str = Field(
        "",
        validation_alias="RAG_RERANK_REMOTE_MODEL",
        max_length=256,
        description="`model` sent to `RAG_RERANK_URL` (omitted when empty)",
    )
    rerank_api_key: SecretStr | None = Field(
        None,
        validation_alias="RAG_RERANK_API_KEY",
        description="bearer token sent to `RAG_RERANK_URL` (`Authorization: Bearer …`); never "
        "logged",
    )
    rerank_candidates: int = Field(
        50,
        validation_alias="RAG_RERANK_CANDIDATES",
        ge=1,
        le=200,
        description="fused results the reranker scores per search, whatever the number asked "
        "for (1 to 200); the results after them keep their fused order",
    )
    rerank_batch: int = Field(
        16,
        validation_alias="RAG_RERANK_BATCH",
        ge=1,
        le=256,
        description="(query, passage) pairs per forward pass of the local cross-encoder (1 to 256)",
    )
    rerank_max_tokens: int = Field(
        512,
        validation_alias="RAG_RERANK_MAX_TOKENS",
        ge=16,
        le=8192,
        description="tokens of one (query, passage) pair the local cross-encoder reads, at most "
        "its window; the longer of the two is cut first",
    )
    rerank_timeout: float = Field(
        10.0,
        validation_alias="RAG_RERANK_TIMEOUT",
        gt=0,
        le=300,
        description="seconds one call to `RAG_RERANK_URL` may take, connection included; "
        "past it the search keeps its fused order",
    )

    @model_validator(mode="after")
    def _one_reranker(self) -> Self:
        if self.rerank_url is not None and self.rerank_model is not None:
            raise ValueError("set RAG_RERANK_URL or RAG_RERANK_MODEL, not both")
        if self.rerank == "on" and self.choice == "none":
            raise ValueError("RAG_RERANK=on needs RAG_RERANK_URL or RAG_RERANK_MODEL")
        return self

    @property
    def choice(self) -> RerankChoice:
        """Which reranker these settings ask for (see the module's docstring)."""
        if self.rerank == "off":
            return "none"
        if self.rerank_url is not None:
            return "remote"
        if self.rerank_model is not None:
            return "local"
        return "none"
