"""Driving ``h2load`` (nghttp2-client): a closed-loop peak run and an open-loop run at a fixed
rate, each with per-request timings from ``--log-file``."""

from __future__ import annotations

import math
import re
import shutil
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from bench.ratelimit.servers import REPO_ROOT, BenchError

ENSURE_PACKAGES = REPO_ROOT / "scripts" / "ensure-debian-packages.sh"
DEBIAN_PACKAGE = "nghttp2-client"
# h2load's --rate-period takes whole milliseconds: the clients' start times (and with them
# the phases of their --rps timers) are spread this far apart.
STAGGER_MS = 1

_FINISHED_RE = re.compile(r"^finished in ([\d.]+)(us|ms|s), ([\d.]+) req/s", re.MULTILINE)
_REQUESTS_RE = re.compile(
    r"^requests: (\d+) total, (\d+) started, (\d+) done, (\d+) succeeded, (\d+) failed, "
    r"(\d+) errored, (\d+) timeout",
    re.MULTILINE,
)
_STATUS_RE = re.compile(r"^status codes: (\d+) 2xx, (\d+) 3xx, (\d+) 4xx, (\d+) 5xx", re.MULTILINE)
_DATA_RE = re.compile(r"^traffic: .*, [\d.]+[KMG]?B \((\d+)\) data\s*$", re.MULTILINE)
_SECONDS = {"us": 1e-6, "ms": 1e-3, "s": 1.0}


@dataclass(frozen=True)
class Load:
    """One kind of request: where it goes, what it posts, what its answer must carry."""

    url: str
    body: Path
    headers: tuple[str, ...]
    http1: bool
    min_response_bytes: int
    """Body bytes of the smallest correct answer (a gRPC error carries none, only trailers)."""


@dataclass(frozen=True)
class Measurement:
    rps: float
    """Completed requests per second over the measured period (one decision each)."""
    p50_ms: float
    p99_ms: float
    requests: int
    """Requests completed in the measured period (the log's rows with a status)."""
    errors: int
    """Failed, errored or timed-out requests and answers other than 2xx."""
    short_answers: bool
    """True when the answers carry fewer body bytes than a decision: gRPC errors, which h2load
    counts as 200s since their status travels in the trailers."""
    elapsed_s: float

    @property
    def warning(self) -> str:
        notes = []
        if self.errors:
            notes.append(f"{self.errors} errors or non-2xx")
        if self.short_answers:
            notes.append("answers smaller than a decision (gRPC errors?)")
        return f"WARNING: {', '.join(notes)}" if notes else ""


def find_h2load() -> str:
    """The h2load executable; installs nghttp2-client with the project's script if missing."""
    found = shutil.which("h2load")
    if found is not None:
        return found
    print(f"h2load not found: installing {DEBIAN_PACKAGE} with {ENSURE_PACKAGES.name}", flush=True)
    script = f"{ENSURE_PACKAGES.relative_to(REPO_ROOT)} {DEBIAN_PACKAGE}"
    try:
        proc = subprocess.run(
            ["bash", str(ENSURE_PACKAGES), DEBIAN_PACKAGE],
            capture_output=True,
            text=True,
            check=False,
        )
    except OSError as exc:
        raise BenchError(f"h2load is missing and `{script}` could not run: {exc}") from exc
    found = shutil.which("h2load")
    if proc.returncode != 0 or found is None:
        raise BenchError(
            f"h2load is missing and `{script}` did not install it "
            f"(exit status {proc.returncode}):\n{proc.stdout}{proc.stderr}"
        )
    return found


def version(executable: str) -> str:
    proc = subprocess.run([executable, "--version"], capture_output=True, text=True, check=False)
    return proc.stdout.strip()


def percentile(sorted_values: Sequence[int], pct: float) -> int:
    """Nearest-rank percentile of an ascending sequence."""
    if not sorted_values:
        return 0
    rank = max(1, math.ceil(pct / 100.0 * len(sorted_values)))
    return sorted_values[rank - 1]


@dataclass(frozen=True)
class LogSummary:
    completed: int
    non_2xx: int
    p50_us: int
    p99_us: int


def read_log(path: Path) -> LogSummary:
    """Percentiles of the per-request times in h2load's ``--log-file`` (start µs, status,
    µs to end of response); status -1 rows (failed streams) are left out of the times, rows
    with a status of 300 or more counted as errors."""
    times: list[int] = []
    non_2xx = 0
    with path.open() as rows:
        for row in rows:
            fields = row.split("\t")
            if len(fields) < 3:
                continue
            status = int(fields[1])
            if status < 0:
                continue
            # status 0: a request whose response headers came during the warm-up (h2load does
            # not record them then) and whose end came after it; not an error
            if status >= 300:
                non_2xx += 1
            times.append(int(fields[2]))
    times.sort()
    return LogSummary(len(times), non_2xx, percentile(times, 50), percentile(times, 99))


def parse_output(output: str) -> tuple[float, float, int, int, int]:
    """(elapsed s, req/s, done, errors, body bytes) from h2load's summary."""
    finished = _FINISHED_RE.search(output)
    requests = _REQUESTS_RE.search(output)
    statuses = _STATUS_RE.search(output)
    data = _DATA_RE.search(output)
    if finished is None or requests is None or statuses is None or data is None:
        raise BenchError(f"cannot parse h2load output:\n{output}")
    elapsed = float(finished.group(1)) * _SECONDS[finished.group(2)]
    failed, errored, timeout = (int(requests.group(i)) for i in (5, 6, 7))
    done = int(requests.group(3))
    non_2xx = sum(int(statuses.group(i)) for i in (2, 3, 4))
    return (
        elapsed,
        float(finished.group(3)),
        done,
        failed + errored + timeout + non_2xx,
        int(data.group(1)),
    )


class H2load:
    """Runs h2load with one thread (pinned to ``cpu`` when given) and ``connections``
    connections, one request in flight on each."""

    def __init__(self, executable: str, workdir: Path, connections: int, cpu: int | None) -> None:
        self.executable = executable
        self.workdir = workdir
        self.connections = connections
        self.cpu = cpu
        self.log = workdir / "h2load.log"

    def _command(self, load: Load, extra: Sequence[str]) -> list[str]:
        cmd = [] if self.cpu is None else ["taskset", "-c", str(self.cpu)]
        cmd += [self.executable, "-t1", f"-c{self.connections}", "-m1", "-d", str(load.body)]
        for header in load.headers:
            cmd += ["-H", header]
        if load.http1:
            cmd.append("--h1")
        cmd += [*extra, "--log-file", str(self.log), load.url]
        return cmd

    def _run(self, load: Load, extra: Sequence[str], timeout: float) -> Measurement:
        self.log.unlink(missing_ok=True)  # h2load appends to an existing log
        cmd = self._command(load, extra)
        try:
            proc = subprocess.run(
                cmd, capture_output=True, text=True, timeout=timeout + 60, check=False
            )
        except subprocess.TimeoutExpired as exc:
            raise BenchError(f"h2load did not finish in {timeout + 60:.0f} s: {cmd}") from exc
        if proc.returncode != 0:
            raise BenchError(
                f"h2load failed ({proc.returncode}): {' '.join(cmd)}\n{proc.stdout}{proc.stderr}"
            )
        elapsed, rps, done, errors, data_bytes = parse_output(proc.stdout)
        log = read_log(self.log)
        if log.completed == 0:
            raise BenchError(f"h2load completed no request: {' '.join(cmd)}\n{proc.stdout}")
        return Measurement(
            rps=rps,
            p50_ms=log.p50_us / 1000.0,
            p99_ms=log.p99_us / 1000.0,
            requests=log.completed,
            errors=max(errors, log.non_2xx),
            short_answers=data_bytes < load.min_response_bytes * max(done, 1),
            elapsed_s=elapsed,
        )

    def peak(self, load: Load, duration: int, warmup: int) -> Measurement:
        """Closed loop: every connection sends its next request as soon as the last is
        answered, for ``warmup`` seconds unmeasured and then ``duration`` seconds measured."""
        extra = [f"-D{duration}", f"--warm-up-time={warmup}"]
        return self._run(load, extra, duration + warmup)

    def paced(self, load: Load, rate: float, duration: int) -> Measurement:
        """Open loop at ``rate`` requests/s in all for about ``duration`` seconds.

        ``--rps`` paces each connection with its own timer, started when the connection is
        made; with every connection made at once the timers fire together and the server sees
        bursts of ``connections`` requests (the p99 is then the time to drain a burst). The
        connections are therefore made ``STAGGER_MS`` apart (``-r 1 --rate-period``), which
        spreads the timers' phases over the period. ``-r`` excludes ``-D``, so the run is
        sized in requests (``-n``)."""
        total = max(self.connections, round(rate * duration))
        per_connection = rate / self.connections
        extra = [
            f"-n{total}",
            f"--rps={per_connection:.3f}",
            "-r1",
            f"--rate-period={STAGGER_MS}ms",
        ]
        return self._run(load, extra, duration)
