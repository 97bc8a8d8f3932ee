"""The trivial agent every run of the benchmark executes, and the baseline: the same program
run directly as a subprocess (``python main.py``) with the runner's directories and variables,
without the service."""

from __future__ import annotations

import json
import secrets
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from bench.ratelimit.servers import BenchError
from generated.agents.client import ServiceClient

__all__ = ["PROGRAM", "create_agent", "direct_run_seconds", "direct_runs_per_second"]

# Reads its input, prints and writes a tiny JSON output (the runner's contract:
# $AGENT_OUTPUT_DIR/output.json).
PROGRAM = """\
import json, os, pathlib
data = json.loads((pathlib.Path(os.environ["AGENT_INPUT_DIR"]) / "input.json").read_text())
result = json.dumps({"ok": True, "n": data.get("n")})
print(result)
(pathlib.Path(os.environ["AGENT_OUTPUT_DIR"]) / "output.json").write_text(result)
"""

CONFIG = {"entrypoint": ["python", "main.py"], "timeoutSeconds": 60}


def create_agent(client: ServiceClient, purpose: str) -> str:
    """A new agent running :data:`PROGRAM`; its slug."""
    slug = f"bench-{purpose}-{secrets.token_hex(3)}"
    client.agents.create({"name": slug, "slug": slug, "config": CONFIG})
    client.agents.put_file(slug, {"content": PROGRAM}, path="main.py")
    return slug


def direct_run_seconds(root: Path, n: int = 0) -> float:
    """Seconds one ``python main.py`` takes in a fresh run directory under ``root`` (input
    written, output read back: what the runner itself must do around the program)."""
    run_dir = Path(tempfile.mkdtemp(dir=root))
    workspace, inputs, outputs = run_dir / "workspace", run_dir / "input", run_dir / "output"
    started = time.perf_counter()
    for folder in (workspace, inputs, outputs):
        folder.mkdir()
    (workspace / "main.py").write_text(PROGRAM)
    (inputs / "input.json").write_text(json.dumps({"n": n}))
    env = {
        "PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin",
        "HOME": str(workspace),
        "AGENT_INPUT_DIR": str(inputs),
        "AGENT_OUTPUT_DIR": str(outputs),
    }
    done = subprocess.run(
        ["python", "main.py"],
        cwd=workspace,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        timeout=60,
    )
    output = json.loads((outputs / "output.json").read_text())
    elapsed = time.perf_counter() - started
    if done.returncode != 0 or output != {"ok": True, "n": n}:
        raise BenchError(f"the agent program failed directly: {done.stderr.decode()[-500:]}")
    return elapsed


def direct_runs_per_second(root: Path, count: int, parallel: int) -> float:
    """Runs per second of ``count`` direct runs, ``parallel`` at a time."""
    started = time.perf_counter()
    with ThreadPoolExecutor(parallel) as pool:
        list(pool.map(lambda n: direct_run_seconds(root, n), range(count)))
    return count / (time.perf_counter() - started)
