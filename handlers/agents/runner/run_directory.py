"""The temporary directory of one run: its layout, how it is filled and removed."""

from __future__ import annotations

import json
import os
import shutil
import stat
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from handlers.agents.runner.paths import resolve_inside

INPUT_JSON_NAME = "input.json"
INPUT_FILES_DIR = "files"


@dataclass(frozen=True)
class RunDirectory:
    """``root`` holds four sibling directories, so workspace names never collide with run I/O."""

    root: Path

    @property
    def workspace(self) -> Path:
        """The program's working directory and HOME, filled with the agent's files."""
        return self.root / "workspace"

    @property
    def input(self) -> Path:
        return self.root / "input"

    @property
    def output(self) -> Path:
        return self.root / "output"

    @property
    def tmp(self) -> Path:
        return self.root / "tmp"


def create_run_directory(execution_id: str, work_root: Path | None) -> RunDirectory:
    """Make a fresh, private, empty run directory under ``work_root`` (default: the system tmp)."""
    safe_id = "".join(c if c.isalnum() or c in "-_" else "_" for c in execution_id)[:64]
    root = Path(tempfile.mkdtemp(prefix=f"agent-run-{safe_id}-", dir=work_root))
    directory = RunDirectory(root)
    for path in (directory.workspace, directory.input, directory.output, directory.tmp):
        path.mkdir(mode=0o700)
    return directory


def fill_run_directory(
    directory: RunDirectory,
    workspace: Mapping[str, bytes],
    input_json: object | None,
    input_files: Mapping[str, bytes],
) -> None:
    """Write the workspace files, ``input/input.json`` and ``input/files/<name>``.

    Raises UnsafePathError for a name that is not a safe relative path, OSError for names that
    conflict (``a`` and ``a/b``) and ValueError for input JSON that cannot be serialised.
    """
    for name, content in workspace.items():
        _write_new_file(resolve_inside(directory.workspace, name), content)
    try:
        encoded = json.dumps(input_json, ensure_ascii=False, allow_nan=False).encode()
    except TypeError as exc:
        raise ValueError(f"input JSON cannot be serialised: {exc}") from exc
    _write_new_file(directory.input / INPUT_JSON_NAME, encoded)
    files_dir = directory.input / INPUT_FILES_DIR
    files_dir.mkdir()
    for name, content in input_files.items():
        _write_new_file(resolve_inside(files_dir, name), content)


def _write_new_file(path: Path, content: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
    fd = os.open(path, flags, 0o644)
    with os.fdopen(fd, "wb") as file:
        file.write(content)


def remove_run_directory(directory: RunDirectory) -> None:
    """Delete the run directory, also where the program removed our permissions."""
    shutil.rmtree(directory.root, onerror=_grant_and_retry)


def _grant_and_retry(
    function: Callable[[str], object], path: str, exc_info: tuple[object, ...]
) -> None:
    if not os.path.lexists(path):
        return
    try:
        os.chmod(os.path.dirname(path), stat.S_IRWXU)
        if os.path.isdir(path) and not os.path.islink(path):
            os.chmod(path, stat.S_IRWXU)
            shutil.rmtree(path, ignore_errors=True)
        else:
            os.unlink(path)
    except FileNotFoundError:
        pass
