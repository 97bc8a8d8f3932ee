"""``ratelimit-client``: ask a rate limit service for one decision and print it, or with
``-counters`` read the state of the descriptors' limits without counting.

    ratelimit-client -dial_string localhost:8081 -domain edge \\
        -descriptors remote_address=10.0.0.1 -descriptors path=/login,method=POST
    ratelimit-client -counters -http_address localhost:8080 -domain edge \\
        -descriptors remote_address=10.0.0.1

A decision goes over gRPC (``-dial_string``), as upstream's client; ``-counters`` calls the HTTP
port's ``POST /counters`` (``-http_address``) with the generated client and prints one line per
limit. Flags are Go style (one dash, ``-flag value`` or ``-flag=value``; two dashes work too).
Exit status 0 when the call succeeded (whatever the decision), 1 when it failed.
"""

from __future__ import annotations

import argparse
import sys

import grpc
import httpx
from google.protobuf import json_format, text_format

from generated.proto.envoy.extensions.common.ratelimit.v3 import ratelimit_pb2
from generated.proto.envoy.service.ratelimit.v3 import rls_pb2, rls_pb2_grpc
from generated.ratelimit.client import RatelimitClient, RatelimitError


def parse_descriptor(text: str) -> ratelimit_pb2.RateLimitDescriptor:
    """``name=value,name2=value2`` as one descriptor (a value may contain ``=``)."""
    descriptor = ratelimit_pb2.RateLimitDescriptor()
    for pair in text.split(","):
        key, found, value = pair.partition("=")
        if not found or not key:
            raise argparse.ArgumentTypeError(
                f"descriptor {text!r}: expected comma-separated name=value pairs"
            )
        descriptor.entries.add(key=key, value=value)
    return descriptor


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="ratelimit-client", description="Ask a rate limit service for one decision."
    )
    parser.add_argument(
        "-dial_string", "--dial_string", default="localhost:8081", help="server address"
    )
    parser.add_argument("-domain", "--domain", default="", help="rate limit domain")
    parser.add_argument(
        "-descriptors",
        "--descriptors",
        action="append",
        type=parse_descriptor,
        default=[],
        help="one descriptor as comma-separated name=value pairs; repeat for more",
    )
    parser.add_argument(
        "-hits_addend", "--hits_addend", type=int, default=0, help="hits to add (0 means 1)"
    )
    parser.add_argument("-timeout", "--timeout", type=float, default=10.0, help="seconds")
    parser.add_argument(
        "-counters",
        "--counters",
        action="store_true",
        help="read the limits' state (POST /counters on the HTTP port); counts nothing",
    )
    parser.add_argument(
        "-http_address",
        "--http_address",
        default="localhost:8080",
        help="the service's HTTP port, for -counters (host:port or a URL)",
    )
    return parser


def read_counters(args: argparse.Namespace, request: rls_pb2.RateLimitRequest) -> int:
    """``-counters``: the state of each descriptor's limits, a line per limit."""
    address = args.http_address
    base_url = address if "://" in address else f"http://{address}"
    body = json_format.MessageToDict(request)
    try:
        with RatelimitClient(base_url=base_url, timeout_seconds=args.timeout) as client:
            answer = client.read_counters(body)
    except (RatelimitError, httpx.HTTPError) as error:
        print(f"request error: {error}", file=sys.stderr)
        return 1
    for index, descriptor in enumerate(answer.descriptors):
        entries = ",".join(f"{entry.key}={entry.value}" for entry in descriptor.entries)
        print(f"descriptor {index} ({entries}): {descriptor.status.value}")
        for limit in descriptor.limits:
            size = f"burst {limit.burst}, " if limit.burst else ""
            print(
                f"  {'*' if limit.deciding else ' '} {limit.name or '(unnamed)'}: "
                f"{limit.algorithm.value}, {limit.requests_per_unit} per {limit.window_ms} ms, "
                f"{size}used {limit.used}, remaining {limit.remaining}, "
                f"reset in {limit.reset_ms} ms" + (" (shadow mode)" if limit.shadow_mode else "")
            )
    return 0


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    request = rls_pb2.RateLimitRequest(
        domain=args.domain, descriptors=args.descriptors, hits_addend=args.hits_addend
    )
    print(f"domain: {args.domain}")
    for descriptor in args.descriptors:
        print(f"descriptor: {text_format.MessageToString(descriptor, as_one_line=True)}")
    if args.counters:
        return read_counters(args, request)
    with grpc.insecure_channel(args.dial_string) as channel:
        stub = rls_pb2_grpc.RateLimitServiceStub(channel)
        try:
            response = stub.ShouldRateLimit(request, timeout=args.timeout)
        except grpc.RpcError as error:
            print(f"request error: {error.code().name}: {error.details()}", file=sys.stderr)
            return 1
    print(f"response: {text_format.MessageToString(response, as_one_line=True)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
