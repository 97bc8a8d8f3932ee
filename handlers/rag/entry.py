"""The rag service's console script: check the ``rag`` extra, then start."""

from __future__ import annotations

from handlers.common.extras import require_extra

__all__ = ["server"]


def server() -> int:
    """``rag-server``."""
    require_extra("rag", "rag-server")
    from handlers.rag.server import main

    return main()
