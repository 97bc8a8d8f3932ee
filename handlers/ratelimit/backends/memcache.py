"""The memcached counter store (``BACKEND_TYPE=memcache``), with upstream's semantics.

**Decide, then increment.** :meth:`MemcacheStore.increment` reads every key first, with one
``get`` per node sent concurrently (upstream's ``GetMulti``), and returns for each increment
the value read plus its amount: the limiter decides on that (``before`` = the value read,
``after`` = before + hits), as upstream decides before incrementing. The increments are then
queued and applied in the background, as upstream's worker does, key by key: ``incr key
amount``; on a miss ``add key amount`` with the expiration (the window plus jitter); if that
add loses a race (``NOT_STORED``), ``incr`` again. One batch is applied at a time, holding the
increments of every call decided meanwhile, with a node's commands in one write. Failures
there are logged and counted, not reported: the decision has already been answered.
:meth:`flush` waits for them (upstream's ``Flush``, used by its integration tests);
:meth:`close` does too.

Where results differ from the Redis backend (as upstream's differ):

- Calls decide on counters that do not include the increments of calls still in flight, so
  concurrent calls can all pass and briefly exceed a limit; two descriptors with the same key
  in one request both decide on the same value read.
- A counter expires its window plus jitter after it was **created**; increments do not
  refresh the expiry (Redis refreshes it on every hit).
- ``STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT`` has no effect (the server does not pass it on),
  and there is no per-second instance.
- A stored value that is not a base-10 int32 (above 2147483647) is read as 0, with a log line.

Where this store deviates from upstream:

- A failed read (a node down or timing out, an error reply) and a malformed key (over 250
  bytes, or with spaces, control or non-ASCII characters) raise :class:`BackendError`: the
  call is answered with gRPC ``UNKNOWN`` as for Redis. Upstream logs the failed ``GetMulti``
  and decides as if every counter were 0, i.e. allows the request.
- memcached reads an expiration above 30 days as a Unix time; upstream sends the window plus
  jitter as is, so a month (with jitter) or year counter expires at once. Here such an
  expiration is sent as the absolute time it means.

Stats (scope ``ratelimit.memcache``, upstream's names; tags as gostats writes them into
statsd names): ``multiget.__code=success|error``, ``increment.__code=success|miss|error``,
``add.__code=success|error|not_stored``, ``keys_requested``, ``keys_found``.
"""

from __future__ import annotations

import asyncio
import logging
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from handlers.ratelimit.backends.base import BackendError, Increment
from handlers.ratelimit.backends.memcache_connections import LINE, VALUES, Node, ReplyError
from handlers.ratelimit.backends.memcache_servers import (
    ServerList,
    SrvDiscovery,
    SrvResolver,
    resolve_srv,
)
from handlers.ratelimit.backends.redis_connections import tls_context
from handlers.ratelimit.settings import AltCacheSettings, SettingsError
from handlers.ratelimit.stats import Counter, StatsStore

__all__ = ["TIMEOUT", "MemcacheStore"]

logger = logging.getLogger(__name__)

TIMEOUT = 0.5
"""Seconds for connecting, and for each call from its write to its last reply (upstream has
no setting either: its client library's socket timeout applies)."""
MAX_RELATIVE_EXPIRATION = 30 * 24 * 3600
"""memcached reads a larger expiration as a Unix time."""
_LEGAL_KEY = re.compile(rb"[\x21-\x7e]{1,250}")
_INT = re.compile(rb"[+-]?[0-9]+")
_INT32_MAX = 2**31 - 1


@dataclass(frozen=True, slots=True)
class _Stats:
    multiget_success: Counter
    multiget_error: Counter
    increment_success: Counter
    increment_miss: Counter
    increment_error: Counter
    add_success: Counter
    add_error: Counter
    add_not_stored: Counter
    keys_requested: Counter
    keys_found: Counter

    @classmethod
    def create(cls, store: StatsStore) -> _Stats:
        def counter(name: str) -> Counter:
            return store.counter("ratelimit.memcache." + name)

        return cls(
            multiget_success=counter("multiget.__code=success"),
            multiget_error=counter("multiget.__code=error"),
            increment_success=counter("increment.__code=success"),
            increment_miss=counter("increment.__code=miss"),
            increment_error=counter("increment.__code=error"),
            add_success=counter("add.__code=success"),
            add_error=counter("add.__code=error"),
            add_not_stored=counter("add.__code=not_stored"),
            keys_requested=counter("keys_requested"),
            keys_found=counter("keys_found"),
        )


class MemcacheStore:
    """:class:`~handlers.ratelimit.backends.base.CounterStore` on memcached nodes.

    ``resolver`` looks up ``settings.srv`` (DNS by default); ``clock`` gives the Unix time of
    absolute expirations.
    """

    def __init__(
        self,
        settings: AltCacheSettings,
        *,
        stats: StatsStore | None = None,
        resolver: SrvResolver = resolve_srv,
        timeout: float = TIMEOUT,
        clock: Callable[[], float] = time.time,
    ) -> None:
        if not settings.host_port and not settings.srv:
            raise SettingsError("BACKEND_TYPE=memcache needs ALTCACHE_HOST_PORT or ALTCACHE_SRV")
        self._settings = settings
        self._stats = _Stats.create(stats if stats is not None else StatsStore())
        self._timeout = timeout
        self._clock = clock
        tls = tls_context(settings) if settings.tls else None
        # upstream's client reads 0 as its default of 2 idle connections
        connections = settings.max_idle_conns or 2

        def node(address: str) -> Node:
            return Node(address, max_connections=connections, timeout=timeout, tls=tls)

        self._servers = ServerList(node)
        self._srv: SrvDiscovery | None = None
        if settings.srv:
            self._srv = SrvDiscovery(self._servers, settings.srv, resolver)
        else:
            self._servers.set_servers(settings.host_port)
        self._queue: list[Increment] = []
        self._draining: asyncio.Task[None] | None = None

    async def start(self) -> None:
        """Find the nodes (an SRV record that cannot be resolved raises
        :class:`BackendError`) and connect to each; a node that does not answer is logged,
        not fatal (upstream does not check the nodes at startup)."""
        if self._srv is not None:
            try:
                await self._srv.refresh()
            except BackendError as error:
                raise BackendError(f"Unable to fetch servers from SRV: {error}") from error
            if self._settings.srv_refresh > 0:
                self._srv.refresh_every(self._settings.srv_refresh)
        nodes = self._servers.nodes
        replies = await asyncio.gather(
            *(node.call(b"version\r\n", (LINE,)) for node in nodes), return_exceptions=True
        )
        for node, reply in zip(nodes, replies, strict=True):
            if isinstance(reply, BaseException):
                logger.warning("memcached %s does not answer yet: %s", node.address, reply)
            else:
                logger.info("memcached %s answers: %r", node.address, reply[0])

    async def get(self, keys: Sequence[tuple[str, bool]]) -> list[int]:
        if not keys:
            return []
        values = await self._read([key for key, _ in keys])
        return [values[key] for key, _ in keys]

    async def increment(self, increments: Sequence[Increment]) -> list[int]:
        """The value of each key before this call plus its amount; the increments are applied
        after this returns (see the module's documentation)."""
        if not increments:
            return []
        values = await self._read([inc.key for inc in increments])
        self._queue.extend(increments)
        if self._draining is None:
            self._draining = asyncio.get_running_loop().create_task(self._drain())
        return [values[inc.key] + inc.amount for inc in increments]

    async def _drain(self) -> None:
        """Apply the queued increments, a batch at a time: a batch holds those of every call
        decided while the previous one was applied."""
        try:
            while self._queue:
                await asyncio.sleep(0)  # the calls of this pass of the loop queue theirs too
                batch, self._queue = self._queue, []
                await self._apply(batch)
        finally:
            self._draining = None

    async def flush(self) -> None:
        """Wait until the increments of every call so far are applied (or have failed)."""
        while self._draining is not None:
            await asyncio.gather(self._draining, return_exceptions=True)

    def connected(self) -> bool:
        """Whether every node has an open connection."""
        nodes = self._servers.nodes
        return bool(nodes) and all(node.connected() for node in nodes)

    async def close(self) -> None:
        """Stop refreshing, let the pending increments finish (within a few timeouts), close."""
        if self._srv is not None:
            await self._srv.close()
        try:
            async with asyncio.timeout(3 * self._timeout + 1):
                await self.flush()
        except TimeoutError:
            logger.warning("closing memcache with %d increments not applied", len(self._queue))
            if self._draining is not None:
                self._draining.cancel()
        await self._servers.close()

    async def _read(self, keys: Sequence[str]) -> dict[str, int]:
        """Each key's counter (0 when missing): one ``get`` per node, concurrently."""
        stats = self._stats
        stats.keys_requested.add(len(keys))
        try:
            groups: dict[Node, list[bytes]] = {}
            encoded: dict[str, bytes] = {}
            for key in keys:
                if key not in encoded:
                    encoded[key] = data = _legal(key)
                    groups.setdefault(self._servers.node_for(data), []).append(data)
            gets = [
                (node, node.submit(b"get " + b" ".join(group) + b"\r\n", (VALUES,)))
                for node, group in groups.items()
            ]
            found: dict[bytes, bytes] = {}
            failure: BackendError | None = None
            for node, get in gets:  # all are in flight: await each, even after a failure
                try:
                    (reply,) = await get
                except BackendError as error:
                    failure = failure or error
                    continue
                if isinstance(reply, ReplyError):
                    failure = failure or BackendError(f"memcached {node.address}: {reply}")
                elif isinstance(reply, dict):
                    found.update(reply)
            if failure is not None:
                raise failure
        except BackendError:
            stats.multiget_error.add()
            raise
        stats.multiget_success.add()
        stats.keys_found.add(len(found))
        return {
            key: _counter(key, found[data]) if data in found else 0 for key, data in encoded.items()
        }

    async def _apply(self, increments: list[Increment]) -> None:
        groups: dict[Node, list[Increment]] = {}
        try:
            for inc in increments:
                groups.setdefault(self._servers.node_for(inc.key.encode()), []).append(inc)
        except BackendError as error:
            self._stats.increment_error.add(len(increments))
            logger.error("Failed to increment %d keys: %s", len(increments), error)
            return
        await asyncio.gather(*(self._apply_on(node, group) for node, group in groups.items()))

    async def _apply_on(self, node: Node, increments: list[Increment]) -> None:
        """``incr``, then ``add`` the missing keys, then ``incr`` those that lost the race."""
        stats = self._stats
        stage = "increment"
        try:
            missed: list[Increment] = []
            replies = await node.call(_incr(increments), [LINE] * len(increments))
            for inc, reply in zip(increments, replies, strict=True):
                if reply == b"NOT_FOUND":
                    stats.increment_miss.add()
                    missed.append(inc)
                elif _is_number(reply):
                    stats.increment_success.add()
                else:
                    stats.increment_error.add()
                    logger.error("Failed to increment key %s: %s", inc.key, reply)
            if not missed:
                return
            stage = "add"
            again: list[Increment] = []
            replies = await node.call(self._add(missed), [LINE] * len(missed))
            for inc, reply in zip(missed, replies, strict=True):
                if reply == b"STORED":
                    stats.add_success.add()
                elif reply == b"NOT_STORED":  # another call added it first
                    stats.add_not_stored.add()
                    again.append(inc)
                else:
                    stats.add_error.add()
                    logger.error("Failed to add key %s: %s", inc.key, reply)
            if not again:
                return
            stage = "increment"
            replies = await node.call(_incr(again), [LINE] * len(again))
            for inc, reply in zip(again, replies, strict=True):
                if _is_number(reply):
                    stats.increment_success.add()
                else:
                    stats.increment_error.add()
                    logger.error(
                        "Failed to increment key %s after failing to add: %s", inc.key, reply
                    )
        except BackendError as error:
            (stats.add_error if stage == "add" else stats.increment_error).add()
            logger.error("Failed to %s keys on memcached %s: %s", stage, node.address, error)

    def _add(self, increments: list[Increment]) -> bytes:
        commands = []
        for inc in increments:
            expiration = inc.expire_seconds
            if expiration > MAX_RELATIVE_EXPIRATION:
                expiration += int(self._clock())
            value = b"%d" % inc.amount
            commands.append(
                b"add %s 0 %d %d\r\n%s\r\n" % (inc.key.encode(), expiration, len(value), value)
            )
        return b"".join(commands)


def _legal(key: str) -> bytes:
    """The key's bytes, if memcached accepts it (gomemcache's ``legalKey``)."""
    data = key.encode("utf-8")
    if _LEGAL_KEY.fullmatch(data) is None:
        shown = key if len(key) <= 80 else key[:80] + "..."
        raise BackendError(
            "malformed: key is too long or contains invalid characters "
            f"({len(data)} bytes; at most 250 printable ASCII, no spaces): {shown!r}"
        )
    return data


def _counter(key: str, raw: bytes) -> int:
    """A stored counter as upstream reads it: a base-10 int32 (as uint32), else 0."""
    if _INT.fullmatch(raw) is not None:
        value = int(raw)
        if -_INT32_MAX - 1 <= value <= _INT32_MAX:
            return value % 2**32
    logger.error("Unexpected non-numeric value in memcached for key %s: %r", key, raw[:40])
    return 0


def _incr(increments: Sequence[Increment]) -> bytes:
    return b"".join([b"incr %s %d\r\n" % (inc.key.encode(), inc.amount) for inc in increments])


def _is_number(reply: object) -> bool:
    return isinstance(reply, bytes) and reply.isdigit()
