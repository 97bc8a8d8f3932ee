"""Throughput benchmark of webrest against plain Starlette, FastAPI and Litestar.

Run it with ``python -m bench.webrest`` (see ``bench/webrest/README.md``).
"""
