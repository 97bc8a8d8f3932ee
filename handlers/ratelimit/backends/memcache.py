"""The memcached counter store (``BACKEND_TYPE=memcache``), with upstream's semantics.

**Decide, then increment**, for upstream's limits and for fixed windows of whole seconds that
are several units (``unit_multiplier``, ``window: 30s``: the limiter counts them as upstream's,
under keys of their own, as on Redis; ``incr`` is atomic and as cheap as upstream's counting,
so they need no compare-and-swap). :meth:`MemcacheStore.increment` reads every key first, with one
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

**Issue 23's limits** (:meth:`MemcacheStore.decide`: sliding windows, token buckets, fixed
windows that are not whole seconds or are one of several limits) are decided atomically across
processes and hosts, which the increments above are not. memcached runs no scripts, so each
key's step is a compare-and-swap: ``gets key`` (the state and its CAS unique), the decisions of
``algorithms.py`` on it, then ``cas key ... unique`` with the new state (``add`` when the key is
missing); ``EXISTS`` / ``NOT_FOUND`` / ``NOT_STORED`` mean another process stored the key in
between, and nothing was stored: read and decide again, at most :data:`CAS_ATTEMPTS` (16)
rounds, then :class:`BackendError` (the call is answered ``UNKNOWN``). A state the decisions
leave as it was (0 hits; a refused token-bucket request; a refused sliding-window request in
the window stored) is not written again. The state is encoded as the Redis script encodes it
(``start:count``, ``start:current:previous``, ``tat_ms:tat_frac``:
:mod:`~handlers.ratelimit.backends.stored_state`); a value that is not one decides as a
missing key (logged) and is stored over. :meth:`peek` (the counters API) reads the values
with one ``get`` per node and decides on them, storing nothing. A key lives ``ttl_ms`` +
:data:`EXPIRY_MARGIN_MS`, in whole seconds rounded up; past 30 days as the Unix time it means,
and past January 2038 (memcached's int32) with no expiry (kept until evicted; keeping a state
longer decides the same). Keys go to their node as counters do (CRC-32).

Within a process, the decisions on one key are queued behind its round in flight and share
the next one (one ``gets`` + ``cas`` for the batch, decided in the order of the calls), so only
other processes compete for a key. Measured on loopback (2 cores): 4 processes with 8 requests
in flight each on one sliding-window key and one token-bucket key, 6400 requests: 1564 batches
took 1 round, 24 took 2, 12 took 3; 8 such processes: at most 6 rounds (one batch of 3200).
The second and later lost rounds wait up to ``0.5 ms * round`` (random) before the next, so
the processes step out of each other's way. Decisions cost 2 round trips (1 when
nothing changes), against Redis's one ``EVALSHA``.

A restart of memcached loses every state: the calls on the connections it closed fail with
:class:`BackendError`, the next ones reconnect and decide as on missing keys, so each limit's
allowance starts whole again (up to one allowance more is admitted across the restart).

Stats (scope ``ratelimit.memcache``, upstream's names; tags as gostats writes them into
statsd names): ``multiget.__code=success|error``, ``increment.__code=success|miss|error``,
``add.__code=success|error|not_stored``, ``keys_requested``, ``keys_found``; for issue 23's
limits ``decide.__code=success|error`` (a round of one key's decisions) and
``cas.__code=conflict`` (a round lost to another process).
"""

from __future__ import annotations

import asyncio
import logging
import random
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from handlers.ratelimit import algorithms
from handlers.ratelimit.backends.base import BackendError, Increment, LimitCheck
from handlers.ratelimit.backends.memcache_connections import (
    GETS,
    LINE,
    VALUES,
    CasValues,
    Node,
    ReplyError,
)
from handlers.ratelimit.backends.memcache_servers import (
    ServerList,
    SrvDiscovery,
    SrvResolver,
    resolve_srv,
)
from handlers.ratelimit.backends.redis_connections import tls_context
from handlers.ratelimit.backends.stored_state import STATE_TYPES, decode_state, encode_state
from handlers.ratelimit.backends.stored_state import decide as decide_one
from handlers.ratelimit.settings import AltCacheSettings, SettingsError
from handlers.ratelimit.stats import Counter, StatsStore

__all__ = ["CAS_ATTEMPTS", "EXPIRY_MARGIN_MS", "TIMEOUT", "MemcacheStore"]

logger = logging.getLogger(__name__)

TIMEOUT = 0.5
"""Seconds for connecting, and for each call from its write to its last reply (upstream has
no setting either: its client library's socket timeout applies)."""
MAX_RELATIVE_EXPIRATION = 30 * 24 * 3600
"""memcached reads a larger expiration as a Unix time."""
CAS_ATTEMPTS = 16
"""How many ``gets`` + ``cas`` rounds one batch of decisions on a key may take before it fails
with :class:`BackendError`: each lost round means another process stored the key between this
one's read and write. A process's own concurrent decisions on a key share its rounds, so only
other processes (hosts) compete: 8 processes hammering one key took at most 6 (the module's
documentation has the figures), so 16 leaves room; a batch that loses them all has waited at
most 16 * 2 round trips + ~70 ms of backoff."""
EXPIRY_MARGIN_MS = 2000
"""Added to the ``ttl_ms`` a decision asks for before rounding it up to memcached's whole
seconds: 1 s for the skew between the service's clock (the decisions') and memcached's (the
expiry's), as Redis's ``TTL_MARGIN_MS``, and 1 s for memcached's clock, which ticks once a
second (a key set just before a tick lives up to a second less than its expiration)."""
_MAX_EXPIRATION = 2**31 - 1
"""memcached parses an expiration as an int32: a Unix time past January 2038 is refused."""
_LOST_RACE = (b"EXISTS", b"NOT_FOUND", b"NOT_STORED")
"""Replies to ``cas`` / ``add``: the key changed (or expired, or appeared) since it was read."""
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
    decide_success: Counter
    decide_error: Counter
    cas_conflict: Counter

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
            decide_success=counter("decide.__code=success"),
            decide_error=counter("decide.__code=error"),
            cas_conflict=counter("cas.__code=conflict"),
        )


@dataclass(slots=True)
class _Job:
    """One call's checks on one key, waiting for the key's next ``gets`` + ``cas`` round."""

    checks: list[LimitCheck]
    now_ms: int
    future: asyncio.Future[list[algorithms.Decision[Any]]]


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
        self._deciding: dict[str, list[_Job]] = {}
        """The keys being decided, each with the jobs waiting for its next round."""
        self._deciders: set[asyncio.Task[None]] = set()
        self.rounds = [0] * (CAS_ATTEMPTS + 1)
        """How many batches were decided in 1, 2, ... :data:`CAS_ATTEMPTS` rounds (index 0:
        those that failed for want of rounds): the contention on the keys."""

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
                await asyncio.gather(*self._deciders, return_exceptions=True)
        except TimeoutError:
            logger.warning("closing memcache with %d increments not applied", len(self._queue))
            if self._draining is not None:
                self._draining.cancel()
            for decider in list(self._deciders):
                decider.cancel()
        await self._servers.close()

    async def decide(
        self, checks: Sequence[LimitCheck], now_ms: int
    ) -> list[algorithms.Decision[Any]]:
        """Decide each check with ``algorithms.py`` on its key's state in memcached, in order,
        atomically across processes (see the module's documentation); a decision's ``state``
        is what was stored. Raises :class:`BackendError` for a malformed key, a node that
        fails, or a key other processes kept changing for :data:`CAS_ATTEMPTS` rounds."""
        decisions: list[algorithms.Decision[Any] | None] = [None] * len(checks)
        by_key: dict[str, list[int]] = {}
        for index, check in enumerate(checks):
            if check.algorithm == "token_bucket" and check.limit == 0:
                decisions[index] = decide_one(check, None, now_ms)  # refuses, keeps nothing
            else:
                by_key.setdefault(check.key, []).append(index)
        encoded = {key: _legal(key) for key in by_key}  # every key checked before any is sent
        loop = asyncio.get_running_loop()
        jobs: list[tuple[list[int], _Job]] = []
        for key, indices in by_key.items():
            job = _Job([checks[i] for i in indices], now_ms, loop.create_future())
            jobs.append((indices, job))
            waiting = self._deciding.get(key)
            if waiting is not None:  # the key's decider takes it in its next round
                waiting.append(job)
                continue
            self._deciding[key] = [job]
            task = loop.create_task(self._decide_key(key, encoded[key]))
            self._deciders.add(task)
            task.add_done_callback(self._deciders.discard)
        failure: BackendError | None = None
        for indices, job in jobs:  # all are queued: await each, even after a failure
            try:
                for index, decision in zip(indices, await job.future, strict=True):
                    decisions[index] = decision
            except BackendError as error:
                failure = failure or error
        if failure is not None:
            raise failure
        return [decision for decision in decisions if decision is not None]

    async def peek(
        self, checks: Sequence[LimitCheck], now_ms: int
    ) -> list[algorithms.Decision[Any]]:
        """Each check decided by ``algorithms.py`` on its key's value, read with one ``get``
        per node (the encoding of :mod:`~handlers.ratelimit.backends.stored_state`); nothing
        is stored. A read like Redis's ``GET``: decisions in flight may land just after it."""
        if not checks:
            return []
        values = await self._fetch([check.key for check in checks])
        decisions = []
        for check in checks:
            state = decode_state(check.key, check.algorithm, values[check.key], "memcached")
            decisions.append(decide_one(check, state, now_ms))
        return decisions

    async def _decide_key(self, key: str, data: bytes) -> None:
        """Decide the jobs queued on ``key``, a round at a time, until none is left: the jobs
        of the calls made while a round is in flight share the next one."""
        waiting = self._deciding
        batch: list[_Job] = []
        try:
            while waiting[key]:
                batch, waiting[key] = waiting[key], []
                try:
                    results = await self._settle(key, data, batch)
                except BackendError as error:
                    self._stats.decide_error.add()
                    _fail(batch, error)
                except ValueError as error:  # a check algorithms.py refuses (not from rules)
                    self._stats.decide_error.add()
                    _fail(batch, BackendError(f"memcache: cannot decide key {key}: {error}"))
                else:
                    self._stats.decide_success.add()
                    for job, result in zip(batch, results, strict=True):
                        if not job.future.done():  # its caller may have been cancelled
                            job.future.set_result(result)
                batch = []
        finally:  # only when cancelled (closing) are there jobs left here
            _fail(batch + waiting.pop(key), BackendError("memcache: closed while deciding"))

    async def _settle(
        self, key: str, data: bytes, batch: list[_Job]
    ) -> list[list[algorithms.Decision[Any]]]:
        """One round of decisions on ``key``: read its state and CAS unique (``gets``), decide
        the batch's checks in order on it, and store the new state unless it is unchanged
        (``cas``; ``add`` when the key is missing). When another process stored the key in
        between (``EXISTS``, ``NOT_FOUND``, ``NOT_STORED``), nothing was stored: read and
        decide again, at most :data:`CAS_ATTEMPTS` times in all."""
        checks = [(check, job.now_ms) for job in batch for check in job.checks]
        address = ""
        for attempt in range(1, CAS_ATTEMPTS + 1):
            node = self._servers.node_for(data)
            address = node.address
            (reply,) = await node.call(b"gets " + data + b"\r\n", (GETS,))
            if not isinstance(reply, CasValues):
                raise BackendError(f"memcached {address}: reading {key}: {_text(reply)}")
            found = reply.values.get(data)
            decisions, keep = _decide_all(key, checks, found[0] if found is not None else None)
            if keep is not None:
                value, ttl_ms = keep
                expiration = self._expiration(-(-(ttl_ms + EXPIRY_MARGIN_MS) // 1000))
                if found is None:
                    head = b"add %s 0 %d %d\r\n" % (data, expiration, len(value))
                else:
                    head = b"cas %s 0 %d %d %d\r\n" % (data, expiration, len(value), found[1])
                (answer,) = await node.call(head + value + b"\r\n", (LINE,))
                if answer in _LOST_RACE:
                    self._stats.cas_conflict.add()
                    if attempt > 1:  # collided twice: step out of the other processes' way
                        await asyncio.sleep(random.random() * 0.0005 * attempt)
                    continue
                if answer != b"STORED":
                    raise BackendError(f"memcached {address}: storing {key}: {_text(answer)}")
            self.rounds[attempt] += 1
            results = []
            position = 0
            for job in batch:
                results.append(decisions[position : position + len(job.checks)])
                position += len(job.checks)
            return results
        self.rounds[0] += 1
        raise BackendError(
            f"memcached {address}: key {key} was changed by other processes between the read "
            f"and the write of each of {CAS_ATTEMPTS} gets/cas rounds; not decided"
        )

    def _expiration(self, seconds: int) -> int:
        """memcached's expiration for ``seconds`` from now: itself up to 30 days, else the
        Unix time it means; 0 (no expiry: kept until evicted) past what memcached's int32 can
        say, January 2038 (keeping a state longer decides the same)."""
        if seconds <= MAX_RELATIVE_EXPIRATION:
            return seconds
        absolute = seconds + int(self._clock())
        return absolute if absolute <= _MAX_EXPIRATION else 0

    async def _read(self, keys: Sequence[str]) -> dict[str, int]:
        """Each key's counter (0 when missing): one ``get`` per node, concurrently."""
        values = await self._fetch(keys)
        return {key: _counter(key, raw) if raw is not None else 0 for key, raw in values.items()}

    async def _fetch(self, keys: Sequence[str]) -> dict[str, bytes | None]:
        """Each key's value (None when missing): one ``get`` per node, concurrently."""
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
        return {key: found.get(data) for key, data in encoded.items()}

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
            expiration = self._expiration(inc.expire_seconds)
            value = b"%d" % inc.amount
            commands.append(
                b"add %s 0 %d %d\r\n%s\r\n" % (inc.key.encode(), expiration, len(value), value)
            )
        return b"".join(commands)


def _decide_all(
    key: str, checks: Sequence[tuple[LimitCheck, int]], raw: bytes | None
) -> tuple[list[algorithms.Decision[Any]], tuple[bytes, int] | None]:
    """The decisions of ``(check, now_ms)`` one after the other from the stored value ``raw``
    (None: missing), and what to store: the last state that is not None, encoded, with its
    ``ttl_ms``; None when there is none or it is what is stored already. A decision's state of
    None (a sliding window with nothing left in it, a full bucket) decides as a missing key,
    and so do the states before it: what is stored may stay until it expires."""
    state: Any = decode_state(key, checks[0][0].algorithm, raw, "memcached")
    decisions = []
    keep: tuple[Any, int] | None = None
    for check, now_ms in checks:
        if state is not None and type(state) is not STATE_TYPES.get(check.algorithm):
            state = None  # not on the service's keys: each algorithm has its own key tag
        decision = decide_one(check, state, now_ms)
        decisions.append(decision)
        state = decision.state
        if state is not None:
            keep = (state, decision.ttl_ms)
    if keep is None:
        return decisions, None
    value = encode_state(keep[0])
    return decisions, None if value == raw else (value, keep[1])


def _text(reply: object) -> str:
    """A reply as an error message shows it."""
    if isinstance(reply, bytes):
        return reply[:80].decode("ascii", "replace")
    return str(reply)[:200]


def _fail(jobs: Sequence[_Job], error: BackendError) -> None:
    for job in jobs:
        if not job.future.done():
            job.future.set_exception(error)
            job.future.exception()  # a caller that was cancelled will not retrieve it


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
