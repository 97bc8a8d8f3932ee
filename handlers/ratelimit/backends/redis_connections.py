"""Connections to Redis for :mod:`handlers.ratelimit.backends.redis`.

URL parsing and credential masking; a bounded connection pool with the upstream's
pool-on-empty behaviours and ``cx_*`` stats; :class:`Pipeliner`, which batches the calls of
concurrent callers into one write per connection (implicit pipelining); sentinel master
discovery and cluster slot routing.

Data connections are :class:`~handlers.ratelimit.backends.redis_protocol.RedisConnection`
(RESP encoded here, replies parsed by hiredis, on an asyncio protocol). The sentinels are
asked with redis-py's asyncio connections: they are not on the hot path.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import ssl
from collections import deque
from collections.abc import Awaitable, Callable, Sequence
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

from handlers.ratelimit.backends.redis_protocol import (
    Call,
    Command,
    RedisConnection,
    encode_command,
    fail,
    split_commands,
)
from handlers.ratelimit.settings import AltCacheSettings, KvStoreSettings
from handlers.ratelimit.stats import StatsStore

logger = logging.getLogger(__name__)

_MAX_REDIRECTS = 5
_CLUSTER_SLOTS = encode_command("CLUSTER", "SLOTS")
_ASKING = encode_command("ASKING")


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


def tls_context(
    settings: KvStoreSettings | AltCacheSettings,
) -> Callable[[], ssl.SSLContext]:
    """The TLS context of an instance, made at its first use (so that unreadable files fail
    calls, not the construction): the system CAs plus ``tls_cacert``, certificates always
    verified, host names unless ``tls_skip_hostname_verification``, and the client
    certificate when ``tls_client_cert`` and ``tls_client_key`` are set."""

    @functools.cache
    def make() -> ssl.SSLContext:
        context = ssl.create_default_context()
        context.check_hostname = not settings.tls_skip_hostname_verification
        context.verify_mode = ssl.CERT_REQUIRED
        if settings.tls_cacert:
            context.load_verify_locations(cafile=settings.tls_cacert)
        if settings.tls_client_cert and settings.tls_client_key:
            context.load_cert_chain(settings.tls_client_cert, settings.tls_client_key)
        return context

    return make


def redis_connection(
    settings: KvStoreSettings,
    endpoint: Endpoint,
    auth: str,
    *,
    tls: Callable[[], ssl.SSLContext] | None = None,
    resolve: Callable[[], Awaitable[tuple[str, int]]] | None = None,
) -> Callable[[], RedisConnection]:
    """A factory of data connections to ``endpoint``: credentials from its URL, else from
    ``auth``; TLS (``tls``, TCP only) when the settings or a ``rediss://`` URL ask for it;
    ``resolve`` gives the address at each connect (sentinel)."""
    user, password = split_auth(auth)
    timeout = settings.timeout if settings.timeout > 0 else None
    secure = (settings.tls or endpoint.tls) and not endpoint.path
    return functools.partial(
        RedisConnection,
        host=endpoint.host,
        port=endpoint.port,
        path=endpoint.path,
        username=endpoint.username or user,
        password=endpoint.password or password,
        db=endpoint.db,
        tls=(tls or tls_context(settings)) if secure else None,
        resolve=resolve,
        timeout=timeout,
    )


def connection_options(settings: KvStoreSettings, endpoint: Endpoint, auth: str) -> dict[str, Any]:
    """Keyword arguments of a redis-py connection to ``endpoint`` (a sentinel): credentials
    from its URL, else from ``auth``; TLS as set (TCP only); RESP2 and nothing sent on
    connect but AUTH."""
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
    """The redis-py connection class for a sentinel."""
    if endpoint.path:
        return UnixDomainSocketConnection
    return SSLConnection if settings.tls or endpoint.tls else Connection


def describe(connection: AbstractConnection) -> str:
    """The server a redis-py connection talks to, for error messages."""
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

    :meth:`take` hands out an idle connection that is ready to use, or nothing, without
    waiting; :meth:`acquire` waits for one, connecting or reconnecting it as needed. When all
    are in use, ``on_empty`` decides: ``WAIT`` blocks until one is released, ``ERROR`` fails
    after ``wait_duration``, ``CREATE`` opens an overflow connection after ``wait_duration``
    (closed when released while the pool is over size).
    """

    def __init__(
        self,
        factory: Callable[[], RedisConnection],
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
        self._idle: list[RedisConnection] = []
        self._members: set[RedisConnection] = set()
        self._open: set[RedisConnection] = set()
        self._generation = 0
        self._connected_in: dict[RedisConnection, int] = {}
        self._waiters: deque[asyncio.Future[RedisConnection]] = deque()
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

    def take(self) -> RedisConnection | None:
        """The most recently used idle connection when it is open and current (no waiting),
        else ``None``: then :meth:`acquire`."""
        idle = self._idle
        if idle:
            connection = idle[-1]
            if connection.is_connected and self._connected_in.get(connection) == self._generation:
                return idle.pop()
        return None

    async def acquire(self) -> RedisConnection:
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

    def release(self, connection: RedisConnection) -> None:
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

    def _new(self) -> RedisConnection:
        connection = self._factory()
        connection.on_close = self._forget_if_closed
        self._members.add(connection)
        return connection

    async def _wait(self) -> RedisConnection:
        waiter: asyncio.Future[RedisConnection] = asyncio.get_running_loop().create_future()
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

    async def _ready(self, connection: RedisConnection) -> None:
        if connection.is_connected:
            if self._connected_in.get(connection) == self._generation:
                return
            connection.close()  # connected before invalidate(): reconnect
            self._forget_if_closed(connection)
        try:
            async with asyncio.timeout(self._connect_timeout):
                await connection.connect()
        except TimeoutError:
            connection.close()
            raise RedisTimeoutError(f"Timeout connecting to {connection.address}") from None
        self._open.add(connection)
        self._connected_in[connection] = self._generation
        self._stats.opened()

    def _forget_if_closed(self, connection: RedisConnection) -> None:
        if connection in self._open and not connection.is_connected:
            self._open.discard(connection)
            self._stats.closed()

    def _discard(self, connection: RedisConnection) -> None:
        self._members.discard(connection)
        self._connected_in.pop(connection, None)
        if connection in self._idle:
            self._idle.remove(connection)
        connection.close()
        self._forget_if_closed(connection)


class Pipeliner:
    """Calls to one server, batched across callers (implicit pipelining).

    :meth:`call` queues a call's encoded commands. The queue is flushed when the event loop
    is next free (``window`` 0), or ``window`` seconds after its first call: every call
    queued by then goes in one write on one connection, and each call gets its own replies
    back, in order. A connection carries one batch at a time; while every connection of the
    pool has a batch in flight (the pool's on-empty behaviour deciding how long to wait for
    one, or whether to open an overflow one), calls keep queueing and all go in the next
    batch. A failed batch (connection lost, timeout) fails all of its calls and nothing else;
    its connection reconnects at its next use.
    """

    def __init__(
        self,
        pool: ConnectionPool,
        *,
        window: float = 0.0,
        on_connection_error: Callable[[], None] | None = None,
    ) -> None:
        self.pool = pool
        self._window = max(0.0, window)
        self.on_connection_error = on_connection_error
        """Called when a connection fails or cannot be opened (sentinel: the master may have
        moved)."""
        self._payloads: list[bytes] = []
        self._calls: list[Call] = []
        self._count = 0
        self._scheduled = False
        self._acquiring: asyncio.Task[None] | None = None
        self._closed = False

    def submit(self, data: bytes, count: int) -> asyncio.Future[list[Any]]:
        """Queue ``data`` (encoded commands with ``count`` replies); the future gets the
        replies (error replies as exception values), or the failure of its batch."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[list[Any]] = loop.create_future()
        if self._closed:
            future.set_exception(RedisConnectionError("connection pool is closed"))
            return future
        if count <= 0:
            future.set_result([])
            return future
        self._payloads.append(data)
        self._calls.append((future, count))
        self._count += count
        if not self._scheduled and self._acquiring is None:
            self._scheduled = True
            if self._window > 0:
                loop.call_later(self._window, self._flush)
            else:
                loop.call_soon(self._flush)
        return future

    async def call(self, data: bytes, count: int) -> list[Any]:
        return await self.submit(data, count)

    def connected(self) -> bool:
        return self.pool.active > 0

    async def close(self) -> None:
        self._closed = True
        fail(self._take_queue()[1], RedisConnectionError("connection pool is closed"))
        acquiring = self._acquiring
        if acquiring is not None:
            acquiring.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await acquiring
        await self.pool.close()

    def _take_queue(self) -> tuple[bytes, list[Call], int]:
        payloads, calls, count = self._payloads, self._calls, self._count
        self._payloads, self._calls, self._count = [], [], 0
        return (payloads[0] if len(payloads) == 1 else b"".join(payloads)), calls, count

    def _flush(self) -> None:
        self._scheduled = False
        if not self._calls or self._acquiring is not None:
            return
        connection = self.pool.take()
        if connection is None:  # none free now: wait for one; calls queue meanwhile
            self._acquiring = asyncio.get_running_loop().create_task(self._acquire())
            return
        connection.send(*self._take_queue(), self._finished)

    async def _acquire(self) -> None:
        try:
            connection = await self.pool.acquire()
        except asyncio.CancelledError:
            self._acquiring = None
            raise
        except Exception as error:
            self._acquiring = None
            failure = error if isinstance(error, RedisError) else RedisConnectionError(str(error))
            fail(self._take_queue()[1], failure)
            if isinstance(failure, RedisConnectionError) and not isinstance(
                failure, PoolEmptyError
            ):
                self._connection_error()
            return
        self._acquiring = None
        if not self._calls:
            self.pool.release(connection)
            return
        connection.send(*self._take_queue(), self._finished)

    def _finished(self, connection: RedisConnection, failure: BaseException | None) -> None:
        if connection.readonly:  # a demoted master (after a failover): reconnect, re-resolving
            connection.readonly = False
            self.pool.invalidate()
        self.pool.release(connection)
        if isinstance(failure, RedisConnectionError):
            self._connection_error()
        if self._calls and not self._scheduled and self._acquiring is None:
            self._flush()

    def _connection_error(self) -> None:
        if self.on_connection_error is not None:
            self.on_connection_error()


async def execute_pipeline(
    connection: AbstractConnection, commands: Sequence[Command], time_limit: float | None
) -> list[Any]:
    """Send ``commands`` in one write on a redis-py connection (a sentinel) and read their
    replies: one round trip.

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


class ClusterRouter:
    """Sends each key's commands to the master serving its slot (``CLUSTER SLOTS``),
    following ``MOVED`` and ``ASK`` redirections; one :class:`Pipeliner` per node, so the
    keys of concurrent calls on one node share its batches.

    A redirection means the command did not run. Only the redirected commands of a batch
    are sent again (in their order), so a command that ran is never run twice: after
    ``MOVED`` to the node named, whose slot entry is updated at once (the whole map is
    reloaded before the next call); after ``ASK`` (a slot being migrated, the key not, or no
    longer, on the source) to the node named, each command preceded by its own ``ASKING``
    (which lasts one command), without touching the map. At most :data:`_MAX_REDIRECTS`
    rounds per call. :attr:`ask_redirections` and :attr:`moved_redirections` count the
    redirected commands.
    """

    def __init__(self, seeds: Sequence[Endpoint], make_node: Callable[[str, int], Pipeliner]):
        self._seeds = [(seed.host, seed.port) for seed in seeds]
        self._make_node = make_node
        self._nodes: dict[tuple[str, int], Pipeliner] = {}
        self._slots: list[Pipeliner | None] = [None] * REDIS_CLUSTER_HASH_SLOTS
        self._stale = True
        self._lock = asyncio.Lock()
        self.ask_redirections = 0
        self.moved_redirections = 0

    @property
    def nodes(self) -> dict[tuple[str, int], Pipeliner]:
        """Node address -> its pipeliner."""
        return self._nodes

    def node(self, host: str, port: int) -> Pipeliner:
        found = self._nodes.get((host, port))
        if found is None:
            found = self._nodes[(host, port)] = self._make_node(host, port)
        return found

    async def refresh(self, *, force: bool = False) -> None:
        """Load the slot map from the first node (known nodes, then seeds) that answers."""
        async with self._lock:
            if not (self._stale or force):
                return
            failures = []
            for address in dict.fromkeys([*self._nodes, *self._seeds]):
                try:
                    (reply,) = await self.node(*address).call(_CLUSTER_SLOTS, 1)
                except RedisError as error:
                    failures.append(f"{address[0]}:{address[1]}: {error}")
                    continue
                if isinstance(reply, Exception):
                    failures.append(f"{address[0]}:{address[1]}: {reply}")
                    continue
                slots: list[Pipeliner | None] = [None] * REDIS_CLUSTER_HASH_SLOTS
                for start, end, primary, *_ in reply:
                    host = _text(primary[0]) or address[0]
                    slots[start : end + 1] = [self.node(host, int(primary[1]))] * (end - start + 1)
                self._slots = slots
                self._stale = False
                return
            raise RedisConnectionError(
                "could not load the cluster slots from any node: " + "; ".join(failures)
            )

    async def run(self, key: str, data: bytes, count: int) -> list[Any]:
        """``data`` (encoded commands on ``key``, ``count`` replies) in one batch of the node
        serving ``key``."""
        if self._stale:
            await self.refresh()
        slot = key_slot(key.encode())
        node = self._slots[slot]
        if node is None:
            raise RedisConnectionError(f"CLUSTERDOWN Hash slot {slot} not served")
        try:
            replies = await node.submit(data, count)
        except PoolEmptyError:
            raise
        except (RedisConnectionError, RedisTimeoutError):  # a node gone or moved: reload
            self._stale = True
            raise
        for reply in replies:
            if isinstance(reply, AskError):  # MovedError is one too
                return await self._redirected(key, data, replies)
        return replies

    async def run_all(self, groups: Sequence[tuple[str, bytes, int]]) -> list[Any]:
        """Every group (key, encoded commands on it, how many replies) at once, each in the
        batch of the node serving its key: the replies of all, in order, once all have
        finished; then the first failure, if any, is raised (as :func:`asyncio.gather` with
        ``return_exceptions``, without a task per group)."""
        if self._stale:
            await self.refresh()
        routed = []
        for key, data, count in groups:
            slot = key_slot(key.encode())
            node = self._slots[slot]
            if node is None:
                raise RedisConnectionError(f"CLUSTERDOWN Hash slot {slot} not served")
            routed.append((node, data, count))
        futures = [node.submit(data, count) for node, data, count in routed]
        replies: list[Any] = []
        failure: Exception | None = None
        try:
            for future, (key, data, _) in zip(futures, groups, strict=True):
                try:
                    result = await future
                    for reply in result:
                        if isinstance(reply, AskError):
                            result = await self._redirected(key, data, result)
                            break
                except Exception as error:
                    if isinstance(error, (RedisConnectionError, RedisTimeoutError)) and (
                        not isinstance(error, PoolEmptyError)
                    ):
                        self._stale = True
                    failure = failure or error
                    continue
                replies += result
        except BaseException:  # cancelled: the other groups' replies go to nobody
            for future in futures:
                future.cancel()
            raise
        if failure is not None:
            raise failure
        return replies

    async def _call(self, node: Pipeliner, data: bytes, count: int) -> list[Any]:
        try:
            return await node.submit(data, count)
        except PoolEmptyError:
            raise
        except (RedisConnectionError, RedisTimeoutError):
            self._stale = True
            raise

    async def _redirected(self, key: str, data: bytes, replies: list[Any]) -> list[Any]:
        commands = split_commands(data)
        replies = list(replies)
        for _ in range(_MAX_REDIRECTS):
            pending = [i for i, reply in enumerate(replies) if isinstance(reply, AskError)]
            if not pending:
                return replies
            first: AskError = replies[pending[0]]
            node = self.node(first.host, first.port)
            parts: list[bytes] = []
            answer_at: list[int] = []  # where each pending command's reply comes
            for i in pending:
                redirect: AskError = replies[i]
                if isinstance(redirect, MovedError):
                    self.moved_redirections += 1
                    self._slots[redirect.slot_id] = self.node(redirect.host, redirect.port)
                    self._stale = True
                else:  # ASK: the importing node runs the next command after an ASKING
                    self.ask_redirections += 1
                    parts.append(_ASKING)
                parts.append(commands[i])
                answer_at.append(len(parts) - 1)
            answers = await self._call(node, b"".join(parts), len(parts))
            for i, at in zip(pending, answer_at, strict=True):
                replies[i] = answers[at]
        if any(isinstance(reply, AskError) for reply in replies):
            raise RedisConnectionError(f"too many cluster redirections for key {key}")
        return replies

    def connected(self) -> bool:
        return any(node.connected() for node in self._nodes.values())

    async def close(self) -> None:
        await asyncio.gather(*(node.close() for node in self._nodes.values()))


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value
