"""The rate limit service's console scripts: check the ``ratelimit`` extra, then start."""

from __future__ import annotations

from handlers.common.extras import require_extra

__all__ = ["client", "config_check", "server"]


def server() -> int:
    """``ratelimit``."""
    require_extra("ratelimit", "ratelimit")
    from handlers.ratelimit.server import main

    return main()


def client() -> int:
    """``ratelimit-client``."""
    require_extra("ratelimit", "ratelimit-client")
    from handlers.ratelimit.client import main

    return main()


def config_check() -> int:
    """``ratelimit-config-check``."""
    require_extra("ratelimit", "ratelimit-config-check")
    from handlers.ratelimit.config_check import main

    return main()
