"""How the process ends, in real child processes: components left running until the
interpreter exits close cleanly from an ``atexit`` hook (as schemathesis stops the ASGI
lifespans it started); after a failed start, a load that hangs cannot keep it from exiting."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]

CHILD = """
import asyncio, atexit, logging, sys, threading
from pathlib import Path

from handlers.rag.generation.base import ChatMessage
from handlers.rag.ingest.embedder import load_model
from tests.rag.stack import build_stack

logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
data_dir, generator_model = Path(sys.argv[1]), Path(sys.argv[2])
stack = build_stack(
    data_dir, minilm=lambda: load_model("all-MiniLM-L6-v2"), generator_model=generator_model
)
loop = asyncio.new_event_loop()
threading.Thread(target=loop.run_forever, daemon=True).start()


def call(work):
    return asyncio.run_coroutine_threadsafe(work(), loop).result(60)


async def use():  # both worker pools have threads to end
    await (await stack.components.embedder()).embed(["a question"])
    generator = await stack.components.generator()
    async for _ in generator.stream([ChatMessage("user", "Hello")], 2):
        pass


call(use)
atexit.register(call, stack.close)
print("components used, leaving them to atexit", flush=True)
"""


def test_components_left_running_close_cleanly_at_interpreter_exit(
    tmp_path: Path, tiny_model: Path
) -> None:
    child = subprocess.run(
        [sys.executable, "-c", CHILD, str(tmp_path / "data"), str(tiny_model)],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert child.returncode == 0, child.stderr
    assert child.stdout == "components used, leaving them to atexit\n"
    problems = [
        line
        for line in child.stderr.splitlines()
        if "WARNING" in line or "ERROR" in line or "Traceback" in line
    ]
    assert problems == []


LOAD_THAT_HANGS = """
import logging, sys, threading, time
from handlers.rag.server import leave_loading_threads

logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(levelname)s %(message)s")
threading.Thread(target=time.sleep, args=(3600,), name="hanging-load").start()
leave_loading_threads(1, grace_seconds=0.5)
print("not reached", flush=True)
"""


def test_a_failed_start_exits_even_while_another_load_hangs() -> None:
    """After a component failed, a load still running elsewhere (say, a model on a stalled
    disk) gets a grace period, then the process exits with the failure's status anyway."""
    started = time.monotonic()
    child = subprocess.run(
        [sys.executable, "-c", LOAD_THAT_HANGS],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert child.returncode == 1, child.stderr
    assert child.stdout == ""
    assert "WARNING exiting while a load is still running (hanging-load)" in child.stderr
    assert time.monotonic() - started < 60
