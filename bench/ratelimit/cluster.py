"""The Redis cluster mode of the ratelimit Redis backend against single Redis and against
redis-py's ``RedisCluster``, on loopback, in the same run.

It starts a single ``redis-server`` and a cluster of three masters (``redis-server
--cluster-enabled yes``, created with ``redis-cli --cluster create``), all with the same
configuration, and drives the counter store in this process: ``callers`` concurrent callers,
each in a closed loop of calls, one call being one decision's increments (``INCRBY`` then
``EXPIRE`` per descriptor, as the service sends them) on keys spread over ``--keys``
distinct counters per descriptor (so over every master). Clients, in turn in each round:

- ``single (ours)``: :class:`~handlers.ratelimit.backends.redis.RedisStore`, type single
  (the measured batching path): the baseline;
- ``cluster (ours)``: the same store, type cluster (the default
  ``KVSTORE_CLUSTER_PIPELINE_PARALLELISM=1``), and ``cluster p=0 (ours)`` with ``0``;
- ``cluster (redis-py)``: ``redis.asyncio.cluster.RedisCluster``, one pipeline per call
  (``transaction=False``) holding the same commands;
- ``single (redis-py)``: ``redis.asyncio.Redis``, the same pipeline, for reference.

Figures: calls (decisions) per second, increments per second (calls x descriptors), p50 and
p99 of a call in ms, then the ratios cluster/single (ours) and ours/redis-py. After each run
the counters under the run's key prefix must add up to exactly the increments of the calls
that succeeded (none lost, none counted twice); a failed call is reported. Run ``python -m
bench.ratelimit.cluster --help`` for the options.

:class:`LoopbackCluster` is also what ``python -m bench.ratelimit`` starts for its
``redis-cluster`` row (the service with ``KVSTORE_TYPE=cluster``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import random
import secrets
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Protocol

import redis
import redis.asyncio
from redis.asyncio.cluster import RedisCluster

from bench.ratelimit.h2load import percentile
from bench.ratelimit.servers import BenchError
from handlers.ratelimit.backends.base import Increment
from handlers.ratelimit.backends.redis import RedisStore
from handlers.ratelimit.settings import KvStoreSettings

HOST = "127.0.0.1"
MASTERS = 3
START_DEADLINE_S = 30.0
EXPIRE_SECONDS = 3600
CALLERS = 50
KEYS = 1000
CLUSTER_BUS_OFFSET = 10000

SINGLE = "single (ours)"
CLUSTER = "cluster (ours)"
CLUSTER_P0 = "cluster p=0 (ours)"
REDISPY_CLUSTER = "cluster (redis-py)"
REDISPY_SINGLE = "single (redis-py)"
CLIENTS: tuple[str, ...] = (SINGLE, CLUSTER, CLUSTER_P0, REDISPY_CLUSTER, REDISPY_SINGLE)
# (name, numerator, denominator) of the ratios printed
RATIOS: tuple[tuple[str, str, str], ...] = (
    ("cluster/single, ours", CLUSTER, SINGLE),
    ("cluster p=0/single, ours", CLUSTER_P0, SINGLE),
    ("ours/redis-py, cluster", CLUSTER, REDISPY_CLUSTER),
    ("ours/redis-py, single", SINGLE, REDISPY_SINGLE),
)


# --------------------------------------------------------------------------- servers


def _bindable(port: int) -> bool:
    with socket.socket() as probe:
        try:
            probe.bind((HOST, port))
        except OSError:
            return False
    return True


def free_port(*, cluster_bus: bool = False) -> int:
    """A free loopback port (and its cluster bus port, + 10000), below the kernel's range
    for outgoing connections."""
    for _ in range(200):
        port = random.randint(12000, 22000)
        if _bindable(port) and (not cluster_bus or _bindable(port + CLUSTER_BUS_OFFSET)):
            return port
    raise BenchError("no free loopback port")


def redis_binaries() -> tuple[str, str]:
    server, cli = shutil.which("redis-server"), shutil.which("redis-cli")
    if server is None or cli is None:
        raise BenchError(
            "redis-server and redis-cli are needed for the cluster "
            "(`make services` installs them: scripts/ensure-debian-packages.sh redis-server)"
        )
    return server, cli


class RedisNode:
    """One ``redis-server`` on a free loopback port, no persistence, its files in
    ``directory``; pinned to ``cpu`` when given."""

    def __init__(self, directory: Path, *, cluster: bool, cpu: int | None) -> None:
        self.directory = directory
        self.cluster = cluster
        self.cpu = cpu
        self.port = free_port(cluster_bus=cluster)
        self._proc: subprocess.Popen[bytes] | None = None

    @property
    def address(self) -> str:
        return f"{HOST}:{self.port}"

    def client(self) -> redis.Redis:
        return redis.Redis(host=HOST, port=self.port, socket_timeout=10, decode_responses=True)

    def start(self) -> None:
        server, _ = redis_binaries()
        self.directory.mkdir(parents=True, exist_ok=True)
        lines = [f"bind {HOST}", f"port {self.port}", f"dir {self.directory}", "save ''"]
        lines += ["appendonly no", "daemonize no", f"logfile {self.directory / 'redis.log'}"]
        if self.cluster:
            lines += ["cluster-enabled yes", f"cluster-config-file nodes-{self.port}.conf"]
        conf = self.directory / "redis.conf"
        conf.write_text("\n".join(lines) + "\n")
        cpu = self.cpu
        self._proc = subprocess.Popen(
            [server, str(conf)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            preexec_fn=(lambda: os.sched_setaffinity(0, {cpu})) if cpu is not None else None,
        )
        deadline = time.monotonic() + START_DEADLINE_S
        while True:
            if self._proc.poll() is not None:
                raise BenchError(f"redis-server on {self.address} exited: {self._log_tail()}")
            try:
                with self.client() as client:
                    if client.ping():
                        return
            except (redis.RedisError, OSError):
                pass
            if time.monotonic() > deadline:
                raise BenchError(f"redis-server on {self.address} does not answer PING")
            time.sleep(0.05)

    def _log_tail(self) -> str:
        try:
            return (self.directory / "redis.log").read_text()[-2000:]
        except OSError:
            return "(no log)"

    def stop(self) -> None:
        proc = self._proc
        if proc is not None and proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()

    def keys(self, prefix: str) -> list[str]:
        with self.client() as client:
            return list(client.scan_iter(match=prefix + "*", count=1000))

    def counted(self, prefix: str) -> int:
        """The sum of the counters under ``prefix`` on this node."""
        keys = self.keys(prefix)
        with self.client() as client:
            pipe = client.pipeline(transaction=False)  # GETs: the keys are on many slots
            for key in keys:
                pipe.get(key)
            values = pipe.execute() if keys else []
        return sum(int(value) for value in values if value is not None)

    def delete(self, prefix: str) -> int:
        keys = self.keys(prefix)
        with self.client() as client:
            pipe = client.pipeline(transaction=False)
            for key in keys:
                pipe.delete(key)
            if keys:
                pipe.execute()
        return len(keys)


class LoopbackCluster:
    """``masters`` cluster nodes on loopback, every slot assigned (``redis-cli --cluster
    create``, no replicas)."""

    def __init__(self, directory: Path, *, masters: int = MASTERS, cpu: int | None = None):
        self.nodes = [
            RedisNode(directory / f"node{i}", cluster=True, cpu=cpu) for i in range(masters)
        ]

    @property
    def url(self) -> str:
        """``KVSTORE_URL`` of the cluster: every node."""
        return ",".join(node.address for node in self.nodes)

    def start(self) -> LoopbackCluster:
        _, cli = redis_binaries()
        try:
            for node in self.nodes:
                node.start()
            create = [cli, "--cluster", "create", *(node.address for node in self.nodes)]
            proc = subprocess.run(
                [*create, "--cluster-replicas", "0", "--cluster-yes"],
                capture_output=True,
                text=True,
                timeout=60,
                check=False,
            )
            if proc.returncode != 0:
                raise BenchError(f"redis-cli --cluster create failed: {proc.stdout}{proc.stderr}")
            deadline = time.monotonic() + START_DEADLINE_S
            while not self._ready():
                if time.monotonic() > deadline:
                    raise BenchError("the cluster did not reach cluster_state:ok")
                time.sleep(0.05)
        except BaseException:
            self.stop()
            raise
        return self

    def _ready(self) -> bool:
        for node in self.nodes:
            with node.client() as client:
                info = client.execute_command("CLUSTER", "INFO")
            if (
                "cluster_state:ok" not in info
                or f"cluster_known_nodes:{len(self.nodes)}" not in info
            ):
                return False
        return True

    def counted(self, prefix: str) -> int:
        """The sum of the counters under ``prefix``, on every node."""
        return sum(node.counted(prefix) for node in self.nodes)

    def delete(self, prefix: str) -> int:
        return sum(node.delete(prefix) for node in self.nodes)

    def stop(self) -> None:
        for node in self.nodes:
            node.stop()


@contextmanager
def loopback_cluster(directory: Path, cpu: int | None = None) -> Iterator[LoopbackCluster]:
    cluster = LoopbackCluster(directory, cpu=cpu).start()
    try:
        yield cluster
    finally:
        cluster.stop()


# --------------------------------------------------------------------------- clients


class Client(Protocol):
    async def increment(self, keys: Sequence[str]) -> list[int]: ...

    async def close(self) -> None: ...


class OurStore:
    """:class:`RedisStore` with the service's increments."""

    def __init__(self, settings: KvStoreSettings) -> None:
        self._store = RedisStore(settings)

    async def start(self) -> None:
        await self._store.start()

    async def increment(self, keys: Sequence[str]) -> list[int]:
        return await self._store.increment([Increment(k, 1, EXPIRE_SECONDS, False) for k in keys])

    async def close(self) -> None:
        await self._store.close()


class RedisPy:
    """redis-py (``Redis`` or ``RedisCluster``): one pipeline per call, the same commands."""

    def __init__(self, client: redis.asyncio.Redis | RedisCluster) -> None:
        self._client = client

    async def increment(self, keys: Sequence[str]) -> list[int]:
        pipe = self._client.pipeline(transaction=False)
        for key in keys:
            pipe.incrby(key, 1)
            pipe.expire(key, EXPIRE_SECONDS)
        replies = await pipe.execute()
        return [int(value) for value in replies[::2]]

    async def close(self) -> None:
        await self._client.aclose()


async def open_client(name: str, single: RedisNode, cluster: LoopbackCluster) -> Client:
    if name in (SINGLE, CLUSTER, CLUSTER_P0):
        if name == SINGLE:
            settings = KvStoreSettings(type="single", socket_type="tcp", url=single.address)
        else:
            settings = KvStoreSettings(
                type="cluster",
                socket_type="tcp",
                url=cluster.url,
                cluster_pipeline_parallelism=1 if name == CLUSTER else 0,
            )
        store = OurStore(settings)
        await store.start()
        return store
    if name == REDISPY_CLUSTER:
        client = RedisCluster(host=HOST, port=cluster.nodes[0].port)
        await client.initialize()
        return RedisPy(client)
    plain = redis.asyncio.Redis(host=HOST, port=single.port)
    await plain.ping()
    return RedisPy(plain)


# --------------------------------------------------------------------------- measurement


@dataclass(frozen=True)
class Measurement:
    calls_per_s: float
    increments_per_s: float
    p50_ms: float
    p99_ms: float
    cpu_us: float
    """CPU time of this process (the client) per call in the measured period, in µs: less
    sensitive than the rates to what else runs on the machine."""
    calls: int
    """Calls answered in the measured period."""
    failed: int
    """Calls that raised (warm-up included)."""
    counted: int
    """The counters' sum after the run: the increments of every call that succeeded."""


def key_families(prefix: str, descriptors: int, keys: int) -> list[list[str]]:
    """For descriptor d, ``keys`` counter keys shaped like the service's."""
    families = (
        lambda i: f"{prefix}bench_remote_address_10.0.{i // 256}.{i % 256}_1700000000",
        lambda i: f"{prefix}bench_path_/api/v1/items/{i}_1700000000",
    )
    return [[families[d](i) for i in range(keys)] for d in range(descriptors)]


async def drive(
    client: Client,
    families: list[list[str]],
    *,
    callers: int,
    warmup: float,
    duration: float,
) -> tuple[float, float, list[float], int, list[BaseException]]:
    """Closed loop of ``callers``: (measured seconds, CPU seconds of this process meanwhile,
    latencies of the calls answered in the measured period, increments of every successful
    call, failures)."""
    latencies: list[float] = []
    failures: list[BaseException] = []
    measuring = stopping = False
    succeeded = 0
    size = len(families[0])

    async def caller(index: int) -> None:
        nonlocal succeeded
        n = index * 7919
        while not stopping:
            keys = [family[n % size] for family in families]
            n += 1
            began = time.perf_counter()
            try:
                await client.increment(keys)
            except Exception as error:
                failures.append(error)
                await asyncio.sleep(0.001)
                continue
            succeeded += len(keys)
            if measuring:
                latencies.append(time.perf_counter() - began)

    tasks = [asyncio.create_task(caller(i)) for i in range(callers)]
    await asyncio.sleep(warmup)
    measuring = True
    began, cpu = time.perf_counter(), time.process_time()
    await asyncio.sleep(duration)
    measuring = False
    elapsed, cpu = time.perf_counter() - began, time.process_time() - cpu
    stopping = True
    await asyncio.gather(*tasks)
    return elapsed, cpu, latencies, succeeded, failures


async def measure(
    name: str,
    single: RedisNode,
    cluster: LoopbackCluster,
    *,
    descriptors: int,
    args: argparse.Namespace,
) -> Measurement:
    prefix = f"bench-cluster-{os.getpid()}-{secrets.token_hex(4)}:"
    target = cluster if "cluster" in name else single
    families = key_families(prefix, descriptors, args.keys)
    client = await open_client(name, single, cluster)
    try:
        elapsed, cpu, latencies, succeeded, failures = await drive(
            client, families, callers=args.callers, warmup=args.warmup, duration=args.duration
        )
    finally:
        await client.close()
    try:
        counted = target.counted(prefix)
    finally:
        target.delete(prefix)
    if failures:
        print(f"  {name}: {len(failures)} calls failed, e.g. {failures[0]!r}", file=sys.stderr)
        if "ours" in name:
            raise BenchError(f"{name}: {len(failures)} calls failed: {failures[0]!r}")
    # a failed call's commands may have run: then more may be counted, never less
    if counted < succeeded or (counted > succeeded and not failures):
        raise BenchError(
            f"{name}: the counters hold {counted} increments, the calls that succeeded made "
            f"{succeeded}: {'lost' if counted < succeeded else 'counted twice'}"
        )
    ordered = sorted(int(seconds * 1e6) for seconds in latencies)
    calls = len(latencies)
    return Measurement(
        calls_per_s=calls / elapsed,
        increments_per_s=calls * descriptors / elapsed,
        p50_ms=percentile(ordered, 50) / 1000,
        p99_ms=percentile(ordered, 99) / 1000,
        cpu_us=cpu * 1e6 / max(calls, 1),
        calls=calls,
        failed=len(failures),
        counted=counted,
    )


# --------------------------------------------------------------------------- report


def median(measurements: Sequence[Measurement]) -> Measurement:
    def mid(values: Sequence[float]) -> float:
        return float(statistics.median(values))

    return Measurement(
        calls_per_s=mid([m.calls_per_s for m in measurements]),
        increments_per_s=mid([m.increments_per_s for m in measurements]),
        p50_ms=mid([m.p50_ms for m in measurements]),
        p99_ms=mid([m.p99_ms for m in measurements]),
        cpu_us=mid([m.cpu_us for m in measurements]),
        calls=sum(m.calls for m in measurements),
        failed=sum(m.failed for m in measurements),
        counted=sum(m.counted for m in measurements),
    )


def label(descriptors: int) -> str:
    return f"{descriptors} descriptor{'' if descriptors == 1 else 's'}"


def print_report(
    results: dict[str, dict[int, Measurement]],
    clients: Sequence[str],
    counts: Sequence[int],
    args: argparse.Namespace,
) -> None:
    rounds = f"median of {args.rounds} rounds; " if args.rounds > 1 else ""
    print()
    print(
        f"Counter store, in-process ({rounds}{args.callers} callers, closed loop; "
        f"one call = one decision's INCRBY+EXPIRE per descriptor; latency in ms)"
    )
    col = 45
    print(f"{'':<22}" + "".join(f"{label(n):>{col}}" for n in counts))
    header = f"  {'calls/s':>9} {'incr/s':>9} {'p50':>7} {'p99':>7} {'cpu µs':>6}"
    print(f"{'':<22}" + header * len(counts))
    for name in clients:
        cells = []
        for n in counts:
            m = results.get(name, {}).get(n)
            if m is None:
                cells.append(f"{'n/a':>{col}}")
                continue
            cells.append(
                f"  {m.calls_per_s:>9.0f} {m.increments_per_s:>9.0f} "
                f"{m.p50_ms:>7.2f} {m.p99_ms:>7.2f} {m.cpu_us:>6.1f}"
            )
        print(f"{name:<22}" + "".join(cells))
    print()
    col = 24
    print(f"{'ratio x/y':<26}" + "".join(f"{label(n):>{col}}" for n in counts))
    print(f"{'':<26}" + f"  {'calls/s':>10} {'CPU/call':>10}" * len(counts))
    for title, top, bottom in RATIOS:
        cells = []
        for n in counts:
            a, b = results.get(top, {}).get(n), results.get(bottom, {}).get(n)
            if a is None or b is None or not b.calls_per_s or not b.cpu_us:
                cells.append(f"{'n/a':>{col}}")
                continue
            cells.append(f"  {a.calls_per_s / b.calls_per_s:>10.2f} {a.cpu_us / b.cpu_us:>10.2f}")
        print(f"{title:<26}" + "".join(cells))
    failed = sum(m.failed for per in results.values() for m in per.values())
    print(
        f"\nfailed calls: {failed} (ours: none allowed); after every run the counters held "
        "the increments of its successful calls: none lost, none counted twice"
        + (" (more where calls failed after their commands ran)" if failed else "")
    )


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m bench.ratelimit.cluster",
        description="Increments/s of the ratelimit Redis store in cluster mode against single "
        "Redis and against redis-py's RedisCluster, on a loopback cluster of three masters.",
    )
    parser.add_argument("--duration", type=float, default=5.0, help="measured seconds (5)")
    parser.add_argument("--warmup", type=float, default=1.0, help="unmeasured seconds first (1)")
    parser.add_argument("--rounds", type=int, default=1, help="rounds, median reported (1)")
    parser.add_argument("--callers", type=int, default=CALLERS, help=f"callers ({CALLERS})")
    parser.add_argument(
        "--keys", type=int, default=KEYS, help=f"distinct counters per descriptor ({KEYS})"
    )
    parser.add_argument("--descriptors", default="1,2", help="descriptors per call (1,2)")
    parser.add_argument(
        "--clients", default=",".join(CLIENTS), help=f"a subset of: {', '.join(CLIENTS)}"
    )
    parser.add_argument(
        "--no-pin", dest="pin", action="store_false",
        help="do not pin this process and the Redis servers to different cores",
    )  # fmt: skip
    parser.add_argument("--json", type=Path, metavar="PATH", help="also write results as JSON")
    args = parser.parse_args(argv)
    if args.duration <= 0 or args.warmup < 0 or args.rounds < 1 or args.callers < 1:
        parser.error("--duration > 0, --warmup >= 0, --rounds >= 1, --callers >= 1")
    if args.keys < 1:
        parser.error("--keys must be >= 1")
    try:
        args.counts = sorted({int(n) for n in args.descriptors.split(",") if n.strip()})
    except ValueError:
        args.counts = []
    if not args.counts or any(n not in (1, 2) for n in args.counts):
        parser.error("--descriptors: 1, 2 or 1,2")
    chosen = [c.strip() for c in args.clients.split(",") if c.strip()]
    if not chosen or any(c not in CLIENTS for c in chosen):
        parser.error(f"--clients: choose from {', '.join(CLIENTS)}")
    args.client_list = [c for c in CLIENTS if c in chosen]
    return args


def pick_cpus(*, pin: bool) -> tuple[int | None, int | None]:
    """(this process's CPU, the Redis servers' CPU) when pinning is possible."""
    cpus = sorted(os.sched_getaffinity(0))
    if not pin or len(cpus) < 2:
        return None, None
    return cpus[0], cpus[1]


async def run(
    args: argparse.Namespace, single: RedisNode, cluster: LoopbackCluster
) -> dict[str, dict[int, list[Measurement]]]:
    rounds: dict[str, dict[int, list[Measurement]]] = {}
    for rnd in range(1, args.rounds + 1):
        tag = f"(round {rnd}/{args.rounds}) " if args.rounds > 1 else ""
        for n in args.counts:
            for name in args.client_list:
                if name == CLUSTER_P0 and n == 1:
                    continue  # one key per call: the parallelism changes nothing
                m = await measure(name, single, cluster, descriptors=n, args=args)
                rounds.setdefault(name, {}).setdefault(n, []).append(m)
                print(
                    f"{tag}[{name}] {label(n)}: {m.calls_per_s:.0f} calls/s, "
                    f"{m.increments_per_s:.0f} increments/s, p50 {m.p50_ms:.2f} "
                    f"p99 {m.p99_ms:.2f} ms, {m.cpu_us:.1f} µs CPU/call  "
                    f"[counted {m.counted}, failed {m.failed}]",
                    flush=True,
                )
    return rounds


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    own_cpu, redis_cpu = pick_cpus(pin=args.pin)
    pinned = (
        f"this process on CPU {own_cpu}, Redis on CPU {redis_cpu}"
        if own_cpu is not None
        else "not pinned"
    )
    try:
        with tempfile.TemporaryDirectory(prefix="bench-ratelimit-cluster-") as tmp:
            single = RedisNode(Path(tmp) / "single", cluster=False, cpu=redis_cpu)
            try:
                single.start()
                with loopback_cluster(Path(tmp) / "cluster", cpu=redis_cpu) as cluster:
                    if own_cpu is not None:
                        os.sched_setaffinity(0, {own_cpu})
                    print(
                        f"bench.ratelimit.cluster: single Redis {single.address}, cluster of "
                        f"{len(cluster.nodes)} masters {cluster.url}; {args.rounds} round(s) x "
                        f"({args.warmup:g} s warm-up + {args.duration:g} s); {args.callers} "
                        f"callers, {args.keys} keys per descriptor; {pinned}; "
                        f"{os.cpu_count()} CPUs",
                        flush=True,
                    )
                    rounds = asyncio.run(run(args, single, cluster))
            finally:
                single.stop()
    except BenchError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    results = {name: {n: median(ms) for n, ms in per.items()} for name, per in rounds.items()}
    print_report(results, args.client_list, args.counts, args)
    if args.json is not None:
        doc: dict[str, Any] = {
            "config": {
                "duration_s": args.duration,
                "warmup_s": args.warmup,
                "rounds": args.rounds,
                "callers": args.callers,
                "keys": args.keys,
                "masters": MASTERS,
                "python": platform.python_version(),
                "platform": platform.platform(),
                "cpus": os.cpu_count(),
                "pinned": pinned,
            },
            "medians": {
                name: {label(n): asdict(m) for n, m in per.items()} for name, per in results.items()
            },
            "rounds": {
                name: {label(n): [asdict(m) for m in ms] for n, ms in per.items()}
                for name, per in rounds.items()
            },
        }
        args.json.write_text(json.dumps(doc, indent=2) + "\n")
        print(f"\nresults written to {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
