"""The rate limit decision service, wire-compatible with Envoy's v3 rate limit service.

Modules: ``settings`` (environment), ``config`` (rule files: model, parsing, lookup, loading),
``stats``, ``limiter`` (fixed-window counting over a ``CounterStore``), ``backends`` (memory,
Redis), ``service`` (one decision per request), ``grpc_server`` and ``http`` (the two ports),
``health``, ``server`` (process wiring, workers), ``client`` and ``config_check`` (CLIs).
"""
