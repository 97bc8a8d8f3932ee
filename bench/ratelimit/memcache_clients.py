"""The memcached backend's own client against maintained asyncio memcached clients.

The ``BACKEND_TYPE=memcache`` store (:class:`~handlers.ratelimit.backends.memcache.MemcacheStore`)
does, per decision: one ``get`` of the decision's keys per node (the key's node is
``crc32(key) % nodes``), the nodes concurrently; the limiter decides on the values read; the
increments are queued and applied in the background, one batch at a time (``incr``; on a miss
``add`` with the expiration; ``incr`` again when that ``add`` lost a race). This module runs
exactly that, in one process, with ``--concurrency`` decisions in flight at once (a closed
loop, as h2load's connections drive the service), on ``--nodes`` memcached nodes, through:

- **ours**: ``MemcacheStore`` itself (its own protocol code, :mod:`memcache_connections`:
  the commands of one pass of the event loop go out in one write, calls are pipelined on at
  most ``pool`` connections per node);
- **aiomcache** 0.8.2: one ``aiomcache.Client`` per node (it has no multi-node support), a
  pool of ``pool`` connections, one command in flight per connection; its
  ``multi_get``, ``incr``, ``add``; the timeout around each call, as it has none;
- **emcache** 1.3.3: one single-node emcache client per node (its own multi-node client
  places keys by rendezvous hashing, not by upstream's CRC-32), ``max_connections=pool``,
  one command in flight per connection; its ``get_many``, ``increment``, ``add``, with its
  own timeout;
- **emcache-ab**: the same with emcache's autobatching on, reading each key with ``get`` so
  that the reads of concurrent decisions share one ``get`` per node (the increments are as
  for emcache: autobatching covers ``get``/``gets`` only).

The library variants keep the store's logic (the same node choice, decide-then-increment,
batches, stages and 0.5 s timeout); only the memcached I/O differs, with at most ``pool``
commands at once per node (see :class:`AiomcacheNode` and :class:`EmcacheNode` for why).
Every run's counters are then read back: they must add up to every hit of the decisions that
succeeded. Failed decisions (timeouts) and lost increments are reported; ours failing is an
error of the run.

Figures: decisions/s over the measured period, the final flush of the queued increments
included; p50 and p99 of one decision (``increment`` as the limiter awaits it: the read,
the queueing); this process's CPU time per decision. Run ``python -m
bench.ratelimit.memcache_clients --help``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import getpass
import json
import logging
import os
import platform
import shutil
import socket
import statistics
import subprocess
import sys
import time
import zlib
from collections.abc import Awaitable, Callable, Iterator, Sequence
from dataclasses import asdict, dataclass
from importlib import metadata
from pathlib import Path
from typing import Protocol, TypeVar

try:
    import aiomcache
    import emcache
except ImportError as missing:  # the bench extra: pip install -e '.[dev,bench]'
    sys.exit(f"{missing}: install the bench extra (make bench-ratelimit does)")

from handlers.ratelimit.backends.base import BackendError, Increment
from handlers.ratelimit.backends.memcache import TIMEOUT, MemcacheStore
from handlers.ratelimit.settings import AltCacheSettings

OURS = "ours"
AIOMCACHE = "aiomcache"
EMCACHE = "emcache"
EMCACHE_AB = "emcache-ab"
CLIENTS: tuple[str, ...] = (OURS, AIOMCACHE, EMCACHE, EMCACHE_AB)
BASELINES: tuple[str, ...] = CLIENTS[1:]
VERSIONS = {name: f"{name} {metadata.version(name)}" for name in (AIOMCACHE, EMCACHE)}
KEYS_PER_DESCRIPTOR = 500
"""Distinct values per descriptor key (remote addresses, paths): the counters in use."""
EXPIRE = 3600
R = TypeVar("R")


class StoreLike(Protocol):
    async def start(self) -> None: ...
    async def increment(self, increments: Sequence[Increment]) -> list[int]: ...
    async def flush(self) -> None: ...
    async def close(self) -> None: ...


# --------------------------------------------------------------------------- library stores


class NodeClient(Protocol):
    """What the store needs from one node's client."""

    async def get_many(self, keys: list[bytes]) -> dict[bytes, bytes]: ...
    async def incr(self, key: bytes, amount: int) -> int | None:
        """The new value, or None when the key is missing."""
        ...

    async def add(self, key: bytes, value: bytes, exptime: int) -> bool:
        """True if stored, False if the key exists (``NOT_STORED``)."""
        ...

    async def close(self) -> None: ...


class AiomcacheNode:
    """aiomcache drops a connection whenever a command raises, an ``incr`` miss included,
    and callers already waiting for one of its connections then wait forever (the pool
    only wakes them when a connection comes back). So: ``pool_minsize`` = ``pool_size``
    (a dropped connection is replaced by the next caller) and at most ``pool`` callers at
    once (no caller ever waits inside its pool)."""

    def __init__(self, host: str, port: int, pool: int) -> None:
        self._client = aiomcache.Client(host, port, pool_size=pool)
        self._slots = asyncio.Semaphore(pool)

    async def get_many(self, keys: list[bytes]) -> dict[bytes, bytes]:
        async with self._slots, asyncio.timeout(TIMEOUT):  # aiomcache has no timeout
            values = await self._client.multi_get(*keys)
        return {key: value for key, value in zip(keys, values, strict=True) if value is not None}

    async def incr(self, key: bytes, amount: int) -> int | None:
        try:
            async with self._slots, asyncio.timeout(TIMEOUT):
                return await self._client.incr(key, amount)
        except aiomcache.ClientException as error:  # a miss is an exception here
            if "NOT_FOUND" in str(error):
                return None
            raise

    async def add(self, key: bytes, value: bytes, exptime: int) -> bool:
        async with self._slots, asyncio.timeout(TIMEOUT):
            return await self._client.add(key, value, exptime)

    async def close(self) -> None:
        await self._client.close()


class EmcacheNode:
    """emcache hands a freed connection to the *newest* caller waiting for one, so under
    load the oldest waiters starve past the timeout; at most ``pool`` callers at once
    (first come, first served here) keep anyone from waiting inside its pool. With
    autobatching, ``get`` calls go around that limit: they are only queued for the batch,
    which emcache sends on the next pass of the event loop."""

    def __init__(self, client: emcache.Client, pool: int, *, autobatching: bool) -> None:
        self._client = client
        self._slots = asyncio.Semaphore(pool)
        self._autobatching = autobatching

    @classmethod
    async def create(cls, host: str, port: int, pool: int, *, autobatching: bool) -> EmcacheNode:
        client = await emcache.create_client(
            [emcache.MemcachedHostAddress(host, port)],
            timeout=TIMEOUT,
            connection_timeout=TIMEOUT,
            max_connections=pool,
            autobatching=autobatching,
        )
        return cls(client, pool, autobatching=autobatching)

    async def get_many(self, keys: list[bytes]) -> dict[bytes, bytes]:
        if self._autobatching:
            items = await asyncio.gather(*(self._client.get(key) for key in keys))
            return {k: item.value for k, item in zip(keys, items, strict=True) if item is not None}
        async with self._slots:
            found = await self._client.get_many(keys)
        return {key: item.value for key, item in found.items()}

    async def incr(self, key: bytes, amount: int) -> int | None:
        try:
            async with self._slots:
                return await self._client.increment(key, amount)
        except emcache.NotFoundCommandError:
            return None

    async def add(self, key: bytes, value: bytes, exptime: int) -> bool:
        try:
            async with self._slots:
                await self._client.add(key, value, exptime=exptime)
        except emcache.NotStoredStorageCommandError:
            return False
        return True

    async def close(self) -> None:
        await self._client.close()


class LibraryStore:
    """``MemcacheStore``'s logic on a library's per-node clients: keys on node
    ``crc32(key) % nodes``, the reads of a call concurrently (one multi-key get per node),
    decide on them, increments queued and applied a batch at a time (per node: ``incr`` each,
    ``add`` the missed, ``incr`` those whose ``add`` lost). Each node client applies the
    0.5 s timeout to each of its commands (emcache's own, ``asyncio.timeout`` for aiomcache)."""

    def __init__(self, nodes: Sequence[NodeClient], pool: int) -> None:
        self._nodes = list(nodes)
        self._pool = pool
        self._queue: list[Increment] = []
        self._draining: asyncio.Task[None] | None = None
        self.errors = 0

    async def start(self) -> None:
        pass

    def _node(self, key: bytes) -> int:
        count = len(self._nodes)
        return 0 if count == 1 else zlib.crc32(key) % count

    async def increment(self, increments: Sequence[Increment]) -> list[int]:
        groups: dict[int, list[bytes]] = {}
        for inc in increments:
            key = inc.key.encode()
            group = groups.setdefault(self._node(key), [])
            if key not in group:
                group.append(key)
        try:
            replies = await asyncio.gather(
                *(self._nodes[node].get_many(keys) for node, keys in groups.items())
            )
        except (TimeoutError, OSError, aiomcache.ClientException, emcache.CommandError) as error:
            raise BackendError(f"memcached: {error!r}") from error
        found: dict[bytes, bytes] = {}
        for reply in replies:
            found.update(reply)
        self._queue.extend(increments)
        if self._draining is None:
            self._draining = asyncio.get_running_loop().create_task(self._drain())
        return [int(found.get(inc.key.encode(), b"0")) + inc.amount for inc in increments]

    async def _drain(self) -> None:
        try:
            while self._queue:
                await asyncio.sleep(0)
                batch, self._queue = self._queue, []
                groups: dict[int, list[Increment]] = {}
                for inc in batch:
                    groups.setdefault(self._node(inc.key.encode()), []).append(inc)
                await asyncio.gather(*(self._apply(node, incs) for node, incs in groups.items()))
        finally:
            self._draining = None

    async def _apply(self, index: int, increments: list[Increment]) -> None:
        node = self._nodes[index]
        try:
            news = await self._each(increments, lambda inc: node.incr(inc.key.encode(), inc.amount))
            missed = [inc for inc, new in zip(increments, news, strict=True) if new is None]
            if not missed:
                return
            stored = await self._each(
                missed,
                lambda inc: node.add(inc.key.encode(), b"%d" % inc.amount, inc.expire_seconds),
            )
            again = [inc for inc, ok in zip(missed, stored, strict=True) if not ok]
            if again:
                await self._each(again, lambda inc: node.incr(inc.key.encode(), inc.amount))
        except (TimeoutError, OSError, aiomcache.ClientException, emcache.CommandError):
            self.errors += 1

    async def _each(
        self, increments: list[Increment], call: Callable[[Increment], Awaitable[R]]
    ) -> list[R]:
        """``call`` on each increment, at most ``pool`` at once (one per connection: these
        clients have one command in flight per connection; more would queue thousands of
        increments ahead of the decisions' reads)."""
        results: list[R | None] = [None] * len(increments)
        work = iter(enumerate(increments))

        async def worker() -> None:
            for position, inc in work:
                results[position] = await call(inc)

        await asyncio.gather(*(worker() for _ in range(min(self._pool, len(increments)))))
        return results  # type: ignore[return-value]

    async def flush(self) -> None:
        while self._draining is not None:
            await asyncio.gather(self._draining, return_exceptions=True)

    async def close(self) -> None:
        await self.flush()
        await asyncio.gather(*(node.close() for node in self._nodes))


async def open_store(client: str, addresses: Sequence[str], pool: int) -> StoreLike:
    if client == OURS:
        return MemcacheStore(AltCacheSettings(host_port=tuple(addresses), max_idle_conns=pool))
    hosts = [(host, int(port)) for host, _, port in (a.rpartition(":") for a in addresses)]
    nodes: list[NodeClient]
    if client == AIOMCACHE:
        nodes = [AiomcacheNode(host, port, pool) for host, port in hosts]
    else:
        batching = client == EMCACHE_AB
        nodes = [await EmcacheNode.create(h, p, pool, autobatching=batching) for h, p in hosts]
    return LibraryStore(nodes, pool)


# --------------------------------------------------------------------------- one measurement


@dataclass(frozen=True)
class Config:
    concurrency: int
    pool: int
    descriptors: int

    @property
    def label(self) -> str:
        return f"c={self.concurrency} pool={self.pool} keys={self.descriptors}"


@dataclass(frozen=True)
class Measurement:
    decisions: int
    seconds: float
    rps: float
    p50_ms: float
    p99_ms: float
    cpu_us: float
    """CPU time of this process per decision (µs): the client's work, the background
    increments included; other processes on the machine do not move it."""
    failed: int
    """Decisions that failed (their read timed out or failed): not in the rate."""
    hits_counted: int
    hits_sent: int
    """Hits of the decisions that succeeded, warm-up included; counted < sent means
    increments failed in the background."""


class BenchError(Exception):
    pass


def workload(prefix: str, descriptors: int, count: int = 4096) -> list[list[Increment]]:
    """``count`` decisions' increments, cycled through: descriptor 1 a remote address, 2 a
    path, each among :data:`KEYS_PER_DESCRIPTOR` values (a fixed pseudo-random sequence)."""
    out = []
    for n in range(count):
        i = (n * 7919) % KEYS_PER_DESCRIPTOR
        j = (n * 104729 + 13) % KEYS_PER_DESCRIPTOR
        keys = [f"{prefix}bench_remote_address_10.0.{i // 256}.{i % 256}_1700000000"]
        if descriptors > 1:
            keys.append(f"{prefix}bench_path_/api/v1/items/{j}_1700000000")
        out.append([Increment(key, 1, EXPIRE, False) for key in keys[:descriptors]])
    return out


def nearest_rank(sorted_values: Sequence[float], fraction: float) -> float:
    if not sorted_values:
        return float("nan")
    rank = max(1, int(fraction * len(sorted_values) + 0.999999))
    return sorted_values[min(rank, len(sorted_values)) - 1]


async def _load(
    store: StoreLike,
    decisions: list[list[Increment]],
    concurrency: int,
    seconds: float,
    latencies: list[float] | None,
) -> tuple[int, int]:
    """``concurrency`` closed loops of decisions for ``seconds``: how many succeeded, and
    how many failed."""
    deadline = time.perf_counter() + seconds
    position = made = failed = 0

    async def loop() -> None:
        nonlocal position, made, failed
        clock = time.perf_counter
        while clock() < deadline:
            incs = decisions[position % len(decisions)]
            position += 1
            began = clock()
            try:
                await store.increment(incs)
            except BackendError:
                failed += 1
                continue
            if latencies is not None:
                latencies.append(clock() - began)
            made += 1

    await asyncio.gather(*(loop() for _ in range(concurrency)))
    return made, failed


async def measure(
    client: str,
    addresses: Sequence[str],
    config: Config,
    *,
    duration: float,
    warmup: float,
    prefix: str,
) -> Measurement:
    decisions = workload(prefix, config.descriptors)
    store = await open_store(client, addresses, config.pool)
    try:
        await store.start()
        warm, _ = await _load(store, decisions, config.concurrency, warmup, None)
        await store.flush()
        latencies: list[float] = []
        began, cpu = time.perf_counter(), time.process_time()
        made, failed = await _load(store, decisions, config.concurrency, duration, latencies)
        await store.flush()
        elapsed, cpu = time.perf_counter() - began, time.process_time() - cpu
    finally:
        await store.close()
    latencies.sort()
    return Measurement(
        decisions=made,
        seconds=elapsed,
        rps=made / elapsed,
        p50_ms=nearest_rank(latencies, 0.5) * 1000,
        p99_ms=nearest_rank(latencies, 0.99) * 1000,
        cpu_us=cpu / max(made, 1) * 1e6,
        failed=failed,
        hits_counted=await count_hits(addresses, decisions),
        hits_sent=(warm + made) * config.descriptors,
    )


async def count_hits(addresses: Sequence[str], decisions: list[list[Increment]]) -> int:
    """The sum of the run's counters, read back (with our store: its reads are tested)."""
    keys = sorted({inc.key for incs in decisions for inc in incs})
    store = MemcacheStore(AltCacheSettings(host_port=tuple(addresses)), timeout=5.0)
    try:
        total = 0
        for start in range(0, len(keys), 100):
            chunk = keys[start : start + 100]
            total += sum(await store.get([(key, False) for key in chunk]))
        return total
    finally:
        await store.close()


# --------------------------------------------------------------------------- memcached nodes


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@contextlib.contextmanager
def memcached_nodes(count: int, cpu: int | None) -> Iterator[list[str]]:
    """``count`` throwaway memcached processes (one thread, 64 MB) on loopback ports."""
    binary = shutil.which("memcached")
    if binary is None:
        raise BenchError(
            "memcached is not installed (scripts/test-services.sh installs it), "
            "or pass --memcached HOST:PORT,..."
        )
    procs: list[subprocess.Popen[bytes]] = []
    addresses: list[str] = []
    try:
        for _ in range(count):
            port = free_port()
            command = [binary, "-l", "127.0.0.1", "-p", str(port), "-U", "0", "-m", "64"]
            command += ["-t", "1", "-u", getpass.getuser()]
            if cpu is not None:
                command = ["taskset", "-c", str(cpu), *command]
            procs.append(subprocess.Popen(command, stdin=subprocess.DEVNULL))
            addresses.append(f"127.0.0.1:{port}")
        for address, proc in zip(addresses, procs, strict=True):
            deadline = time.monotonic() + 10
            while True:
                if proc.poll() is not None:
                    raise BenchError(f"memcached on {address} exited ({proc.returncode})")
                try:
                    socket.create_connection(("127.0.0.1", int(address.rsplit(":")[1])), 1).close()
                    break
                except OSError:
                    if time.monotonic() > deadline:
                        raise BenchError(f"memcached on {address} does not answer") from None
                    time.sleep(0.05)
        yield addresses
    finally:
        for proc in procs:
            proc.terminate()
        for proc in procs:
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                proc.kill()


def pick_cpus(*, pin: bool) -> tuple[int | None, int | None]:
    """(this process's CPU, the memcached nodes' CPU)."""
    if not pin or shutil.which("taskset") is None:
        return None, None
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) < 2:
        return None, None
    return cpus[0], cpus[1]


# --------------------------------------------------------------------------- report


Runs = dict[str, dict[str, list[Measurement]]]  # config label -> client -> one per round


def median(runs: list[Measurement]) -> tuple[float, float, float, float]:
    return (
        statistics.median(m.rps for m in runs),
        statistics.median(m.p50_ms for m in runs),
        statistics.median(m.p99_ms for m in runs),
        statistics.median(m.cpu_us for m in runs),
    )


def trouble(runs: list[Measurement]) -> str:
    """What went wrong in these rounds, or ''."""
    failed = sum(m.failed for m in runs)
    lost = sum(m.hits_sent - m.hits_counted for m in runs)
    notes = [f"{failed} decisions failed (timeouts)"] if failed else []
    notes += [f"{lost} hits not counted (background increments failed)"] if lost else []
    return ", ".join(notes)


def print_report(
    configs: Sequence[Config], clients: Sequence[str], runs: Runs, rounds: int, nodes: int
) -> None:
    print()
    what = f"median of {rounds} rounds; " if rounds > 1 else ""
    print(
        f"The memcached backend's decisions through each client, {nodes} memcached node(s) "
        f"({what}each decision reads its keys, its increments are applied in the background)"
    )
    print(
        f"{'':<22}{'client':<12}{'decisions/s':>12}{'p50 ms':>8}{'p99 ms':>8}{'CPU us/dec':>12}"
        f"{'ours/x dec/s':>14}{'x/ours CPU':>12}"
    )
    notes: list[str] = []
    for config in configs:
        per = runs.get(config.label, {})
        ours = median(per[OURS]) if len(per.get(OURS, [])) == rounds else None
        label = config.label
        for client in clients:
            if len(per.get(client, [])) < rounds:
                print(f"{label:<22}{client:<12}{'n/a':>12}")
                label = ""
                continue
            rps, p50, p99, cpu = median(per[client])
            problem = trouble(per[client])
            if problem:
                notes.append(f"* {client}, {config.label}: {problem}")
            line = f"{label:<22}{client:<12}{rps:>11.0f}" + ("*" if problem else " ")
            line += f"{p50:>8.2f}{p99:>8.2f}{cpu:>12.0f}"
            if client != OURS and ours is not None:
                line += f"{ours[0] / rps:>14.2f}{cpu / ours[3]:>12.2f}"
            print(line)
            label = ""
    print(
        "(c: decisions in flight; pool: connections per node, ALTCACHE_MAX_IDLE_CONNS; "
        "keys: counters per decision; ours/x dec/s > 1 and x/ours CPU > 1: ours is faster)"
    )
    for note in notes:
        print(note)


# --------------------------------------------------------------------------- main


def csv(text: str) -> list[str]:
    return [part.strip() for part in text.split(",") if part.strip()]


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m bench.ratelimit.memcache_clients",
        description="The memcached backend's decisions/s through its own client and through "
        "aiomcache and emcache, in the same run.",
    )
    parser.add_argument("--duration", type=float, default=3.0, help="measured s (default 3)")
    parser.add_argument("--warmup", type=float, default=1.0, help="warm-up s (default 1)")
    parser.add_argument("--rounds", type=int, default=3, help="rounds, median (default 3)")
    parser.add_argument(
        "--clients", default=",".join(CLIENTS), help=f"subset of {','.join(CLIENTS)}"
    )
    parser.add_argument(
        "--concurrency", default="1,50", help="decisions in flight, e.g. 1,50 (default)"
    )
    parser.add_argument(
        "--pool", default="2,8",
        help="connections per node (ALTCACHE_MAX_IDLE_CONNS; default 2,8)",
    )  # fmt: skip
    parser.add_argument("--descriptors", default="2", help="keys per decision (default 2)")
    parser.add_argument("--nodes", type=int, default=2, help="memcached nodes started (default 2)")
    parser.add_argument(
        "--memcached", metavar="HOST:PORT,...", help="use these nodes instead of starting some"
    )
    parser.add_argument(
        "--no-pin", dest="pin", action="store_false",
        help="do not pin this process and the memcached nodes to different cores",
    )  # fmt: skip
    parser.add_argument("--json", type=Path, metavar="PATH", help="also write results as JSON")
    args = parser.parse_args(argv)
    clients = csv(args.clients)
    if not clients or any(c not in CLIENTS for c in clients):
        parser.error(f"--clients: choose from {','.join(CLIENTS)}")
    try:
        concurrency = [int(n) for n in csv(args.concurrency)]
        pools = [int(n) for n in csv(args.pool)]
        descriptors = [int(n) for n in csv(args.descriptors)]
    except ValueError:
        parser.error("--concurrency, --pool and --descriptors take integers")
    if min(concurrency + pools, default=0) < 1 or not all(1 <= d <= 2 for d in descriptors):
        parser.error("--concurrency and --pool >= 1, --descriptors 1 or 2")
    if args.rounds < 1 or args.duration <= 0 or args.warmup < 0 or args.nodes < 1:
        parser.error("--rounds and --nodes >= 1, --duration > 0, --warmup >= 0")
    args.client_list = [c for c in CLIENTS if c in clients]
    args.configs = [
        Config(c, p, d) for d in descriptors for p in pools for c in concurrency
    ]  # fmt: skip
    return args


async def run(args: argparse.Namespace, addresses: list[str]) -> tuple[Runs, list[str]]:
    runs: Runs = {}
    failures: list[str] = []
    for rnd in range(1, args.rounds + 1):
        tag = f"(round {rnd}/{args.rounds}) " if args.rounds > 1 else ""
        for config in args.configs:
            for client in args.client_list:
                shape = f"{config.concurrency}-{config.pool}-{config.descriptors}"
                prefix = f"mcb{os.getpid()}-{rnd}-{client}-{shape}:"
                try:
                    m = await measure(
                        client, addresses, config, duration=args.duration,
                        warmup=args.warmup, prefix=prefix,
                    )  # fmt: skip
                except (BenchError, BackendError) as error:
                    failures.append(f"{client} {config.label}: {error}")
                    print(f"{tag}[{client}] {config.label}: FAILED: {error}", file=sys.stderr)
                    continue
                runs.setdefault(config.label, {}).setdefault(client, []).append(m)
                problem = trouble([m])
                if problem and client == OURS:
                    failures.append(f"{client} {config.label}: {problem}")
                counted = f"counted {m.hits_counted} of {m.hits_sent} hits"
                print(
                    f"{tag}[{client}] {config.label}: {m.rps:.0f} decisions/s, p50 "
                    f"{m.p50_ms:.2f} p99 {m.p99_ms:.2f} ms, {m.cpu_us:.0f} us CPU/decision"
                    f"  [{counted}]" + (f"  WARNING: {problem}" if problem else ""),
                    flush=True,
                )
    return runs, failures


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    logging.getLogger("emcache").setLevel(logging.ERROR)  # a line per dropped connection
    own_cpu, nodes_cpu = pick_cpus(pin=args.pin and not args.memcached)
    if own_cpu is not None:
        os.sched_setaffinity(0, {own_cpu})
    pinned = (
        f"this process on CPU {own_cpu}, memcached on CPU {nodes_cpu}"
        if own_cpu is not None
        else ""
    )
    try:
        with contextlib.ExitStack() as stack:
            if args.memcached:
                addresses = csv(args.memcached)
            else:
                addresses = stack.enter_context(memcached_nodes(args.nodes, nodes_cpu))
            print(
                f"bench.ratelimit.memcache_clients: {', '.join(args.client_list)} "
                f"({VERSIONS[AIOMCACHE]}, {VERSIONS[EMCACHE]}); memcached {', '.join(addresses)};"
                f" {args.rounds} round(s) x ({args.warmup:g} s warm-up + {args.duration:g} s); "
                f"{pinned}; {os.cpu_count()} CPUs; Python "
                f"{platform.python_version()}",
                flush=True,
            )
            runs, failures = asyncio.run(run(args, addresses))
    except BenchError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    print_report(args.configs, args.client_list, runs, args.rounds, len(addresses))
    if args.json is not None:
        doc = {
            "config": {
                "clients": args.client_list,
                "versions": VERSIONS,
                "rounds": args.rounds,
                "duration_s": args.duration,
                "warmup_s": args.warmup,
                "memcached": addresses,
                "python": platform.python_version(),
                "platform": platform.platform(),
            },
            "results": {
                label: {client: [asdict(m) for m in ms] for client, ms in per.items()}
                for label, per in runs.items()
            },
            "failures": failures,
        }
        args.json.write_text(json.dumps(doc, indent=2) + "\n")
    if failures:
        print(f"\nFAILED: {len(failures)} run(s), see above", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
