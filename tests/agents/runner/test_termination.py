"""How runs end: exit codes, timeouts, cancellation, resource limits; no process outlives them."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from handlers.agents.runner import CancelSignal, RunLimits, run
from tests.agents.runner.conftest import (
    SPAWNS_SLEEPING_CHILD,
    UNSANDBOXED,
    RunAgent,
    agent_spec,
    assert_all_gone,
    entries,
    pids_in,
    wait_for_file,
)


async def test_nonzero_exit_fails_with_the_exit_code_and_stderr_tail(run_agent: RunAgent) -> None:
    code = """
        import sys
        print("working", flush=True)
        print("step 1 ok", file=sys.stderr)
        print("could not reach the model", file=sys.stderr)
        sys.exit(3)
    """
    outcome = await run_agent(code)

    assert outcome.status == "failed"
    assert outcome.exit_code == 3
    assert outcome.error == "exit code 3: step 1 ok\ncould not reach the model"
    assert outcome.stdout_tail == "working\n"


async def test_timeout_ends_the_program_and_its_children(run_agent: RunAgent) -> None:
    started = time.monotonic()
    outcome = await run_agent(SPAWNS_SLEEPING_CHILD, timeout_seconds=1)
    elapsed = time.monotonic() - started

    assert outcome.status == "failed"
    assert outcome.error == "timed out after 1 s"
    assert elapsed < 3.5
    assert_all_gone(pids_in(outcome.stdout_tail, "leader") + pids_in(outcome.stdout_tail, "child"))


async def test_a_program_ignoring_sigterm_is_killed_after_the_grace_period(
    run_agent: RunAgent,
) -> None:
    code = """
        import os, signal, time
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        print("leader", os.getpid(), flush=True)
        time.sleep(30)
    """
    started = time.monotonic()
    outcome = await run_agent(code, timeout_seconds=0.5)

    assert outcome.status == "failed"
    assert outcome.error == "timed out after 0.5 s"
    assert outcome.exit_code == -9
    assert 2.4 < time.monotonic() - started < 5
    assert_all_gone(pids_in(outcome.stdout_tail, "leader"))


async def test_cancel_while_running_ends_the_program_and_its_children(
    runs_dir: Path, tmp_path: Path
) -> None:
    ready = tmp_path / "ready"
    cancel = CancelSignal()
    spec = agent_spec(SPAWNS_SLEEPING_CHILD, env={"READY_FILE": str(ready)})
    running = asyncio.create_task(run(spec, cancel, sandbox=UNSANDBOXED, work_root=runs_dir))
    pids = pids_in(await wait_for_file(ready), "leader") + pids_in(ready.read_text(), "child")

    requested = time.monotonic()
    cancel.request()
    outcome = await running

    assert time.monotonic() - requested < 2
    assert outcome.status == "cancelled"
    assert outcome.error == "cancelled"
    assert cancel.requested
    assert_all_gone(pids)


async def test_cancel_observed_through_the_poll_callback(runs_dir: Path, tmp_path: Path) -> None:
    ready = tmp_path / "ready"
    polls = 0

    async def cancel_flag_is_set() -> bool:  # stands for a worker reading the database flag
        nonlocal polls
        polls += 1
        return ready.exists() and ready.stat().st_size > 0

    cancel = CancelSignal(cancel_flag_is_set, poll_interval=0.05)
    spec = agent_spec(SPAWNS_SLEEPING_CHILD, env={"READY_FILE": str(ready)})
    started = time.monotonic()
    outcome = await run(spec, cancel, sandbox=UNSANDBOXED, work_root=runs_dir)

    assert outcome.status == "cancelled"
    assert time.monotonic() - started < 5
    assert polls >= 1  # the first poll one interval after the run began (none at its start)
    assert_all_gone(pids_in(ready.read_text(), "leader") + pids_in(ready.read_text(), "child"))


async def test_a_failing_poll_is_retried(runs_dir: Path) -> None:
    calls = 0

    async def flaky() -> bool:
        nonlocal calls
        calls += 1
        if calls == 1:
            raise ConnectionError("database went away")
        return True

    outcome = await run(
        agent_spec("import time; time.sleep(30)"),
        CancelSignal(flaky, poll_interval=0.05),
        sandbox=UNSANDBOXED,
        work_root=runs_dir,
    )

    assert outcome.status == "cancelled"
    assert calls == 2


async def test_cancel_requested_before_the_start_runs_nothing(run_agent: RunAgent) -> None:
    cancel = CancelSignal()
    cancel.request()
    outcome = await run_agent("raise SystemExit('must not run')", cancel)

    assert outcome.status == "cancelled"
    assert outcome.exit_code is None
    assert outcome.stderr_tail == ""


async def test_cancelling_the_calling_task_kills_the_program(
    runs_dir: Path, tmp_path: Path
) -> None:
    ready = tmp_path / "ready"
    spec = agent_spec(SPAWNS_SLEEPING_CHILD, env={"READY_FILE": str(ready)})
    running = asyncio.create_task(
        run(spec, CancelSignal(), sandbox=UNSANDBOXED, work_root=runs_dir)
    )
    pids = pids_in(await wait_for_file(ready), "leader")

    running.cancel()
    done, _ = await asyncio.wait({running}, timeout=5)

    assert running in done and running.cancelled()
    assert_all_gone(pids)
    assert entries(runs_dir) == []


async def test_children_left_behind_by_a_finished_program_are_ended(run_agent: RunAgent) -> None:
    code = """
        import os, subprocess, sys
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
        print("child", child.pid, flush=True)
    """
    outcome = await run_agent(code)

    assert outcome.status == "completed"
    assert_all_gone(pids_in(outcome.stdout_tail, "child"))


async def test_memory_limit_makes_a_large_allocation_fail_cleanly(run_agent: RunAgent) -> None:
    code = """
        data = bytearray(3 * 1024 ** 3)
        print("allocated", len(data))
    """
    outcome = await run_agent(code, limits=RunLimits(max_memory_bytes=512 * 1024**2))

    assert outcome.status == "failed"
    assert outcome.exit_code == 1
    assert outcome.error is not None
    assert outcome.error.startswith(
        "exit code 1 (memory limit (512 MiB of address space per process) reached): "
    )
    assert outcome.error.endswith("MemoryError")
    assert "allocated" not in outcome.stdout_tail


async def test_the_event_loop_keeps_running_during_a_run(run_agent: RunAgent) -> None:
    code = """
        import os, time
        out = os.environ["AGENT_OUTPUT_DIR"]
        for i in range(8):
            with open(os.path.join(out, f"big{i}.bin"), "wb") as f:
                f.write(os.urandom(4_000_000))
        print("x" * 1_000_000)
        time.sleep(0.5)
    """
    gaps: list[float] = []
    stop = asyncio.Event()

    async def tick() -> None:
        last = time.monotonic()
        while not stop.is_set():
            await asyncio.sleep(0.01)
            now = time.monotonic()
            gaps.append(now - last)
            last = now

    ticker = asyncio.create_task(tick())
    outcome = await run_agent(code)
    stop.set()
    await ticker

    assert outcome.status == "completed", outcome.error
    assert sum(len(content) for content in outcome.output_files.values()) == 32_000_000
    assert len(gaps) > 20
    assert max(gaps) < 0.5, f"the loop stalled for {max(gaps):.2f} s"


async def test_the_first_poll_comes_one_interval_after_the_wait_begins() -> None:
    polls: list[float] = []

    async def flag() -> bool:
        polls.append(time.monotonic())
        return len(polls) >= 2

    started = time.monotonic()
    await CancelSignal(flag, poll_interval=0.1).wait()
    assert len(polls) == 2
    assert polls[0] - started >= 0.1  # a run that has just begun is not polled at once
