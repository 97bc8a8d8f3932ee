"""The gRPC port: ``envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit`` and
``grpc.health.v1.Health`` (service ``ratelimit``), on grpc.aio.

Failures answer status UNKNOWN with the upstream's message, as grpc-go does for a plain Go
error. Each method counts ``ratelimit_server.<Method>.total_requests`` and times
``ratelimit_server.<Method>.response_time`` (milliseconds).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Sequence

import grpc
from google.protobuf.message import DecodeError
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_health.v1.health import aio as health_aio
from opentelemetry.sdk.trace import TracerProvider

from generated.proto.envoy.service.ratelimit.v3 import rls_pb2
from handlers.ratelimit.backends.base import BackendError
from handlers.ratelimit.grpc_transport import SanCheck, server_credentials, server_options
from handlers.ratelimit.health import Health
from handlers.ratelimit.memo import ParsedBodies
from handlers.ratelimit.proto_wire import decision_wire
from handlers.ratelimit.service import RateLimitService, ServiceError
from handlers.ratelimit.settings import GrpcTransportSettings
from handlers.ratelimit.stats import StatsStore
from handlers.ratelimit.tracing import TracingInterceptor

log = logging.getLogger("ratelimit.grpc")

HEALTH_SERVICE = "ratelimit"
SERVICE = rls_pb2.DESCRIPTOR.services_by_name["RateLimitService"].full_name


class RateLimitServicer:
    """ShouldRateLimit over the decision service, on the wire's bytes: a request body is parsed
    once (and its plan found by the same bytes), and an answer is written straight from the
    decision (:func:`~handlers.ratelimit.proto_wire.decision_wire`) unless it carries headers
    or metadata. Parsing each request and making each response message cost more than
    counting the hits."""

    def __init__(self, service: RateLimitService, stats: StatsStore) -> None:
        self._service = service
        self._bodies = ParsedBodies(rls_pb2.RateLimitRequest.FromString)
        self._requests = stats.counter("ratelimit_server.ShouldRateLimit.total_requests")
        self._time = stats.timer("ratelimit_server.ShouldRateLimit.response_time")

    async def ShouldRateLimit(
        self, body: bytes, context: grpc.aio.ServicerContext[bytes, bytes]
    ) -> bytes:
        try:
            request = self._bodies.get(body)
        except DecodeError as error:  # as grpc-go, before the method is called (or counted)
            await context.abort(
                grpc.StatusCode.INTERNAL, f"grpc: error unmarshalling request: {error}"
            )
            raise  # abort raises; this keeps type checkers informed
        started = time.perf_counter()
        self._requests.value += 1
        try:
            overall, codes, remaining, limits, now, response, resets = await self._service.decide(
                request, message=False, serialized=body
            )
        except (ServiceError, BackendError) as error:
            await context.abort(grpc.StatusCode.UNKNOWN, str(error))
            raise
        finally:
            self._time.record((time.perf_counter() - started) * 1000.0)
        if response is None:
            return decision_wire(overall, codes, remaining, limits, now, resets)
        return response.SerializeToString()


def add_rate_limit_servicer(servicer: RateLimitServicer, server: grpc.aio.Server) -> None:
    """``add_RateLimitServiceServicer_to_server`` for a servicer that takes and answers bytes
    (no deserializer or serializer between it and the wire)."""
    handlers: dict[str, grpc.RpcMethodHandler[bytes, bytes]] = {
        "ShouldRateLimit": grpc.unary_unary_rpc_method_handler(servicer.ShouldRateLimit)
    }
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(SERVICE, handlers),))
    server.add_registered_method_handlers(SERVICE, handlers)


class HealthServicer(health_aio.HealthServicer):
    """The standard health service, counting and timing ``Check`` like upstream."""

    def __init__(self, stats: StatsStore) -> None:
        super().__init__()
        self._requests = stats.counter("ratelimit_server.Check.total_requests")
        self._time = stats.timer("ratelimit_server.Check.response_time")

    async def Check(
        self,
        request: health_pb2.HealthCheckRequest,
        context: grpc.aio.ServicerContext[
            health_pb2.HealthCheckRequest, health_pb2.HealthCheckResponse
        ],
    ) -> health_pb2.HealthCheckResponse:
        started = time.perf_counter()
        self._requests.value += 1
        try:
            return await super().Check(request, context)
        finally:
            self._time.record((time.perf_counter() - started) * 1000.0)


def _status(healthy: bool) -> int:
    return (
        health_pb2.HealthCheckResponse.SERVING
        if healthy
        else health_pb2.HealthCheckResponse.NOT_SERVING
    )


async def create_grpc_server(
    service: RateLimitService,
    health: Health,
    stats: StatsStore,
    addresses: Sequence[str],
    *,
    transport: GrpcTransportSettings | None = None,
    tracer_provider: TracerProvider | None = None,
    options: Sequence[tuple[str, int | str]] = (),
) -> tuple[grpc.aio.Server, list[int]]:
    """A started server listening on ``addresses`` (``host:port`` or ``unix:path``), and the
    bound ports (0 for a unix socket); ``transport`` adds TLS, mTLS and connection ageing,
    ``tracer_provider`` a span per call."""
    transport = transport or GrpcTransportSettings(max_connection_age=0)
    interceptors: list[grpc.aio.ServerInterceptor] = []
    if tracer_provider is not None:
        interceptors.append(TracingInterceptor(tracer_provider))
    if transport.client_san:
        interceptors.append(SanCheck(transport.client_san))
    server = grpc.aio.server(
        options=[("grpc.so_reuseport", 1), *server_options(transport), *options],
        interceptors=interceptors,
    )
    add_rate_limit_servicer(RateLimitServicer(service, stats), server)
    health_servicer = HealthServicer(stats)
    health_pb2_grpc.add_HealthServicer_to_server(health_servicer, server)

    pending: set[asyncio.Task[None]] = set()

    def publish(healthy: bool) -> None:
        task = asyncio.get_running_loop().create_task(
            health_servicer.set(HEALTH_SERVICE, _status(healthy))
        )
        pending.add(task)
        task.add_done_callback(pending.discard)

    if transport.use_tls:
        credentials = server_credentials(transport)
        ports = [server.add_secure_port(address, credentials) for address in addresses]
    else:
        ports = [server.add_insecure_port(address) for address in addresses]
    await server.start()
    await health_servicer.set("", health_pb2.HealthCheckResponse.SERVING)
    await health_servicer.set(HEALTH_SERVICE, _status(health.healthy()))
    health.subscribe(publish)
    return server, ports
