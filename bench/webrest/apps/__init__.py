"""The benchmarked applications: one module per framework, each exposing an ASGI ``app``."""
