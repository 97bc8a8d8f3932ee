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
contents are blobs already, and identical workspaces share one snapshot blob.
"""

from __future__ import annotations

import json
from collections.abc import Mapping

__all__ = [
    "INPUT",
    "ISSUES",
    "ISSUES_NAME",
    "LOG",
    "OUTPUT",
    "TRACE",
    "TRACE_NAME",
    "WORKSPACE",
    "WORKSPACE_NAME",
    "read_workspace_manifest",
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
