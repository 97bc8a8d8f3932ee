"""Benchmark of the agents service's workflows (``python -m bench.workflows``); see README.md."""
