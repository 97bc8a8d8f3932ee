"""Rate limit rules: the in-memory model, YAML parsing with upstream's messages, lookup, loading."""
