"""Running small real Python agents through the runner, and watching their processes."""

from __future__ import annotations

import asyncio
import sys
import textwrap
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from handlers.agents.runner import CancelSignal, RunOutcome, RunSpec, Unsandboxed, run
from handlers.agents.runner.process_group import process_alive
from handlers.agents.runner.rlimits import find_prlimit

RunAgent = Callable[..., Awaitable[RunOutcome]]

UNSANDBOXED = Unsandboxed(prlimit=find_prlimit() or "prlimit")
"""These tests watch the program's processes from the host (their pids, files it writes
outside its run directory), so they run it unsandboxed; tests/agents/test_isolation.py runs
programs in the sandbox."""


def agent_spec(code: str, **fields: Any) -> RunSpec:
    """A spec whose workspace holds ``main.py`` with ``code``, run as ``python main.py``."""
    workspace = {"main.py": textwrap.dedent(code).encode(), **fields.pop("workspace", {})}
    fields.setdefault("timeout_seconds", 20.0)
    return RunSpec(
        execution_id=fields.pop("execution_id", "exec-1"),
        command=(sys.executable, "main.py"),
        workspace=workspace,
        **fields,
    )


@pytest.fixture
def runs_dir(tmp_path: Path) -> Iterator[Path]:
    """The work root of the runs; every test ends with it empty (each run removed its dir)."""
    root = tmp_path / "runs"
    root.mkdir()
    yield root
    assert entries(root) == []


def entries(directory: Path) -> list[Path]:
    return list(directory.iterdir())


@pytest.fixture
def run_agent(runs_dir: Path) -> RunAgent:
    async def run_agent(code: str, cancel: CancelSignal | None = None, **fields: Any) -> RunOutcome:
        spec = agent_spec(code, **fields)
        outcome = await run(spec, cancel or CancelSignal(), sandbox=UNSANDBOXED, work_root=runs_dir)
        assert entries(runs_dir) == [], "the run directory was not removed"
        return outcome

    return run_agent


def pids_in(text: str, label: str) -> list[int]:
    """The numbers printed as ``<label> <pid>`` lines."""
    return [int(line.split()[1]) for line in text.splitlines() if line.startswith(label + " ")]


async def wait_for_file(path: Path, seconds: float = 10.0) -> str:
    """Poll until ``path`` exists and is not empty; return its text."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + seconds
    while (text := _text_if_written(path)) is None:
        assert loop.time() < deadline, f"{path} did not appear"
        await asyncio.sleep(0.02)
    return text


def _text_if_written(path: Path) -> str | None:
    return path.read_text() if path.exists() and path.stat().st_size else None


SPAWNS_SLEEPING_CHILD = """
    import os, subprocess, sys, time
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    report = f"leader {os.getpid()}\\nchild {child.pid}\\n"
    print(report, end="", flush=True)
    if "READY_FILE" in os.environ:
        with open(os.environ["READY_FILE"], "w") as ready:
            ready.write(report)
    time.sleep(30)
"""
"""An agent that starts a child, reports both pids (stdout and $READY_FILE) and sleeps 30 s."""


def assert_all_gone(pids: list[int]) -> None:
    assert pids, "no pid reported"
    alive = [pid for pid in pids if process_alive(pid)]
    assert alive == [], f"processes left running: {alive}"
