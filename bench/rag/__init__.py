"""Benchmark of the rag service: ingestion, search and generation against direct calls."""
