"""Throughput and latency of the rate limit service against its transport floors.

For gRPC (``ShouldRateLimit``) and HTTP/1.1 (``POST /json``), with 1 and 2 descriptors per
request, ``h2load`` loads in turn (a) an echo server answering a fixed decision (grpc.aio, or
plain Starlette), (b) the service with the memory backend, (c) with Redis and (d) with memcached,
each one process; (e) with a Redis cluster of three local masters (``KVSTORE_TYPE=cluster``).
Each measurement is a closed-loop peak run and an open-loop run at half that peak. On the memory
and Redis backends, each workload is then measured again (peak only) with the sliding window, the
token bucket and two limits per descriptor, right after its fixed window on the same server. Run
``python -m bench.ratelimit --help`` for the options.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, replace
from pathlib import Path

from bench.ratelimit import workload
from bench.ratelimit.cluster import LoopbackCluster
from bench.ratelimit.h2load import H2load, Load, Measurement, find_h2load, version
from bench.ratelimit.servers import (
    ECHO,
    GRPC,
    HTTP,
    KINDS,
    MEMCACHE,
    MEMORY,
    PROTOCOLS,
    REDIS,
    REDIS_CLUSTER,
    BenchError,
    RedisTarget,
    ServerProcess,
    check,
    echo_server,
    memcached_counted,
    memcached_ping,
    ratelimit_server,
    redis_algorithm_counted,
    redis_ping,
    unique_prefix,
    write_rules,
)

CONNECTIONS = 50
# (ours, minimum ratio ours/echo in decisions per second)
THROUGHPUT_TARGETS: tuple[tuple[str, float], ...] = ((MEMORY, 0.8), (REDIS, 0.6))
# p99 at half the peak rate, for ours
P99_TARGET_MS = 10.0
# (ours, its baseline, minimum ratio ours/baseline in decisions per second)
BASELINE_TARGETS: tuple[tuple[str, str, float], ...] = ((REDIS_CLUSTER, REDIS, 0.7),)
# The algorithm rows (issue 23): the backends that run them, and the minimum ratio of their
# decisions/s to the fixed window's, measured in cycles on the same server (fixed, each
# algorithm, fixed, ...): each row against the fixed window interpolated between the two fixed
# runs around it. The verdict takes each side's best run (a shared machine only ever slows a
# run down: its best run is the nearest to what the code can do); the median of every cycle's
# ratio is printed beside it
ALGORITHM_KINDS: tuple[str, ...] = (MEMORY, REDIS)
ALGORITHM_TARGET = 0.9
ALGORITHM_WARMUP_S = 1
"""Warm-up of each run within a cycle: the server is warm already, only the connections are new."""
LETTER = {ECHO: "a", MEMORY: "b", REDIS: "c", MEMCACHE: "d", REDIS_CLUSTER: "e"}
COLUMN = {ECHO: "echo (a)", MEMORY: "memory (b)", REDIS: "redis (c)", MEMCACHE: "memcache (d)"}
COLUMN[REDIS_CLUSTER] = "redis cluster (e)"
ECHO_NAME = {GRPC: "grpc.aio echo", HTTP: "Starlette echo"}


@dataclass(frozen=True)
class Workload:
    protocol: str
    descriptors: int
    algorithm: str = workload.FIXED

    @property
    def base_label(self) -> str:
        what = "gRPC" if self.protocol == GRPC else "/json h1"
        plural = "" if self.descriptors == 1 else "s"
        return f"{what}, {self.descriptors} descriptor{plural}"

    @property
    def label(self) -> str:
        if self.algorithm == workload.FIXED:
            return self.base_label
        return f"{self.base_label}, {workload.ALGORITHM_LABEL[self.algorithm]}"


@dataclass(frozen=True)
class Result:
    peak: Measurement
    half: Measurement | None
    """None for the algorithm rows, measured at their peak only."""
    ratios: tuple[float, ...] = ()
    """Algorithm rows: per cycle, decisions/s over the fixed window's interpolated between the
    fixed runs that open and close the cycle (``peak`` is the cycle with the median rate)."""
    rates: tuple[float, ...] = ()
    """Algorithm rows: decisions/s of each cycle's run of the row."""
    fixed_rates: tuple[float, ...] = ()
    """Algorithm rows: decisions/s of the fixed-window runs opening and closing the cycles."""


@dataclass(frozen=True)
class Figures:
    rps: float
    p50_ms: float
    p99_ms: float


@dataclass(frozen=True)
class Summary:
    peak: Figures
    half: Figures | None
    rounds: list[Result]
    ratio: float | None = None
    """Algorithm rows: the median of every round's cycles' ratios to the fixed window."""
    best_ratio: float | None = None
    """Algorithm rows: the best run of the row over the best fixed-window run around it."""


def median_figures(measurements: Sequence[Measurement]) -> Figures:
    return Figures(
        rps=statistics.median(m.rps for m in measurements),
        p50_ms=statistics.median(m.p50_ms for m in measurements),
        p99_ms=statistics.median(m.p99_ms for m in measurements),
    )


def summarize(results: list[Result]) -> Summary:
    halves = [r.half for r in results if r.half is not None]
    ratios = [ratio for r in results for ratio in r.ratios]
    rates = [rate for r in results for rate in r.rates]
    fixed_rates = [rate for r in results for rate in r.fixed_rates]
    return Summary(
        peak=median_figures([r.peak for r in results]),
        half=median_figures(halves) if len(halves) == len(results) else None,
        rounds=results,
        ratio=statistics.median(ratios) if ratios else None,
        best_ratio=max(rates) / max(fixed_rates) if rates and max(fixed_rates) > 0 else None,
    )


# --------------------------------------------------------------------------- driver


class Bench:
    """Holds what every measurement shares: h2load, the request files, Redis, the CPUs."""

    def __init__(self, args: argparse.Namespace, h2load_exe: str, tmp: Path) -> None:
        self.duration: int = args.duration
        self.warmup: int = args.warmup
        self.cycles: int = args.algorithm_cycles
        self.redis: RedisTarget = args.redis_target
        self.memcached: str = args.memcached
        self.tmp = tmp
        self.server_cpu, load_cpu = pick_cpus(pin=args.pin)
        self.h2load = H2load(h2load_exe, tmp, args.connections, load_cpu)
        self.runtime_root = tmp / "runtime"
        write_rules(self.runtime_root)
        # memory and Redis also load the other algorithms' rules (their own domains)
        self.algorithms: list[str] = args.algorithm_list
        self.algorithm_root = tmp / "runtime-algorithms"
        if self.algorithms:
            write_rules(self.algorithm_root, (workload.FIXED, *self.algorithms))
        self.loads: dict[tuple[str, int, str], Load] = {}
        self.cluster: LoopbackCluster | None = None

    def redis_cluster(self) -> LoopbackCluster:
        """The Redis cluster of the redis-cluster rows: three masters on loopback, started at
        its first use (stopped by :meth:`close`)."""
        if self.cluster is None:
            self.cluster = LoopbackCluster(self.tmp / "redis-cluster").start()
        return self.cluster

    def close(self) -> None:
        if self.cluster is not None:
            self.cluster.stop()

    def load(self, server: ServerProcess, wl: Workload) -> Load:
        """The request file of ``wl`` (written once) aimed at ``server``."""
        key = (wl.protocol, wl.descriptors, wl.algorithm)
        if key not in self.loads:
            if wl.protocol == GRPC:
                body = workload.grpc_body(wl.descriptors, wl.algorithm)
                headers = workload.GRPC_HEADERS
                echo = workload.echo_response(wl.descriptors).SerializeToString()
                answer = len(workload.grpc_frame(echo))
            else:
                body = workload.json_body(wl.descriptors, wl.algorithm)
                headers = workload.JSON_HEADERS
                answer = len(workload.echo_json(wl.descriptors))
            path = self.tmp / f"{wl.protocol}-{wl.descriptors}-{wl.algorithm}.body"
            path.write_bytes(body)
            self.loads[key] = Load(
                url="", body=path, headers=headers, http1=wl.protocol == HTTP,
                min_response_bytes=answer // 2,
            )  # fmt: skip
        return replace(self.loads[key], url=server.endpoints.url(wl.protocol))

    def measure(
        self,
        server: ServerProcess,
        wl: Workload,
        prefix: str,
        key_prefix: str | None = None,
        memcache_prefix: str | None = None,
        counters: RedisTarget | LoopbackCluster | None = None,
        *,
        paced: bool = True,
        warmup: int | None = None,
    ) -> Result:
        """Check one decision, peak run (with warm-up), paced run at half the peak (unless
        not ``paced``), check again. With ``key_prefix`` (Redis), the counters are cleared
        first and must afterwards hold at least every hit of the measured requests (for a
        token bucket, which keeps no count: a key per limit and descriptor); with
        ``memcache_prefix``, the memcached counters must have grown by that much.
        ``counters``: the Redis holding them (single by default, or the cluster)."""
        counters = counters or self.redis
        if key_prefix is not None:
            counters.delete(key_prefix)
        if memcache_prefix is not None:
            before = memcached_counted(self.memcached, memcache_prefix, wl.descriptors)
        check(server, wl.protocol, wl.descriptors, wl.algorithm)
        load = self.load(server, wl)
        peak = self.h2load.peak(load, self.duration, self.warmup if warmup is None else warmup)
        half = self.h2load.paced(load, peak.rps / 2.0, self.duration) if paced else None
        if not server.alive():
            raise BenchError(f"{server.name}: exited during the load.\n{server.output()}")
        check(server, wl.protocol, wl.descriptors, wl.algorithm)
        requests = peak.requests + (half.requests if half is not None else 0)
        counted = ""
        if key_prefix is not None and wl.algorithm != workload.FIXED:
            if not isinstance(counters, RedisTarget):
                raise BenchError(f"{server.name}: algorithm rows run on a single Redis only")
            measured = requests * wl.descriptors
            limits = 2 if wl.algorithm == workload.TWO else 1
            hits, keys = redis_algorithm_counted(counters, key_prefix)
            if keys < limits * wl.descriptors:
                raise BenchError(
                    f"{server.name}: {wl.label}: Redis holds {keys} keys, fewer than the "
                    f"{limits * wl.descriptors} limits of the request: not counted in Redis"
                )
            if wl.algorithm != workload.BUCKET and hits < measured:
                raise BenchError(
                    f"{server.name}: {wl.label}: Redis holds {hits} hits, fewer than the "
                    f"{measured} of the measured requests: not every request was counted"
                )
            counted = (
                f"  [Redis: {keys} keys]"
                if wl.algorithm == workload.BUCKET
                else f"  [Redis counted {hits} hits >= {measured} measured]"
            )
        elif key_prefix is not None:
            measured = requests * wl.descriptors
            hits = counters.counted(key_prefix)
            if hits < measured:
                raise BenchError(
                    f"{server.name}: {wl.label}: Redis holds {hits} hits, fewer than the "
                    f"{measured} of the measured requests: not every request was counted"
                )
            counted = f"  [Redis counted {hits} hits >= {measured} measured]"
        if memcache_prefix is not None:
            measured = requests * wl.descriptors
            for _ in range(20):  # memcache increments after deciding, in the background
                hits = memcached_counted(self.memcached, memcache_prefix, wl.descriptors) - before
                if hits >= measured:
                    break
                time.sleep(0.1)
            if hits < measured:
                raise BenchError(
                    f"{server.name}: {wl.label}: memcached counted {hits} hits, fewer than "
                    f"the {measured} of the measured requests: not every request was counted"
                )
            counted = f"  [memcached counted {hits} hits >= {measured} measured]"
        notes = " ".join(w for w in (peak.warning, half.warning if half else "") if w)
        at_half = (
            f" | at {half.rps:.0f}/s p50 {half.p50_ms:.2f} p99 {half.p99_ms:.2f} ms"
            if half is not None
            else ""
        )
        print(
            f"{prefix}[{server.name}] {wl.label}: peak {peak.rps:.0f}/s "
            f"p50 {peak.p50_ms:.2f} p99 {peak.p99_ms:.2f} ms{at_half}{counted}"
            + (f"  ({notes})" if notes else ""),
            flush=True,
        )
        return Result(peak, half)


def pick_cpus(*, pin: bool) -> tuple[int | None, int | None]:
    """(server CPU, h2load CPU): two different cores when pinning is asked for and possible."""
    if not pin or shutil.which("taskset") is None:
        return None, None
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) < 2:
        return None, None
    return cpus[0], cpus[1]


@contextmanager
def running(server: ServerProcess) -> Iterator[ServerProcess]:
    try:
        server.start()
        yield server
    finally:
        server.stop()


Runs = dict[str, dict[str, list[Result]]]  # kind -> workload label -> one Result per round


def run_round(
    bench: Bench,
    kinds: Sequence[str],
    workloads: Sequence[Workload],
    runs: Runs,
    failures: dict[str, str],
    prefix: str,
) -> None:
    protocols = [p for p in PROTOCOLS if any(wl.protocol == p for wl in workloads)]
    for kind in kinds:
        groups: list[tuple[str, list[str]]] = (
            [(server_name(kind, p), [p]) for p in protocols]
            if kind == ECHO
            else [(server_name(kind, GRPC), protocols)]
        )
        for name, group in groups:
            if name in failures:
                continue
            chosen = [wl for wl in workloads if wl.protocol in group]
            try:
                results = bench_server(bench, kind, chosen, prefix)
            except BenchError as exc:
                failures[name] = str(exc)
                print(f"{prefix}[{name}] FAILED: {exc}", file=sys.stderr, flush=True)
                continue
            for label, result in results.items():
                runs.setdefault(kind, {}).setdefault(label, []).append(result)


def bench_server(
    bench: Bench, kind: str, workloads: Sequence[Workload], prefix: str
) -> dict[str, Result]:
    key_prefix = memcache_prefix = None
    counters: RedisTarget | LoopbackCluster = bench.redis
    with tempfile.TemporaryFile() as log:
        if kind == ECHO:
            server = echo_server(workloads[0].protocol, log, bench.server_cpu)
        else:
            if kind == REDIS:
                problem = redis_ping(bench.redis)
                if problem is not None:
                    raise BenchError(problem)
                key_prefix = unique_prefix()
            if kind == REDIS_CLUSTER:
                counters = bench.redis_cluster()
                key_prefix = unique_prefix()
            if kind == MEMCACHE:
                problem = memcached_ping(bench.memcached)
                if problem is not None:
                    raise BenchError(problem)
                memcache_prefix = unique_prefix()
            root = bench.algorithm_root if algorithms_on(bench, kind) else bench.runtime_root
            server = ratelimit_server(
                kind, root, redis=bench.redis,
                key_prefix=key_prefix or memcache_prefix or "", log=log, cpu=bench.server_cpu,
                memcached=bench.memcached,
                redis_cluster=counters.url if kind == REDIS_CLUSTER else "",
            )  # fmt: skip
        try:
            with running(server):
                results: dict[str, Result] = {}
                for wl in workloads:
                    results[wl.label] = fixed = bench.measure(
                        server, wl, prefix, key_prefix, memcache_prefix, counters
                    )
                    if algorithms_on(bench, kind):
                        results.update(
                            algorithm_cycles(bench, server, wl, fixed, prefix, key_prefix, counters)
                        )
                return results
        finally:
            if key_prefix is not None:
                counters.delete(key_prefix)


def algorithm_cycles(
    bench: Bench,
    server: ServerProcess,
    wl: Workload,
    fixed: Result,
    prefix: str,
    key_prefix: str | None,
    counters: RedisTarget | LoopbackCluster,
) -> dict[str, Result]:
    """``bench.cycles`` cycles of (each algorithm row, then the fixed window again), peak runs
    only, on the same server right after ``fixed``. The machine drifts (the fixed row alone
    moves by up to 30 % between consecutive runs on a 2-core VM), so each row is set against
    the fixed window's rate interpolated between the fixed runs that open and close its cycle,
    and many short cycles are taken instead of one long pair."""
    rows: dict[str, list[tuple[Result, float]]] = {a: [] for a in bench.algorithms}
    start = fixed.peak.rps
    fixed_rates = [start]
    for _ in range(bench.cycles):
        measured = [
            (algorithm, bench.measure(
                server, replace(wl, algorithm=algorithm), prefix, key_prefix, None, counters,
                paced=False, warmup=ALGORITHM_WARMUP_S,
            ))
            for algorithm in bench.algorithms
        ]  # fmt: skip
        end = bench.measure(
            server, wl, prefix + "(fixed again) ", key_prefix, None, counters,
            paced=False, warmup=ALGORITHM_WARMUP_S,
        ).peak.rps  # fmt: skip
        fixed_rates.append(end)
        for position, (algorithm, row) in enumerate(measured, start=1):
            expected = start + (end - start) * position / (len(measured) + 1)
            if expected > 0:
                rows[algorithm].append((row, row.peak.rps / expected))
        start = end
    out: dict[str, Result] = {}
    for algorithm, cycles in rows.items():
        if not cycles:
            continue
        by_rate = sorted(cycles, key=lambda cycle: cycle[0].peak.rps)
        median_row = by_rate[len(by_rate) // 2][0]
        out[replace(wl, algorithm=algorithm).label] = replace(
            median_row,
            ratios=tuple(ratio for _, ratio in cycles),
            rates=tuple(row.peak.rps for row, _ in cycles),
            fixed_rates=tuple(fixed_rates),
        )
    return out


def algorithms_on(bench: Bench, kind: str) -> bool:
    """Whether ``kind``'s server also runs the algorithm rows."""
    return bool(bench.algorithms) and kind in ALGORITHM_KINDS


# --------------------------------------------------------------------------- report


@dataclass(frozen=True)
class Verdict:
    workload: str
    name: str
    value: float | None
    target: str
    passed: bool | None
    why: str = ""


def server_name(kind: str, protocol: str) -> str:
    return ECHO_NAME[protocol] if kind == ECHO else f"ratelimit ({kind})"


def verdicts(
    summaries: dict[str, dict[str, Summary]],
    workloads: Sequence[Workload],
    algorithm_kinds: Sequence[str] = (),
    algorithms: Sequence[str] = (),
) -> list[Verdict]:
    out = throughput_verdicts(summaries, workloads)
    target = f">= {ALGORITHM_TARGET:.2f}"
    for wl in workloads:
        for kind in algorithm_kinds:
            base = summaries.get(kind, {}).get(wl.label)
            for algorithm in algorithms:
                name = f"{LETTER[kind]} {algorithm}/fixed"
                ours = summaries.get(kind, {}).get(replace(wl, algorithm=algorithm).label)
                if ours is None or base is None or ours.best_ratio is None:
                    out.append(Verdict(wl.label, name, None, target, None, server_name(kind, GRPC)))
                    continue
                r = ours.best_ratio
                out.append(Verdict(wl.label, name, r, target, r >= ALGORITHM_TARGET))
    return out


def throughput_verdicts(
    summaries: dict[str, dict[str, Summary]], workloads: Sequence[Workload]
) -> list[Verdict]:
    out: list[Verdict] = []
    for wl in workloads:
        base = summaries.get(ECHO, {}).get(wl.label)
        for kind, minimum in THROUGHPUT_TARGETS:
            name = f"{LETTER[kind]}/a {kind}/echo"
            ours = summaries.get(kind, {}).get(wl.label)
            if ours is None or base is None or base.peak.rps == 0:
                missing = server_name(kind if ours is None else ECHO, wl.protocol)
                out.append(Verdict(wl.label, name, None, f">= {minimum:.2f}", None, missing))
                continue
            r = ours.peak.rps / base.peak.rps
            out.append(Verdict(wl.label, name, r, f">= {minimum:.2f}", r >= minimum))
        for kind, _ in THROUGHPUT_TARGETS:
            name = f"{LETTER[kind]} p99 at half peak"
            ours = summaries.get(kind, {}).get(wl.label)
            target = f"<= {P99_TARGET_MS:.0f} ms"
            if ours is None:
                missing = server_name(kind, wl.protocol)
                out.append(Verdict(wl.label, name, None, target, None, missing))
                continue
            p99 = ours.half.p99_ms if ours.half is not None else math.nan
            out.append(Verdict(wl.label, name, p99, target, p99 <= P99_TARGET_MS))
        for kind, baseline, minimum in BASELINE_TARGETS:
            name = f"{LETTER[kind]}/{LETTER[baseline]} {kind.removeprefix('redis-')}/{baseline}"
            ours = summaries.get(kind, {}).get(wl.label)
            base = summaries.get(baseline, {}).get(wl.label)
            if ours is None or base is None or base.peak.rps == 0:
                missing = server_name(kind if ours is None else baseline, wl.protocol)
                out.append(Verdict(wl.label, name, None, f">= {minimum:.2f}", None, missing))
                continue
            r = ours.peak.rps / base.peak.rps
            out.append(Verdict(wl.label, name, r, f">= {minimum:.2f}", r >= minimum))
            p99 = ours.half.p99_ms if ours.half is not None else math.nan
            name, target = f"{LETTER[kind]} p99 at half peak", f"<= {P99_TARGET_MS:.0f} ms"
            out.append(Verdict(wl.label, name, p99, target, p99 <= P99_TARGET_MS))
    return out


def print_table(
    title: str,
    kinds: Sequence[str],
    workloads: Sequence[Workload],
    summaries: dict[str, dict[str, Summary]],
    rate_label: str,
    half: bool,
) -> None:
    col = 29  # "  " + rate (11) + " " + p50 (7) + " " + p99 (7)
    print(title)
    print(f"{'':<24}" + "".join(f"{COLUMN[k]:>{col}}" for k in kinds))
    print(f"{'':<24}" + "".join(f"  {rate_label:>11} {'p50':>7} {'p99':>7}" for _ in kinds))
    for wl in workloads:
        cells = []
        for kind in kinds:
            s = summaries.get(kind, {}).get(wl.label)
            if s is None:
                cells.append(f"{'n/a':>{col}}")
                continue
            f = s.half if half else s.peak
            if f is None:
                cells.append(f"{'n/a':>{col}}")
                continue
            cells.append(f"  {f.rps:>11.0f} {f.p50_ms:>7.2f} {f.p99_ms:>7.2f}")
        print(f"{wl.label:<24}" + "".join(cells))


def print_algorithms(
    kinds: Sequence[str],
    algorithms: Sequence[str],
    workloads: Sequence[Workload],
    summaries: dict[str, dict[str, Summary]],
    args: argparse.Namespace,
) -> None:
    median = f"median of {args.rounds} rounds; " if args.rounds > 1 else ""
    print(
        f"Algorithms at peak ({median}closed loop, {args.connections} connections; "
        "decisions/s and p99 in ms of the median run; x fixed: best runs, median of cycles)"
    )
    col = 37  # "  " + rate (11) + " " + p99 (7) + " " + best (7) + " " + median (7)
    print(f"{'':<44}" + "".join(f"{COLUMN[k]:>{col}}" for k in kinds))
    print(
        f"{'':<44}"
        + "".join(f"  {'decisions/s':>11} {'p99':>7} {'x best':>7} {'x med':>7}" for _ in kinds)
    )
    for wl in workloads:
        for algorithm in (workload.FIXED, *algorithms):
            row = replace(wl, algorithm=algorithm)
            cells = []
            for kind in kinds:
                s = summaries.get(kind, {}).get(row.label)
                if s is None:
                    cells.append(f"{'n/a':>{col}}")
                    continue
                best = f"{s.best_ratio:>7.2f}" if s.best_ratio is not None else f"{'':>7}"
                ratio = f"{s.ratio:>7.2f}" if s.ratio is not None else f"{'':>7}"
                cells.append(f"  {s.peak.rps:>11.0f} {s.peak.p99_ms:>7.2f} {best} {ratio}")
            name = f"{wl.base_label}, {workload.ALGORITHM_LABEL[algorithm]}"
            print(f"{name:<44}" + "".join(cells))
    print(
        f"(each round: {args.algorithm_cycles} cycles of every algorithm row then the fixed "
        "window again, peak runs on the same server, each row in its own domain with the same "
        "descriptors; x best: the row's best run over the best fixed-window run of its cycles "
        "(the target's figure: a shared machine only slows runs down); x med: per cycle, to "
        "the fixed window interpolated between the runs opening and closing it, median of all "
        "cycles; limits of 10^9, none refused; "
        "two = token bucket 10^9/s + fixed window 10^9/day per descriptor)"
    )


def print_report(
    kinds: Sequence[str],
    workloads: Sequence[Workload],
    summaries: dict[str, dict[str, Summary]],
    failures: dict[str, str],
    args: argparse.Namespace,
) -> list[Verdict]:
    print()
    median = f"median of {args.rounds} rounds; " if args.rounds > 1 else ""
    print_table(
        f"Peak ({median}closed loop, {args.connections} connections; decisions/s, latency in ms)",
        kinds, workloads, summaries, "decisions/s", half=False,
    )  # fmt: skip
    print()
    print_table(
        "At half the peak rate (open loop, h2load --rps; achieved decisions/s, latency in ms)",
        kinds, workloads, summaries, "rate", half=True,
    )  # fmt: skip
    print(
        "(echo (a): grpc.aio echo for gRPC rows, Starlette echo for /json rows; "
        "memory (b), redis (c), memcache (d): the rate limit service with that backend; "
        "redis cluster (e): with KVSTORE_TYPE=cluster on three local masters)"
    )
    algorithm_kinds = [k for k in ALGORITHM_KINDS if k in kinds] if args.algorithm_list else []
    if algorithm_kinds:
        print()
        print_algorithms(algorithm_kinds, args.algorithm_list, workloads, summaries, args)
    print()
    results = verdicts(summaries, workloads, algorithm_kinds, args.algorithm_list)
    for v in results:
        if v.passed is None:
            why = "failed, see above" if v.why in failures else "not measured"
            print(f"{v.workload:<24} {v.name:<22} n/a ({v.why} {why})")
            continue
        assert v.value is not None
        value = f"{v.value:5.2f}" + (" ms" if "p99" in v.name else "   ")
        verdict = "PASS" if v.passed else "FAIL"
        print(f"{v.workload:<24} {v.name:<22} {value}  target {v.target:<8} {verdict}")
    passed = sum(1 for v in results if v.passed)
    failed = sum(1 for v in results if v.passed is False)
    print(f"\ntargets: {passed} PASS, {failed} FAIL, {len(results) - passed - failed} n/a")
    return results


def write_json(
    path: Path,
    *,
    args: argparse.Namespace,
    bench: Bench,
    summaries: dict[str, dict[str, Summary]],
    results: list[Verdict],
    failures: dict[str, str],
    h2load_version: str,
) -> None:
    doc = {
        "config": {
            "duration_s": args.duration,
            "warmup_s": args.warmup,
            "rounds": args.rounds,
            "connections": args.connections,
            "servers": args.kind_list,
            "workloads": [wl.label for wl in args.workload_list],
            "server_cpu": bench.server_cpu,
            "h2load_cpu": bench.h2load.cpu,
            "python": platform.python_version(),
            "platform": platform.platform(),
            "cpus": os.cpu_count(),
            "h2load": h2load_version,
            "rules": workload.rule_yaml(),
            "algorithms": args.algorithm_list,
            "algorithm_cycles": args.algorithm_cycles,
            "algorithm_rules": {a: workload.rule_yaml(a) for a in args.algorithm_list},
        },
        "results": {
            kind: {label: asdict(s) for label, s in per.items()} for kind, per in summaries.items()
        },
        "targets": [asdict(v) for v in results],
        "failures": failures,
    }
    path.write_text(json.dumps(doc, indent=2) + "\n")


# --------------------------------------------------------------------------- main


def csv(text: str) -> list[str]:
    return [part.strip() for part in text.split(",") if part.strip()]


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m bench.ratelimit",
        description="Decisions/s and latency of the rate limit service (memory, Redis and "
        "memcached backends) against grpc.aio and Starlette echo servers, loaded by h2load.",
    )
    parser.add_argument(
        "--duration", type=int, default=5,
        help="seconds of each measured run, peak and half-rate (default 5)",
    )  # fmt: skip
    parser.add_argument(
        "--warmup", type=int, default=2,
        help="seconds of unmeasured load before each peak run (default 2)",
    )  # fmt: skip
    parser.add_argument(
        "--rounds", type=int, default=1,
        help="rounds; servers are interleaved per round and the median is reported",
    )  # fmt: skip
    parser.add_argument(
        "--servers", default=",".join(KINDS),
        help=f"comma-separated subset of {','.join(KINDS)} (default: all)",
    )  # fmt: skip
    parser.add_argument(
        "--protocols", default=",".join(PROTOCOLS),
        help="comma-separated subset of grpc,http (default: both)",
    )  # fmt: skip
    parser.add_argument(
        "--descriptors", default="1,2", help="descriptors per request, e.g. 1,2 (default)"
    )
    parser.add_argument(
        "--connections", type=int, default=CONNECTIONS,
        help=f"h2load connections, one request in flight on each (default {CONNECTIONS})",
    )  # fmt: skip
    parser.add_argument(
        "--no-pin", dest="pin", action="store_false",
        help="do not pin the server and h2load to different cores with taskset",
    )  # fmt: skip
    parser.add_argument(
        "--redis", default="127.0.0.1:6379", metavar="HOST:PORT",
        help="the Redis the redis backend uses (default 127.0.0.1:6379)",
    )  # fmt: skip
    parser.add_argument(
        "--memcached", default="127.0.0.1:11211", metavar="HOST:PORT",
        help="the memcached the memcache backend uses (default 127.0.0.1:11211)",
    )  # fmt: skip
    parser.add_argument(
        "--algorithms", default=",".join(workload.ALGORITHMS),
        help="comma-separated subset of fixed,sliding,bucket,two: the algorithm rows on the "
        "memory and redis servers, each measured beside the fixed window, which is always "
        "measured (default: all; 'fixed' alone: none)",
    )  # fmt: skip
    parser.add_argument(
        "--algorithm-cycles", type=int, default=3,
        help="cycles per round of the algorithm rows then the fixed window again, on the same "
        "server (default 3); each row's ratio is the median over every cycle of every round",
    )  # fmt: skip
    parser.add_argument("--json", type=Path, metavar="PATH", help="also write results as JSON")
    args = parser.parse_args(argv)
    for name in ("duration", "warmup", "rounds", "connections", "algorithm_cycles"):
        if getattr(args, name) < 1:
            parser.error(f"--{name} must be >= 1")
    kinds = csv(args.servers)
    if not kinds or any(k not in KINDS for k in kinds):
        parser.error(f"--servers: choose from {','.join(KINDS)}")
    protocols = csv(args.protocols)
    if not protocols or any(p not in PROTOCOLS for p in protocols):
        parser.error(f"--protocols: choose from {','.join(PROTOCOLS)}")
    try:
        counts = sorted({int(n) for n in csv(args.descriptors)})
    except ValueError:
        counts = []
    if not counts or any(not 1 <= n <= workload.MAX_DESCRIPTORS for n in counts):
        parser.error(f"--descriptors: integers from 1 to {workload.MAX_DESCRIPTORS}")
    try:
        args.redis_target = RedisTarget.parse(args.redis)
    except ValueError as exc:
        parser.error(f"--redis: {exc}")
    algorithms = csv(args.algorithms)
    if not algorithms or any(a not in workload.ALGORITHMS for a in algorithms):
        parser.error(f"--algorithms: choose from {','.join(workload.ALGORITHMS)}")
    args.algorithm_list = [a for a in workload.ALGORITHMS if a in algorithms and a != "fixed"]
    args.kind_list = [k for k in KINDS if k in kinds]
    args.workload_list = [Workload(p, n) for p in PROTOCOLS if p in protocols for n in counts]
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    kinds: list[str] = args.kind_list
    workloads: list[Workload] = args.workload_list
    try:
        h2load_exe = find_h2load()
    except BenchError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    h2load_version = version(h2load_exe)

    runs: Runs = {}
    failures: dict[str, str] = {}
    with tempfile.TemporaryDirectory(prefix="bench-ratelimit-") as tmp:
        bench = Bench(args, h2load_exe, Path(tmp))
        pinned = (
            f"server on CPU {bench.server_cpu}, h2load on CPU {bench.h2load.cpu} (taskset)"
            if bench.server_cpu is not None
            else "not pinned"
        )
        print(
            f"bench.ratelimit: {', '.join(kinds)} x {len(workloads)} workloads; "
            f"{args.rounds} round(s) x ({args.warmup} s warm-up + {args.duration} s peak + "
            f"{args.duration} s at half peak)"
            + (
                f", then on memory/redis per workload {args.algorithm_cycles} cycles of "
                f"{', '.join(args.algorithm_list)} and the fixed window again "
                f"({ALGORITHM_WARMUP_S} s warm-up + {args.duration} s peak each)"
                if args.algorithm_list and any(k in ALGORITHM_KINDS for k in kinds)
                else ""
            )
            + f"; h2load -t1 -c{args.connections} -m1 "
            f"({h2load_version}); {pinned}; {os.cpu_count()} CPUs",
            flush=True,
        )
        try:
            for rnd in range(1, args.rounds + 1):
                prefix = f"(round {rnd}/{args.rounds}) " if args.rounds > 1 else ""
                run_round(bench, kinds, workloads, runs, failures, prefix)
        finally:
            bench.close()

        # Only servers that completed every round are compared.
        summaries = {
            kind: {label: summarize(rs) for label, rs in per.items() if len(rs) == args.rounds}
            for kind, per in runs.items()
        }
        results = print_report(kinds, workloads, summaries, failures, args)
        if args.json is not None:
            write_json(
                args.json, args=args, bench=bench, summaries=summaries, results=results,
                failures=failures, h2load_version=h2load_version,
            )  # fmt: skip
            print(f"\nresults written to {args.json}")
    if failures:
        print(f"\nFAILED: {', '.join(failures)} (see the errors above)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
