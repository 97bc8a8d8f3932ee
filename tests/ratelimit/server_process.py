"""A server binary run as a throwaway child process on a free loopback port, for tests.

:class:`ServerProcess` holds what every such helper shares: pick a free port, start the
binary with its output in a log file, poll until it answers (with a deadline), start again
on another port when someone took the chosen one meanwhile (but restart on the same one),
report the log's tail when it exits early, pause it (SIGSTOP) and stop it. Ports are picked
below the kernel's range for outgoing connections. Subclasses say how to build the command line
(:meth:`ServerProcess._command`) and how to tell that it answers
(:meth:`ServerProcess._answers`). :mod:`tests.ratelimit.redis_servers` and
:mod:`tests.ratelimit.memcached_servers` build on it.
"""

from __future__ import annotations

import contextlib
import random
import signal
import socket
import subprocess
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import ClassVar, TypeVar

T = TypeVar("T")
P = TypeVar("P", bound="ServerProcess")

HOST = "127.0.0.1"
START_TIMEOUT = 15.0
START_ATTEMPTS = 3


def wait_until(
    probe: Callable[[], T | None],
    *,
    timeout: float = START_TIMEOUT,
    what: str = "condition",
    retry_on: tuple[type[BaseException], ...] = (OSError,),
) -> T:
    """Poll ``probe`` until it returns something truthy; an error of a ``retry_on`` type
    counts as not yet, any other error is raised."""
    deadline = time.monotonic() + timeout
    last: BaseException | None = None
    while True:
        try:
            result = probe()
        except retry_on as error:
            last, result = error, None
        if result:
            return result
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out waiting for {what} (last error: {last})")
        time.sleep(0.02)


def _bindable(port: int) -> bool:
    with socket.socket() as probe:
        try:
            probe.bind((HOST, port))
        except OSError:
            return False
    return True


def client_port_floor() -> int:
    """The lowest port the kernel gives outgoing connections (Linux's setting; 32768, its
    default, where it cannot be read)."""
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


LOWEST_PORT = 10000
CLUSTER_BUS_OFFSET = 10000  # a Redis cluster node also listens on its port + 10000


def free_port(*, cluster_bus: bool = False) -> int:
    """A loopback port nobody listens on (and port + 10000 too, for a Redis cluster node).

    It is below the ports the kernel gives outgoing connections, where the range allows:
    while a test has a server down (a crash, a restart), a client connecting anywhere cannot
    be given the server's port, which would keep it from listening there again."""
    top = client_port_floor() - 1 - (CLUSTER_BUS_OFFSET if cluster_bus else 0)
    if top < LOWEST_PORT + 1000:  # a kernel handing out low ports: any port will have to do
        top = 45000
    for _ in range(200):
        port = random.randint(LOWEST_PORT, top)
        if _bindable(port) and (not cluster_bus or _bindable(port + CLUSTER_BUS_OFFSET)):
            return port
    raise RuntimeError("no free port")


class PortTaken(RuntimeError):
    """The server could not listen on its port."""


class ServerProcess(ABC):
    """One server process with its files in ``directory`` and its output in ``log_name``,
    listening on :attr:`port` (a free one unless ``port`` is given)."""

    name: ClassVar[str] = "server"
    """What the error messages call it."""
    log_name: ClassVar[str] = "server.log"
    probe_errors: ClassVar[tuple[type[BaseException], ...]] = (OSError,)
    """Errors of :meth:`_answers` that mean "not ready yet"."""

    def __init__(self, directory: Path, *, port: int | None = None) -> None:
        self.directory = directory
        self._port_chosen_here = port is None
        self.port = port if port is not None else free_port()
        self._served = False  # it has answered once: a restart stays on its port
        self._process: subprocess.Popen[bytes] | None = None
        self._log = directory / self.log_name

    @property
    def address(self) -> str:
        return f"{HOST}:{self.port}"

    @abstractmethod
    def _command(self) -> list[str]:
        """The command line for the current :attr:`port` (write config files here)."""

    @abstractmethod
    def _answers(self) -> bool:
        """Whether the server answers requests (may raise a :attr:`probe_errors` error)."""

    def start(self: P) -> P:
        """Start it and wait until it answers; on another port if the chosen one was taken
        since it was chosen (at most :data:`START_ATTEMPTS` times). Started again after a
        stop or a crash, it keeps its port, as its clients expect: a taken port is then an
        error."""
        self.directory.mkdir(parents=True, exist_ok=True)
        for attempt in range(START_ATTEMPTS):
            command = self._command()
            with self._log.open("wb") as log:
                self._process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
            try:
                wait_until(
                    self._ready,
                    what=f"{self.name} on {self.address} ({self._log})",
                    retry_on=self.probe_errors,
                )
                self._served = True
                return self
            except PortTaken:
                self.stop()
                if not self._port_chosen_here or self._served or attempt == START_ATTEMPTS - 1:
                    raise
                self.port = free_port()
            except BaseException:
                self.stop()
                raise
        raise AssertionError("unreachable")

    def _ready(self) -> bool:
        if self._process is not None and self._process.poll() is not None:
            tail = self._log.read_text(errors="replace")[-2000:]
            error = PortTaken if "Address already in use" in tail else RuntimeError
            raise error(f"{self.name} exited ({self._process.returncode}):\n{tail}")
        return self._answers()

    def signal(self, signum: int) -> None:
        """Sends ``signum`` (SIGKILL: a crash; SIGSTOP/SIGCONT: a server that stops
        answering and resumes)."""
        assert self._process is not None, "not started"
        self._process.send_signal(signum)
        if signum == signal.SIGKILL:
            self._process.wait()
            self._process = None

    @contextlib.contextmanager
    def paused(self) -> Iterator[None]:
        """SIGSTOP for the block: it accepts connections (the kernel does) but never answers."""
        assert self._process is not None, "not started"
        self._process.send_signal(signal.SIGSTOP)
        stat = Path(f"/proc/{self._process.pid}/stat")
        # the signal is delivered asynchronously: wait until the process is stopped
        wait_until(lambda: stat.read_text().rsplit(")", 1)[1].split()[0] == "T", what="SIGSTOP")
        try:
            yield
        finally:
            if self._process is not None:
                self._process.send_signal(signal.SIGCONT)

    @property
    def running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def stop(self) -> None:
        """Terminate it (kill it after 10 s); a paused process is resumed to let it exit."""
        process, self._process = self._process, None
        if process is None:
            return
        if process.poll() is None:
            process.send_signal(signal.SIGCONT)
            process.terminate()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


@contextlib.contextmanager
def running(process: P) -> Iterator[P]:
    """``process`` started for the block, stopped after it."""
    try:
        yield process.start()
    finally:
        process.stop()
