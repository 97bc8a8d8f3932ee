"""Benchmark of the agents service (``python -m bench.agents``); see README.md."""
