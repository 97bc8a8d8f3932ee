"""A real statsd receiver for the tests: a UDP socket on a free loopback port."""

from __future__ import annotations

import asyncio
import socket
import time
from collections.abc import Iterator
from contextlib import contextmanager


class UdpReceiver:
    """Collects the statsd lines sent to ``127.0.0.1:port``."""

    def __init__(self) -> None:
        self.socket = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.socket.bind(("127.0.0.1", 0))
        self.socket.settimeout(0.1)
        self.port: int = self.socket.getsockname()[1]

    def lines(self, count: int, timeout: float = 5.0) -> list[str]:
        """The next ``count`` lines (fails if they do not arrive in time)."""
        received: list[str] = []
        deadline = time.monotonic() + timeout
        while len(received) < count:
            assert time.monotonic() < deadline, f"got only {received}"
            try:
                datagram = self.socket.recv(65535)
            except TimeoutError:
                continue
            received.extend(line for line in datagram.decode().split("\n") if line)
        return received

    async def receive(self, count: int) -> list[str]:
        """:meth:`lines` without blocking the event loop (for a server in the same loop)."""
        return await asyncio.to_thread(self.lines, count)

    def nothing_more(self, wait: float = 0.3) -> bool:
        """True when no datagram arrives within ``wait`` seconds."""
        self.socket.settimeout(wait)
        try:
            self.socket.recv(65535)
        except TimeoutError:
            return True
        finally:
            self.socket.settimeout(0.1)
        return False


@contextmanager
def udp_receiver() -> Iterator[UdpReceiver]:
    receiver = UdpReceiver()
    try:
        yield receiver
    finally:
        receiver.socket.close()
