"""The load generator of the submission figures: ``clients`` threads, each with its own
``httpx.Client`` (one keep-alive connection), sending requests as fast as the server answers
them, each thread taking the next request number when its previous answer is in.

Every drive records each answer's status and latency, optionally its body, the wall time from
the moment all threads are released together to the last answer, and the CPU time this process
spent meanwhile (the driver's own cost per request, which on a small machine is taken from the
server's cores). :meth:`Driver.drive` against an endpoint that does nearly nothing (an
unauthenticated request, answered 401 before any database access) gives the driver's own
ceiling: a figure well below it is the server's, not the driver's.
"""

from __future__ import annotations

import itertools
import statistics
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field

import httpx

from bench.agents.report import percentile
from bench.ratelimit.servers import BenchError

__all__ = ["Drive", "Driver", "running_driver"]

TIMEOUT_S = 120.0


@dataclass
class Drive:
    """What one drive measured."""

    count: int
    seconds: float
    cpu_seconds: float
    latencies_ms: list[float]
    statuses: list[int]
    """The answers' statuses in request-number order."""
    bodies: list[bytes] = field(default_factory=list)
    """The answers' bodies in request-number order (when asked for)."""

    @property
    def rate(self) -> float:
        """Answers per second."""
        return self.count / self.seconds

    @property
    def p50_ms(self) -> float:
        return statistics.median(self.latencies_ms)

    @property
    def p99_ms(self) -> float:
        return percentile(self.latencies_ms, 0.99)

    @property
    def cpu_us_per_request(self) -> float:
        """Microseconds of this process's CPU per request (all threads)."""
        return self.cpu_seconds / self.count * 1e6

    def expect(self, status: int, what: str) -> None:
        """Raise :class:`BenchError` unless every answer had ``status``."""
        wrong = [n for n, code in enumerate(self.statuses) if code != status]
        if wrong:
            counts = Counter(self.statuses)
            shown = ", ".join(f"{n} answered {code}" for code, n in sorted(counts.items()))
            first = wrong[0]
            body = self.bodies[first][:500].decode(errors="replace") if self.bodies else ""
            raise BenchError(
                f"{what}: expected every answer {status}; {shown}; request {first} got "
                f"{self.statuses[first]} {body}"
            )


class Driver:
    """``clients`` connections to ``base_url``, each driven by its own thread."""

    def __init__(self, base_url: str, clients: int, stack: ExitStack) -> None:
        self.clients = [
            stack.enter_context(httpx.Client(base_url=base_url, timeout=TIMEOUT_S))
            for _ in range(clients)
        ]

    def drive(
        self,
        method: str,
        path: str,
        count: int,
        content: Callable[[int], bytes],
        headers: Mapping[str, str],
        *,
        keep_bodies: bool = False,
    ) -> Drive:
        """``count`` requests ``method path`` with body ``content(n)`` for ``n`` in
        ``range(count)``, as many at a time as there are clients."""
        numbers = itertools.count()
        lock = threading.Lock()
        latencies: list[float] = [0.0] * count
        statuses: list[int] = [0] * count
        bodies: list[bytes] = [b""] * count if keep_bodies else []
        errors: list[BaseException] = []
        start = threading.Barrier(len(self.clients) + 1)
        request_headers = {"Content-Type": "application/json", **headers}

        def work(client: httpx.Client) -> None:
            start.wait()
            try:
                while True:
                    with lock:
                        n = next(numbers)
                    if n >= count:
                        return
                    body = content(n)
                    sent = time.perf_counter()
                    response = client.request(method, path, content=body, headers=request_headers)
                    latencies[n] = time.perf_counter() - sent
                    statuses[n] = response.status_code
                    if keep_bodies:
                        bodies[n] = response.content
            except BaseException as error:  # reported by the drive, not lost in the thread
                errors.append(error)

        threads = [threading.Thread(target=work, args=(client,)) for client in self.clients]
        for thread in threads:
            thread.start()
        cpu = time.process_time()
        started = time.perf_counter()
        start.wait()
        for thread in threads:
            thread.join()
        seconds = time.perf_counter() - started
        cpu_seconds = time.process_time() - cpu
        if errors:
            raise BenchError(f"{method} {path}: {errors[0]!r}") from errors[0]
        return Drive(
            count,
            seconds,
            cpu_seconds,
            [latency * 1000 for latency in latencies],
            statuses,
            bodies,
        )


@contextmanager
def running_driver(base_url: str, clients: int) -> Iterator[Driver]:
    """A :class:`Driver` on ``base_url``; its connections closed afterwards."""
    with ExitStack() as stack:
        yield Driver(base_url, clients, stack)
