"""Preparing a run: its files, inputs and environment, the program's start and its limits."""

from __future__ import annotations

from pathlib import Path

from handlers.agents.runner import CancelSignal, RunLimits, RunSpec, run
from tests.agents.runner.conftest import UNSANDBOXED, RunAgent, agent_spec


async def test_a_missing_program_fails_to_start(runs_dir: Path) -> None:
    spec = RunSpec(execution_id="exec-x", command=("no-such-program-here",))
    outcome = await run(spec, CancelSignal(), sandbox=UNSANDBOXED, work_root=runs_dir)

    assert outcome.status == "failed"
    assert outcome.exit_code is None
    assert outcome.error is not None
    assert outcome.error.startswith("cannot start 'no-such-program-here': ")


async def test_unsafe_workspace_paths_are_refused(runs_dir: Path) -> None:
    for name in ("../escape.py", "/etc/evil", "a/../../b", "a//b", ""):
        spec = agent_spec("print('hi')", workspace={name: b"x"})
        outcome = await run(spec, CancelSignal(), sandbox=UNSANDBOXED, work_root=runs_dir)
        assert outcome.status == "failed", name
        assert outcome.error is not None and outcome.error.startswith("cannot prepare the run: ")
        assert outcome.exit_code is None
    assert not (runs_dir.parent / "escape.py").exists()


async def test_bad_inputs_and_reserved_variables_are_refused(runs_dir: Path) -> None:
    for fields in (
        {"input_files": {"../../x": b"x"}},
        {"input_json": {"when": object()}},
        {"input_json": float("nan")},
        {"env": {"AGENT_OUTPUT_DIR": "/tmp"}},
        {"env": {"BAD=NAME": "x"}},
    ):
        outcome = await run(
            agent_spec("print('hi')", **fields),
            CancelSignal(),
            sandbox=UNSANDBOXED,
            work_root=runs_dir,
        )
        assert outcome.status == "failed", fields
        assert outcome.error is not None and outcome.error.startswith("cannot prepare the run: ")


async def test_resource_limits_apply_to_the_program(run_agent: RunAgent) -> None:
    code = """
        import json, os
        limits = {}
        with open("/proc/self/limits") as f:
            for line in f.readlines()[1:]:
                name, soft = line[:26].strip(), line[26:47].strip()
                limits[name] = soft
        with open(os.path.join(os.environ["AGENT_OUTPUT_DIR"], "output.json"), "w") as f:
            json.dump(limits, f)
    """
    limits = RunLimits(max_output_bytes=3_000_000, max_memory_bytes=1024**3, max_processes=50)
    outcome = await run_agent(code, limits=limits)

    assert outcome.status == "completed", outcome.error
    assert isinstance(outcome.output_json, dict)
    assert outcome.output_json["Max address space"] == str(1024**3)
    assert outcome.output_json["Max file size"] == "3000000"
    assert outcome.output_json["Max core file size"] == "0"
    assert outcome.output_json["Max processes"] == "50"
