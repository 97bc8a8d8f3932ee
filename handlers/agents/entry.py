"""The agents service's console scripts: check the ``agents`` extra, then start."""

from __future__ import annotations

from handlers.common.extras import require_extra

__all__ = ["admin", "server", "worker"]


def server() -> int:
    """``agents-server``."""
    require_extra("agents", "agents-server")
    from handlers.agents.server import main

    return main()


def worker() -> int:
    """``agents-worker``."""
    require_extra("agents", "agents-worker")
    from handlers.agents.worker import main

    return main()


def admin() -> int:
    """``agents-admin``."""
    require_extra("agents", "agents-admin")
    from handlers.agents.admin import main

    return main()
