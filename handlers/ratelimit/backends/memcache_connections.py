"""Connections to one memcached node: the text protocol on asyncio.

A :class:`MemcacheConnection` writes the commands of the calls made in one pass of the event
loop at once and parses the replies in order (memcached answers a connection's commands in
order), so calls are pipelined on it: several calls in flight share the connection. A
:class:`Node` keeps at most ``max_connections`` connections (``ALTCACHE_MAX_IDLE_CONNS``): a
call goes to an idle connection, else to a new one while there are fewer, else it is
pipelined on the least busy.
Upstream's client (gomemcache) instead opens a short-lived extra connection for every call
beyond its idle ones; pipelining bounds the sockets (upstream notes the TIME_WAIT cost).
The maintained asyncio clients (aiomcache, emcache) have one command in flight per connection
and a system call per command: doing this backend's work they took 2x the CPU per decision
with one decision in flight and 3-5x with 50 (``python -m bench.ratelimit.memcache_clients``).

``timeout`` bounds connecting and each call from its write to its last reply; a call that
times out closes its connection (the replies on it are out of step from then on), failing
the calls pipelined behind it. Every failure raises
:class:`~handlers.ratelimit.backends.base.BackendError` naming the node. An error reply
(``ERROR``, ``CLIENT_ERROR ...``, ``SERVER_ERROR ...``) is not raised: it is returned as a
:class:`ReplyError` in the call's replies. A ``gets`` reply (:data:`GETS`) carries each
value's CAS unique (:class:`CasValues`), for the compare-and-swap steps of the store's
decisions (``MemcacheStore.decide``).
"""

from __future__ import annotations

import asyncio
import ssl
from collections import deque
from collections.abc import Callable, Sequence
from typing import NamedTuple

from handlers.ratelimit.backends.base import BackendError
from handlers.ratelimit.settings import split_host_port

LINE = 0
"""A one-line reply (a number, ``NOT_FOUND``, ``STORED``, ``NOT_STORED``, ``VERSION ...``)."""
VALUES = 1
"""The reply to ``get``: ``VALUE key flags bytes`` blocks, then ``END``; parsed to a dict."""
GETS = 2
"""The reply to ``gets``: ``VALUE key flags bytes cas`` blocks, then ``END``; parsed to
:class:`CasValues`."""

_CRLF = b"\r\n"
_ERROR_PREFIXES = (b"ERROR", b"CLIENT_ERROR", b"SERVER_ERROR")


class ReplyError(Exception):
    """An error reply from memcached, e.g. ``CLIENT_ERROR cannot increment or decrement
    non-numeric value``."""


class CasValues(NamedTuple):
    """The reply to ``gets``: each key found, with its value and its CAS unique (what a
    ``cas`` of the key must name to store over exactly that value)."""

    values: dict[bytes, tuple[bytes, int]]


Reply = bytes | dict[bytes, bytes] | CasValues | ReplyError


class _ProtocolError(Exception):
    pass


class _Call:
    __slots__ = ("future", "kinds", "replies")

    def __init__(self, kinds: Sequence[int], future: asyncio.Future[list[Reply]]) -> None:
        self.kinds = kinds
        self.replies: list[Reply] = []
        self.future = future


def _line_reply(line: bytes) -> bytes | ReplyError:
    if line.startswith(_ERROR_PREFIXES):
        return ReplyError(line.decode("ascii", "replace"))
    return line


def _values_reply(buffer: bytearray, position: int, kind: int) -> tuple[int, Reply] | None:
    """The ``get`` (``kind`` :data:`VALUES`) or ``gets`` (:data:`GETS`) reply starting at
    ``position`` and where it ends, or None if incomplete."""
    values: dict[bytes, bytes] = {}
    uniques: dict[bytes, int] = {}
    while True:
        end = buffer.find(_CRLF, position)
        if end < 0:
            return None
        line = bytes(buffer[position:end])
        if line == b"END":
            if kind == GETS:
                return end + 2, CasValues({key: (values[key], uniques[key]) for key in values})
            return end + 2, values
        if not line.startswith(b"VALUE "):
            error = _line_reply(line)
            if isinstance(error, ReplyError):
                return end + 2, error
            raise _ProtocolError(f"unexpected line in a get reply: {line[:80]!r}")
        parts = line.split()
        if len(parts) < 4 or not parts[3].isdigit():
            raise _ProtocolError(f"unexpected line in a get reply: {line[:80]!r}")
        if kind == GETS:
            if len(parts) < 5 or not parts[4].isdigit():
                raise _ProtocolError(f"no CAS unique in a gets reply: {line[:80]!r}")
            uniques[parts[1]] = int(parts[4])
        start, size = end + 2, int(parts[3])
        if len(buffer) < start + size + 2:
            return None
        if buffer[start + size : start + size + 2] != _CRLF:
            raise _ProtocolError("corrupt get reply: the value is not followed by CRLF")
        values[parts[1]] = bytes(buffer[start : start + size])
        position = start + size + 2


class MemcacheConnection(asyncio.Protocol):
    """One connection; calls made before it is connected are sent once it is."""

    def __init__(self, address: str, on_closed: Callable[[MemcacheConnection], None]) -> None:
        self.address = address
        self._on_closed = on_closed
        self._transport: asyncio.Transport | None = None
        self._unsent: list[bytes] = []
        self._pending: deque[_Call] = deque()
        self._buffer = bytearray()
        self.closed = False

    @property
    def in_flight(self) -> int:
        return len(self._pending)

    def futures(self) -> list[asyncio.Future[list[Reply]]]:
        """The futures of the calls in flight."""
        return [call.future for call in self._pending]

    @property
    def open(self) -> bool:
        return self._transport is not None and not self.closed

    def call(self, data: bytes, kinds: Sequence[int]) -> asyncio.Future[list[Reply]]:
        """Send ``data`` (commands expecting replies of ``kinds``); the future gets them."""
        future: asyncio.Future[list[Reply]] = asyncio.get_running_loop().create_future()
        if self.closed:
            future.set_exception(BackendError(f"memcached {self.address}: connection closed"))
            return future
        self._pending.append(_Call(kinds, future))
        self._unsent.append(data)
        if self._transport is not None and len(self._unsent) == 1:
            # the calls made in this pass of the event loop go out in one write
            asyncio.get_running_loop().call_soon(self._write)
        return future

    def _write(self) -> None:
        if self._transport is not None and not self.closed and self._unsent:
            self._transport.write(b"".join(self._unsent))
        self._unsent.clear()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        if self.closed:  # timed out or closed while connecting
            transport.abort()
            return
        self._transport = transport
        self._write()

    def data_received(self, data: bytes) -> None:
        self._buffer += data
        try:
            self._parse()
        except _ProtocolError as error:
            self.fail(BackendError(f"memcached {self.address}: protocol error: {error}"))

    def _parse(self) -> None:
        buffer, pending, position = self._buffer, self._pending, 0
        while pending:
            call = pending[0]
            if call.kinds[len(call.replies)] == LINE:
                end = buffer.find(_CRLF, position)
                if end < 0:
                    break
                call.replies.append(_line_reply(bytes(buffer[position:end])))
                position = end + 2
            else:
                parsed = _values_reply(buffer, position, call.kinds[len(call.replies)])
                if parsed is None:
                    break
                position, reply = parsed
                call.replies.append(reply)
            if len(call.replies) == len(call.kinds):
                pending.popleft()
                if not call.future.done():
                    call.future.set_result(call.replies)
        del buffer[:position]
        if buffer and not pending:
            raise _ProtocolError(f"unexpected data: {bytes(buffer[:80])!r}")

    def connection_lost(self, exc: Exception | None) -> None:
        reason = str(exc) if exc is not None else "closed by the server"
        self.fail(BackendError(f"memcached {self.address}: connection lost: {reason}"))

    def fail(self, error: BackendError) -> None:
        """Close the connection, failing every call in flight on it with ``error``."""
        if not self.closed:
            self.closed = True
            self._on_closed(self)
        if self._transport is not None:
            self._transport.abort()
        while self._pending:
            future = self._pending.popleft().future
            if not future.done():
                future.set_exception(error)
                future.exception()  # a caller that timed out will not retrieve it


class Node:
    """One memcached server (``host:port``, or a unix socket path containing ``/``)."""

    def __init__(
        self,
        address: str,
        *,
        max_connections: int,
        timeout: float,
        tls: Callable[[], ssl.SSLContext] | None = None,
    ) -> None:
        self.address = address
        self._max = max(1, max_connections)
        self._timeout = timeout
        self._tls = tls
        self._connections: list[MemcacheConnection] = []
        self._connecting: set[asyncio.Task[None]] = set()

    def submit(self, data: bytes, kinds: Sequence[int]) -> asyncio.Future[list[Reply]]:
        """Send the commands in ``data``; the future gets their replies, or a
        :class:`BackendError` when they do not come within the timeout (the connection is
        then closed). Submitting to several nodes and then awaiting each runs them all at
        once, without a task per call."""
        connection = self._pick()
        future = connection.call(data, kinds)
        if not future.done():
            loop = asyncio.get_running_loop()
            timer = loop.call_later(self._timeout, self._expire, connection, future)
            future.add_done_callback(lambda _: timer.cancel())
        return future

    async def call(self, data: bytes, kinds: Sequence[int]) -> list[Reply]:
        """Send the commands in ``data`` and return their replies, within the timeout."""
        return await self.submit(data, kinds)

    def _expire(self, connection: MemcacheConnection, future: asyncio.Future[list[Reply]]) -> None:
        if not future.done():
            message = f"memcached {self.address}: no reply within {self._timeout:g}s"
            connection.fail(BackendError(message))

    def connected(self) -> bool:
        """Whether at least one connection is open."""
        return any(connection.open for connection in self._connections)

    async def close(self, *, drain: float = 0.0) -> None:
        """Close the connections; with ``drain``, once the calls in flight are answered (or
        ``drain`` seconds have passed)."""
        futures = [f for connection in self._connections for f in connection.futures()]
        if drain > 0 and futures:
            await asyncio.wait(futures, timeout=drain)
        for task in list(self._connecting):
            task.cancel()
        for connection in list(self._connections):
            connection.fail(BackendError(f"memcached {self.address}: connection closed"))
        await asyncio.gather(*self._connecting, return_exceptions=True)

    def _pick(self) -> MemcacheConnection:
        best: MemcacheConnection | None = None
        for connection in self._connections:
            if connection.in_flight == 0:
                return connection
            if best is None or connection.in_flight < best.in_flight:
                best = connection
        if best is None or len(self._connections) < self._max:
            return self._open()
        return best

    def _open(self) -> MemcacheConnection:
        connection = MemcacheConnection(self.address, self._forget)
        self._connections.append(connection)
        task = asyncio.get_running_loop().create_task(self._connect(connection))
        self._connecting.add(task)
        task.add_done_callback(self._connecting.discard)
        return connection

    async def _connect(self, connection: MemcacheConnection) -> None:
        loop = asyncio.get_running_loop()
        try:
            async with asyncio.timeout(self._timeout):
                if "/" in self.address:
                    await loop.create_unix_connection(lambda: connection, self.address)
                else:
                    host, port = split_host_port(self.address)
                    # an SRV target is fully qualified ("mc1.example.com."): /etc/hosts
                    # lookups and certificate checks want the name without the final dot
                    host = host.removesuffix(".")
                    context = self._tls() if self._tls is not None else None
                    await loop.create_connection(
                        lambda: connection,
                        host,
                        port,
                        ssl=context,
                        server_hostname=host if context is not None else None,
                    )
        except TimeoutError:
            connection.fail(BackendError(f"memcached {self.address}: connect timed out"))
        except (OSError, ssl.SSLError) as error:
            reason = error.strerror if isinstance(error, OSError) and error.strerror else error
            connection.fail(BackendError(f"memcached {self.address}: cannot connect: {reason}"))
        except asyncio.CancelledError:
            connection.fail(BackendError(f"memcached {self.address}: connection closed"))
            raise

    def _forget(self, connection: MemcacheConnection) -> None:
        if connection in self._connections:
            self._connections.remove(connection)
