"""The contract pipeline's generator: ``specs/`` → ``generated/`` (``python -m codegen``)."""
