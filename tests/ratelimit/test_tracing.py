"""Tracing (issue 5, item 3): the service's spans reach real OTLP receivers written for the
tests (http/protobuf and gRPC), with the caller's trace context, the seed's resource
attributes, error status, and the sampling rate honoured."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import grpc
import pytest
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2, trace_service_pb2_grpc
from opentelemetry.proto.trace.v1 import trace_pb2

from generated.proto.envoy.service.ratelimit.v3 import rls_pb2, rls_pb2_grpc
from handlers.ratelimit.server import RateLimitServer
from handlers.ratelimit.settings import Settings, SettingsError
from tests.ratelimit.conftest import descriptor, request
from tests.ratelimit.test_server import RULES, runtime

METHOD = "envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit"
TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
PARENT_ID = "00f067aa0ba902b7"


class Received:
    """Spans and their resources, as the receiver decoded them."""

    def __init__(self) -> None:
        self.requests: list[trace_service_pb2.ExportTraceServiceRequest] = []

    def spans(self) -> list[tuple[dict[str, object], trace_pb2.Span]]:
        found: list[tuple[dict[str, object], trace_pb2.Span]] = []
        for export in self.requests:
            for resource_spans in export.resource_spans:
                resource = {a.key: _value(a.value) for a in resource_spans.resource.attributes}
                for scope_spans in resource_spans.scope_spans:
                    found.extend((resource, span) for span in scope_spans.spans)
        return found


def _value(value: object) -> object:
    kind = value.WhichOneof("value")  # type: ignore[attr-defined]
    return getattr(value, kind) if kind else None


def attributes(span: trace_pb2.Span) -> dict[str, object]:
    return {a.key: _value(a.value) for a in span.attributes}


@pytest.fixture
def http_receiver() -> Iterator[tuple[str, Received]]:
    received = Received()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers["content-length"]))
            received.requests.append(trace_service_pb2.ExportTraceServiceRequest.FromString(body))
            answer = trace_service_pb2.ExportTraceServiceResponse().SerializeToString()
            self.send_response(200)
            self.send_header("content-type", "application/x-protobuf")
            self.send_header("content-length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1/traces", received
    finally:
        server.shutdown()
        server.server_close()


class TraceService(trace_service_pb2_grpc.TraceServiceServicer):
    def __init__(self, received: Received) -> None:
        self.received = received

    async def Export(
        self, request: trace_service_pb2.ExportTraceServiceRequest, context: object
    ) -> trace_service_pb2.ExportTraceServiceResponse:
        self.received.requests.append(request)
        return trace_service_pb2.ExportTraceServiceResponse()


@pytest.fixture
async def grpc_receiver() -> AsyncIterator[tuple[str, Received]]:
    received = Received()
    server = grpc.aio.server()
    trace_service_pb2_grpc.add_TraceServiceServicer_to_server(  # type: ignore[no-untyped-call]
        TraceService(received), server
    )
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    try:
        yield f"http://127.0.0.1:{port}", received
    finally:
        await server.stop(None)


async def start_service(tmp_path: Path, env: dict[str, str]) -> RateLimitServer:
    settings = Settings.from_env({**runtime(tmp_path, RULES), "BACKEND_TYPE": "memory", **env})
    settings = settings.changed(host="127.0.0.1", port=0, grpc_host="127.0.0.1", grpc_port=0)
    server = RateLimitServer(settings)
    await server.start()
    return server


async def call(
    server: RateLimitServer, domain: str = "edge", traceparent: str | None = None
) -> grpc.StatusCode:
    metadata = (("traceparent", traceparent),) if traceparent else None
    async with grpc.aio.insecure_channel(f"127.0.0.1:{server.grpc_port}") as channel:
        stub = rls_pb2_grpc.RateLimitServiceStub(channel)
        try:
            await stub.ShouldRateLimit(
                request(domain, descriptor(("remote_address", "a"))), metadata=metadata
            )
        except grpc.aio.AioRpcError as error:
            return error.code()
    return grpc.StatusCode.OK


async def flushed(server: RateLimitServer) -> None:
    assert server.tracer_provider is not None
    await asyncio.to_thread(server.tracer_provider.force_flush)


async def test_spans_over_http_with_the_callers_context(
    tmp_path: Path, http_receiver: tuple[str, Received], monkeypatch: pytest.MonkeyPatch
) -> None:
    endpoint, received = http_receiver
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", endpoint)
    server = await start_service(
        tmp_path,
        {
            "TRACING_ENABLED": "true",
            "TRACING_SERVICE_NAMESPACE": "edge-team",
            "TRACING_SERVICE_INSTANCE_ID": "rl-7",
        },
    )
    try:
        assert await call(server, traceparent=f"00-{TRACE_ID}-{PARENT_ID}-01") == grpc.StatusCode.OK
        assert await call(server, domain="") == grpc.StatusCode.UNKNOWN
        await flushed(server)
    finally:
        await server.stop()
    spans = received.spans()
    assert len(spans) == 2
    resource, ok = spans[0]
    assert resource["service.name"] == "RateLimit"
    assert resource["service.namespace"] == "edge-team"
    assert resource["service.instance.id"] == "rl-7"
    assert ok.name == METHOD and ok.kind == trace_pb2.Span.SPAN_KIND_SERVER
    assert (ok.trace_id.hex(), ok.parent_span_id.hex()) == (TRACE_ID, PARENT_ID)
    assert attributes(ok) == {
        "rpc.system": "grpc",
        "rpc.service": "envoy.service.ratelimit.v3.RateLimitService",
        "rpc.method": "ShouldRateLimit",
        "ratelimit.domain": "edge",
        "rpc.grpc.status_code": 0,
        "ratelimit.overall_code": rls_pb2.RateLimitResponse.OK,
    }
    _, failed = spans[1]
    assert failed.parent_span_id == b""  # no caller context: a new trace
    assert attributes(failed)["rpc.grpc.status_code"] == grpc.StatusCode.UNKNOWN.value[0]
    assert failed.status.code == trace_pb2.Status.STATUS_CODE_ERROR
    assert failed.status.message == "rate limit domain must not be empty"


async def test_spans_over_grpc(
    tmp_path: Path, grpc_receiver: tuple[str, Received], monkeypatch: pytest.MonkeyPatch
) -> None:
    endpoint, received = grpc_receiver
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", endpoint)
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_INSECURE", "true")
    server = await start_service(
        tmp_path, {"TRACING_ENABLED": "true", "TRACING_EXPORTER_PROTOCOL": "grpc"}
    )
    try:
        for _ in range(3):
            assert await call(server) == grpc.StatusCode.OK
        await flushed(server)
    finally:
        await server.stop()
    names = [span.name for _, span in received.spans()]
    assert names == [METHOD] * 3


async def test_sampling_rate(
    tmp_path: Path, http_receiver: tuple[str, Received], monkeypatch: pytest.MonkeyPatch
) -> None:
    endpoint, received = http_receiver
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", endpoint)
    server = await start_service(
        tmp_path, {"TRACING_ENABLED": "true", "TRACING_SAMPLING_RATE": "0"}
    )
    try:
        for _ in range(5):  # a sampled caller does not override the rate
            assert await call(server, traceparent=f"00-{TRACE_ID}-{PARENT_ID}-01") == (
                grpc.StatusCode.OK
            )
        await flushed(server)
    finally:
        await server.stop()
    assert received.spans() == []


async def test_tracing_off_by_default(tmp_path: Path) -> None:
    server = await start_service(tmp_path, {})
    try:
        assert server.tracer_provider is None
        assert await call(server) == grpc.StatusCode.OK
    finally:
        await server.stop()


def test_settings() -> None:
    tracing = Settings.from_env({}).tracing
    assert (tracing.enabled, tracing.exporter_protocol, tracing.service_name) == (
        False,
        "http",
        "RateLimit",
    )
    assert tracing.sampling_rate == 1.0 and len(tracing.service_instance_id) == 36
    for env, name in (
        ({"TRACING_ENABLED": "maybe"}, "TRACING_ENABLED"),
        ({"TRACING_EXPORTER_PROTOCOL": "zipkin"}, "TRACING_EXPORTER_PROTOCOL"),
        ({"TRACING_SAMPLING_RATE": "1.5"}, "TRACING_SAMPLING_RATE"),
    ):
        with pytest.raises(SettingsError, match=name):
            Settings.from_env(env)
