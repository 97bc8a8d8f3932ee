"""What a finished run collects: output JSON and files, issues, trace, logs, within limits."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from handlers.agents.runner import RunLimits
from tests.agents.runner.conftest import RunAgent

WRITES_EVERYTHING = """
    import json, os
    out = os.environ["AGENT_OUTPUT_DIR"]
    with open(os.path.join(out, "output.json"), "w") as f:
        json.dump({"answer": 42, "items": ["a", "b"]}, f)
    os.makedirs(os.path.join(out, "reports", "daily"))
    with open(os.path.join(out, "reports", "daily", "summary.txt"), "wb") as f:
        f.write(b"all good\\n")
    with open(os.path.join(out, "data.bin"), "wb") as f:
        f.write(bytes(range(256)))
    with open(os.path.join(out, "issues.md"), "w") as f:
        f.write("# Issues\\n\\n- none\\n")
    with open(os.path.join(out, "trace.jsonl"), "w") as f:
        f.write(json.dumps({"step": 1, "event": "start"}) + "\\n")
        f.write(json.dumps({"step": 2, "event": "end"}) + "\\n")
    print("done")
"""


async def test_completed_run_collects_output_json_files_issues_and_trace(
    run_agent: RunAgent,
) -> None:
    outcome = await run_agent(WRITES_EVERYTHING)

    assert outcome.status == "completed"
    assert outcome.exit_code == 0
    assert outcome.error is None
    assert outcome.output_json == {"answer": 42, "items": ["a", "b"]}
    assert outcome.schema_valid is None
    assert outcome.output_files == {
        "reports/daily/summary.txt": b"all good\n",
        "data.bin": bytes(range(256)),
    }
    assert outcome.issues_md == "# Issues\n\n- none\n"
    assert outcome.trace == [{"step": 1, "event": "start"}, {"step": 2, "event": "end"}]
    assert outcome.stdout_tail == "done\n"
    assert outcome.stderr_tail == ""
    assert outcome.started_at <= outcome.finished_at
    assert 0 < outcome.duration_seconds < 20


async def test_program_sees_its_workspace_input_json_and_input_files(run_agent: RunAgent) -> None:
    code = """
        import json, os
        inp, out = os.environ["AGENT_INPUT_DIR"], os.environ["AGENT_OUTPUT_DIR"]
        with open(os.path.join(inp, "input.json")) as f:
            given = json.load(f)
        files = {}
        for name in sorted(os.listdir(os.path.join(inp, "files"))):
            with open(os.path.join(inp, "files", name), "rb") as f:
                files[name] = f.read().hex()
        with open("lib/helper.txt") as f:
            helper = f.read()
        with open(os.path.join(out, "output.json"), "w") as f:
            json.dump({"input": given, "files": files, "helper": helper, "cwd": os.getcwd()}, f)
    """
    outcome = await run_agent(
        code,
        workspace={"lib/helper.txt": b"from the workspace"},
        input_json={"question": "why?", "n": [1, 2.5, None]},
        input_files={"report.pdf": b"%PDF-1.7\x00\xff", "notes.txt": b"hello"},
    )

    assert outcome.status == "completed", outcome.error
    assert isinstance(outcome.output_json, dict)
    assert outcome.output_json["input"] == {"question": "why?", "n": [1, 2.5, None]}
    assert outcome.output_json["files"] == {
        "notes.txt": b"hello".hex(),
        "report.pdf": b"%PDF-1.7\x00\xff".hex(),
    }
    assert outcome.output_json["helper"] == "from the workspace"
    assert outcome.output_json["cwd"].endswith("/workspace")


async def test_environment_is_built_from_scratch(
    run_agent: RunAgent, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SERVICE_DATABASE_PASSWORD", "hunter2")
    code = """
        import json, os
        with open(os.path.join(os.environ["AGENT_OUTPUT_DIR"], "output.json"), "w") as f:
            json.dump(dict(os.environ), f)
    """
    outcome = await run_agent(code, execution_id="exec-env", env={"MODEL": "small"})

    assert outcome.status == "completed", outcome.error
    env = outcome.output_json
    assert isinstance(env, dict)
    assert "SERVICE_DATABASE_PASSWORD" not in env
    assert "hunter2" not in json.dumps(env)
    assert env["AGENT_EXECUTION_ID"] == "exec-env"
    assert env["MODEL"] == "small"
    assert env["PATH"] == "/usr/local/bin:/usr/bin:/bin"
    for name in ("AGENT_INPUT_DIR", "AGENT_OUTPUT_DIR", "AGENT_WORKSPACE_DIR", "HOME", "TMPDIR"):
        assert os.path.isabs(env[name]), name
    assert env["HOME"] == env["AGENT_WORKSPACE_DIR"]
    assert env["AGENT_INPUT_DIR"].endswith("/input")
    assert env["AGENT_OUTPUT_DIR"].endswith("/output")


@pytest.mark.parametrize(
    ("schema", "valid", "errors"),
    [
        ({"type": "object", "required": ["answer"]}, True, []),
        (
            {
                "type": "object",
                "required": ["answer", "sources"],
                "properties": {"answer": {"type": "string"}},
            },
            False,
            ["$: 'sources' is a required property", "$.answer: 42 is not of type 'string'"],
        ),
    ],
)
async def test_output_json_is_checked_against_the_output_schema(
    run_agent: RunAgent, schema: dict[str, object], valid: bool, errors: list[str]
) -> None:
    code = """
        import json, os
        with open(os.path.join(os.environ["AGENT_OUTPUT_DIR"], "output.json"), "w") as f:
            json.dump({"answer": 42}, f)
    """
    outcome = await run_agent(code, output_schema=schema)

    assert outcome.status == "completed"  # an output that misses its schema still completes
    assert outcome.error is None
    assert outcome.output_json == {"answer": 42}
    assert outcome.schema_valid is valid
    assert outcome.schema_errors == errors


async def test_missing_output_json_fails_the_schema_not_the_run(run_agent: RunAgent) -> None:
    outcome = await run_agent("print('no output')", output_schema={"type": "object"})

    assert outcome.status == "completed"
    assert outcome.output_json is None
    assert outcome.schema_valid is False
    assert outcome.schema_errors == ["output.json is missing"]


@pytest.mark.parametrize(
    ("content", "reason"),
    [("{not json", "Expecting property name"), ('{"x": NaN}', "NaN is not valid JSON")],
)
async def test_invalid_output_json_fails_the_run_and_keeps_other_output(
    run_agent: RunAgent, content: str, reason: str
) -> None:
    code = f"""
        import os
        out = os.environ["AGENT_OUTPUT_DIR"]
        with open(os.path.join(out, "output.json"), "w") as f:
            f.write({content!r})
        with open(os.path.join(out, "issues.md"), "w") as f:
            f.write("broken output")
    """
    outcome = await run_agent(code, output_schema={"type": "object"})

    assert outcome.status == "failed"
    assert outcome.exit_code == 0
    assert outcome.error is not None
    assert outcome.error.startswith("output.json is not valid JSON: ")
    assert reason in outcome.error
    assert outcome.output_json is None
    assert outcome.issues_md == "broken output"


async def test_bad_trace_lines_are_kept_as_invalid_lines(run_agent: RunAgent) -> None:
    code = """
        import os
        with open(os.path.join(os.environ["AGENT_OUTPUT_DIR"], "trace.jsonl"), "w") as f:
            f.write('{"step": 1}\\nnot json at all\\n\\n[1, 2]\\n{"step": 2}\\n')
    """
    outcome = await run_agent(code)

    assert outcome.status == "completed"
    assert outcome.trace == [
        {"step": 1},
        {"invalid_line": 2, "text": "not json at all"},
        {"invalid_line": 4, "text": "[1, 2]"},
        {"step": 2},
    ]


async def test_symlinks_are_followed_only_inside_the_output_directory(
    run_agent: RunAgent, tmp_path: Path
) -> None:
    outside = tmp_path / "outside-secret.txt"
    outside.write_text("secret")
    code = f"""
        import os
        out = os.environ["AGENT_OUTPUT_DIR"]
        with open(os.path.join(out, "real.txt"), "w") as f:
            f.write("inside")
        os.symlink("/etc/passwd", os.path.join(out, "passwd"))
        os.symlink({str(outside)!r}, os.path.join(out, "secret.txt"))
        os.symlink("../input/input.json", os.path.join(out, "input-copy.json"))
        os.symlink("real.txt", os.path.join(out, "alias.txt"))
        os.symlink("/etc", os.path.join(out, "etc"))
        os.symlink("missing", os.path.join(out, "dangling"))
        os.mkfifo(os.path.join(out, "pipe"))
    """
    outcome = await run_agent(code)

    assert outcome.status == "completed", outcome.error
    assert outcome.output_files == {"real.txt": b"inside", "alias.txt": b"inside"}


async def test_output_over_the_size_limit_fails_without_collecting(run_agent: RunAgent) -> None:
    code = """
        import os
        out = os.environ["AGENT_OUTPUT_DIR"]
        for i in range(3):
            with open(os.path.join(out, f"part{i}.bin"), "wb") as f:
                f.write(b"x" * 400_000)
        with open(os.path.join(out, "issues.md"), "w") as f:
            f.write("big")
    """
    outcome = await run_agent(code, limits=RunLimits(max_output_bytes=1_000_000))

    assert outcome.status == "failed"
    assert outcome.exit_code == 0
    assert outcome.error == "output exceeds 1 MB"
    assert outcome.output_files == {}
    assert outcome.issues_md is None


async def test_a_single_file_over_the_size_limit_cannot_be_written(run_agent: RunAgent) -> None:
    code = """
        import os
        with open(os.path.join(os.environ["AGENT_OUTPUT_DIR"], "huge.bin"), "wb") as f:
            f.write(b"x" * 3_000_000)
    """
    outcome = await run_agent(code, limits=RunLimits(max_output_bytes=1_000_000))

    # RLIMIT_FSIZE: CPython ignores SIGXFSZ, so the write fails with EFBIG instead of killing it
    assert outcome.status == "failed"
    assert outcome.error is not None
    assert outcome.error.startswith("exit code 1 (file size limit (1 MB per file) reached): ")
    assert "File too large" in outcome.error


async def test_too_many_output_files_fail(run_agent: RunAgent) -> None:
    code = """
        import os
        for i in range(6):
            with open(os.path.join(os.environ["AGENT_OUTPUT_DIR"], f"f{i}.txt"), "w") as f:
                f.write(str(i))
    """
    outcome = await run_agent(code, limits=RunLimits(max_output_files=5))

    assert outcome.status == "failed"
    assert outcome.error == "output has more than 5 files"
    assert outcome.output_files == {}


async def test_huge_stdout_and_stderr_keep_only_their_tails(run_agent: RunAgent) -> None:
    code = """
        import sys
        chunk = "y" * 1023 + "\\n"
        for _ in range(5 * 1024):
            sys.stdout.write(chunk)
            sys.stderr.write(chunk)
        print("THE END")
        print("stderr end", file=sys.stderr)
    """
    outcome = await run_agent(code, limits=RunLimits(max_log_bytes=64 * 1024))

    assert outcome.status == "completed"
    for tail, last in ((outcome.stdout_tail, "THE END\n"), (outcome.stderr_tail, "stderr end\n")):
        marker, kept = tail.split("\n", 1)
        assert marker.startswith("[") and marker.endswith(" earlier bytes dropped]")
        assert len(kept.encode()) == 64 * 1024
        assert kept.endswith(last)
