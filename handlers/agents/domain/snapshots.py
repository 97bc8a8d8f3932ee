"""What an execution keeps: the kinds of its ``execution_files`` and its workspace snapshot.

| kind | names | what |
|---|---|---|
| ``input`` | the uploaded files' names | input files (``$AGENT_INPUT_DIR/files/<name>``) |
| ``workspace`` | ``manifest.json`` | the agent's workspace when the execution was created |
| ``output`` | relative paths | files the program wrote to ``$AGENT_OUTPUT_DIR`` |
| ``issues`` / ``trace`` | ``issues.md`` / ``trace.jsonl`` | the program's issues and trace |
| ``log`` | ``stdout.txt``, ``stderr.txt`` | the last MB of each stream |
| ``expected`` | expected paths | expected files (:mod:`handlers.agents.domain.expected`) |

The workspace snapshot is a JSON document ``{"files": {path: sha256}}`` stored as a blob: the
contents are blobs already, and identical workspaces share one snapshot blob. The agent row
keeps the hash and size of its current workspace's snapshot (``workspace_sha256``,
``workspace_bytes``), refreshed by every transaction that changes the workspace
(:func:`refresh_workspace`), so a run records its snapshot without reading the file list
(:func:`current_workspace`); an agent stored before those columns existed gets them on first use.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

from sqlalchemy import ColumnElement, Table, bindparam, func, literal_column, select
from sqlalchemy.orm import Session

from handlers.agents.storage.blobs import BlobStore
from handlers.agents.storage.precompiled import Precompiled
from handlers.agents.storage.schema import Agent, AgentFile, Execution, ExecutionFile

__all__ = [
    "INPUT",
    "ISSUES",
    "ISSUES_NAME",
    "LOG",
    "OUTPUT",
    "SNAPSHOT_COLUMNS",
    "RunSnapshot",
    "TRACE",
    "TRACE_NAME",
    "WORKSPACE",
    "WORKSPACE_NAME",
    "current_workspace",
    "read_run_snapshot",
    "run_snapshot",
    "read_workspace_manifest",
    "refresh_workspace",
    "workspace_manifest",
]

INPUT = "input"
OUTPUT = "output"
ISSUES = "issues"
TRACE = "trace"
WORKSPACE = "workspace"
LOG = "log"

ISSUES_NAME = "issues.md"
TRACE_NAME = "trace.jsonl"
WORKSPACE_NAME = "manifest.json"


def workspace_manifest(files: Mapping[str, str]) -> bytes:
    """The snapshot document of a workspace (path -> blob hash)."""
    return json.dumps({"files": dict(sorted(files.items()))}, separators=(",", ":")).encode()


def read_workspace_manifest(data: bytes) -> dict[str, str]:
    """The path -> blob hash map of a snapshot document; ValueError when it is malformed."""
    document = json.loads(data)
    files = document.get("files") if isinstance(document, dict) else None
    if not isinstance(files, dict) or not all(
        isinstance(path, str) and isinstance(digest, str) for path, digest in files.items()
    ):
        raise ValueError("malformed workspace snapshot")
    return dict(files)


def refresh_workspace(session: Session, blobs: BlobStore, agent: Agent) -> tuple[str, int]:
    """Store the snapshot of ``agent``'s workspace as it is in this transaction (the blob
    first) and record its hash and size on the agent; the hash and size. Called by every
    transaction that changes the workspace, after the change (the agent row is locked)."""
    session.flush()
    rows = session.execute(
        select(AgentFile.path, AgentFile.blob_sha256).where(AgentFile.agent_id == agent.id)
    ).all()
    manifest = workspace_manifest({path: digest for path, digest in rows})
    digest = blobs.put(manifest)  # before the commit that refers to it
    assert digest == hashlib.sha256(manifest).hexdigest()
    agent.workspace_sha256, agent.workspace_bytes = digest, len(manifest)
    return digest, len(manifest)


def current_workspace(session: Session, blobs: BlobStore, agent: Agent) -> tuple[str, int]:
    """The hash and size of the snapshot of ``agent``'s current workspace (its blob exists)."""
    if agent.workspace_sha256 is not None and agent.workspace_bytes is not None:
        return agent.workspace_sha256, agent.workspace_bytes
    return refresh_workspace(session, blobs, agent)


@dataclass(frozen=True)
class RunSnapshot:
    """What an agent execution runs from: its manifest as it was at creation (``config``), its
    input, the hash of its workspace snapshot blob and its input files (name -> blob hash)."""

    config: dict[str, Any]
    input_json: object
    workspace_manifest: str
    input_files: dict[str, str]


_FILES = cast(Table, ExecutionFile.__table__)
_EXECUTIONS = cast(Table, Execution.__table__)


def _literal(value: str) -> ColumnElement[str]:
    return literal_column(f"'{value}'")  # this module's constants: no bind parameter to render


SNAPSHOT_COLUMNS: tuple[ColumnElement[Any], ...] = (
    _EXECUTIONS.c.config_snapshot,
    _EXECUTIONS.c.input,
    select(_FILES.c.blob_sha256)
    .where(
        _FILES.c.execution_id == _EXECUTIONS.c.id,
        _FILES.c.kind == _literal(WORKSPACE),
        _FILES.c.name == _literal(WORKSPACE_NAME),
    )
    .scalar_subquery(),
    select(func.count())
    .select_from(_FILES)
    .where(_FILES.c.execution_id == _EXECUTIONS.c.id, _FILES.c.kind == _literal(INPUT))
    .scalar_subquery(),
)
"""What an agent execution's row says of its snapshot (config, input, workspace snapshot
hash, number of input files): selected, or returned by the claim that starts it."""

_SNAPSHOT = Precompiled(
    select(*SNAPSHOT_COLUMNS).where(
        _EXECUTIONS.c.id == bindparam("execution_id", type_=_EXECUTIONS.c.id.type)
    )
)
_INPUT_FILES = Precompiled(
    select(_FILES.c.name, _FILES.c.blob_sha256).where(
        _FILES.c.execution_id == bindparam("execution_id", type_=_FILES.c.execution_id.type),
        _FILES.c.kind == _literal(INPUT),
    )
)


def run_snapshot(session: Session, execution_id: str, row: Sequence[Any]) -> RunSnapshot:
    """The snapshot of agent execution ``execution_id`` from ``row`` (its
    :data:`SNAPSHOT_COLUMNS`); its input files are read only when it has some. Raises
    LookupError when it has no workspace snapshot."""
    config, input_json, manifest, input_count = row
    if manifest is None:
        raise LookupError("the execution has no workspace snapshot")
    inputs: dict[str, str] = {}
    if input_count:
        rows = _INPUT_FILES.rows(session, {"execution_id": execution_id})
        inputs = {name: digest for name, digest in rows}
    return RunSnapshot(
        config=dict(config or {}),
        input_json=input_json if input_json is not None else {},
        workspace_manifest=manifest,
        input_files=inputs,
    )


def read_run_snapshot(session: Session, execution_id: str) -> RunSnapshot:
    """The snapshot of agent execution ``execution_id``; LookupError when the execution or its
    workspace snapshot does not exist."""
    rows = _SNAPSHOT.rows(session, {"execution_id": execution_id})
    if not rows:
        raise LookupError(f"execution {execution_id} does not exist")
    return run_snapshot(session, execution_id, rows[0])
