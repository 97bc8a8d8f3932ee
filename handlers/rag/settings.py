"""Every setting of the rag service, read from the environment with its default.

An invalid value raises :class:`SettingsError` naming the setting and what it accepts; the
server stops on it with exit status 2. The README's table documents each setting.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar, cast
from urllib.parse import urlsplit

from handlers.rag.ingest.base import EMBEDDING_RUNTIMES, EmbeddingRuntime

T = TypeVar("T")

LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR")
MIN_CHUNK_TOKENS = 16


class SettingsError(ValueError):
    """A setting has a value the service cannot use."""


class Environment:
    """Typed reads of settings from a mapping (``os.environ`` by default).

    An unset or empty variable gives the default.
    """

    def __init__(self, env: Mapping[str, str] | None = None) -> None:
        self._env = os.environ if env is None else env

    def get(self, name: str, default: T, parse: Callable[[str], T]) -> T:
        text = self._env.get(name, "")
        if text.strip() == "":
            return default
        try:
            return parse(text.strip())
        except ValueError as error:
            raise SettingsError(f"{name}={text!r} is invalid: expected {error}") from None

    def string(self, name: str, default: str = "") -> str:
        return self.get(name, default, str)

    def integer(self, name: str, default: int, minimum: int = 0, maximum: int | None = None) -> int:
        def parse(text: str) -> int:
            upper = "" if maximum is None else f" and at most {maximum}"
            expected = f"an integer of at least {minimum}{upper}"
            try:
                value = int(text, 10)
            except ValueError:
                raise ValueError(expected) from None
            if value < minimum or (maximum is not None and value > maximum):
                raise ValueError(expected)
            return value

        return self.get(name, default, parse)

    def optional_integer(self, name: str, minimum: int = 1) -> int | None:
        value = self.integer(name, -1, minimum=minimum)
        return None if value == -1 else value

    def seconds(self, name: str, default: float) -> float:
        def parse(text: str) -> float:
            try:
                value = float(text)
            except ValueError:
                value = -1.0
            if not 0 <= value < float("inf"):
                raise ValueError("a number of seconds (0 or more)")
            return value

        return self.get(name, default, parse)

    def url(self, name: str) -> str:
        def parse(text: str) -> str:
            parts = urlsplit(text)
            if parts.scheme not in ("http", "https") or not parts.netloc:
                raise ValueError("an http:// or https:// URL")
            return text.rstrip("/")

        return self.get(name, "", parse)

    def choice(self, name: str, default: str, choices: tuple[str, ...]) -> str:
        """One of ``choices``, compared case-insensitively; returned in the choices' spelling."""

        def parse(text: str) -> str:
            for choice in choices:
                if text.lower() == choice.lower():
                    return choice
            raise ValueError("one of " + ", ".join(choices))

        return self.get(name, default, parse)


@dataclass(frozen=True, slots=True)
class Settings:
    """The service's settings (see the README's table for each one's meaning)."""

    host: str = "127.0.0.1"
    port: int = 8000
    data_dir: Path = Path(".data/rag")
    log_level: str = "INFO"
    # models
    embedding_model: str = "all-MiniLM-L6-v2"
    embed_batch_size: int = 32
    embedding_runtime: EmbeddingRuntime = "auto"
    llm_model: str = "SmolLM2-135M-Instruct"
    llm_url: str = ""
    """Unset: the local model RAG_LLM_MODEL; set: an OpenAI-compatible endpoint."""
    llm_api_key: str = ""
    llm_name: str = ""
    """Model name sent to the endpoint; empty means RAG_LLM_MODEL's value."""
    llm_context_window: int | None = None
    """Tokens of prompt and answer together; None: the local model's own (8192 for an endpoint)."""
    generation_concurrency: int = 1
    torch_threads: int | None = None
    # ingestion and retrieval
    chunk_tokens: int = 200
    chunk_overlap_tokens: int = 40
    max_upload_bytes: int = 52_428_800
    retrieval_top_k: int = 8
    ready_timeout: float = 120.0
    # vector store
    index_threshold: int = 5_000  # LanceDbStore's INDEX_THRESHOLD (its docstring says why)
    weaviate_url: str = ""
    weaviate_grpc_port: int = 50051
    weaviate_api_key: str = ""
    collection: str = "Documents"

    @property
    def llm_endpoint_model(self) -> str:
        """The model name an OpenAI-compatible endpoint is asked for."""
        return self.llm_name or self.llm_model

    @property
    def store_kind(self) -> str:
        return "weaviate" if self.weaviate_url else "lancedb"

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Settings:
        e = Environment(env)
        d = cls()
        chunk_tokens = e.integer("RAG_CHUNK_TOKENS", d.chunk_tokens, minimum=MIN_CHUNK_TOKENS)
        overlap = e.integer(
            "RAG_CHUNK_OVERLAP_TOKENS",
            min(d.chunk_overlap_tokens, (chunk_tokens - 1) // 2),
            maximum=(chunk_tokens - 1) // 2,
        )
        collection = e.string("RAG_COLLECTION", d.collection)
        if not (collection[:1].isalpha() and collection.replace("_", "").isalnum()):
            raise SettingsError(
                f"RAG_COLLECTION={collection!r} is invalid: expected a name of letters, digits "
                "and underscores that starts with a letter"
            )
        return cls(
            host=e.string("RAG_HOST", d.host),
            port=e.integer("RAG_PORT", d.port, maximum=65535),
            data_dir=Path(e.string("RAG_DATA_DIR", str(d.data_dir))).expanduser(),
            log_level=e.choice("LOG_LEVEL", d.log_level, LOG_LEVELS),
            embedding_model=e.string("RAG_EMBEDDING_MODEL", d.embedding_model),
            embed_batch_size=e.integer(
                "RAG_EMBED_BATCH_SIZE", d.embed_batch_size, minimum=1, maximum=4096
            ),
            embedding_runtime=cast(
                EmbeddingRuntime,
                e.choice("RAG_EMBEDDING_RUNTIME", d.embedding_runtime, EMBEDDING_RUNTIMES),
            ),
            llm_model=e.string("RAG_LLM_MODEL", d.llm_model),
            llm_url=e.url("RAG_LLM_URL"),
            llm_api_key=e.string("RAG_LLM_API_KEY"),
            llm_name=e.string("RAG_LLM_NAME"),
            llm_context_window=e.optional_integer("RAG_LLM_CONTEXT_WINDOW", minimum=256),
            generation_concurrency=e.integer(
                "RAG_GENERATION_CONCURRENCY", d.generation_concurrency, minimum=1, maximum=64
            ),
            torch_threads=e.optional_integer("RAG_TORCH_THREADS", minimum=1),
            chunk_tokens=chunk_tokens,
            chunk_overlap_tokens=overlap,
            max_upload_bytes=e.integer("RAG_MAX_UPLOAD_BYTES", d.max_upload_bytes, minimum=1),
            retrieval_top_k=e.integer("RAG_RETRIEVAL_TOP_K", d.retrieval_top_k, 1, 100),
            ready_timeout=e.seconds("RAG_READY_TIMEOUT", d.ready_timeout),
            index_threshold=e.integer("RAG_INDEX_THRESHOLD", d.index_threshold, minimum=1),
            weaviate_url=e.url("WEAVIATE_URL"),
            weaviate_grpc_port=e.integer(
                "WEAVIATE_GRPC_PORT", d.weaviate_grpc_port, minimum=1, maximum=65535
            ),
            weaviate_api_key=e.string("WEAVIATE_API_KEY"),
            collection=collection,
        )
