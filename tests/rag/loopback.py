"""An HTTP client of an application served by a real uvicorn server on loopback."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

import httpx

from tests.rag.stack import serve_on_loopback
from webrest import Application


@contextlib.asynccontextmanager
async def loopback_client(app: Application) -> AsyncIterator[httpx.AsyncClient]:
    """A client of ``app`` served on an ephemeral loopback port (lifespan included)."""
    async with (
        serve_on_loopback(app) as url,
        httpx.AsyncClient(base_url=url, timeout=60) as client,
    ):
        yield client
