"""Every setting of the rag service, read from the environment with its default.

:class:`Settings` is the service's :class:`~handlers.common.settings.ServiceSettings`: one field
per variable (its ``validation_alias``), its meaning as the field's ``description``, as in the
README's table. An invalid value raises the common ``SettingsError`` naming the variable and
what it accepts; the server stops on it with exit status 2. As before the common model, a value
is read without its surrounding whitespace, and a blank one counts as unset.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, ClassVar
from urllib.parse import urlsplit

from pydantic import BeforeValidator, Field, ValidationInfo, field_validator, model_validator

from handlers.common.settings import Flag, ServiceSettings
from handlers.rag.api_keys import ApiKeys
from handlers.rag.ingest.base import EMBEDDING_RUNTIMES, EmbeddingRuntime
from handlers.rag.ingest.parse_runner import DEFAULT_PARSE_CONCURRENCY, ParseLimits
from handlers.rag.stores.upkeep import UPKEEP_INTERVAL, UPKEEP_WRITES, VERSION_RETENTION

__all__ = ["DEFAULT_CHUNK_OVERLAP_TOKENS", "MIN_CHUNK_TOKENS", "Settings"]

MIN_CHUNK_TOKENS = 16
DEFAULT_CHUNK_OVERLAP_TOKENS = 40
"""RAG_CHUNK_OVERLAP_TOKENS when unset, or less than half RAG_CHUNK_TOKENS where that is less."""


def _integer(minimum: int = 0, maximum: int | None = None) -> Callable[[object], object]:
    """A parser of base-10 integers from ``minimum`` to ``maximum`` (inclusive)."""

    def parse(value: object) -> object:
        return _bounded_integer(value, minimum, maximum)

    return parse


def _bounded_integer(value: object, minimum: int, maximum: int | None) -> object:
    upper = "" if maximum is None else f" and at most {maximum}"
    expected = f"expected an integer of at least {minimum}{upper}"
    if isinstance(value, str):
        try:
            number = int(value.strip(), 10)
        except ValueError:
            raise ValueError(expected) from None
    elif isinstance(value, int) and not isinstance(value, bool):
        number = value
    else:
        return value  # None (an optional setting's default) or a type pydantic refuses
    if number < minimum or (maximum is not None and number > maximum):
        raise ValueError(expected)
    return number


def _seconds(value: object) -> object:
    if not isinstance(value, str | int | float) or isinstance(value, bool):
        return value
    try:
        seconds = float(value)
    except ValueError:
        seconds = -1.0
    if not 0 <= seconds < float("inf"):
        raise ValueError("expected a number of seconds (0 or more)")
    return seconds


def _url(value: object) -> object:
    """An http:// or https:// URL, without trailing slashes."""
    if not isinstance(value, str) or value == "":
        return value
    parts = urlsplit(value.strip())
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ValueError("expected an http:// or https:// URL")
    return value.strip().rstrip("/")


def _directory(value: object) -> object:
    return Path(value.strip()).expanduser() if isinstance(value, str) else value


def _embedding_runtime(value: object) -> object:
    """One of :data:`EMBEDDING_RUNTIMES`, in any case."""
    if not isinstance(value, str):
        return value
    for runtime in EMBEDDING_RUNTIMES:
        if value.strip().lower() == runtime:
            return runtime
    raise ValueError("expected one of " + ", ".join(EMBEDDING_RUNTIMES))


def _api_keys(value: object) -> object:
    """A ``RAG_API_KEYS`` value that parses (see :mod:`handlers.rag.api_keys`)."""
    if isinstance(value, str):
        ApiKeys.parse(value)
    return value


def _collection_name(value: object) -> object:
    if isinstance(value, str) and not (value[:1].isalpha() and value.replace("_", "").isalnum()):
        raise ValueError(
            "expected a name of letters, digits and underscores that starts with a letter"
        )
    return value


_PARSE_LIMITS = ParseLimits()
Port = Annotated[int, BeforeValidator(_integer(0, 65535))]
Url = Annotated[str, BeforeValidator(_url)]


def _overlap_default(data: dict[str, Any]) -> int:
    chunk_tokens: int = data.get("chunk_tokens", 200)  # the default when it is invalid
    return min(DEFAULT_CHUNK_OVERLAP_TOKENS, (chunk_tokens - 1) // 2)


class Settings(ServiceSettings):
    """The service's settings (the README's table says what each one means)."""

    program: ClassVar[str] = "rag-server"
    always_logged: ClassVar[tuple[str, ...]] = ("rag.startup",)

    host: str = Field(
        "127.0.0.1", validation_alias="RAG_HOST", description="address the HTTP listener binds"
    )
    port: Port = Field(
        8000,
        validation_alias="RAG_PORT",
        description="port of the HTTP listener (`0`: any free port, shown in the startup line)",
    )
    docs_enabled: Flag = Field(
        True,
        validation_alias="RAG_DOCS_ENABLED",
        description="serve Swagger UI over the API's OpenAPI document at `/docs`",
    )
    playground_enabled: Flag = Field(
        True,
        validation_alias="RAG_PLAYGROUND_ENABLED",
        description="serve the playground page at `/` (upload, documents, questions, search; "
        "outside the API's contract)",
    )
    data_dir: Annotated[Path, BeforeValidator(_directory)] = Field(
        Path(".data/rag"),
        validation_alias="RAG_DATA_DIR",
        description="LanceDB tables (`lancedb/`), upload spool (`uploads/`), ingestion jobs "
        "(`jobs/`: their spooled files and records), converted models "
        "(`models/`: the generator's dequantised GGUF, the embedding network exported to ONNX)",
    )
    # models
    embedding_model: str = Field(
        "all-MiniLM-L6-v2",
        validation_alias="RAG_EMBEDDING_MODEL",
        description="`all-MiniLM-L6-v2` (bundled) or the path of a local transformers model "
        "directory",
    )
    embed_batch_size: Annotated[int, BeforeValidator(_integer(1, 4096))] = Field(
        32,
        validation_alias="RAG_EMBED_BATCH_SIZE",
        description="texts per forward pass of the embedder (1 to 4096)",
    )
    embed_background_tokens: Annotated[int, BeforeValidator(_integer(1, 65_536))] = Field(
        256,  # the embedder's DEFAULT_BACKGROUND_TOKENS (not imported: it brings torch)
        validation_alias="RAG_EMBED_BACKGROUND_TOKENS",
        description="padded tokens (texts x longest) of one slice of ingestion embedding; "
        "ingestion runs one slice at a time, in a thread of its own, started only while no "
        "query is being embedded (a single longer text still runs alone)",
    )
    embed_background_nice: Annotated[int, BeforeValidator(_integer(0, 19))] = Field(
        19,  # the embedder's DEFAULT_BACKGROUND_NICE
        validation_alias="RAG_EMBED_BACKGROUND_NICE",
        description="nice value of the ingestion-embedding thread, so that queries get the "
        "CPU first (0: the process's own priority)",
    )
    embedding_runtime: Annotated[EmbeddingRuntime, BeforeValidator(_embedding_runtime)] = Field(
        "auto",
        validation_alias="RAG_EMBEDDING_RUNTIME",
        description="what runs the embedding network: `onnxruntime` (exported from the "
        "transformers model at the first start, cached in `models/`), `torch` (the transformers "
        "model itself) or `auto` (ONNX Runtime, or torch with a warning for a model that cannot "
        "be exported)",
    )
    llm_model: str = Field(
        "SmolLM2-135M-Instruct",
        validation_alias="RAG_LLM_MODEL",
        description="local generator: `SmolLM2-135M-Instruct` (bundled), a `.gguf` file or a "
        "transformers model directory",
    )
    llm_url: Url = Field(
        "",
        validation_alias="RAG_LLM_URL",
        description="set: answers come from this OpenAI-compatible endpoint "
        "(`/v1/chat/completions`, streamed) instead of a local model; `http://` or `https://`",
    )
    llm_api_key: str = Field(
        "", validation_alias="RAG_LLM_API_KEY", description="bearer key for `RAG_LLM_URL`"
    )
    llm_name: str = Field(
        "",
        validation_alias="RAG_LLM_NAME",
        description="model name sent to the endpoint",
        json_schema_extra={"default_text": "`RAG_LLM_MODEL`'s value"},
    )
    llm_context_window: Annotated[int | None, BeforeValidator(_integer(256))] = Field(
        None,
        validation_alias="RAG_LLM_CONTEXT_WINDOW",
        description="tokens of prompt and answer together (at least 256); caps a local model's "
        "own window",
        json_schema_extra={"default_text": "the model's own (`8192` for an endpoint)"},
    )
    generation_concurrency: Annotated[int, BeforeValidator(_integer(1, 64))] = Field(
        1,
        validation_alias="RAG_GENERATION_CONCURRENCY",
        description="answers a local model generates at once (1 to 64); others wait their turn",
    )
    torch_threads: Annotated[int | None, BeforeValidator(_integer(1))] = Field(
        None,
        validation_alias="RAG_TORCH_THREADS",
        description="CPU threads of the local models (torch's, and ONNX Runtime's for the "
        "embedder)",
        json_schema_extra={"default_text": "one per core"},
    )
    # ingestion and retrieval
    chunk_tokens: Annotated[int, BeforeValidator(_integer(MIN_CHUNK_TOKENS))] = Field(
        200,
        validation_alias="RAG_CHUNK_TOKENS",
        description="chunk size in embedding-model tokens (at least 16; at most the model's "
        "window less its special tokens)",
    )
    chunk_overlap_tokens: int = Field(
        default_factory=_overlap_default,
        validation_alias="RAG_CHUNK_OVERLAP_TOKENS",
        description="tokens shared by consecutive chunks (less than half the chunk size)",
        json_schema_extra={"default_text": "`40` (less than half `RAG_CHUNK_TOKENS`)"},
    )
    max_upload_bytes: Annotated[int, BeforeValidator(_integer(1))] = Field(
        52_428_800,
        validation_alias="RAG_MAX_UPLOAD_BYTES",
        description="largest file `/uploadDocument` accepts",
    )
    retrieval_top_k: Annotated[int, BeforeValidator(_integer(1, 100))] = Field(
        8,
        validation_alias="RAG_RETRIEVAL_TOP_K",
        description="chunks retrieved for a grounded answer (1 to 100)",
    )
    ready_timeout: Annotated[float, BeforeValidator(_seconds)] = Field(
        120.0,
        validation_alias="RAG_READY_TIMEOUT",
        description="seconds a request waits for a component that is still loading",
    )
    parse_concurrency: Annotated[int, BeforeValidator(_integer(1, 64))] = Field(
        DEFAULT_PARSE_CONCURRENCY,
        validation_alias="RAG_PARSE_CONCURRENCY",
        description="uploads parsed at once (HTML, PDF, DOCX), each in a process of its own "
        "with limited memory and time; further uploads wait. Parsing memory is at most this "
        "times `RAG_PARSE_MEMORY_BYTES`",
    )
    parse_timeout: Annotated[float, BeforeValidator(_seconds)] = Field(
        _PARSE_LIMITS.seconds,
        validation_alias="RAG_PARSE_TIMEOUT",
        description="seconds (wall clock, and CPU) one file's parse may take; a file that "
        "needs longer is refused with 422",
    )
    parse_memory_bytes: Annotated[int, BeforeValidator(_integer(64 * 1024 * 1024))] = Field(
        _PARSE_LIMITS.memory_bytes,
        validation_alias="RAG_PARSE_MEMORY_BYTES",
        description="address space (bytes) of a parse process; a file that needs more is "
        "refused with 422",
    )
    # ingestion jobs
    ingest_concurrency: Annotated[int, BeforeValidator(_integer(1, 16))] = Field(
        1,
        validation_alias="RAG_INGEST_CONCURRENCY",
        description="files of ingestion jobs (`POST /ingestionJobs`) ingested at once, over "
        "all jobs (1 to 16); the others wait in the queue",
    )
    ingest_queue_limit: Annotated[int, BeforeValidator(_integer(1, 100_000))] = Field(
        100,
        validation_alias="RAG_INGEST_QUEUE_LIMIT",
        description="files of ingestion jobs waiting or being ingested, at most; a job that "
        "would exceed it is refused with 429 and `Retry-After` (an empty queue accepts any one "
        "job)",
    )
    ingest_queue_bytes: Annotated[int, BeforeValidator(_integer(1))] = Field(
        1024 * 1024 * 1024,
        validation_alias="RAG_INGEST_QUEUE_BYTES",
        description="bytes of ingestion job files spooled in `jobs/` and not yet ingested, at "
        "most; a job that would exceed it is refused with 429 (an empty queue accepts any one "
        "job)",
    )
    ingest_job_retention: Annotated[float, BeforeValidator(_seconds)] = Field(
        86_400.0,
        validation_alias="RAG_INGEST_JOB_RETENTION",
        description="seconds a finished ingestion job can still be looked up (at most the "
        "1,000 most recent finished jobs are kept)",
    )
    # vector store
    index_threshold: Annotated[int, BeforeValidator(_integer(1))] = Field(
        5_000,  # LanceDbStore's INDEX_THRESHOLD (its docstring says why)
        validation_alias="RAG_INDEX_THRESHOLD",
        description="LanceDB: chunks from which an ANN vector index (IVF_SQ, re-ranked on the "
        "stored vectors) is built; exact search below",
    )
    store_version_retention: Annotated[float, BeforeValidator(_seconds)] = Field(
        VERSION_RETENTION,
        validation_alias="RAG_STORE_VERSION_RETENTION",
        description="LanceDB: seconds a table version is kept once a newer one replaced it "
        "(counted from when it was written). The server's own searches never need old "
        "versions; they give another process reading the directory time to finish a query. "
        "Longer keeps more copies on disk while uploads come; once they stop, upkeep brings "
        "the store back to its live data after this long",
    )
    store_upkeep_writes: Annotated[int, BeforeValidator(_integer(1, 100_000))] = Field(
        UPKEEP_WRITES,
        validation_alias="RAG_STORE_UPKEEP_WRITES",
        description="LanceDB: writes (uploads, deletions) after which store upkeep runs "
        "(compaction, removal of old versions, index refresh); it also runs 1 s after the "
        "last write, and once more `RAG_STORE_VERSION_RETENTION` later",
    )
    store_upkeep_interval: Annotated[float, BeforeValidator(_seconds)] = Field(
        UPKEEP_INTERVAL,
        validation_alias="RAG_STORE_UPKEEP_INTERVAL",
        description="LanceDB: least seconds between the starts of two upkeep rounds (they are "
        "also spaced by 4 times the last round's duration, so upkeep takes at most a fifth of "
        "the time)",
    )
    weaviate_url: Url = Field(
        "",
        validation_alias="WEAVIATE_URL",
        description="set: chunks are stored in this Weaviate server instead of LanceDB",
    )
    weaviate_grpc_port: Annotated[int, BeforeValidator(_integer(1, 65535))] = Field(
        50051, validation_alias="WEAVIATE_GRPC_PORT", description="Weaviate's gRPC port"
    )
    weaviate_api_key: str = Field(
        "", validation_alias="WEAVIATE_API_KEY", description="Weaviate API key"
    )
    collection: Annotated[str, BeforeValidator(_collection_name)] = Field(
        "Documents", validation_alias="RAG_COLLECTION", description="Weaviate collection name"
    )
    api_keys: Annotated[str, BeforeValidator(_api_keys)] = Field(
        "",
        validation_alias="RAG_API_KEYS",
        description="set: every request but `/health` needs `Authorization: Bearer <key>` "
        "(401 without a valid one), and a key reads and writes only its collections (403 for "
        "another); entries `KEY:COLLECTIONS` separated by blanks or `;`, collections separated "
        "by commas or `*` for all (`k-0123456789abcdef:default,legal`); unset: no keys",
    )

    @model_validator(mode="before")
    @classmethod
    def _blank_is_unset(cls, data: Any) -> Any:
        """Values without their surrounding whitespace; a blank value counts as unset."""
        if not isinstance(data, dict):
            return data
        return {
            name: value.strip() if isinstance(value, str) else value
            for name, value in data.items()
            if not (isinstance(value, str) and value.strip() == "")
        }

    @field_validator("chunk_overlap_tokens", mode="before")
    @classmethod
    def _overlap_under_half_a_chunk(cls, value: object, info: ValidationInfo) -> object:
        chunk_tokens = info.data.get("chunk_tokens")
        maximum = None if chunk_tokens is None else (chunk_tokens - 1) // 2
        return _bounded_integer(value, 0, maximum)

    @property
    def llm_endpoint_model(self) -> str:
        """The model name an OpenAI-compatible endpoint is asked for."""
        return self.llm_name or self.llm_model

    @property
    def api_key_scopes(self) -> ApiKeys | None:
        """The API keys and their collections; None when keys are off."""
        return ApiKeys.parse(self.api_keys)

    @property
    def store_kind(self) -> str:
        return "weaviate" if self.weaviate_url else "lancedb"
