"""Throughput benchmark: webrest against plain Starlette, FastAPI and Litestar.

Each framework serves the same two endpoints from its own uvicorn process; ``wrk`` loads
them one at a time.  Run ``python -m bench.webrest --help`` for the options.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import IO

REPO_ROOT = Path(__file__).resolve().parents[2]
FRAMEWORKS: tuple[str, ...] = ("starlette", "fastapi", "litestar", "webrest")
OURS = "webrest"
# (baseline, minimum ratio ours/baseline)
TARGETS: tuple[tuple[str, float], ...] = (("starlette", 0.90), ("fastapi", 1.5))

START_DEADLINE_S = 30.0
STOP_GRACE_S = 5.0
CONNECTIONS = 50
WARMUP_S = 2

GET_PATH = "/items/42?q=hello"
POST_PATH = "/echo"
POST_BODY: dict[str, object] = {
    "question": "What is the answer to life, the universe and everything?",
    "context": "The Hitchhiker's Guide to the Galaxy, by Douglas Adams.",
    "num_tokens": 42,
}


@dataclass(frozen=True)
class Endpoint:
    label: str
    method: str
    path: str
    body: dict[str, object] | None
    expected: dict[str, object]


ENDPOINTS: tuple[Endpoint, ...] = (
    Endpoint("GET /items/{id}", "GET", GET_PATH, None, {"item_id": 42, "q": "hello"}),
    Endpoint("POST /echo", "POST", POST_PATH, POST_BODY, POST_BODY),
)


@dataclass(frozen=True)
class WrkResult:
    rps: float
    p50_ms: float
    p99_ms: float
    requests: int
    non_2xx: int
    socket_errors: int


class BenchError(Exception):
    """A server did not start, answered wrongly, or wrk failed."""


# --------------------------------------------------------------------------- servers


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


class Server:
    """One ``uvicorn`` process serving ``bench.webrest.apps.<framework>_app:app``."""

    def __init__(self, framework: str, log: IO[bytes]) -> None:
        self.framework = framework
        self.port = free_port()
        self._log = log
        self._proc: subprocess.Popen[bytes] | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        cmd = [
            sys.executable, "-m", "uvicorn", f"bench.webrest.apps.{self.framework}_app:app",
            "--host", "127.0.0.1", "--port", str(self.port), "--workers", "1",
            "--no-access-log", "--log-level", "warning", "--loop", "uvloop", "--http", "httptools",
        ]  # fmt: skip
        self._proc = subprocess.Popen(
            cmd, cwd=REPO_ROOT, stdin=subprocess.DEVNULL, stdout=self._log, stderr=subprocess.STDOUT
        )
        deadline = time.monotonic() + START_DEADLINE_S
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                raise BenchError(
                    f"{self.framework}: server exited with status {self._proc.returncode} "
                    f"before answering on port {self.port}. Its output:\n{self.output()}"
                )
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.5):
                    return
            except OSError:
                time.sleep(0.1)
        raise BenchError(
            f"{self.framework}: server did not answer on port {self.port} within "
            f"{START_DEADLINE_S:.0f} s. Its output:\n{self.output()}"
        )

    def output(self) -> str:
        self._log.flush()
        self._log.seek(0)
        text = self._log.read().decode(errors="replace").rstrip()
        return "\n".join("    | " + line for line in text.splitlines()) or "    | (no output)"

    def stop(self) -> None:
        proc = self._proc
        if proc is not None and proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=STOP_GRACE_S)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def sanity_check(server: Server) -> None:
    """Call each endpoint once; raise BenchError unless it answers 200 with the expected JSON."""
    for ep in ENDPOINTS:
        data = None if ep.body is None else json.dumps(ep.body).encode()
        req = urllib.request.Request(server.base_url + ep.path, data=data, method=ep.method)
        if data is not None:
            req.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(req, timeout=10) as resp:
                status: int = resp.status
                raw: bytes = resp.read()
        except urllib.error.HTTPError as exc:
            status, raw = exc.code, exc.read()
        except OSError as exc:
            raise BenchError(f"{server.framework}: {ep.method} {ep.path} failed: {exc}") from exc
        try:
            got: object = json.loads(raw)
        except ValueError:
            got = raw.decode(errors="replace")
        if status != 200 or got != ep.expected:
            raise BenchError(
                f"{server.framework}: sanity check of {ep.method} {ep.path} failed:\n"
                f"    expected 200 {json.dumps(ep.expected)}\n"
                f"    got      {status} {raw.decode(errors='replace')[:500]}"
            )


# --------------------------------------------------------------------------- wrk

_UNIT_MS = {"us": 1e-3, "ms": 1.0, "s": 1e3, "m": 60e3, "h": 3600e3}
_RPS_RE = re.compile(r"^Requests/sec:\s+([\d.]+)", re.MULTILINE)
_REQUESTS_RE = re.compile(r"^\s*(\d+) requests in ", re.MULTILINE)
_NON_2XX_RE = re.compile(r"^\s*Non-2xx or 3xx responses:\s+(\d+)", re.MULTILINE)
_SOCKET_ERR_RE = re.compile(
    r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", re.MULTILINE
)


def _percentile_ms(output: str, pct: int) -> float:
    match = re.search(rf"^\s*{pct}(?:\.0+)?%\s+([\d.]+)(us|ms|s|m|h)\s*$", output, re.MULTILINE)
    if match is None:
        raise BenchError(f"wrk output has no {pct}% latency line:\n{output}")
    return float(match.group(1)) * _UNIT_MS[match.group(2)]


def parse_wrk(output: str) -> WrkResult:
    rps = _RPS_RE.search(output)
    requests = _REQUESTS_RE.search(output)
    if rps is None or requests is None:
        raise BenchError(f"cannot parse wrk output:\n{output}")
    non_2xx = _NON_2XX_RE.search(output)
    sock = _SOCKET_ERR_RE.search(output)
    return WrkResult(
        rps=float(rps.group(1)),
        p50_ms=_percentile_ms(output, 50),
        p99_ms=_percentile_ms(output, 99),
        requests=int(requests.group(1)),
        non_2xx=int(non_2xx.group(1)) if non_2xx else 0,
        socket_errors=sum(int(n) for n in sock.groups()) if sock else 0,
    )


def lua_string(text: str) -> str:
    escaped = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return f'"{escaped}"'


def write_post_script(directory: Path, body: dict[str, object]) -> Path:
    script = directory / "post.lua"
    script.write_text(
        'wrk.method = "POST"\n'
        f"wrk.body = {lua_string(json.dumps(body))}\n"
        'wrk.headers["Content-Type"] = "application/json"\n'
    )
    return script


class Wrk:
    def __init__(self, executable: str, script_dir: Path) -> None:
        self.executable = executable
        self.post_script = write_post_script(script_dir, POST_BODY)

    def _command(self, server: Server, ep: Endpoint, duration: int) -> list[str]:
        cmd = [self.executable, "-t1", f"-c{CONNECTIONS}", f"-d{duration}s", "--latency"]
        if ep.method == "POST":
            cmd += ["-s", str(self.post_script)]
        cmd.append(server.base_url + ep.path)
        return cmd

    def _run(self, server: Server, ep: Endpoint, duration: int) -> str:
        cmd = self._command(server, ep, duration)
        proc = subprocess.run(
            cmd, capture_output=True, text=True, timeout=duration + 60, check=False
        )
        if proc.returncode != 0:
            raise BenchError(f"wrk failed ({proc.returncode}):\n{proc.stdout}{proc.stderr}")
        return proc.stdout

    def warm_up(self, server: Server, ep: Endpoint, duration: int) -> None:
        self._run(server, ep, duration)

    def measure(self, server: Server, ep: Endpoint, duration: int) -> WrkResult:
        return parse_wrk(self._run(server, ep, duration))


# --------------------------------------------------------------------------- driver


def bench_framework(framework: str, wrk: Wrk, duration: int, prefix: str) -> dict[str, WrkResult]:
    with tempfile.TemporaryFile() as log:
        server = Server(framework, log)
        try:
            return _bench_server(server, wrk, duration, prefix)
        finally:
            server.stop()


def _bench_server(server: Server, wrk: Wrk, duration: int, prefix: str) -> dict[str, WrkResult]:
    framework = server.framework
    server.start()
    sanity_check(server)
    for ep in ENDPOINTS:
        wrk.warm_up(server, ep, WARMUP_S)
    results: dict[str, WrkResult] = {}
    for ep in ENDPOINTS:
        res = wrk.measure(server, ep, duration)
        results[ep.label] = res
        notes = ""
        if res.non_2xx or res.socket_errors:
            notes = f"  (WARNING: {res.non_2xx} non-2xx, {res.socket_errors} socket errors)"
        print(
            f"{prefix}[{framework}] {ep.label}: {res.rps:.0f} req/s  "
            f"p50 {res.p50_ms:.2f} ms  p99 {res.p99_ms:.2f} ms{notes}",
            flush=True,
        )
    return results


@dataclass(frozen=True)
class Summary:
    rps: float
    p50_ms: float
    p99_ms: float
    rounds: list[WrkResult]


def summarize(runs: list[WrkResult]) -> Summary:
    return Summary(
        rps=statistics.median(r.rps for r in runs),
        p50_ms=statistics.median(r.p50_ms for r in runs),
        p99_ms=statistics.median(r.p99_ms for r in runs),
        rounds=runs,
    )


def ratio(summaries: dict[str, dict[str, Summary]], endpoint: str, baseline: str) -> float | None:
    ours = summaries.get(OURS, {}).get(endpoint)
    base = summaries.get(baseline, {}).get(endpoint)
    if ours is None or base is None or base.rps == 0:
        return None
    return ours.rps / base.rps


def print_report(
    frameworks: Sequence[str], summaries: dict[str, dict[str, Summary]], failures: dict[str, str]
) -> None:
    shown = [fw for fw in frameworks if fw in summaries]
    col = 24
    print()
    if not shown:
        print("no framework was measured")
        return
    print(f"{'endpoint':<18}" + "".join(f"{fw:>{col}}" for fw in shown))
    print(f"{'':<18}" + "".join(f"{'req/s':>{col - 14}} {'p50':>6} {'p99':>6}" for _ in shown))
    for ep in ENDPOINTS:
        cells = []
        for fw in shown:
            s = summaries[fw][ep.label]
            cells.append(f"{s.rps:>{col - 14}.0f} {s.p50_ms:>6.2f} {s.p99_ms:>6.2f}")
        print(f"{ep.label:<18}" + "".join(cells))
    print("(p50/p99: latency percentiles in ms)")
    print()
    if OURS not in summaries:
        why = "failed, see above" if OURS in failures else "not measured"
        print(f"ratios: n/a ({OURS} {why})")
        return
    for ep in ENDPOINTS:
        for baseline, target in TARGETS:
            r = ratio(summaries, ep.label, baseline)
            if r is None:
                why = "failed" if baseline in failures else "not measured"
                print(f"{ep.label:<18} {OURS}/{baseline}: n/a ({baseline} {why})")
                continue
            verdict = "met" if r >= target else "NOT MET"
            name = f"{OURS}/{baseline}:"
            print(f"{ep.label:<18} {name:<20} {r:5.2f}   target >= {target:.2f}: {verdict}")


def write_json(
    path: Path,
    *,
    args: argparse.Namespace,
    frameworks: Sequence[str],
    summaries: dict[str, dict[str, Summary]],
    failures: dict[str, str],
    wrk_version: str,
) -> None:
    ratios: dict[str, dict[str, dict[str, object]]] = {}
    for ep in ENDPOINTS:
        for baseline, target in TARGETS:
            r = ratio(summaries, ep.label, baseline)
            ratios.setdefault(ep.label, {})[baseline] = {
                "ratio": r,
                "target": target,
                "met": None if r is None else r >= target,
            }
    doc = {
        "config": {
            "duration_s": args.duration,
            "rounds": args.rounds,
            "connections": CONNECTIONS,
            "wrk_threads": 1,
            "frameworks": list(frameworks),
            "python": platform.python_version(),
            "platform": platform.platform(),
            "cpus": os.cpu_count(),
            "wrk": wrk_version,
        },
        "results": {
            fw: {label: asdict(s) for label, s in eps.items()} for fw, eps in summaries.items()
        },
        "ratios": ratios,
        "failures": failures,
    }
    path.write_text(json.dumps(doc, indent=2) + "\n")


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m bench.webrest",
        description="Throughput of webrest against plain Starlette, FastAPI and Litestar (wrk).",
    )
    parser.add_argument(
        "--duration", type=int, default=8, help="seconds of load per endpoint (default 8)"
    )
    parser.add_argument(
        "--rounds", type=int, default=1,
        help="rounds; frameworks are interleaved per round and the median is reported",
    )  # fmt: skip
    parser.add_argument(
        "--frameworks", default=",".join(FRAMEWORKS),
        help=f"comma-separated subset of {','.join(FRAMEWORKS)} (default: all)",
    )  # fmt: skip
    parser.add_argument("--json", type=Path, metavar="PATH", help="also write results as JSON")
    args = parser.parse_args(argv)
    if args.duration < 1:
        parser.error("--duration must be >= 1")
    if args.rounds < 1:
        parser.error("--rounds must be >= 1")
    chosen = [fw.strip() for fw in str(args.frameworks).split(",") if fw.strip()]
    unknown = [fw for fw in chosen if fw not in FRAMEWORKS]
    if unknown or not chosen:
        parser.error(f"--frameworks: unknown {unknown}; choose from {','.join(FRAMEWORKS)}")
    args.framework_list = [fw for fw in FRAMEWORKS if fw in chosen]
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    frameworks: list[str] = args.framework_list
    wrk_exe = shutil.which("wrk")
    if wrk_exe is None:
        print(
            "error: wrk not found on PATH; install it with `apt-get install wrk`.", file=sys.stderr
        )
        return 2
    wrk_version = subprocess.run(
        [wrk_exe, "--version"], capture_output=True, text=True, check=False
    ).stdout.splitlines()[:1]

    print(
        f"bench.webrest: {', '.join(frameworks)}; {args.rounds} round(s) x {args.duration} s "
        f"per endpoint; wrk -t1 -c{CONNECTIONS}; {os.cpu_count()} CPUs",
        flush=True,
    )
    runs: dict[str, dict[str, list[WrkResult]]] = {}
    failures: dict[str, str] = {}
    with tempfile.TemporaryDirectory(prefix="bench-webrest-") as tmp:
        wrk = Wrk(wrk_exe, Path(tmp))
        for rnd in range(1, args.rounds + 1):
            prefix = f"(round {rnd}/{args.rounds}) " if args.rounds > 1 else ""
            for fw in frameworks:
                if fw in failures:
                    continue
                try:
                    results = bench_framework(fw, wrk, args.duration, prefix)
                except BenchError as exc:
                    failures[fw] = str(exc)
                    print(f"{prefix}[{fw}] FAILED: {exc}", file=sys.stderr, flush=True)
                    continue
                for label, res in results.items():
                    runs.setdefault(fw, {}).setdefault(label, []).append(res)

    # Only frameworks that completed every round are compared.
    summaries = {
        fw: {label: summarize(rs) for label, rs in eps.items()}
        for fw, eps in runs.items()
        if fw not in failures
    }
    print_report(frameworks, summaries, failures)
    if args.json is not None:
        write_json(
            args.json,
            args=args,
            frameworks=frameworks,
            summaries=summaries,
            failures=failures,
            wrk_version=wrk_version[0] if wrk_version else "",
        )
        print(f"\nresults written to {args.json}")
    if failures:
        print(f"\nFAILED: {', '.join(failures)} (see the errors above)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
