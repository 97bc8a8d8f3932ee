"""The parse process: parses one uploaded file under resource limits and reports its text.

Started by :class:`~handlers.rag.ingest.parse_runner.ParseRunner` as
``python -I -c <boot> <root> <limits JSON>``, one process per file. It sets its own limits
first (address space, CPU seconds, no files written, no core dumps), loads the format
libraries (so a process started ahead of time is ready when a file comes), then reads its job
from stdin (``{"path", "filename", "format"}``) and writes one JSON object to stdout:
``{"pages": [[page, text], ...]}`` or ``{"refused": {"kind": ..., "message": ...}}``. A crash,
a runaway or a memory blow-up here ends this process only; the server sees a refusal. Stdin
closed without a job (the server has gone) ends it quietly.
"""

from __future__ import annotations

import json
import os
import resource
import sys
from typing import Any

# Light imports only: the format libraries (pypdf, python-docx, lxml) load in preload(), once
# this process's limits are set.
from handlers.rag.ingest.bounded_zip import ZipLimits
from handlers.rag.ingest.formats import FormatLimits, Page, ParseRefused, parse, preload

__all__ = ["main"]


def main(argv: list[str]) -> int:
    """``argv``: the limits as JSON (``memory_bytes``, ``cpu_seconds``, ``max_text_chars``,
    ``zip``: the ZipLimits fields)."""
    limits: dict[str, Any] = json.loads(argv[0])
    _limit(resource.RLIMIT_AS, limits["memory_bytes"])
    _limit(resource.RLIMIT_CPU, limits["cpu_seconds"], limits["cpu_seconds"] + 1)
    _limit(resource.RLIMIT_FSIZE, 0)
    _limit(resource.RLIMIT_CORE, 0)
    preload()
    raw = sys.stdin.buffer.read()  # written by the server, which closes it after the job
    if not raw:
        return 0
    job: dict[str, Any] = json.loads(raw)
    result = _run(job, limits)
    sys.stdout.buffer.write(json.dumps(result, ensure_ascii=False).encode("utf-8", "surrogatepass"))
    sys.stdout.buffer.flush()
    os._exit(0)  # the answer is out: skip the interpreter's teardown (tens of ms of the wait)


def _run(job: dict[str, Any], limits: dict[str, Any]) -> dict[str, Any]:
    filename: str = job["filename"]
    try:
        return {"pages": _parse(job, limits)}
    except ParseRefused as refusal:
        return _refused(refusal.kind, refusal.message)
    except MemoryError:
        pass  # answered below, outside the handler: the failed parse's objects are freed by then
    except RecursionError:
        return _refused("undecodable", f"'{filename}' is nested too deeply to parse")
    except Exception as error:  # a parser's own bug on a hostile file: refuse the file
        return _refused("undecodable", f"'{filename}' could not be parsed ({type(error).__name__})")
    megabytes = limits["memory_bytes"] // (1024 * 1024)
    return _refused("limit", f"'{filename}' needs more than {megabytes} MiB of memory to parse")


def _parse(job: dict[str, Any], limits: dict[str, Any]) -> list[Page]:
    """In a function of its own, so that its objects are freed when it fails."""
    format_limits = FormatLimits(limits["max_text_chars"], ZipLimits(**limits["zip"]))
    with open(job["path"], "rb") as file:
        data = file.read()
    return parse(job["format"], data, job["filename"], format_limits)


def _refused(kind: str, message: str) -> dict[str, Any]:
    return {"refused": {"kind": kind, "message": message}}


def _limit(which: int, soft: int, hard: int | None = None) -> None:
    """Lowers a limit (never above the hard limit this process was started with)."""
    _, ceiling = resource.getrlimit(which)
    wanted = soft if hard is None else hard
    if ceiling != resource.RLIM_INFINITY:
        soft, wanted = min(soft, ceiling), min(wanted, ceiling)
    resource.setrlimit(which, (soft, wanted))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
