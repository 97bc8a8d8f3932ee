"""The gRPC transport floor: a grpc.aio server answering ShouldRateLimit with a fixed
RateLimitResponse (one OK status per descriptor), in one process on the stock asyncio loop,
as the service runs.

``python -m bench.ratelimit.echo_grpc --port N``
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import signal
from collections.abc import Sequence

import grpc

from bench.ratelimit.workload import MAX_DESCRIPTORS, echo_response
from generated.proto.envoy.service.ratelimit.v3 import rls_pb2, rls_pb2_grpc


class EchoServicer(rls_pb2_grpc.RateLimitServiceServicer):
    def __init__(self) -> None:
        self._responses = [echo_response(n) for n in range(MAX_DESCRIPTORS + 1)]

    async def ShouldRateLimit(
        self,
        request: rls_pb2.RateLimitRequest,
        context: grpc.aio.ServicerContext[rls_pb2.RateLimitRequest, rls_pb2.RateLimitResponse],
    ) -> rls_pb2.RateLimitResponse:
        return self._responses[min(len(request.descriptors), MAX_DESCRIPTORS)]


async def serve(host: str, port: int) -> None:
    server = grpc.aio.server()
    rls_pb2_grpc.add_RateLimitServiceServicer_to_server(EchoServicer(), server)
    server.add_insecure_port(f"{host}:{port}")
    await server.start()
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    await stop.wait()
    await server.stop(1.0)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.ratelimit.echo_grpc")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    args = parser.parse_args(argv)
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(serve(args.host, args.port))


if __name__ == "__main__":
    main()
