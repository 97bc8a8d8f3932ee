"""The pinned node tools of ``tools/contracts/`` (buf, api-smart-diff, Spectral), run with
bounded time and output.

``make contract-tools`` installs them with ``npm ci`` from the project's own lock file; this
module only finds and runs them, and says what to do when node or the install is missing.
"""

from __future__ import annotations

import fcntl
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TOOLS_DIR = ROOT / "tools" / "contracts"
NODE_MODULES = TOOLS_DIR / "node_modules"
# A tool that runs longer than this is stuck: the largest spec diffs in about 3 s.
TIMEOUT_S = 120.0
# A tool's output beyond this is not a report any reviewer reads.
MAX_OUTPUT_BYTES = 32 * 1024 * 1024


class ToolError(RuntimeError):
    """A contract tool is missing, timed out, or failed in a way that is not a finding."""


@dataclass(frozen=True)
class ToolResult:
    returncode: int
    stdout: str
    stderr: str


def node() -> str:
    """The ``node`` executable, or a ToolError saying how to get it."""
    found = shutil.which("node")
    if found is None:
        raise ToolError(
            "node is not on PATH: the contract tools (buf, api-smart-diff, Spectral) run on "
            "Node.js >= 18 (install it, e.g. apt-get install nodejs npm, then make contract-tools)"
        )
    return found


def tool_path(relative: str) -> Path:
    """A file of the installed tools (``node_modules/.bin/buf``), checked to exist."""
    path = NODE_MODULES / relative
    if not path.exists():
        raise ToolError(f"{path.relative_to(ROOT)} is missing: run make contract-tools")
    return path


def run_tool(args: list[str], *, stdin: str | None = None, cwd: Path | None = None) -> ToolResult:
    """Run a tool; its exit status is the caller's to judge (buf and Spectral exit non-zero on
    findings), but a timeout or an oversized output is a ToolError."""
    node()
    try:
        completed = subprocess.run(
            args,
            input=stdin.encode("utf-8") if stdin is not None else None,
            capture_output=True,
            cwd=cwd,
            timeout=TIMEOUT_S,
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        raise ToolError(f"{Path(args[0]).name} took more than {TIMEOUT_S:.0f} s") from exc
    except OSError as exc:
        raise ToolError(f"cannot run {args[0]}: {exc}") from exc
    if len(completed.stdout) + len(completed.stderr) > MAX_OUTPUT_BYTES:
        raise ToolError(f"{Path(args[0]).name} wrote more than {MAX_OUTPUT_BYTES} bytes")
    return ToolResult(
        completed.returncode,
        completed.stdout.decode("utf-8", "replace"),
        completed.stderr.decode("utf-8", "replace"),
    )


def install() -> None:
    """``make contract-tools`` (a no-op once installed), for tests and scripts that need the
    tools; one process at a time (test workers may ask together). A ToolError says what is
    missing when node or npm is not there."""
    node()
    if shutil.which("npm") is None:
        raise ToolError("npm is not on PATH: make contract-tools installs the tools with npm ci")
    lock = ROOT / "tools" / "contracts" / ".install.lock"
    with lock.open("w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            completed = subprocess.run(
                ["make", "-s", "contract-tools"],
                cwd=ROOT,
                capture_output=True,
                text=True,
                timeout=600,
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise ToolError(f"make contract-tools failed: {exc}") from exc
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
    if completed.returncode != 0:
        output = (completed.stderr or completed.stdout).strip()[-2000:]
        raise ToolError(f"make contract-tools failed: {output}")
