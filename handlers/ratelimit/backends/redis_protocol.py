"""The Redis wire for :mod:`handlers.ratelimit.backends.redis_connections`: RESP2 commands
encoded here, replies parsed by ``hiredis.Reader``, over an asyncio protocol this module owns.

:class:`RedisConnection` is one (re)connectable connection that carries one batch at a time:
:meth:`RedisConnection.send` writes a batch (the encoded commands of one or more calls) in one
``transport.write``, and the replies, as they are parsed, are handed back to each call's future
in order (``count`` replies each). A connection failure, a protocol error or the batch's
``timeout`` passing closes the connection and fails every call of the batch; the next
:meth:`~RedisConnection.connect` opens a fresh one. Error replies are values (redis-py's
exception classes, as its parser makes them), except those that mean the connection cannot
be used (``NOAUTH``, ``WRONGPASS``, ``LOADING``, too many clients): they fail the batch and
close the connection.
"""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import hiredis
from redis.exceptions import (
    AskError,
    AuthenticationError,
    AuthenticationWrongNumberOfArgsError,
    BusyLoadingError,
    ClusterCrossSlotError,
    ClusterDownError,
    ExecAbortError,
    MasterDownError,
    MovedError,
    NoPermissionError,
    NoScriptError,
    OutOfMemoryError,
    ReadOnlyError,
    RedisError,
    ResponseError,
    TryAgainError,
)
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

Command = tuple[str | int | bytes, ...]
"""One Redis command: its name then its arguments."""

Call = tuple["asyncio.Future[list[Any]]", int]
"""A call in a batch: its future and how many replies it expects."""

Done = Callable[["RedisConnection", BaseException | None], None]
"""Called when a batch has been answered (``None``) or has failed (the error)."""

# --- encoding --------------------------------------------------------------------------------


def _argument(value: str | int | bytes) -> bytes:
    if isinstance(value, bytes):
        return value
    if isinstance(value, str):
        return value.encode()
    return b"%d" % value


def encode_command(*args: str | int | bytes) -> bytes:
    """One command as a RESP array of bulk strings."""
    return b"*%d\r\n%b" % (len(args), encode_arguments(*args))


def encode_arguments(*args: str | int | bytes) -> bytes:
    """Bulk strings of a command's arguments, without the array's header (for commands
    written in parts, some encoded once and kept)."""
    parts = []
    for arg in args:
        data = _argument(arg)
        parts.append(b"$%d\r\n%b\r\n" % (len(data), data))
    return b"".join(parts)


def encode_commands(commands: Sequence[Command]) -> bytes:
    return b"".join(encode_command(*command) for command in commands)


_INCREMENT = (
    b"*3\r\n$6\r\nINCRBY\r\n$%d\r\n%b\r\n$%d\r\n%b\r\n"
    b"*3\r\n$6\r\nEXPIRE\r\n$%d\r\n%b\r\n$%d\r\n%b\r\n"
)
_GET = b"*2\r\n$3\r\nGET\r\n$%d\r\n%b\r\n"


def encode_increment(key: str, amount: int, expire_seconds: int) -> bytes:
    """``INCRBY key amount`` then ``EXPIRE key expire_seconds`` (two replies)."""
    data = key.encode()
    size = len(data)
    amount_text = b"%d" % amount
    expire_text = b"%d" % expire_seconds
    return _INCREMENT % (
        size,
        data,
        len(amount_text),
        amount_text,
        size,
        data,
        len(expire_text),
        expire_text,
    )


def encode_get(key: str) -> bytes:
    data = key.encode()
    return _GET % (len(data), data)


def split_commands(data: bytes) -> list[bytes]:
    """The commands of ``data`` (RESP arrays of bulk strings, as encoded here), each on its
    own: a cluster redirection sends only the redirected commands again."""
    commands = []
    position, size = 0, len(data)
    while position < size:
        start = position
        end = data.index(b"\r\n", position)
        if data[position : position + 1] != b"*":
            raise ValueError(f"not a RESP array at byte {position}")
        position = end + 2
        for _ in range(int(data[start + 1 : end])):
            end = data.index(b"\r\n", position)
            if data[position : position + 1] != b"$":
                raise ValueError(f"not a RESP bulk string at byte {position}")
            position = end + 2 + int(data[position + 1 : end]) + 2
        if position > size:
            raise ValueError("truncated RESP command")
        commands.append(data[start:position])
    return commands


# --- error replies ---------------------------------------------------------------------------

_ERROR_CODES: dict[str, type[RedisError]] = {
    "OOM": OutOfMemoryError,
    "WRONGPASS": AuthenticationError,
    "EXECABORT": ExecAbortError,
    "LOADING": BusyLoadingError,
    "NOSCRIPT": NoScriptError,
    "READONLY": ReadOnlyError,
    "NOAUTH": AuthenticationError,
    "NOPERM": NoPermissionError,
    "ASK": AskError,
    "TRYAGAIN": TryAgainError,
    "MOVED": MovedError,
    "CLUSTERDOWN": ClusterDownError,
    "CROSSSLOT": ClusterCrossSlotError,
    "MASTERDOWN": MasterDownError,
}
_ERR_MESSAGES: dict[str, type[RedisError]] = {
    "max number of clients reached": RedisConnectionError,
    "invalid password": AuthenticationError,
    "wrong number of arguments for 'auth' command": AuthenticationWrongNumberOfArgsError,
    "wrong number of arguments for 'AUTH' command": AuthenticationWrongNumberOfArgsError,
}


def reply_error(text: str) -> RedisError:
    """The exception an error reply stands for, as redis-py's parsers make it: a known code
    is stripped and picks the class (``MOVED`` -> :class:`MovedError`, ...); other replies
    are :class:`ResponseError` with the whole text."""
    code, _, rest = text.partition(" ")
    if code == "ERR":
        return _ERR_MESSAGES.get(rest, ResponseError)(rest)
    kind = _ERROR_CODES.get(code)
    if kind is None:
        return ResponseError(text)
    try:
        return kind(rest)
    except ValueError:  # a redirection without "slot host:port"
        return ResponseError(text)


def fail(calls: Sequence[Call], error: BaseException) -> None:
    """Fail every call that is still waiting."""
    for future, _ in calls:
        if not future.done():
            future.set_exception(error)


# --- connections -----------------------------------------------------------------------------


class _Wire(asyncio.Protocol):
    """One transport's protocol: writes batches and hands replies back. A new one is made
    for every (re)connection, so late events of a closed transport reach nobody."""

    def __init__(self, owner: RedisConnection, loop: asyncio.AbstractEventLoop) -> None:
        self.owner = owner
        self.loop = loop
        self.transport: asyncio.Transport | None = None
        self.open = False
        self.lost: asyncio.Future[None] = loop.create_future()
        self.reader = hiredis.Reader(replyError=self._reply_error)
        self.calls: list[Call] | None = None  # the batch in flight
        self.expected = 0
        self.replies: list[Any] = []
        self.done: Done | None = None
        self.deadline = 0.0  # of the batch in flight
        self.timer: asyncio.TimerHandle | None = None  # a watchdog, not one timer per batch
        self.fatal: RedisError | None = None

    # asyncio.Protocol

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        self.open = True

    def data_received(self, data: bytes) -> None:
        reader = self.reader
        reader.feed(data)
        try:
            while True:
                reply = reader.gets()
                if reply is False:
                    return
                if self.calls is None:
                    self.lose(RedisConnectionError(f"Unexpected reply from {self.owner.address}"))
                    return
                replies = self.replies
                replies.append(reply)
                if len(replies) == self.expected:
                    self._answered()
        except hiredis.ProtocolError as error:
            self.lose(RedisConnectionError(f"Protocol error from {self.owner.address}: {error}"))

    def eof_received(self) -> bool | None:
        # closed at once, so that no batch is given to it before connection_lost
        self.lose(RedisConnectionError(f"Connection closed by server {self.owner.address}"))
        return None

    def connection_lost(self, exc: Exception | None) -> None:
        if self.open:
            address = self.owner.address
            self.lose(
                RedisConnectionError(f"Connection to {address} lost: {exc}")
                if exc is not None
                else RedisConnectionError(f"Connection closed by server {address}")
            )
        if not self.lost.done():
            self.lost.set_result(None)

    # batches

    def send(self, data: bytes, calls: list[Call], count: int, done: Done | None) -> None:
        transport = self.transport
        if self.calls is not None or transport is None or transport.is_closing():
            error = RedisConnectionError(f"Connection to {self.owner.address} is not usable")
            fail(calls, error)
            if done is not None:
                done(self.owner, error)
            return
        self.calls, self.expected, self.done = calls, count, done
        transport.write(data)
        timeout = self.owner.timeout
        if timeout is not None:
            self.deadline = deadline = self.loop.time() + timeout
            if self.timer is None:
                self.timer = self.loop.call_at(deadline, self._watch)

    def _answered(self) -> None:
        calls, done, replies = self.calls, self.done, self.replies
        assert calls is not None
        self.calls, self.done, self.replies = None, None, []
        fatal = self.fatal
        if fatal is not None:  # the connection cannot be used (NOAUTH...): fail the batch
            self.fatal = None
            self.lose(fatal)
            fail(calls, fatal)
            if done is not None:
                done(self.owner, fatal)
            return
        if len(calls) == 1:
            future = calls[0][0]
            if not future.done():
                future.set_result(replies)
        else:
            index = 0
            for future, count in calls:
                end = index + count
                if not future.done():
                    future.set_result(replies[index:end])
                index = end
        if done is not None:
            done(self.owner, None)

    def _reply_error(self, text: str) -> Exception:
        error = reply_error(text)
        if isinstance(error, RedisConnectionError):
            self.fatal = error
        elif isinstance(error, ReadOnlyError):
            self.owner.readonly = True
        return error

    def _watch(self) -> None:
        """The batch in flight has timed out, or the timer moves on to its deadline, or is
        left unarmed until the next batch."""
        self.timer = None
        if self.calls is None or not self.open:
            return
        if self.loop.time() >= self.deadline:
            self.lose(RedisTimeoutError(f"Timeout reading from {self.owner.address}"))
        else:
            self.timer = self.loop.call_at(self.deadline, self._watch)

    def lose(self, error: BaseException) -> None:
        """Close the transport now and fail the batch in flight (once)."""
        if not self.open:
            return
        self.open = False
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None
        if self.transport is not None:
            self.transport.abort()
        calls, done = self.calls, self.done
        self.calls, self.done, self.replies = None, None, []
        self.owner._closed(self)
        if calls is not None:
            fail(calls, error)
            if done is not None:
                done(self.owner, error)


class RedisConnection:
    """A connection to one Redis server: TCP (optionally TLS) or a unix socket, with AUTH
    and SELECT sent on connect. ``resolve`` (sentinel) gives the address at every connect.

    ``timeout`` bounds each batch, from its write to its last reply. ``on_close`` is called
    (with the connection) as soon as it is known to be closed, whatever closed it.
    """

    def __init__(
        self,
        *,
        host: str = "",
        port: int = 0,
        path: str = "",
        username: str | None = None,
        password: str | None = None,
        db: int = 0,
        tls: Callable[[], ssl.SSLContext] | None = None,
        resolve: Callable[[], Awaitable[tuple[str, int]]] | None = None,
        timeout: float | None = None,
    ) -> None:
        self.host, self.port, self.path = host, port, path
        self._username, self._password, self._db = username, password, db
        self._tls = tls
        self._resolve = resolve
        self.timeout = timeout
        self.on_close: Callable[[RedisConnection], None] | None = None
        self.readonly = False
        """Set when a reply was READONLY (a demoted master); the owner clears it."""
        self._wire: _Wire | None = None

    @property
    def address(self) -> str:
        return self.path or f"{self.host}:{self.port}"

    @property
    def is_connected(self) -> bool:
        wire = self._wire
        return wire is not None and wire.open

    @property
    def sockname(self) -> Any:
        """The local address of the open transport (``None`` when closed)."""
        wire = self._wire
        if wire is None or wire.transport is None or not wire.open:
            return None
        return wire.transport.get_extra_info("sockname")

    async def connect(self) -> None:
        """Open the connection (closing any previous one), then AUTH and SELECT."""
        self.close()
        self.readonly = False
        if self._resolve is not None:
            self.host, self.port = await self._resolve()
        loop = asyncio.get_running_loop()
        wire = _Wire(self, loop)
        try:
            if self.path:
                await loop.create_unix_connection(lambda: wire, self.path)
            else:
                context = self._tls() if self._tls is not None else None
                await loop.create_connection(
                    lambda: wire,
                    self.host,
                    self.port,
                    ssl=context,
                    server_hostname=self.host if context is not None else None,
                )
        except (OSError, ValueError) as error:
            raise RedisConnectionError(f"Error connecting to {self.address}: {error}") from None
        except BaseException:
            if wire.transport is not None:
                wire.transport.abort()
            raise
        self._wire = wire
        handshake: list[Command] = []
        if self._password:
            if self._username:
                handshake.append(("AUTH", self._username, self._password))
            else:
                handshake.append(("AUTH", self._password))
        if self._db:
            handshake.append(("SELECT", self._db))
        if not handshake:
            return
        try:
            replies = await self.execute(encode_commands(handshake), len(handshake))
        except BaseException:
            self.close()
            raise
        for reply in replies:
            if isinstance(reply, Exception):
                self.close()
                if isinstance(reply, RedisConnectionError):
                    raise reply
                raise RedisConnectionError(str(reply))

    def send(self, data: bytes, calls: list[Call], count: int, done: Done | None) -> None:
        """Write one batch: ``data`` holds the commands of ``calls``, ``count`` replies in
        all. Each call's future gets its replies; ``done`` is called after them."""
        wire = self._wire
        if wire is None:
            error = RedisConnectionError(f"Connection to {self.address} is closed")
            fail(calls, error)
            if done is not None:
                done(self, error)
            return
        wire.send(data, calls, count, done)

    async def execute(self, data: bytes, count: int) -> list[Any]:
        """One batch of one call, on its own (not through a pipeliner)."""
        future: asyncio.Future[list[Any]] = asyncio.get_running_loop().create_future()
        self.send(data, [(future, count)], count, None)
        return await future

    def close(self) -> None:
        """Close now; a batch in flight fails."""
        wire = self._wire
        if wire is not None:
            wire.lose(RedisConnectionError(f"Connection to {self.address} closed"))

    async def disconnect(self) -> None:
        """:meth:`close`, then wait (briefly) until the transport is gone."""
        wire = self._wire
        self.close()
        if wire is not None and not wire.lost.done():
            try:
                async with asyncio.timeout(1.0):
                    await asyncio.shield(wire.lost)
            except TimeoutError:
                pass

    def _closed(self, wire: _Wire) -> None:
        if wire is self._wire and self.on_close is not None:
            self.on_close(self)
