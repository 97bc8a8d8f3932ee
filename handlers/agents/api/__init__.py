"""The HTTP layer: the generated Protocol's implementation (``handlers.py``), API key
authentication, per-key rate limits, and the operations that start, wait for, cancel and list
executions."""
