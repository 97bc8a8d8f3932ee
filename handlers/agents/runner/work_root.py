"""Where a process's sandboxed run directories live, and the clean-up after dead processes."""

from __future__ import annotations

import atexit
import contextlib
import fcntl
import logging
import os
import shutil
import stat
import tempfile
import threading
import time
from pathlib import Path

from handlers.agents.runner.run_directory import RunDirectory, remove_run_directory

__all__ = ["WORK_ROOT", "WorkRoot", "WorkRootError"]

log = logging.getLogger(__name__)


class WorkRootError(OSError):
    """The folder of the run directories cannot be used (the message says why)."""


class WorkRoot:
    """The parent of one process's sandboxed run directories, and their clean-up.

    ``<tmp>/agent-runs-<uid>/worker-<pid>-<random>/``: the first level is owned by the service
    and not listable by anyone else (mode 0711: bwrap, as the sandbox user, passes through to a
    run directory whose random name it is given); the second belongs to one process, which
    holds a lock on its ``.lock`` file while it lives. A process killed with SIGKILL leaves its
    run directories behind (its programs died with it); the next process to start here finds
    the lock free and removes them.
    """

    def __init__(self) -> None:
        self._path: Path | None = None
        self._lock_fd: int | None = None
        self._lock = threading.Lock()

    def path(self, run_as: tuple[int, int] | None) -> Path:
        with self._lock:  # the first runs may ask from several threads at once
            return self._claimed(run_as)

    def _claimed(self, run_as: tuple[int, int] | None) -> Path:
        if self._path is not None and self._path.is_dir():
            return self._path
        base = Path(tempfile.gettempdir()) / f"agent-runs-{os.geteuid()}"
        with contextlib.suppress(FileExistsError):
            base.mkdir(mode=0o711)
        info = base.lstat()
        if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.geteuid():
            raise WorkRootError(f"{base} exists and is not a folder of this user")
        if info.st_mode & 0o777 != 0o711:
            base.chmod(0o711)
        if run_as is not None:
            _check_searchable(base, *run_as)
        _remove_abandoned(base)
        self._path, self._lock_fd = _claim_folder(base)
        atexit.register(self._release)
        return self._path

    def _release(self) -> None:
        """At a normal exit: remove this process's folder (empty by then)."""
        if self._path is not None:
            shutil.rmtree(self._path, ignore_errors=True)


def _claim_folder(base: Path) -> tuple[Path, int]:
    """A new ``worker-…`` folder under ``base``, locked by this process."""
    staging = Path(tempfile.mkdtemp(prefix=".new-", dir=base))
    staging.chmod(0o711)
    fd = os.open(staging / ".lock", os.O_CREAT | os.O_RDWR | os.O_CLOEXEC, 0o600)
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    final = base / f"worker-{os.getpid()}-{staging.name[len('.new-') :]}"
    staging.rename(final)
    return final, fd


def _remove_abandoned(base: Path) -> None:
    removed = 0
    for entry in base.iterdir():
        if not entry.name.startswith(("worker-", ".new-")) or entry.is_symlink():
            continue
        try:
            fd = os.open(entry / ".lock", os.O_RDWR | os.O_CLOEXEC | os.O_NOFOLLOW)
        except FileNotFoundError:
            if entry.name.startswith(".new-") and time.time() - entry.lstat().st_mtime > 60:
                remove_run_directory(RunDirectory(entry))  # a process died while creating it
            continue
        except OSError:
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            continue  # its process is alive
        finally:
            os.close(fd)
        remove_run_directory(RunDirectory(entry))
        removed += 1
    if removed:
        log.info("removed the run directories of %d stopped worker(s) under %s", removed, base)


def _check_searchable(path: Path, uid: int, gid: int) -> None:
    """Raise unless ``uid``/``gid`` may pass through every folder down to ``path``."""
    for folder in (*reversed(path.parents), path):
        info = folder.stat()
        if info.st_uid == uid:
            allowed = info.st_mode & stat.S_IXUSR
        elif info.st_gid == gid:
            allowed = info.st_mode & stat.S_IXGRP
        else:
            allowed = info.st_mode & stat.S_IXOTH
        if not allowed:
            raise WorkRootError(
                f"the sandbox user (uid {uid}) cannot pass through {folder} to the run "
                f"directories in {path}: point TMPDIR to a folder whose parents others may "
                "pass through (mode 0711 or 0755), such as /tmp"
            )


WORK_ROOT = WorkRoot()
"""The work folder of this process."""
