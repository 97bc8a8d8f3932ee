"""The rag service under test: ``python -m handlers.rag.server`` in its own process, on a data
directory of the benchmark's, ready once ``/health`` says so."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import IO

import httpx

from bench.ratelimit.servers import BenchError, Endpoints, ServerProcess, free_port

__all__ = ["BenchError", "rag_server", "wait_ready"]

READY_DEADLINE_S = 300.0


def rag_server(data_dir: Path, llm_model: str, log: IO[bytes]) -> ServerProcess:
    """The service on a free loopback port with its embedded defaults (LanceDB in
    ``data_dir``, all-MiniLM-L6-v2) and ``llm_model``; started by the caller."""
    port = free_port()
    env = {
        **os.environ,
        "RAG_HOST": "127.0.0.1",
        "RAG_PORT": str(port),
        "RAG_DATA_DIR": str(data_dir),
        "RAG_LLM_MODEL": llm_model,
        "LOG_LEVEL": "WARNING",
    }
    command = [sys.executable, "-m", "handlers.rag.server"]
    return ServerProcess("rag-server", command, Endpoints(None, port), log=log, env=env)


def base_url(server: ServerProcess) -> str:
    return f"http://127.0.0.1:{server.endpoints.port('http')}"


def wait_ready(server: ServerProcess) -> float:
    """Seconds until ``/health`` answered 200 (models loaded, store open)."""
    started = time.monotonic()
    with httpx.Client(base_url=base_url(server), timeout=10) as client:
        while True:
            if not server.alive():
                raise BenchError(f"rag-server exited while loading.\n{server.output()}")
            try:
                response = client.get("/health")
            except httpx.TransportError:  # not answering yet (or the machine paused it)
                response = None
            if response is None:
                pass
            elif response.status_code == 200:
                return time.monotonic() - started
            elif response.json().get("status") == "failed":
                raise BenchError(f"rag-server: {response.text}\n{server.output()}")
            if time.monotonic() - started > READY_DEADLINE_S:
                raise BenchError(f"rag-server not ready after {READY_DEADLINE_S:.0f} s")
            time.sleep(0.2)
