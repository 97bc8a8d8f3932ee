"""An xDS management server for the tests: ADS state-of-the-world over real loopback gRPC.

The test sets snapshots (a version and the full list of ``RateLimitConfig``); each is sent to
every open stream, and to each new stream whose first request names another version. Every
request received is recorded with its stream's headers, so a test can assert the node, the
ACKs and NACKs. The test can also drop the open streams, or stop and restart the server on
the same port.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass
from typing import Any

import grpc
from google.protobuf import any_pb2, json_format

from generated.proto.envoy.service.discovery.v3 import ads_pb2_grpc, discovery_pb2
from handlers.ratelimit.config.xds_resources import (
    RATE_LIMIT_CONFIG_TYPE_URL,
    AnyRateLimitConfig,
    pack_config,
)

TIMEOUT = 10.0


@dataclass(frozen=True)
class ReceivedRequest:
    """One ``DiscoveryRequest`` as the server received it."""

    stream: int
    """Number of the stream it came on (1 for the first stream the server accepted)."""
    version_info: str
    response_nonce: str
    type_url: str
    error: str | None
    """``error_detail.message`` of a NACK, None for an ACK or a first request."""
    error_code: int
    node_id: str
    node_metadata: dict[str, Any]
    headers: dict[str, str]
    """The stream's gRPC metadata (the client's extra headers among them)."""


@dataclass(frozen=True)
class _Snapshot:
    version: str
    resources: tuple[any_pb2.Any, ...]
    type_url: str


_DROP = object()


class _Stream:
    def __init__(self, number: int) -> None:
        self.number = number
        self.outbox: asyncio.Queue[object] = asyncio.Queue()
        self.subscribed = False


class ManagementServer(ads_pb2_grpc.AggregatedDiscoveryServiceServicer):
    """Serves snapshots on ``127.0.0.1``; ``credentials`` makes it a TLS server."""

    def __init__(self, credentials: grpc.ServerCredentials | None = None) -> None:
        self.credentials = credentials
        self.port = 0
        self.requests: list[ReceivedRequest] = []
        self.sent: list[discovery_pb2.DiscoveryResponse] = []
        self.streams_opened = 0
        self._server: grpc.aio.Server | None = None
        self._streams: set[_Stream] = set()
        self._snapshot: _Snapshot | None = None
        self._nonces = itertools.count(1)

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    async def start(self) -> None:
        server = grpc.aio.server()
        ads_pb2_grpc.add_AggregatedDiscoveryServiceServicer_to_server(self, server)
        address = f"127.0.0.1:{self.port}"
        if self.credentials is None:
            self.port = server.add_insecure_port(address)
        else:
            self.port = server.add_secure_port(address, self.credentials)
        await server.start()
        self._server = server

    async def stop(self) -> None:
        server, self._server = self._server, None
        if server is not None:
            self.drop_streams()
            await server.stop(None)

    async def restart(self) -> None:
        """Stop, then serve again on the same port."""
        await self.stop()
        await self.start()

    def set_snapshot(self, version: str, configs: Sequence[AnyRateLimitConfig]) -> None:
        """Publish ``configs`` (upstream's messages or our superset) as ``version`` to every
        stream."""
        self.set_resources(version, [pack_config(config) for config in configs])

    def set_resources(
        self,
        version: str,
        resources: Sequence[any_pb2.Any],
        type_url: str = RATE_LIMIT_CONFIG_TYPE_URL,
    ) -> None:
        """Publish raw resources (any type) as ``version``, in a response of ``type_url``."""
        self._snapshot = _Snapshot(version, tuple(resources), type_url)
        for stream in self._streams:
            if stream.subscribed:
                stream.outbox.put_nowait(self._response())

    def drop_streams(self) -> None:
        """End every open stream with UNAVAILABLE."""
        for stream in self._streams:
            stream.outbox.put_nowait(_DROP)

    async def wait_for_request(
        self, matches: Callable[[ReceivedRequest], bool], *, after: int = 0
    ) -> ReceivedRequest:
        """The first request from index ``after`` on that ``matches``; waits up to TIMEOUT."""
        deadline = asyncio.get_running_loop().time() + TIMEOUT
        while True:
            for request in self.requests[after:]:
                if matches(request):
                    return request
            if asyncio.get_running_loop().time() > deadline:
                raise AssertionError(f"no matching request among {self.requests[after:]}")
            await asyncio.sleep(0.01)

    def _response(self) -> discovery_pb2.DiscoveryResponse:
        snapshot = self._snapshot
        assert snapshot is not None
        response = discovery_pb2.DiscoveryResponse(
            version_info=snapshot.version,
            resources=snapshot.resources,
            type_url=snapshot.type_url,
            nonce=str(next(self._nonces)),
        )
        self.sent.append(response)
        return response

    async def StreamAggregatedResources(
        self,
        request_iterator: AsyncIterator[discovery_pb2.DiscoveryRequest],
        context: grpc.aio.ServicerContext[
            discovery_pb2.DiscoveryRequest, discovery_pb2.DiscoveryResponse
        ],
    ) -> AsyncIterator[discovery_pb2.DiscoveryResponse]:
        self.streams_opened += 1
        stream = _Stream(self.streams_opened)
        headers = {key: str(value) for key, value in context.invocation_metadata() or ()}
        self._streams.add(stream)
        reader = asyncio.create_task(self._read(request_iterator, stream, headers))
        try:
            while True:
                item = await stream.outbox.get()
                if item is _DROP:
                    await context.abort(grpc.StatusCode.UNAVAILABLE, "stream dropped by the test")
                if item is None:
                    return
                assert isinstance(item, discovery_pb2.DiscoveryResponse)
                yield item
        finally:
            self._streams.discard(stream)
            reader.cancel()

    async def DeltaAggregatedResources(
        self,
        request_iterator: AsyncIterator[discovery_pb2.DeltaDiscoveryRequest],
        context: grpc.aio.ServicerContext[
            discovery_pb2.DeltaDiscoveryRequest, discovery_pb2.DeltaDiscoveryResponse
        ],
    ) -> AsyncIterator[discovery_pb2.DeltaDiscoveryResponse]:
        await context.abort(grpc.StatusCode.UNIMPLEMENTED, "state-of-the-world only")
        yield discovery_pb2.DeltaDiscoveryResponse()  # never reached: abort raises

    async def _read(
        self,
        requests: AsyncIterator[discovery_pb2.DiscoveryRequest],
        stream: _Stream,
        headers: dict[str, str],
    ) -> None:
        try:
            async for request in requests:
                self.requests.append(_received(stream.number, request, headers))
                if not stream.subscribed:
                    stream.subscribed = True
                    snapshot = self._snapshot
                    if snapshot is not None and snapshot.version != request.version_info:
                        stream.outbox.put_nowait(self._response())
        finally:
            stream.outbox.put_nowait(None)


def _received(
    number: int, request: discovery_pb2.DiscoveryRequest, headers: dict[str, str]
) -> ReceivedRequest:
    has_error = request.HasField("error_detail")
    return ReceivedRequest(
        stream=number,
        version_info=request.version_info,
        response_nonce=request.response_nonce,
        type_url=request.type_url,
        error=request.error_detail.message if has_error else None,
        error_code=request.error_detail.code,
        node_id=request.node.id,
        node_metadata=json_format.MessageToDict(request.node.metadata),
        headers=headers,
    )
