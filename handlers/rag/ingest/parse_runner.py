"""Runs a format parser in a process of its own, under limits, a few at a time.

Parsing a hostile file must not cost the server more than a refusal: the parser runs in a fresh
Python process (:mod:`handlers.rag.ingest.parse_child`) that limits its own address space and
CPU time, is killed when it outlives a wall-clock limit, and answers through a pipe that is
read only up to a bound. Whatever happens there (a decompression bomb, an entity bomb, a parser
stuck in a loop, a segmentation fault) the server's memory holds at most that bounded answer,
and the upload is refused with a message. At most ``max_concurrent`` parse processes run at
once; more uploads wait for a slot, so parsing memory is bounded by ``max_concurrent`` times
the memory limit (plus one idle spare process of about 60 MB).

Why a process and not a worker thread in the server: a thread can neither be stopped when a
parser loops (html.parser needs 8 s for 3 MB of tags, python-docx 24 s for a 66 KB document
of 300,000 empty paragraphs) nor survive a crash, nor bound the memory of a library's
internals. Its cost, measured on small files: a process started per file adds 0.3-0.5 s; the
spare kept started ahead (limits set, libraries loaded) brings that to 5-20 ms over parsing in
the server (docx 53 ms against 39, pdf 26 against 4, html 8 against 0.5).
"""

from __future__ import annotations

import dataclasses
import json
import logging
import math
import os
import selectors
import signal
import subprocess
import sys
import threading
import time
import weakref
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from handlers.rag.ingest.base import ExtractionError
from handlers.rag.ingest.formats import FormatLimits, Page

__all__ = ["DEFAULT_PARSE_CONCURRENCY", "ParseLimits", "ParseRunner"]

log = logging.getLogger("rag.ingest.parse")

DEFAULT_PARSE_CONCURRENCY = 2
_MIB = 1024 * 1024
_READ_BYTES = 64 * 1024
_STDERR_TAIL = 4096
_ROOT = str(Path(__file__).resolve().parents[3])  # the directory that holds ``handlers``
_BOOT = (
    "import sys; sys.path.insert(0, sys.argv[1]); "
    "from handlers.rag.ingest.parse_child import main; sys.exit(main(sys.argv[2:]))"
)


@dataclass(frozen=True, slots=True)
class ParseLimits:
    """What parsing one file may cost."""

    seconds: float = 60.0
    """Wall-clock time of a parse, from sending the file to the answer; the process is killed
    when it is up."""
    cpu_seconds: int | None = None
    """CPU time of the parse process (RLIMIT_CPU: it ends itself, even should the server die
    first); None: ``seconds`` rounded up."""
    memory_bytes: int = 1024 * _MIB
    """Address space of the parse process (RLIMIT_AS)."""
    formats: FormatLimits = field(default_factory=FormatLimits)
    """Extracted text and ZIP sizes."""

    @property
    def max_answer_bytes(self) -> int:
        """The most the server reads of a parse process's answer: its text as JSON (at most
        6 bytes a character, for escaped control characters) and some room for the structure."""
        return 6 * self.formats.max_text_chars + _MIB


@dataclass(slots=True)
class _Outcome:
    returncode: int
    answer: bytes
    stderr: bytes
    timed_out: bool = False
    overflowed: bool = False


class ParseRunner:
    """Parses files in child processes, at most ``max_concurrent`` at a time (callers beyond
    that wait). Blocking; call it from a worker thread.

    With ``warm`` (the default), one process is kept started ahead of the next file, its
    limits set and its libraries loaded, so a file waits for its parse only (one idle process
    of about 60 MB; it ends by itself when the server does). :meth:`close` ends it.
    """

    def __init__(
        self,
        max_concurrent: int = DEFAULT_PARSE_CONCURRENCY,
        limits: ParseLimits | None = None,
        *,
        warm: bool = True,
    ) -> None:
        if max_concurrent < 1:
            raise ValueError(f"max_concurrent must be at least 1, not {max_concurrent}")
        self.limits = limits or ParseLimits()
        self.max_concurrent = max_concurrent
        self._warm = warm
        self._slots = threading.BoundedSemaphore(max_concurrent)
        self._lock = threading.Lock()
        self._spares: list[subprocess.Popen[bytes]] = []
        self._closed = False
        self._command = [sys.executable, "-I", "-c", _BOOT, _ROOT, self._limits_json()]
        # Ends the spare when the runner is collected or the interpreter exits.
        self._finalizer = weakref.finalize(self, _stop_all, self._spares)

    def parse(self, path: Path, filename: str, kind: str) -> list[Page]:
        """The pages of the file at ``path`` in format ``kind`` (see formats.PARSED_FORMATS);
        raises ExtractionError when it cannot be parsed within the limits."""
        job = json.dumps({"path": str(path.resolve()), "filename": filename, "format": kind})
        with self._slots:
            started = time.monotonic()
            process = self._take_spare() or self._start()
            try:
                outcome = self._communicate(process, job.encode())
            finally:
                _stop(process)
                self._replace_spare()
            elapsed = time.monotonic() - started
        return self._pages(outcome, filename, elapsed)

    def warm_up(self) -> None:
        """Starts the spare process now rather than with the first file."""
        with self._lock:
            if self._warm and not self._closed and not self._spares:
                self._spares.append(self._start())

    def _replace_spare(self) -> None:
        """After a parse, not beside it: both would want the CPU. A spare that cannot start
        (out of processes or memory) is not this file's failure: the next file starts its own."""
        try:
            self.warm_up()
        except OSError as error:
            log.warning("parse process spare not started: %s", error)

    def close(self) -> None:
        """Ends the spare process; files parsed afterwards start a process each."""
        with self._lock:
            self._closed = True
        self._finalizer()

    def _take_spare(self) -> subprocess.Popen[bytes] | None:
        """The spare process if there is one and it is alive."""
        with self._lock:
            spare = self._spares.pop() if self._spares else None
        if spare is not None and spare.poll() is not None:
            _stop(spare)
            return None
        return spare

    def _start(self) -> subprocess.Popen[bytes]:
        return subprocess.Popen(
            self._command,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env={"PATH": os.environ.get("PATH", os.defpath), "LC_ALL": "C.UTF-8"},
            cwd="/",
        )

    @property
    def _cpu_seconds(self) -> int:
        cpu = self.limits.cpu_seconds
        return math.ceil(self.limits.seconds) if cpu is None else cpu

    def _limits_json(self) -> str:
        limits = self.limits
        return json.dumps(
            {
                "memory_bytes": limits.memory_bytes,
                "cpu_seconds": self._cpu_seconds,
                "max_text_chars": limits.formats.max_text_chars,
                "zip": dataclasses.asdict(limits.formats.zip),
            }
        )

    def _communicate(self, process: subprocess.Popen[bytes], job: bytes) -> _Outcome:
        """Sends the job; reads the answer and the end of stderr until the process ends, its
        time is up (it is killed) or its answer passes the bound (likewise)."""
        deadline = time.monotonic() + self.limits.seconds
        assert process.stdin is not None and process.stdout is not None
        assert process.stderr is not None
        try:
            process.stdin.write(job)  # the process reads it whole before it writes anything
            process.stdin.close()
        except BrokenPipeError:
            pass  # it died before reading; its exit status says how
        answer = bytearray()
        stderr = bytearray()
        limit = self.limits.max_answer_bytes
        with selectors.DefaultSelector() as selector:
            selector.register(process.stdout, selectors.EVENT_READ, answer)
            selector.register(process.stderr, selectors.EVENT_READ, stderr)
            while selector.get_map():
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    process.kill()
                    return _Outcome(-signal.SIGKILL, b"", bytes(stderr), timed_out=True)
                for key, _ in selector.select(remaining):
                    stream: IO[bytes] = key.fileobj  # type: ignore[assignment]
                    chunk = os.read(stream.fileno(), _READ_BYTES)
                    if not chunk:
                        selector.unregister(stream)
                        continue
                    buffer: bytearray = key.data
                    buffer += chunk
                    if buffer is stderr:
                        del stderr[:-_STDERR_TAIL]
                    elif len(answer) > limit:
                        process.kill()
                        return _Outcome(-signal.SIGKILL, b"", bytes(stderr), overflowed=True)
        try:
            returncode = process.wait(max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            process.kill()
            return _Outcome(-signal.SIGKILL, b"", bytes(stderr), timed_out=True)
        return _Outcome(returncode, bytes(answer), bytes(stderr))

    def _pages(self, outcome: _Outcome, filename: str, elapsed: float) -> list[Page]:
        limits = self.limits
        if outcome.timed_out:
            self._log(filename, "killed after the time limit", outcome, elapsed)
            raise ExtractionError(
                "limit", f"'{filename}' takes longer than {limits.seconds:g} s to parse"
            )
        if outcome.overflowed:
            self._log(filename, "killed: answer over its bound", outcome, elapsed)
            raise ExtractionError(
                "limit",
                f"'{filename}' holds more than {limits.formats.max_text_chars} characters of text",
            )
        if outcome.returncode == -signal.SIGXCPU:
            self._log(filename, "killed at the CPU time limit", outcome, elapsed)
            raise ExtractionError(
                "limit", f"'{filename}' takes more than {self._cpu_seconds} s of CPU to parse"
            )
        if outcome.returncode < 0:
            name = signal.Signals(-outcome.returncode).name
            self._log(filename, f"parser crashed ({name})", outcome, elapsed)
            raise ExtractionError(
                "undecodable", f"'{filename}' could not be parsed (the parser crashed: {name})"
            )
        result = _decode(outcome.answer) if outcome.returncode == 0 else None
        if result is None:
            self._log(
                filename, f"parser failed (exit status {outcome.returncode})", outcome, elapsed
            )
            raise ExtractionError(
                "undecodable",
                f"'{filename}' could not be parsed (the parser failed with status "
                f"{outcome.returncode})",
            )
        if "refused" in result:
            refusal = result["refused"]
            log.info(
                "parse refused filename=%s seconds=%.3f: %s", filename, elapsed, refusal["message"]
            )
            raise ExtractionError(str(refusal["kind"]), str(refusal["message"]))
        return [(page, text) for page, text in result["pages"]]

    @staticmethod
    def _log(filename: str, what: str, outcome: _Outcome, elapsed: float) -> None:
        tail = outcome.stderr.decode("utf-8", "replace").strip().splitlines()[-3:]
        log.warning(
            "parse process %s filename=%s seconds=%.3f%s",
            what,
            filename,
            elapsed,
            f" stderr={' | '.join(tail)!r}" if tail else "",
        )


def _decode(answer: bytes) -> dict[str, Any] | None:
    """The parse process's answer, or None when it is not one (a process that died midway)."""
    try:
        result = json.loads(answer.decode("utf-8", "surrogatepass"))
    except ValueError:
        return None
    if not isinstance(result, dict):
        return None
    pages = result.get("pages")
    refused = result.get("refused")
    if isinstance(pages, list) and all(_is_page(page) for page in pages):
        return result
    if isinstance(refused, dict) and isinstance(refused.get("message"), str):
        return result
    return None


def _is_page(page: object) -> bool:
    return (
        isinstance(page, list)
        and len(page) == 2
        and (page[0] is None or isinstance(page[0], int))
        and isinstance(page[1], str)
    )


def _stop(process: subprocess.Popen[bytes]) -> None:
    """Kills ``process`` if it still runs, reaps it and closes its pipes."""
    if process.poll() is None:
        process.kill()
    process.wait()
    for stream in (process.stdin, process.stdout, process.stderr):
        if stream is not None:
            stream.close()


def _stop_all(processes: list[subprocess.Popen[bytes]]) -> None:
    while processes:
        _stop(processes.pop())
