"""An ASGI application served by uvicorn on ``host:port`` inside the running event loop (the
debug server and the pull metrics endpoint; one process owns each such port)."""

from __future__ import annotations

import socket

import uvicorn
from starlette.types import ASGIApp

SHUTDOWN_GRACE_SECONDS = 5


class AsgiListener:
    """``app`` on ``host:port`` (port 0: any free port, see :attr:`port`)."""

    def __init__(self, app: ASGIApp, host: str, port: int) -> None:
        self.host = host
        self.port = port
        self._app = app
        self._server: uvicorn.Server | None = None
        self._socket: socket.socket | None = None

    async def start(self) -> None:
        """Bind and start serving; OSError if the address is taken."""
        family = socket.AF_INET6 if ":" in self.host else socket.AF_INET
        sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind((self.host, self.port))
            sock.listen(128)
            sock.setblocking(False)
        except OSError:
            sock.close()
            raise
        self._socket = sock
        self.port = sock.getsockname()[1]
        config = uvicorn.Config(
            self._app,
            lifespan="off",
            access_log=False,
            log_config=None,
            timeout_graceful_shutdown=SHUTDOWN_GRACE_SECONDS,
        )
        config.load()
        server = uvicorn.Server(config)
        server.lifespan = config.lifespan_class(config)
        await server.startup(sockets=[sock])
        self._server = server

    async def stop(self) -> None:
        if self._server is not None and self._socket is not None:
            await self._server.shutdown(sockets=[self._socket])
            self._socket.close()
        self._server = None
        self._socket = None
