"""Agents and workflows service: storage, HTTP handlers, workers and the execution runner."""
