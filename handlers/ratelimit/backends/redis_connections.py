"""Connections to Redis for :mod:`handlers.ratelimit.backends.redis`.

URL parsing and credential masking, a bounded connection pool with the upstream's
pool-on-empty behaviours and ``cx_*`` stats, one-round-trip pipelines, sentinel master
discovery and cluster slot routing. Connections are redis-py's asyncio ones (hiredis
parser when installed); pooling, timeouts and routing are done here so that every call is
exactly one write and one read per server.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote, urlsplit

from redis.asyncio.connection import (
    AbstractConnection,
    Connection,
    SSLConnection,
    UnixDomainSocketConnection,
)
from redis.crc import REDIS_CLUSTER_HASH_SLOTS, key_slot
from redis.exceptions import AskError, MovedError, RedisError, ResponseError
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

from handlers.ratelimit.settings import KvStoreSettings
from handlers.ratelimit.stats import StatsStore

logger = logging.getLogger(__name__)

Command = tuple[str | int, ...]
"""One Redis command: its name then its arguments."""

_MAX_REDIRECTS = 5


def mask_credentials(url: str) -> str:
    """``url`` (a comma list, as in ``KVSTORE_URL``) with every ``redis://user:pass@`` part
    replaced by ``redis://*****@``, for logs."""
    items = url.split(",")
    for index, item in enumerate(items):
        parts = item.split("@")
        if len(parts) > 1 and parts[0].startswith(("redis://", "rediss://")):
            scheme = parts[0].split("://", 1)[0]
            items[index] = f"{scheme}://*****@{parts[-1]}"
    return ",".join(items)


def split_auth(auth: str) -> tuple[str | None, str | None]:
    """``KVSTORE_AUTH``: ``password`` or ``user:password`` -> ``(user, password)``."""
    if not auth:
        return None, None
    user, sep, password = auth.partition(":")
    return (user, password) if sep else (None, auth)


@dataclass(frozen=True, slots=True)
class Endpoint:
    """One server: ``host:port`` or a unix socket ``path``, with credentials from a URL."""

    host: str = ""
    port: int = 0
    path: str = ""
    username: str | None = None
    password: str | None = None
    db: int = 0
    tls: bool = False

    @property
    def address(self) -> str:
        return self.path or f"{self.host}:{self.port}"


def parse_endpoint(text: str, socket_type: str = "tcp") -> Endpoint:
    """One ``KVSTORE_URL`` item: ``host:port``, a socket path (socket type unix), or a
    ``redis://[user:password@]host:port[/db]`` / ``rediss://`` / ``unix://`` URL."""
    text = text.strip()
    if "://" in text:
        parts = urlsplit(text)
        scheme = parts.scheme.lower()
        username = unquote(parts.username) if parts.username else None
        password = unquote(parts.password) if parts.password is not None else None
        if scheme == "unix":
            return Endpoint(path=unquote(parts.path), username=username, password=password)
        if scheme not in ("redis", "rediss"):
            raise ValueError(f"unsupported Redis URL scheme {scheme!r} in {mask_credentials(text)}")
        db = parts.path.strip("/")
        return Endpoint(
            host=parts.hostname or "localhost",
            port=parts.port or 6379,
            username=username,
            password=password,
            db=int(db) if db else 0,
            tls=scheme == "rediss",
        )
    if socket_type == "unix":
        return Endpoint(path=text)
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit():
        raise ValueError(f"expected host:port, got {text!r}")
    return Endpoint(host=host.strip("[]") or "localhost", port=int(port))


def connection_options(settings: KvStoreSettings, endpoint: Endpoint, auth: str) -> dict[str, Any]:
    """Keyword arguments of a redis-py connection to ``endpoint``: credentials from its URL,
    else from ``auth``; TLS as set (TCP only); RESP2 and nothing sent on connect but AUTH."""
    user, password = split_auth(auth)
    timeout = settings.timeout if settings.timeout > 0 else None
    options: dict[str, Any] = {
        "socket_timeout": None,  # execute_pipeline times each round trip as a whole
        "socket_connect_timeout": timeout,
        "driver_info": None,  # no CLIENT SETINFO
        "protocol": 2,  # no HELLO
        "db": endpoint.db,
        "username": endpoint.username or user,
        "password": endpoint.password or password,
    }
    if endpoint.path:
        options["path"] = endpoint.path
        return options
    if endpoint.host:
        options["host"], options["port"] = endpoint.host, endpoint.port
    if settings.tls or endpoint.tls:
        options.update(
            ssl_cert_reqs="required",
            ssl_check_hostname=not settings.tls_skip_hostname_verification,
            ssl_ca_certs=settings.tls_cacert or None,
            ssl_certfile=settings.tls_client_cert or None,
            ssl_keyfile=settings.tls_client_key or None,
        )
    return options


def connection_class(settings: KvStoreSettings, endpoint: Endpoint) -> type[AbstractConnection]:
    if endpoint.path:
        return UnixDomainSocketConnection
    return SSLConnection if settings.tls or endpoint.tls else Connection


def describe(connection: AbstractConnection) -> str:
    """The server a connection talks to, for error messages."""
    path = getattr(connection, "path", "")
    if path:
        return str(path)
    return f"{getattr(connection, 'host', '?')}:{getattr(connection, 'port', '?')}"


class PoolEmptyError(RedisConnectionError):
    """Every connection is in use and the pool's on-empty behaviour is ERROR."""


class PoolStats:
    """``<scope>.cx_active`` (gauge), ``cx_total`` and ``cx_local_close`` (counters) of one
    cache instance: connections opened, open now, and closed by this side."""

    def __init__(self, stats: StatsStore | None, scope: str) -> None:
        store = stats if stats is not None else StatsStore()
        self._active = store.gauge(scope + ".cx_active")
        self._total = store.counter(scope + ".cx_total")
        self._closed = store.counter(scope + ".cx_local_close")
        self.active = 0

    def opened(self) -> None:
        self.active += 1
        self._active.set(self.active)
        self._total.add()

    def closed(self) -> None:
        self.active -= 1
        self._active.set(self.active)
        self._closed.add()


class ConnectionPool:
    """Up to ``size`` connections to one server, connected lazily and reused LIFO.

    When all are in use, ``on_empty`` decides: ``WAIT`` blocks until one is released,
    ``ERROR`` fails after ``wait_duration``, ``CREATE`` opens an overflow connection after
    ``wait_duration`` (closed when released while the pool is over size).
    """

    def __init__(
        self,
        factory: Callable[[], AbstractConnection],
        *,
        size: int,
        stats: PoolStats,
        on_empty: str = "CREATE",
        wait_duration: float = 1.0,
        connect_timeout: float | None = None,
    ) -> None:
        if on_empty not in ("CREATE", "ERROR", "WAIT"):
            raise ValueError(f"pool on empty behavior must be CREATE, ERROR or WAIT: {on_empty}")
        self._factory = factory
        self.size = max(1, size)
        self._stats = stats
        self._on_empty = on_empty
        self._wait_duration = max(0.0, wait_duration)
        self._connect_timeout = connect_timeout
        self._idle: list[AbstractConnection] = []
        self._members: set[AbstractConnection] = set()
        self._open: set[AbstractConnection] = set()
        self._generation = 0
        self._connected_in: dict[AbstractConnection, int] = {}
        self._waiters: deque[asyncio.Future[AbstractConnection]] = deque()
        self._closing: set[asyncio.Task[None]] = set()
        self._closed = False

    @property
    def members(self) -> int:
        """Connections the pool owns (idle, in use, overflow), connected or not."""
        return len(self._members)

    @property
    def in_use(self) -> int:
        return len(self._members) - len(self._idle)

    @property
    def active(self) -> int:
        """Connections open to the server."""
        return len(self._open)

    async def acquire(self) -> AbstractConnection:
        """A connected connection; give it back with :meth:`release`."""
        if self._closed:
            raise RedisConnectionError("connection pool is closed")
        if self._idle:
            connection = self._idle.pop()
        elif len(self._members) < self.size:
            connection = self._new()
        else:
            connection = await self._wait()
        try:
            await self._ready(connection)
        except BaseException:
            self.release(connection)
            raise
        return connection

    def release(self, connection: AbstractConnection) -> None:
        """Give a connection back (to a waiter first). A broken one stays, disconnected,
        and reconnects on its next use."""
        self._forget_if_closed(connection)
        if self._closed or connection not in self._members:
            self._discard(connection)
            return
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_result(connection)
                return
        if len(self._members) > self.size:
            self._discard(connection)
            return
        self._idle.append(connection)

    def invalidate(self) -> None:
        """Make every connection reconnect at its next use (a new master, say)."""
        self._generation += 1

    async def close(self) -> None:
        self._closed = True
        for waiter in self._waiters:
            if not waiter.done():
                waiter.set_exception(RedisConnectionError("connection pool is closed"))
        connections = list(self._members)
        self._members.clear()
        self._idle.clear()
        await asyncio.gather(*(c.disconnect() for c in connections), return_exceptions=True)
        for connection in connections:
            self._forget_if_closed(connection)
        if self._closing:
            await asyncio.gather(*self._closing, return_exceptions=True)

    def _new(self) -> AbstractConnection:
        connection = self._factory()
        self._members.add(connection)
        return connection

    async def _wait(self) -> AbstractConnection:
        waiter: asyncio.Future[AbstractConnection] = asyncio.get_running_loop().create_future()
        self._waiters.append(waiter)
        timeout = None if self._on_empty == "WAIT" else self._wait_duration
        try:
            async with asyncio.timeout(timeout):
                return await waiter
        except TimeoutError:
            if waiter.done() and not waiter.cancelled():
                return waiter.result()
            if self._on_empty == "ERROR":
                raise PoolEmptyError("connection pool is empty") from None
            return self._new()
        except asyncio.CancelledError:
            if waiter.done() and not waiter.cancelled():
                self.release(waiter.result())
            raise
        finally:
            if waiter in self._waiters:
                self._waiters.remove(waiter)

    async def _ready(self, connection: AbstractConnection) -> None:
        if connection.is_connected:
            try:
                # EOF or unread bytes: the server closed it, or a reply was left behind
                stale = (
                    self._connected_in.get(connection) != self._generation
                    or await connection.can_read()
                )
            except (RedisError, OSError):
                stale = True
            if not stale:
                return
            await connection.disconnect(nowait=True)
            self._forget_if_closed(connection)
        try:
            async with asyncio.timeout(self._connect_timeout):
                await connection.connect()  # type: ignore[no-untyped-call]
        except TimeoutError:
            await connection.disconnect(nowait=True)
            raise RedisTimeoutError(f"Timeout connecting to {describe(connection)}") from None
        self._open.add(connection)
        self._connected_in[connection] = self._generation
        self._stats.opened()

    def _forget_if_closed(self, connection: AbstractConnection) -> None:
        if connection in self._open and not connection.is_connected:
            self._open.discard(connection)
            self._stats.closed()

    def _discard(self, connection: AbstractConnection) -> None:
        self._members.discard(connection)
        self._connected_in.pop(connection, None)
        if connection in self._idle:
            self._idle.remove(connection)
        if connection.is_connected:
            task = asyncio.ensure_future(self._disconnect(connection))
            self._closing.add(task)
            task.add_done_callback(self._closing.discard)

    async def _disconnect(self, connection: AbstractConnection) -> None:
        try:
            await connection.disconnect()
        except RedisError as error:  # already gone: nothing to do
            logger.debug("closing a Redis connection failed: %s", error)
        self._forget_if_closed(connection)


async def execute_pipeline(
    connection: AbstractConnection, commands: Sequence[Command], time_limit: float | None
) -> list[Any]:
    """Send ``commands`` in one write and read their replies: one round trip.

    Error replies come back as :class:`ResponseError` values. A failure of the connection
    (or ``time_limit`` passing, which covers the write and every read) disconnects it and
    raises.
    """
    packed = connection.pack_commands(commands)
    replies: list[Any] = []
    try:
        async with asyncio.timeout(time_limit):
            await connection.send_packed_command(packed, check_health=False)
            for _ in range(len(commands)):
                try:
                    replies.append(await connection.read_response())
                except ResponseError as error:
                    replies.append(error)
    except TimeoutError:
        await connection.disconnect(nowait=True)
        raise RedisTimeoutError(f"Timeout reading from {describe(connection)}") from None
    except BaseException:
        # replies may still be on the way: the connection cannot be reused as it is
        await connection.disconnect(nowait=True)
        raise
    return replies


class SentinelMaster:
    """The address of master ``name``, asked of the sentinels in turn (the last one that
    answered first).

    Once used, it also watches the sentinels' ``+switch-master`` channel (on one sentinel at
    a time, moving on when it fails) and calls :attr:`on_switch` when ``name`` fails over,
    as radix's sentinel client does, so connections to a demoted master that still accepts
    writes are not kept.
    """

    def __init__(
        self,
        name: str,
        sentinels: Sequence[Callable[[], AbstractConnection]],
        timeout: float | None,
    ) -> None:
        self.name = name
        self.on_switch: Callable[[], None] | None = None
        self._factories = list(sentinels)
        self._sentinels = [factory() for factory in self._factories]
        self._timeout = timeout
        self._lock = asyncio.Lock()
        self._watcher: asyncio.Task[None] | None = None
        self._closed = False

    async def address(self) -> tuple[str, int]:
        if self._watcher is None and not self._closed:
            self._watcher = asyncio.create_task(self._watch())
        async with self._lock:
            failures = []
            for index, sentinel in enumerate(self._sentinels):
                command: Command = ("SENTINEL", "get-master-addr-by-name", self.name)
                try:
                    (reply,) = await execute_pipeline(sentinel, [command], self._timeout)
                except RedisError as error:
                    failures.append(f"{describe(sentinel)}: {error}")
                    continue
                if isinstance(reply, ResponseError) or not reply:
                    failures.append(f"{describe(sentinel)}: {reply or 'unknown master'}")
                    continue
                if index:
                    self._sentinels.insert(0, self._sentinels.pop(index))
                return _text(reply[0]), int(reply[1])
            raise RedisConnectionError(
                f"no sentinel gave the address of master {self.name}: " + "; ".join(failures)
            )

    async def _watch(self) -> None:
        while True:
            for factory in self._factories:
                connection = factory()
                try:
                    async with asyncio.timeout(self._timeout):
                        await connection.connect()  # type: ignore[no-untyped-call]
                        await connection.send_command("SUBSCRIBE", "+switch-master")
                        await connection.read_response()
                    while True:  # no read timeout: messages come when they come
                        self._on_message(await connection.read_response())
                except Exception as error:  # keep watching whatever happened
                    logger.warning(
                        "watching sentinel %s for failovers: %s", describe(connection), error
                    )
                finally:
                    await connection.disconnect()
            await asyncio.sleep(1.0)

    def _on_message(self, message: Any) -> None:
        if not (isinstance(message, list) and len(message) == 3 and message[0] == b"message"):
            return
        fields = _text(message[2]).split()
        if len(fields) == 5 and fields[0] == self.name:
            logger.warning("redis master %s moved to %s:%s", self.name, fields[3], fields[4])
            if self.on_switch is not None:
                self.on_switch()

    async def close(self) -> None:
        self._closed = True
        if self._watcher is not None:
            self._watcher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._watcher
        await asyncio.gather(*(s.disconnect() for s in self._sentinels), return_exceptions=True)


class SentinelMasterConnection(Connection):
    """A connection to whichever server the sentinels name as master, resolved at every
    (re)connect."""

    def __init__(self, *, master: SentinelMaster, **kwargs: Any) -> None:
        self.master = master
        super().__init__(**kwargs)

    async def _connect(self) -> None:
        self.host, self.port = await self.master.address()
        await super()._connect()  # type: ignore[no-untyped-call]


class SentinelMasterSSLConnection(SentinelMasterConnection, SSLConnection):
    """:class:`SentinelMasterConnection` over TLS."""


class ClusterRouter:
    """Sends each key's commands to the master serving its slot (``CLUSTER SLOTS``),
    following ``MOVED`` and ``ASK`` redirections; one pool per node."""

    def __init__(
        self,
        seeds: Sequence[Endpoint],
        make_pool: Callable[[str, int], ConnectionPool],
        timeout: float | None,
    ) -> None:
        self._seeds = [(seed.host, seed.port) for seed in seeds]
        self._make_pool = make_pool
        self._timeout = timeout
        self._pools: dict[tuple[str, int], ConnectionPool] = {}
        self._slots: list[ConnectionPool | None] = [None] * REDIS_CLUSTER_HASH_SLOTS
        self._stale = True
        self._lock = asyncio.Lock()

    @property
    def pools(self) -> dict[tuple[str, int], ConnectionPool]:
        """Node address -> its pool."""
        return self._pools

    def pool(self, host: str, port: int) -> ConnectionPool:
        found = self._pools.get((host, port))
        if found is None:
            found = self._pools[(host, port)] = self._make_pool(host, port)
        return found

    async def refresh(self, *, force: bool = False) -> None:
        """Load the slot map from the first node (known nodes, then seeds) that answers."""
        async with self._lock:
            if not (self._stale or force):
                return
            failures = []
            for address in dict.fromkeys([*self._pools, *self._seeds]):
                pool = self.pool(*address)
                try:
                    connection = await pool.acquire()
                    try:
                        (reply,) = await execute_pipeline(
                            connection, [("CLUSTER", "SLOTS")], self._timeout
                        )
                    finally:
                        pool.release(connection)
                except RedisError as error:
                    failures.append(f"{address[0]}:{address[1]}: {error}")
                    continue
                if isinstance(reply, ResponseError):
                    failures.append(f"{address[0]}:{address[1]}: {reply}")
                    continue
                slots: list[ConnectionPool | None] = [None] * REDIS_CLUSTER_HASH_SLOTS
                for start, end, primary, *_ in reply:
                    host = _text(primary[0]) or address[0]
                    slots[start : end + 1] = [self.pool(host, int(primary[1]))] * (end - start + 1)
                self._slots = slots
                self._stale = False
                return
            raise RedisConnectionError(
                "could not load the cluster slots from any node: " + "; ".join(failures)
            )

    async def run(self, key: str, commands: Sequence[Command]) -> list[Any]:
        """``commands`` (all on ``key``) in one pipeline to the node serving ``key``."""
        if self._stale:
            await self.refresh()
        slot = key_slot(key.encode())
        pool = self._slots[slot]
        if pool is None:
            raise RedisConnectionError(f"CLUSTERDOWN Hash slot {slot} not served")
        asking = False
        for _ in range(_MAX_REDIRECTS):
            sent: Sequence[Command] = [("ASKING",), *commands] if asking else commands
            try:
                connection = await pool.acquire()
                try:
                    replies = await execute_pipeline(connection, sent, self._timeout)
                finally:
                    pool.release(connection)
            except PoolEmptyError:
                raise
            except (RedisConnectionError, RedisTimeoutError):  # a node gone or moved: reload
                self._stale = True
                raise
            if asking:
                replies = replies[1:]
            redirect = next((r for r in replies if isinstance(r, AskError)), None)
            if redirect is None:
                return replies
            pool = self.pool(redirect.host, redirect.port)
            asking = not isinstance(redirect, MovedError)
            if not asking:
                self._slots[redirect.slot_id] = pool
                self._stale = True
        raise RedisConnectionError(f"too many cluster redirections for key {key}")

    def connected(self) -> bool:
        return any(pool.active for pool in self._pools.values())

    async def close(self) -> None:
        await asyncio.gather(*(pool.close() for pool in self._pools.values()))


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value
