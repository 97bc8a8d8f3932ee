"""Throughput and latency benchmark of the rate limit service against grpc.aio and Starlette
echo servers (the transport floors).

Run it with ``python -m bench.ratelimit`` (see ``bench/ratelimit/README.md``).
"""
