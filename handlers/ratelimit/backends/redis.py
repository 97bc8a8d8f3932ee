"""The Redis counter store: ``KVSTORE_TYPE`` single, sentinel or cluster, with an optional
second instance that holds the per-second limits.

Commands are the upstream's: for each increment ``INCRBY key amount`` then
``EXPIRE key seconds``; :meth:`RedisStore.get` sends ``GET``. Single and sentinel send all
of a call's commands for one instance together, adjacent, in one batch. Cluster sends each
key's commands (INCRBY and EXPIRE of a key together) in a batch of the master serving its
slot, ``cluster_pipeline_parallelism`` keys of a call at a time (1: one after the other, 0:
up to the pool size, N: at most the pool size); ``MOVED`` and ``ASK`` are followed by
:class:`~handlers.ratelimit.backends.redis_connections.ClusterRouter`, which sends again
only the redirected commands, so that no increment runs twice during a resharding. With a
per-second instance the two instances are called concurrently.

**Batching (implicit pipelining).** The calls of concurrent callers to one server are
coalesced: a call's encoded commands are queued, and the queue is flushed as **one write on
one connection**, whose replies are handed back to each call in order, so each call gets
exactly what it would have got alone (its commands stay adjacent; Redis runs a connection's
commands in order). ``pipeline_window`` (seconds) is when the queue is flushed: 0 (the
default) as soon as the event loop is free, i.e. the calls made in one pass of the loop go
together and a lone call waits for nothing; > 0, that long after the first queued call, to
gather more calls per write at the cost of that much latency (upstream applies its window,
radix's write flush interval, in cluster mode only; here it applies to every type; the
event loop's timers wake it with about millisecond granularity, so a window below 1 ms acts
as about 1 ms). Commands are encoded here and replies parsed with ``hiredis`` on an asyncio
protocol (:mod:`~handlers.ratelimit.backends.redis_protocol`), not with redis-py's
connections.

**Pool.** ``pool_size`` bounds the connections per server, as before, and each connection
carries one batch at a time, so it bounds the batches in flight. A batch goes to an idle
connection, or to a new one while the pool is below its size (connections open lazily);
while every connection has a batch in flight, new calls queue and all go in the next batch,
sent on the first connection that comes free. ``pool_on_empty_behavior`` decides how long
that batch waits for one: ``WAIT`` until one is free; ``ERROR``: its calls fail after
``pool_on_empty_wait_duration``; ``CREATE``: after that wait, an overflow connection is
opened for it, and closed when it is released over size. Under load the pool rarely fills:
one connection carries the calls of a whole loop pass.

**Failures.** ``timeout`` bounds connecting, and each batch from its write to its last
reply. A failed batch (connection lost or killed, timeout, a protocol error, an
authentication error reply) fails every call of that batch, and only those, with
:class:`BackendError`; its connection is closed and the next batch uses a fresh one. An
error reply (WRONGTYPE, ...) fails only the call it answers. A cancelled call's commands may
still run (they may already be on the wire); the other calls of its batch are unaffected.

Settings (:class:`~handlers.ratelimit.settings.KvStoreSettings`, one per instance):
``socket_type`` and ``url`` (``host:port``, a unix socket path, or ``redis://`` URLs with
credentials; sentinel ``master,host:port,...``; cluster ``host:port,...``), ``type``,
``pool_size``, ``timeout``, ``pool_on_empty_behavior`` / ``pool_on_empty_wait_duration``,
``pipeline_window``, ``tls`` with ``tls_client_cert`` / ``tls_client_key`` /
``tls_cacert`` (TCP only) and ``tls_skip_hostname_verification`` (the certificate chain is
still verified), ``auth``, ``sentinel_auth``, ``cluster_pipeline_parallelism`` and
``startup_max_elapsed_time``.

Every failure (connection, timeout, empty pool under ERROR, error reply) raises
:class:`BackendError` with the Redis error text. URLs are logged with credentials masked.

**Issue 23's limits** (:meth:`RedisStore.decide`: sliding windows, token buckets, fixed windows
that are not counted as upstream's): each check is one ``EVALSHA`` of :data:`DECIDE_SCRIPT` on
its one key, which does the step of ``algorithms.py`` atomically in Redis (``GET``, the same
integer math, ``SET ... PX`` when the state changes), with the service's clock in ``ARGV``.
The ``EVALSHA`` of a call go in one batch (single, sentinel) or each in the batch of its key's
node (cluster), as ``INCRBY`` does; checks of windows of at most one second go to the
per-second instance when there is one. The script is never sent up front: a ``NOSCRIPT`` reply
(a fresh server, a restart, a failover, ``SCRIPT FLUSH``) sends ``SCRIPT LOAD`` and the
``EVALSHA`` again, together, to the same node (a ``NOSCRIPT`` call did not run, so nothing is
counted twice).
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import random
import time
from collections.abc import Awaitable, Callable, Sequence
from functools import partial
from typing import Any, TypeVar

from redis.asyncio.connection import AbstractConnection
from redis.exceptions import NoScriptError, RedisError

from handlers.ratelimit import algorithms
from handlers.ratelimit.backends.base import BackendError, Increment, LimitCheck
from handlers.ratelimit.backends.redis_connections import (
    ClusterRouter,
    ConnectionPool,
    Endpoint,
    Pipeliner,
    PoolStats,
    SentinelMaster,
    connection_class,
    connection_options,
    mask_credentials,
    parse_endpoint,
    redis_connection,
)
from handlers.ratelimit.backends.redis_protocol import (
    RedisConnection,
    encode_arguments,
    encode_command,
    encode_get,
    encode_increment,
)
from handlers.ratelimit.backends.stored_state import decide, decode_state
from handlers.ratelimit.memo import remember
from handlers.ratelimit.settings import KvStoreSettings
from handlers.ratelimit.stats import StatsStore

__all__ = ["RedisStore", "mask_credentials"]

logger = logging.getLogger(__name__)

SENTINEL_URL_ERROR = (
    "Expected master name and a list of urls for the sentinels, in the format: "
    "<redis master name>,<sentinel1>,...,<sentineln>"
)
# startup PING backoff (upstream REDIS_STARTUP_*): interval * (1 +/- randomization), doubled
STARTUP_INITIAL_INTERVAL = 1.0
STARTUP_MAX_INTERVAL = 30.0
STARTUP_MULTIPLIER = 2.0
STARTUP_RANDOMIZATION = 0.5

_PING = encode_command("PING")

DECIDE_SCRIPT = """\
-- issue 23: one decision of handlers/ratelimit/algorithms.py on KEYS[1], atomically.
-- ARGV: kind (fw | sw | tb), now_ms, hits, margin_ms, then fw/sw: limit, window_ms;
-- tb: num, den, burst (the emission interval num/den ms in lowest terms).
-- Returns {over (0/1), limit_remaining, duration_until_reset_ms, ttl_ms}; the key keeps the
-- new state for ttl_ms + margin_ms (PX), and is written only when the state changed.
-- Lua numbers are doubles: every integer here stays below 2^53 (checked at config load);
-- floor division is math.floor(a / b) corrected by one where the rounding crossed an integer.
local function idiv(a, b)
  local q = math.floor(a / b)
  if q * b > a then
    q = q - 1
  elseif (q + 1) * b <= a then
    q = q + 1
  end
  return q
end
local function cdiv(a, b)
  return -idiv(-a, b)
end
local key = KEYS[1]
local kind = ARGV[1]
local now = tonumber(ARGV[2])
local hits = tonumber(ARGV[3])
local margin = tonumber(ARGV[4])
local stored = redis.call('GET', key)
-- the answer of an algorithm that stores `value` for `full` ms only when it admits
local function answer(admitted, value, full, remaining, duration)
  local over = 1
  if admitted then
    over = 0
    if full > 0 then
      redis.call('SET', key, value, 'PX', full + margin)
    else
      redis.call('DEL', key)
    end
  end
  return {over, math.max(remaining, 0), duration, full}
end

if kind == 'fw' then
  local limit, window = tonumber(ARGV[5]), tonumber(ARGV[6])
  local start = idiv(now, window) * window
  local count = 0
  if stored then
    local s, c = string.match(stored, '^(%-?%d+):(%d+)$')
    s, c = tonumber(s), tonumber(c)
    if s >= start then
      if s > start then
        start = s
        now = s
      end
      count = c
    end
  end
  count = math.min(count + hits, 4503599627370496)
  local left = start + window - now
  redis.call('SET', key, string.format('%d:%d', start, count), 'PX', left + margin)
  local remaining = 0
  local over = 1
  if count <= limit then
    remaining = limit - count
    over = 0
  end
  return {over, remaining, left, left}
end

if kind == 'sw' then
  local limit, window = tonumber(ARGV[5]), tonumber(ARGV[6])
  local start = idiv(now, window) * window
  local current, previous = 0, 0
  if stored then
    local s, c, p = string.match(stored, '^(%-?%d+):(%d+):(%d+)$')
    s, c, p = tonumber(s), tonumber(c), tonumber(p)
    if s >= start then
      if s > start then
        start = s
        now = s
      end
      current, previous = c, p
    elseif s == start - window then
      previous = c
    end
  end
  local elapsed = now - start
  local weight = window - elapsed
  local weighed = math.min(previous, limit)
  local room = limit - current - hits
  local admitted = room >= 0 and weighed * weight <= room * window
  if admitted then
    current = current + hits
  end
  local remaining = limit - current - cdiv(weighed * weight, window)
  local full = 0
  if current > 0 then
    full = weight + window
  elseif previous > 0 then
    full = weight
  end
  local duration = full
  if not admitted and hits <= limit then
    duration = nil
    if room >= 0 and weighed > 0 then
      local at = window - idiv(room * window, weighed)
      if at < window then
        duration = at - elapsed
      end
    end
    if duration == nil then
      local counted = math.min(current, limit)
      if counted == 0 then
        duration = weight
      else
        duration = weight + math.max(0, window - idiv((limit - hits) * window, counted))
      end
    end
  end
  return answer(admitted, string.format('%d:%d:%d', start, current, previous), full,
    remaining, duration)
end

if kind == 'tb' then
  local num, den, burst = tonumber(ARGV[5]), tonumber(ARGV[6]), tonumber(ARGV[7])
  local base_ms, base_frac = now, 0
  if stored then
    local t, f = string.match(stored, '^(%-?%d+):(%d+)$')
    base_ms, base_frac = tonumber(t), tonumber(f)
    if base_frac >= den then
      base_ms, base_frac = base_ms + 1, 0
    end
    if base_ms < now then
      base_ms, base_frac = now, 0
    end
  end
  local debt = (base_ms - now) * den + base_frac
  local capacity = burst * num
  local cost = 0
  if hits <= burst then
    cost = hits * num
  end
  local admitted = hits <= burst and debt + cost <= capacity
  local tat_ms, tat_frac = base_ms, base_frac
  if admitted then
    debt = debt + cost
    local total = base_frac + cost
    local carry = idiv(total, den)
    tat_ms, tat_frac = base_ms + carry, total - carry * den
  end
  local full = cdiv(debt, den)
  local duration = full
  if not admitted and hits <= burst then
    duration = cdiv(debt + cost - capacity, den)
  end
  local remaining = burst - cdiv(debt, num)
  return answer(admitted, string.format('%d:%d', tat_ms, tat_frac), full, remaining, duration)
end
return redis.error_reply('unknown algorithm ' .. tostring(kind))
"""
"""The Lua of :meth:`RedisStore.decide`: ``algorithms.fixed_window``, ``sliding_window`` and
``token_bucket`` step for step (the tests compare its answers with theirs)."""

DECIDE_SHA = hashlib.sha1(DECIDE_SCRIPT.encode()).hexdigest()
_SCRIPT_LOAD = encode_command("SCRIPT", "LOAD", DECIDE_SCRIPT)
TTL_MARGIN_MS = 1000
"""Added to every ``ttl_ms`` the script sets (``PX``): the decisions run on the service's
clock, the expiry on Redis's, so a key is kept a second longer than the decision needs, for
the skew between the service's hosts and Redis (keeping a state longer decides the same)."""
_HITS_CAP = algorithms.MAX_UINT32 + 1
"""Hits above every limit and burst decide alike; capped so Lua's doubles stay exact."""
_KINDS = {"fixed_window": "fw", "sliding_window": "sw", "token_bucket": "tb"}
_NOSCRIPT_RETRIES = 3

Group = tuple[str, bytes, int]
"""The encoded commands on one key, and how many replies they get."""
T = TypeVar("T")
Item = TypeVar("Item")


class _PipelineInstance:
    """single or sentinel: one pipeliner; a call's commands go in one batch."""

    def __init__(self, pipeliner: Pipeliner, master: SentinelMaster | None) -> None:
        self.pipeliner = pipeliner
        self._master = master

    @property
    def pool(self) -> ConnectionPool:
        return self.pipeliner.pool

    async def run(self, groups: Sequence[Group]) -> list[Any]:
        if len(groups) == 1:
            _, data, count = groups[0]
            return await self.pipeliner.submit(data, count)
        data = b"".join([group[1] for group in groups])
        return await self.pipeliner.submit(data, sum([group[2] for group in groups]))

    def connected(self) -> bool:
        return self.pipeliner.connected()

    async def close(self) -> None:
        await self.pipeliner.close()
        if self._master is not None:
            await self._master.close()


class _ClusterInstance:
    """cluster: each key's commands in the batch of its node, ``parallelism`` keys of a call
    at a time."""

    def __init__(self, router: ClusterRouter, parallelism: int) -> None:
        self.router = router
        self._parallelism = parallelism

    async def run(self, groups: Sequence[Group]) -> list[Any]:
        if len(groups) == 1:
            return await self.router.run(*groups[0])
        if self._parallelism == 1:
            replies: list[Any] = []
            for key, data, count in groups:
                replies += await self.router.run(key, data, count)
            return replies
        if self._parallelism >= len(groups):
            return await self.router.run_all(groups)
        limit = asyncio.Semaphore(self._parallelism)

        async def bounded(key: str, data: bytes, count: int) -> list[Any]:
            async with limit:
                return await self.router.run(key, data, count)

        results = await _gather_all([bounded(*group) for group in groups])
        return [reply for result in results for reply in result]

    def connected(self) -> bool:
        return self.router.connected()

    async def close(self) -> None:
        await self.router.close()


_Instance = _PipelineInstance | _ClusterInstance


class RedisStore:
    """:class:`~handlers.ratelimit.backends.base.CounterStore` on Redis.

    ``per_second``: settings of a second instance; keys flagged ``per_second`` go there.
    ``stats`` receives the pool stats (``ratelimit.redis_pool.*`` and
    ``ratelimit.redis_per_second_pool.*``).
    """

    def __init__(
        self,
        settings: KvStoreSettings,
        *,
        per_second: KvStoreSettings | None = None,
        stats: StatsStore | None = None,
    ) -> None:
        self._settings = settings
        self._per_second_settings = per_second
        self._main = _build(settings, PoolStats(stats, "ratelimit.redis_pool"))
        self._per_second = (
            _build(per_second, PoolStats(stats, "ratelimit.redis_per_second_pool"))
            if per_second is not None
            else None
        )

    async def start(self) -> None:
        """PING every instance, retrying with exponential backoff (1 s doubling to 30 s,
        with jitter) until ``startup_max_elapsed_time`` (0: forever) has passed."""
        starts = [_start(self._main, self._settings)]
        if self._per_second is not None and self._per_second_settings is not None:
            starts.append(_start(self._per_second, self._per_second_settings))
        await _gather_all(starts)

    async def increment(self, increments: Sequence[Increment]) -> list[int]:
        second = self._per_second
        if second is None or not any(inc.per_second for inc in increments):
            return await _increment(self._main, increments) if increments else []
        main_part = [inc for inc in increments if not inc.per_second]
        if not main_part:
            return await _increment(second, increments)
        second_part = [inc for inc in increments if inc.per_second]
        main_values, second_values = await _gather_all(
            [_increment(self._main, main_part), _increment(second, second_part)]
        )
        return _merge([inc.per_second for inc in increments], main_values, second_values)

    async def get(self, keys: Sequence[tuple[str, bool]]) -> list[int]:
        return await self._on_instances([key for key, _ in keys], [flag for _, flag in keys], _get)

    async def decide(
        self, checks: Sequence[LimitCheck], now_ms: int
    ) -> list[algorithms.Decision[Any]]:
        """Each check decided by :data:`DECIDE_SCRIPT` on its key, atomically in Redis, at the
        service's ``now_ms``. The decisions' ``state`` is ``None`` (it stays in Redis)."""
        return await self._on_instances(
            checks,
            [check.window_ms <= 1000 for check in checks],
            lambda instance, part: _decide(instance, part, now_ms),
        )

    async def peek(
        self, checks: Sequence[LimitCheck], now_ms: int
    ) -> list[algorithms.Decision[Any]]:
        """Each check decided by ``algorithms.py`` on its key's value, read with ``GET`` (the
        script's encoding, :mod:`~handlers.ratelimit.backends.stored_state`); nothing stored."""

        async def read(instance: _Instance, part: list[LimitCheck]) -> list[Any]:
            raws = await _get_raw(instance, [check.key for check in part])
            return [
                decide(check, decode_state(check.key, check.algorithm, raw, "redis"), now_ms)
                for check, raw in zip(part, raws, strict=True)
            ]

        return await self._on_instances(checks, [check.window_ms <= 1000 for check in checks], read)

    async def _on_instances(
        self,
        items: Sequence[Item],
        per_second: Sequence[bool],
        run: Callable[[_Instance, list[Item]], Awaitable[list[T]]],
    ) -> list[T]:
        """``run`` on the items of each instance (``per_second``: the per-second one, when
        there is one), both at once; the results in the items' order. (``increment``, the hot
        path, keeps its own copy of this without the lists.)"""
        second = self._per_second
        if second is None or not any(per_second):
            return await run(self._main, list(items)) if items else []
        main_part = [item for item, flag in zip(items, per_second, strict=True) if not flag]
        if not main_part:
            return await run(second, list(items))
        second_part = [item for item, flag in zip(items, per_second, strict=True) if flag]
        main_values, second_values = await _gather_all(
            [run(self._main, main_part), run(second, second_part)]
        )
        return _merge(list(per_second), main_values, second_values)

    def connected(self) -> bool:
        """Whether every instance has at least one open connection."""
        return self._main.connected() and (self._per_second is None or self._per_second.connected())

    async def close(self) -> None:
        await self._main.close()
        if self._per_second is not None:
            await self._per_second.close()


def _build(settings: KvStoreSettings, stats: PoolStats) -> _Instance:
    kind = settings.type.lower()
    timeout = settings.timeout if settings.timeout > 0 else None
    masked = mask_credentials(settings.url)
    logger.info(
        "connecting to redis (%s) on %s with pool size %d", kind, masked, settings.pool_size
    )
    if settings.auth:
        logger.info("enabling authentication to redis on %s", masked)

    def pipeliner(factory: Callable[[], RedisConnection]) -> Pipeliner:
        pool = ConnectionPool(
            factory,
            size=settings.pool_size,
            stats=stats,
            on_empty=settings.pool_on_empty_behavior.upper(),
            wait_duration=settings.pool_on_empty_wait_duration,
            connect_timeout=timeout,
        )
        return Pipeliner(pool, window=settings.pipeline_window)

    try:
        if kind == "single":
            endpoint = parse_endpoint(settings.url, settings.socket_type)
            factory = redis_connection(settings, endpoint, settings.auth)
            return _PipelineInstance(pipeliner(factory), None)
        if kind == "sentinel":
            items = settings.url.split(",")
            if len(items) < 2:
                raise BackendError(SENTINEL_URL_ERROR)
            sentinels: list[Callable[[], AbstractConnection]] = []
            for item in items[1:]:
                endpoint = parse_endpoint(item)
                options = connection_options(settings, endpoint, settings.sentinel_auth)
                sentinels.append(partial(connection_class(settings, endpoint), **options))
            master = SentinelMaster(items[0].strip(), sentinels, timeout)
            factory = redis_connection(settings, Endpoint(), settings.auth, resolve=master.address)
            instance = _PipelineInstance(pipeliner(factory), master)
            # the master may have moved: reconnect (re-resolving) after a connection error,
            # and at once when the sentinels announce a failover
            instance.pipeliner.on_connection_error = instance.pool.invalidate
            master.on_switch = instance.pool.invalidate
            return instance
        if kind == "cluster":
            seeds = [parse_endpoint(item) for item in settings.url.split(",") if item.strip()]
            if not seeds:
                raise BackendError("Expected a list of cluster node urls: <host:port>,...")
            first = seeds[0]

            def node(host: str, port: int) -> Pipeliner:
                # every node with the credentials and scheme of the first seed
                endpoint = Endpoint(
                    host=host,
                    port=port,
                    username=first.username,
                    password=first.password,
                    tls=first.tls,
                )
                return pipeliner(redis_connection(settings, endpoint, settings.auth))

            parallelism = settings.cluster_pipeline_parallelism
            parallelism = settings.pool_size if parallelism <= 0 else parallelism
            router = ClusterRouter(seeds, node)
            return _ClusterInstance(router, min(parallelism, settings.pool_size))
    except ValueError as error:
        raise BackendError(str(error)) from error
    raise BackendError(f"Unrecognized redis type {settings.type}")


async def _run(instance: _Instance, groups: Sequence[Group]) -> list[Any]:
    try:
        return await instance.run(groups)
    except RedisError as error:
        raise BackendError(str(error) or type(error).__name__) from error


async def _increment(instance: _Instance, increments: Sequence[Increment]) -> list[int]:
    try:
        if isinstance(instance, _PipelineInstance):  # the hot path: one batch, no groups
            if len(increments) == 1:
                inc = increments[0]
                data = encode_increment(inc.key, inc.amount, inc.expire_seconds)
            else:
                data = b"".join(
                    [encode_increment(i.key, i.amount, i.expire_seconds) for i in increments]
                )
            replies = await instance.pipeliner.submit(data, 2 * len(increments))
        elif len(increments) == 1:
            inc = increments[0]
            data = encode_increment(inc.key, inc.amount, inc.expire_seconds)
            replies = await instance.router.run(inc.key, data, 2)
        else:
            replies = await instance.run(
                [
                    (inc.key, encode_increment(inc.key, inc.amount, inc.expire_seconds), 2)
                    for inc in increments
                ]
            )
    except RedisError as error:
        raise BackendError(str(error) or type(error).__name__) from error
    for reply in replies[1::2]:
        if isinstance(reply, Exception):
            raise BackendError(str(reply))
    return [reply if type(reply) is int else _integer(reply) for reply in replies[::2]]


def _evalsha(check: LimitCheck, now_ms: int) -> bytes:
    """The check's ``EVALSHA`` at ``now_ms``; all but the time is encoded once per check
    (the service keeps a request's checks with its plan, so the same ones recur)."""
    parts = _EVALSHA_PARTS.get(check)
    if parts is None:
        parts = remember(_EVALSHA_PARTS, check, _evalsha_parts(check), _EVALSHA_PARTS_SIZE)
    head, tail = parts
    now = b"%d" % now_ms
    return b"%b$%d\r\n%b\r\n%b" % (head, len(now), now, tail)


def _evalsha_parts(check: LimitCheck) -> tuple[bytes, bytes]:
    """The ``EVALSHA`` of ``check`` before and after its time argument."""
    kind = _KINDS[check.algorithm]
    rest: tuple[int, ...]
    if kind == "tb":
        rest = (*algorithms.emission_interval(check.limit, check.window_ms), check.burst)
    else:
        rest = (check.limit, check.window_ms)
    before = ("EVALSHA", DECIDE_SHA, 1, check.key, kind)
    after = (min(check.hits, _HITS_CAP), TTL_MARGIN_MS, *rest)
    count = len(before) + 1 + len(after)
    return b"*%d\r\n%b" % (count, encode_arguments(*before)), encode_arguments(*after)


_EVALSHA_PARTS: dict[LimitCheck, tuple[bytes, bytes]] = {}
_EVALSHA_PARTS_SIZE = 4096


async def _decide(
    instance: _Instance, checks: Sequence[LimitCheck], now_ms: int
) -> list[algorithms.Decision[Any]]:
    """The checks' ``EVALSHA`` in one call; those answered ``NOSCRIPT`` again, each after a
    ``SCRIPT LOAD`` in the same batch (so on the same node)."""
    # a token bucket of limit 0 refuses without state (algorithms.token_bucket): no round trip
    sent = [i for i, check in enumerate(checks) if check.algorithm != "token_bucket" or check.limit]
    groups = [(checks[i].key, _evalsha(checks[i], now_ms), 1) for i in sent]
    replies = await _run(instance, groups) if groups else []
    for _ in range(_NOSCRIPT_RETRIES):
        missing = [j for j, reply in enumerate(replies) if isinstance(reply, NoScriptError)]
        if not missing:
            break
        logger.info("redis: loading the decision script (%d NOSCRIPT replies)", len(missing))
        answers = await _run(
            instance, [(groups[j][0], _SCRIPT_LOAD + groups[j][1], 2) for j in missing]
        )
        for n, j in enumerate(missing):
            loaded, reply = answers[2 * n], answers[2 * n + 1]
            replies[j] = loaded if isinstance(loaded, Exception) else reply
    decisions: list[algorithms.Decision[Any]] = [_NOT_SENT] * len(checks)
    for i, reply in zip(sent, replies, strict=True):
        try:
            over, remaining, duration, ttl = reply  # the script answers four integers
            decisions[i] = _new_tuple(
                algorithms.Decision, (None, over != 0, int(remaining), int(duration), int(ttl))
            )
        except (TypeError, ValueError):
            if isinstance(reply, Exception):
                raise BackendError(str(reply)) from None
            raise BackendError(f"unexpected reply to the decision script: {reply!r}") from None
    for i, decision in enumerate(decisions):
        if decision is _NOT_SENT:
            check = checks[i]  # a token bucket of limit 0
            decisions[i] = algorithms.Decision(None, check.hits > 0, 0, check.window_ms, 0)
    return decisions


_NOT_SENT: algorithms.Decision[Any] = algorithms.Decision(None, False, 0, 0, 0)
# makes a Decision without calling its constructor (a NamedTuple's is a Python function)
_new_tuple = tuple.__new__


async def _get(instance: _Instance, keys: Sequence[str]) -> list[int]:
    replies = await _run(instance, [(key, encode_get(key), 1) for key in keys])
    return [_integer(reply) for reply in replies]


async def _get_raw(instance: _Instance, keys: Sequence[str]) -> list[bytes | None]:
    """The values of ``keys`` (None: missing)."""
    if not keys:
        return []
    replies = await _run(instance, [(key, encode_get(key), 1) for key in keys])
    for reply in replies:
        if isinstance(reply, Exception):
            raise BackendError(str(reply))
    return [reply if reply is None else bytes(reply) for reply in replies]


def _integer(reply: Any) -> int:
    if isinstance(reply, int):
        return reply
    if reply is None:
        return 0
    if isinstance(reply, Exception):
        raise BackendError(str(reply))
    try:
        return int(reply)
    except (TypeError, ValueError):
        raise BackendError(f"expected an integer reply, got {reply!r}") from None


def _merge(flags: list[bool], main: list[T], second: list[T]) -> list[T]:
    main_values, second_values = iter(main), iter(second)
    return [next(second_values) if flag else next(main_values) for flag in flags]


async def _gather_all(awaitables: Sequence[Awaitable[T]]) -> list[T]:
    """All results, after all have finished; then the first failure, if any, is raised."""
    results = await asyncio.gather(*awaitables, return_exceptions=True)
    values: list[T] = []
    for result in results:
        if isinstance(result, BaseException):
            raise result
        values.append(result)
    return values


async def _ping(instance: _Instance) -> None:
    (reply,) = await _run(instance, [("", _PING, 1)])
    if isinstance(reply, Exception):
        raise BackendError(str(reply))
    if reply not in (b"PONG", "PONG"):
        raise BackendError(f"unexpected reply to PING: {reply!r}")


async def _start(instance: _Instance, settings: KvStoreSettings) -> None:
    masked = mask_credentials(settings.url)
    limit = settings.startup_max_elapsed_time
    began = time.monotonic()
    interval = STARTUP_INITIAL_INTERVAL
    while True:
        try:
            await _ping(instance)
        except BackendError as error:
            delay = interval * (1 + STARTUP_RANDOMIZATION * (2 * random.random() - 1))
            if limit > 0 and time.monotonic() - began + delay > limit:
                raise BackendError(
                    f"failed to connect to redis on {masked} after retries: {error}"
                ) from error
            logger.warning("redis on %s: %s; retrying in %.1fs", masked, error, delay)
            await asyncio.sleep(delay)
            interval = min(interval * STARTUP_MULTIPLIER, STARTUP_MAX_INTERVAL)
        else:
            logger.info("redis on %s answers PING", masked)
            return
