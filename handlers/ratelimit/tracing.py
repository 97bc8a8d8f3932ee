"""OpenTelemetry tracing of the gRPC port (TRACING_* settings): one server span per call,
exported over OTLP (http/protobuf or gRPC).

The destination and the exporter's other options come from the standard OTLP environment
variables (``OTEL_EXPORTER_OTLP_ENDPOINT`` or ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``,
``..._HEADERS``, ``..._TIMEOUT``, ``..._INSECURE``, ``..._CERTIFICATE`` ...), which the
OpenTelemetry exporters read themselves. A W3C ``traceparent`` in the call's metadata makes
the span a child of the caller's (Envoy's) span. Sampling is TRACING_SAMPLING_RATE of trace
ids (``TraceIdRatioBased``, deterministic per trace id), whatever the caller decided.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

import grpc
from google.protobuf.message import DecodeError, Message
from opentelemetry.propagate import extract
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter
from opentelemetry.sdk.trace.sampling import TraceIdRatioBased
from opentelemetry.trace import SpanKind, Status, StatusCode

from generated.proto.envoy.service.ratelimit.v3 import rls_pb2
from handlers.ratelimit.settings import TracingSettings

log = logging.getLogger("ratelimit.tracing")

__all__ = ["TracingInterceptor", "create_tracer_provider"]


def _exporter(protocol: str) -> SpanExporter:
    if protocol == "grpc":
        from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter

        return OTLPSpanExporter()
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import (
        OTLPSpanExporter as HttpExporter,
    )

    return HttpExporter()


def create_tracer_provider(
    settings: TracingSettings, exporter: SpanExporter | None = None
) -> TracerProvider:
    """A provider exporting in batches to the OTLP destination; shut it down to flush."""
    attributes = {
        "service.name": settings.service_name,
        "service.instance.id": settings.service_instance_id,
    }
    if settings.service_namespace:
        attributes["service.namespace"] = settings.service_namespace
    provider = TracerProvider(
        resource=Resource.create(attributes),
        sampler=TraceIdRatioBased(settings.sampling_rate),
    )
    provider.add_span_processor(
        BatchSpanProcessor(exporter or _exporter(settings.exporter_protocol))
    )
    log.info(
        "tracing enabled: OTLP over %s, sampling rate %s",
        settings.exporter_protocol,
        settings.sampling_rate,
    )
    return provider


def _field(message: Any, name: str, serialized_as: type[Message]) -> Any:
    """``message.name``, or None where it has no such field; ShouldRateLimit's requests and
    answers travel as bytes (see grpc_server.py), which are read as ``serialized_as``."""
    if isinstance(message, bytes):
        try:
            message = serialized_as.FromString(message)
        except DecodeError:
            return None
    return getattr(message, name, None)


def _metadata(details: grpc.HandlerCallDetails) -> dict[str, str]:
    return {
        key: value for key, value in (details.invocation_metadata or ()) if isinstance(value, str)
    }


class TracingInterceptor(grpc.aio.ServerInterceptor):
    """A server span per unary call, named ``<package.Service>/<Method>`` as otelgrpc names
    it, with the rpc.* attributes, the gRPC status, and the rate limit domain."""

    def __init__(self, provider: TracerProvider) -> None:
        self._tracer = provider.get_tracer("ratelimit")

    async def intercept_service(
        self,
        continuation: Callable[
            [grpc.HandlerCallDetails], Awaitable[grpc.RpcMethodHandler[Any, Any] | None]
        ],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler[Any, Any] | None:
        handler = await continuation(handler_call_details)
        if handler is None or handler.unary_unary is None:
            return handler
        inner = handler.unary_unary
        full_name = handler_call_details.method.lstrip("/")
        service, _, method = full_name.partition("/")
        parent = extract(_metadata(handler_call_details))
        tracer = self._tracer

        async def traced(request: Any, context: grpc.aio.ServicerContext[Any, Any]) -> Any:
            attributes: dict[str, str | int] = {
                "rpc.system": "grpc",
                "rpc.service": service,
                "rpc.method": method,
            }
            domain = _field(request, "domain", rls_pb2.RateLimitRequest)
            if isinstance(domain, str):
                attributes["ratelimit.domain"] = domain
            with tracer.start_as_current_span(
                full_name,
                context=parent,
                kind=SpanKind.SERVER,
                attributes=attributes,
                record_exception=False,
                set_status_on_exception=False,
            ) as span:
                try:
                    response = await inner(request, context)  # type: ignore[arg-type]
                except BaseException:
                    code = context.code() or grpc.StatusCode.UNKNOWN
                    status = code if isinstance(code, grpc.StatusCode) else grpc.StatusCode.UNKNOWN
                    span.set_attribute("rpc.grpc.status_code", status.value[0])
                    span.set_status(Status(StatusCode.ERROR, context.details() or status.name))
                    raise
                span.set_attribute("rpc.grpc.status_code", 0)
                overall = _field(response, "overall_code", rls_pb2.RateLimitResponse)
                if isinstance(overall, int):
                    span.set_attribute("ratelimit.overall_code", overall)
                return response

        return grpc.unary_unary_rpc_method_handler(
            traced,
            request_deserializer=handler.request_deserializer,
            response_serializer=handler.response_serializer,
        )
