"""Per-key request rate limits, decided by our ratelimit engine (seed 001).

Every authenticated request is one hit on the descriptor ``api_key=<key id>`` of the domain
``AGENTS_RATELIMIT_DOMAIN`` (``agents``), so each key has its own counter. Who decides:

* **in process** (``AGENTS_RATE_LIMIT=600/minute``): the ratelimit service's own decision code
  (:class:`~handlers.ratelimit.service.RateLimitService` over its in-memory store) with one rule
  built from the setting; counters live in this server process.
* **the ratelimit service over gRPC** (``AGENTS_RATELIMIT_GRPC=host:port``): the same request
  goes to ``envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit``; the limits are those
  of the service's configuration for the domain, and its counters (Redis, memcached) are shared
  by every agents server. When the service cannot answer, the request is let through (fail
  open, as Envoy's rate limit filter does by default) with a warning in the log.

Over the limit, the request is answered 429 with ``Retry-After`` (the decision's time until
the window resets, whole seconds rounded up) before any handler runs.
"""

from __future__ import annotations

import logging
import math
from typing import Protocol

import grpc

from generated.proto.envoy.extensions.common.ratelimit.v3 import ratelimit_pb2
from generated.proto.envoy.service.ratelimit.v3 import rls_pb2, rls_pb2_grpc
from handlers.agents.api.auth import current_principal
from handlers.agents.settings import RequestRate, Settings
from handlers.ratelimit.backends.memory import MemoryStore
from handlers.ratelimit.config.parse import load_documents
from handlers.ratelimit.limiter import Limiter
from handlers.ratelimit.service import RateLimitService, ServiceError
from handlers.ratelimit.stats import ServiceStats
from webrest import FilterChain, HttpError, Request, Response

__all__ = [
    "DESCRIPTOR_KEY",
    "GRPC_TIMEOUT_SECONDS",
    "InProcessRateLimiter",
    "RateLimitFilter",
    "RemoteRateLimiter",
    "RequestRateLimiter",
    "rate_limiter_from_settings",
]

log = logging.getLogger("agents.rate_limits")

DESCRIPTOR_KEY = "api_key"
"""The descriptor entry's key; its value is the API key's id."""
GRPC_TIMEOUT_SECONDS = 0.5
"""How long a request waits for the remote decision before it is let through."""

OVER_LIMIT = rls_pb2.RateLimitResponse.OVER_LIMIT


class RequestRateLimiter(Protocol):
    """Decides whether a key may make one more request."""

    async def retry_after(self, key_id: str) -> int | None:
        """``None`` when the request may go on, else the seconds until it may be retried."""
        ...

    async def close(self) -> None:
        """Release what the limiter holds (connections)."""
        ...


def decision_request(domain: str, key_id: str) -> rls_pb2.RateLimitRequest:
    """One hit on ``api_key=<key_id>`` in ``domain``."""
    entry = ratelimit_pb2.RateLimitDescriptor.Entry(key=DESCRIPTOR_KEY, value=key_id)
    descriptor = ratelimit_pb2.RateLimitDescriptor(entries=[entry])
    return rls_pb2.RateLimitRequest(domain=domain, descriptors=[descriptor], hits_addend=1)


def retry_after_of(response: rls_pb2.RateLimitResponse) -> int | None:
    """``None`` for an OK decision; otherwise the longest time until an over-limit
    descriptor's window resets, in whole seconds rounded up (at least 1)."""
    if response.overall_code != OVER_LIMIT:
        return None
    seconds = 1
    for status in response.statuses:
        if status.code == OVER_LIMIT and status.HasField("duration_until_reset"):
            reset = status.duration_until_reset
            seconds = max(seconds, math.ceil(reset.seconds + reset.nanos / 1e9))
    return seconds


class InProcessRateLimiter:
    """The ratelimit engine in this process: one rule, ``rate`` per key, in-memory counters."""

    def __init__(self, rate: RequestRate, domain: str = "agents") -> None:
        self.rate = rate
        self.domain = domain
        rule = {
            "domain": domain,
            "descriptors": [
                {
                    "key": DESCRIPTOR_KEY,  # no value: every key id is its own counter
                    "rate_limit": {"unit": rate.unit, "requests_per_unit": rate.requests},
                }
            ],
        }
        self._service = RateLimitService(
            Limiter(MemoryStore(), expiration_jitter_max_seconds=0), ServiceStats()
        )
        self._service.set_rules(load_documents([("agents", rule)], merge_domains=False))

    async def retry_after(self, key_id: str) -> int | None:
        """The in-process decision for one request of ``key_id``."""
        try:
            response = await self._service.should_rate_limit(decision_request(self.domain, key_id))
        except ServiceError as error:  # a key id the engine refuses (cannot happen with ours)
            log.warning("rate limit not decided for key %s, request let through: %s", key_id, error)
            return None
        return retry_after_of(response)

    async def close(self) -> None:
        """Nothing to release: the counters go with the process."""


class RemoteRateLimiter:
    """The ratelimit service at ``target`` (``host:port``) decides over gRPC; fails open."""

    def __init__(
        self, target: str, domain: str = "agents", timeout_seconds: float = GRPC_TIMEOUT_SECONDS
    ) -> None:
        self.target = target
        self.domain = domain
        self.timeout_seconds = timeout_seconds
        # created on first use: a grpc.aio channel belongs to the event loop that serves
        self._channel: grpc.aio.Channel | None = None
        self._stub: rls_pb2_grpc.RateLimitServiceAsyncStub | None = None
        self._failing = False

    async def retry_after(self, key_id: str) -> int | None:
        """The service's decision; ``None`` (let through) when it cannot give one."""
        if self._stub is None:
            self._channel = grpc.aio.insecure_channel(self.target)
            self._stub = rls_pb2_grpc.RateLimitServiceStub(self._channel)
        request = decision_request(self.domain, key_id)
        try:
            response = await self._stub.ShouldRateLimit(request, timeout=self.timeout_seconds)
        except grpc.aio.AioRpcError as error:
            if not self._failing:  # one line per outage, not one per request
                log.warning(
                    "ratelimit service %s did not decide (%s: %s): requests are let through "
                    "until it answers",
                    self.target,
                    error.code().name,
                    error.details(),
                )
            self._failing = True
            return None
        if self._failing:
            log.info("ratelimit service %s answers again: requests are limited", self.target)
            self._failing = False
        return retry_after_of(response)

    async def close(self) -> None:
        """Close the channel (when one was opened)."""
        if self._channel is not None:
            await self._channel.close()
            self._channel = self._stub = None


def rate_limiter_from_settings(settings: Settings) -> RequestRateLimiter | None:
    """The remote service when ``AGENTS_RATELIMIT_GRPC`` names one, else the in-process
    engine when ``AGENTS_RATE_LIMIT`` is set, else ``None`` (no limit)."""
    if settings.ratelimit_grpc is not None:
        return RemoteRateLimiter(settings.ratelimit_grpc, settings.ratelimit_domain)
    if settings.rate_limit is not None:
        return InProcessRateLimiter(settings.rate_limit, settings.ratelimit_domain)
    return None


class RateLimitFilter:
    """A webrest filter installed after :class:`~handlers.agents.api.auth.ApiKeyAuth`: 429 with
    ``Retry-After`` when the caller's key is over its limit, before any handler runs."""

    def __init__(self, limiter: RequestRateLimiter) -> None:
        self.limiter = limiter

    async def __call__(self, request: Request, chain: FilterChain) -> Response:
        key_id = current_principal().key_id
        seconds = await self.limiter.retry_after(key_id)
        if seconds is not None:
            raise HttpError(
                429,
                f"Too many requests for this API key: retry after {seconds} s",
                (),
                {"Retry-After": str(seconds)},
            )
        return await chain.proceed(request)
