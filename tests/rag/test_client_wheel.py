"""The rag client wheel (``make dist-clients``), installed in a fresh venv, against the real
service stack served on loopback: an upload, a search and an ingestion job through it (the
wheels and the venv are those of ``tests/codegen/test_client_wheels.py``)."""

from __future__ import annotations

import asyncio
from pathlib import Path

from tests.codegen.test_client_wheels import run_in_venv, venv_python, wheels  # noqa: F401
from tests.rag.stack import RagStack, serve_on_loopback

RAG_CALLS = """
import json, sys, time
from rag_client import RagClient
with RagClient(base_url=sys.argv[1]) as client:
    uploaded = client.upload_document(("notes.txt", b"The heron nests by the river in spring."))
    hits = client.document_search({"content": "where does the heron nest", "num_docs": 2})
    job = client.create_ingestion_job(files={"file1": ("more.md", b"# Owls\\nOwls hunt at night.")})
    for _ in range(200):
        job = client.get_ingestion_job(job.job_id)
        if job.state.value not in ("queued", "running"):
            break
        time.sleep(0.05)
    health = client.health()
print(json.dumps({
    "chunks": uploaded.chunks,
    "source": hits[0].source,
    "job": [job.state.value, [f.state.value for f in job.files]],
    "health": health.status.value if hasattr(health.status, "value") else health.status,
}))
"""


async def test_installed_rag_client_calls_the_running_service(
    venv_python: Path,  # noqa: F811
    stack: RagStack,
) -> None:
    async with serve_on_loopback(stack.app) as url:
        await stack.components.wait_ready()
        answer = await asyncio.to_thread(run_in_venv, venv_python, RAG_CALLS, url)
    assert answer == {
        "chunks": 1,
        "source": "notes.txt",
        "job": ["succeeded", ["stored"]],
        "health": "ready",
    }
