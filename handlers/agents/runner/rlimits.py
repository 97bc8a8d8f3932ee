"""The resource limits of a run's processes, applied by ``prlimit`` in front of the program.

The limits are set by util-linux's ``prlimit`` executing the program, not in the forked child
of the service: the service is threaded, and Python documents that ``preexec_fn`` can deadlock
there. In the sandbox ``prlimit`` runs inside the run's user namespace, where the kernel counts
``RLIMIT_NPROC`` for that run alone.
"""

from __future__ import annotations

import resource
import shutil
import signal
from dataclasses import dataclass

from handlers.agents.runner.sizes import format_bytes
from handlers.agents.runner.spec import RunSpec

__all__ = [
    "LIMIT_NAMES",
    "Rlimit",
    "describe_limit",
    "find_prlimit",
    "find_system_program",
    "limit_reached",
    "prlimit_command",
    "rlimits_for",
]


@dataclass(frozen=True)
class Rlimit:
    """One resource limit: the kernel's resource, prlimit's option, its value."""

    resource: int
    option: str
    value: int


LIMIT_NAMES = {
    "memory": "memory limit",
    "cpu": "CPU time limit",
    "processes": "process limit",
    "file_size": "file size limit",
    "open_files": "open files limit",
}


def rlimits_for(spec: RunSpec) -> list[Rlimit]:
    """The limits of ``spec``'s processes, never above the service's own hard limits (an
    unprivileged process cannot raise them)."""
    limits = spec.limits
    wanted = [
        (resource.RLIMIT_AS, "as", limits.max_memory_bytes),
        (resource.RLIMIT_FSIZE, "fsize", limits.file_bytes),
        (resource.RLIMIT_CORE, "core", 0),
        (resource.RLIMIT_NPROC, "nproc", limits.max_processes),
        (resource.RLIMIT_NOFILE, "nofile", limits.max_open_files),
        (resource.RLIMIT_CPU, "cpu", spec.cpu_seconds),
    ]
    applied = []
    for kind, option, value in wanted:
        _, hard = resource.getrlimit(kind)
        applied.append(
            Rlimit(kind, option, value if hard == resource.RLIM_INFINITY else min(value, hard))
        )
    return applied


def prlimit_command(prlimit: str, spec: RunSpec) -> list[str]:
    """``prlimit --as=… … --`` to put in front of the program's argument vector.

    CPU time gets a hard limit one second above the soft one: the soft limit sends SIGXCPU
    (which ends the program and names the limit), the hard one SIGKILL if it is handled.
    """
    command = [prlimit]
    for limit in rlimits_for(spec):
        if limit.resource == resource.RLIMIT_CPU:
            _, hard = resource.getrlimit(resource.RLIMIT_CPU)
            ceiling = (
                limit.value + 1 if hard == resource.RLIM_INFINITY else min(limit.value + 1, hard)
            )
            command.append(f"--cpu={limit.value}:{ceiling}")
        else:
            command.append(f"--{limit.option}={limit.value}")
    command.append("--")
    return command


def describe_limit(kind: str, spec: RunSpec) -> str:
    """``memory limit (2 GiB of address space per process)`` and the like, for errors."""
    limits = spec.limits
    details = {
        "memory": f"{format_bytes(limits.max_memory_bytes)} of address space per process",
        "cpu": f"{spec.cpu_seconds} s of CPU time per process",
        "processes": f"{limits.max_processes} processes and threads",
        "file_size": f"{format_bytes(limits.file_bytes)} per file",
        "open_files": f"{limits.max_open_files} open files per process",
    }
    return f"{LIMIT_NAMES[kind]} ({details[kind]})"


SYSTEM_PROGRAM_PATH = "/usr/bin:/bin:/usr/sbin:/sbin:/usr/local/bin"


def find_system_program(name: str) -> str | None:
    """The path of a system program (``prlimit``, ``setpriv``), or None when not installed."""
    return shutil.which(name, path=SYSTEM_PROGRAM_PATH)


def find_prlimit() -> str | None:
    """The path of util-linux's ``prlimit``, or None when it is not installed."""
    return find_system_program("prlimit")


_STDERR_SIGNS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("memory", ("MemoryError", "Cannot allocate memory", "std::bad_alloc", "out of memory")),
    (
        "processes",
        (
            "fork: retry",
            "fork: Resource temporarily unavailable",
            "BlockingIOError: [Errno 11]",
            "can't start new thread",
            "Cannot fork",
        ),
    ),
    ("open_files", ("Too many open files",)),
    ("file_size", ("File too large",)),
)


def limit_reached(signal_number: int | None, stderr: str) -> str | None:
    """Which limit (a key of :data:`LIMIT_NAMES`) the program most likely hit, judging by the
    signal that ended it and what it wrote to stderr; None when nothing points to one."""
    if signal_number == signal.SIGXCPU:
        return "cpu"
    if signal_number == signal.SIGXFSZ:
        return "file_size"
    for kind, signs in _STDERR_SIGNS:
        if any(sign in stderr for sign in signs):
            return kind
    return None
