"""The throwaway Redis deployments of :mod:`tests.ratelimit.redis_servers`, as fixtures."""

from tests.ratelimit.redis_servers import (
    redis_auth_server,
    redis_cluster,
    redis_second_server,
    redis_sentinel,
    redis_server,
    redis_tls_server,
    redis_unix_server,
)

__all__ = [
    "redis_auth_server",
    "redis_cluster",
    "redis_second_server",
    "redis_sentinel",
    "redis_server",
    "redis_tls_server",
    "redis_unix_server",
]
