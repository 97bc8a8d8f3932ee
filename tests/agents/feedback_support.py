"""Test support of the feedback and expected-results tests: executions stored directly.

Executions come into being through agent runs; these tests need one in a known terminal state
with known output files, so they insert it through the real schema and blob store of the
running server (the same rows and blobs a run stores).
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

import httpx
from sqlalchemy import or_, select
from sqlalchemy.orm import Session

from generated.agents.client import ServiceClient
from handlers.agents.storage.blobs import BlobStore
from handlers.agents.storage.schema import Agent, Execution, ExecutionFile, utc_now
from tests.agents.support import RunningServer

TERMINAL = ("completed", "failed", "cancelled", "rejected")

DEFAULT_OUTPUTS: dict[str, tuple[bytes, str]] = {
    "totals.json": (b'{"total": 1264.5, "currency": "EUR"}\n', "application/json"),
    "tables/lines.csv": (b"item,amount\nwidget,1200\nshipping,64.5\n", "text/csv"),
    "raw.bin": (bytes(range(256)) * 4, "application/octet-stream"),
}


@dataclass(frozen=True)
class StoredExecution:
    """An execution inserted for a test: its id, its agent, and its output files."""

    id: str
    agent_id: str
    agent_slug: str
    outputs: dict[str, tuple[bytes, str]] = field(default_factory=dict)


def key_id(secret: str) -> str:
    """The id part of a key ``sk_<id>_<secret>`` (what attribution fields show)."""
    return secret[3:19]


def new_agent(client: ServiceClient, unique: str, name: str = "fb") -> str:
    """A new agent's slug."""
    slug = f"{name}-{unique}-{secrets.token_hex(2)}"
    client.agents.create({"name": slug, "slug": slug})
    return slug


def insert_execution(
    server: RunningServer,
    agent: str,
    *,
    status: str = "completed",
    outputs: dict[str, tuple[bytes, str]] | None = None,
) -> StoredExecution:
    """An execution of ``agent`` (id or slug) in ``status``, its outputs stored as blobs."""
    files = DEFAULT_OUTPUTS if outputs is None else outputs
    blobs = BlobStore(server.storage.settings().blob_dir)
    digests = {name: blobs.put(data) for name, (data, _) in files.items()}
    execution_id = "aex_" + secrets.token_hex(8)

    def work(session: Session) -> StoredExecution:
        row = session.scalars(select(Agent).where(or_(Agent.id == agent, Agent.slug == agent)))
        stored_agent = row.one()
        now = utc_now()
        ended = status in TERMINAL
        session.add(
            Execution(
                id=execution_id,
                agent_id=stored_agent.id,
                status=status,
                input={"invoice": "acme-2026-04"},
                output={"total": 1264.5} if status == "completed" else None,
                created_at=now - timedelta(seconds=2),
                started_at=now - timedelta(seconds=1),
                completed_at=now if ended else None,
                duration_ms=1000 if ended else None,
                attempt=1,
            )
        )
        session.flush()
        for name, (data, content_type) in files.items():
            session.add(
                ExecutionFile(
                    execution_id=execution_id,
                    kind="output",
                    name=name,
                    blob_sha256=digests[name],
                    size_bytes=len(data),
                    content_type=content_type,
                    created_at=now,
                )
            )
        return StoredExecution(execution_id, stored_agent.id, stored_agent.slug, dict(files))

    return server.server.database.write_sync(work)


def raw_client(server: RunningServer, key: str | None) -> httpx.Client:
    """A plain HTTP client of the server (for what the generated client does not send)."""
    headers = {} if key is None else {"authorization": f"Bearer {key}"}
    return httpx.Client(base_url=server.url, headers=headers, timeout=30.0)


def issues(response: httpx.Response) -> list[dict[str, Any]]:
    """The envelope's issues (checking the request id is echoed)."""
    body = response.json()
    assert body["requestId"] == response.headers["x-request-id"]
    return list(body["issues"])
