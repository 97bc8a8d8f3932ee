"""Counter stores the limiter counts hits in: memory (embedded) and Redis."""

from handlers.ratelimit.backends.base import BackendError, CounterStore, Increment

__all__ = ["BackendError", "CounterStore", "Increment"]
