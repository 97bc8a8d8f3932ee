"""``ratelimit-client``: ask a rate limit service for one decision and print it.

    ratelimit-client -dial_string localhost:8081 -domain edge \\
        -descriptors remote_address=10.0.0.1 -descriptors path=/login,method=POST

Flags are Go style (one dash, ``-flag value`` or ``-flag=value``; two dashes work too).
Exit status 0 when the call succeeded (whatever the decision), 1 when it failed.
"""

from __future__ import annotations

import argparse
import sys

import grpc
from google.protobuf import text_format

from generated.proto.envoy.extensions.common.ratelimit.v3 import ratelimit_pb2
from generated.proto.envoy.service.ratelimit.v3 import rls_pb2, rls_pb2_grpc


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
    return parser


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    request = rls_pb2.RateLimitRequest(
        domain=args.domain, descriptors=args.descriptors, hits_addend=args.hits_addend
    )
    print(f"domain: {args.domain}")
    for descriptor in args.descriptors:
        print(f"descriptor: {text_format.MessageToString(descriptor, as_one_line=True)}")
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
