"""The egress proxy of one sandboxed run with ``network: outbound``.

The program's network namespace holds nothing but loopback; its only way out is this HTTP
proxy, served by the worker on a Unix socket that the sandbox's bridge (``sandbox_bridge.py``)
relays ``127.0.0.1:3128`` to. It takes ``CONNECT host:port`` (HTTPS and any other TCP stream a
client tunnels) and plain ``http://`` requests in absolute form, and asks the egress policy
(:mod:`handlers.agents.egress`) first: the destination is resolved once, loopback, private,
link-local and the other non-public addresses are refused (403, the reason in the body)
unless allowlisted, and the connection goes to the address that was checked.

Bounded: the request head (16 KiB, 30 s to arrive), connections at once (64), connecting
(10 s). Closing the proxy (the run ended) drops every connection.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from pathlib import Path
from urllib.parse import urlsplit

from handlers.agents.egress import EgressPolicy, EgressRefused, EgressUnresolved

__all__ = ["EgressProxy"]

log = logging.getLogger(__name__)

MAX_HEAD_BYTES = 16 * 1024
HEAD_TIMEOUT_SECONDS = 30.0
CONNECT_TIMEOUT_SECONDS = 10.0
MAX_CONNECTIONS = 64
BUFFER_BYTES = 65536
HOP_HEADERS = {b"proxy-connection", b"proxy-authorization", b"connection", b"keep-alive"}


class _Refusal(Exception):
    def __init__(self, status: str, reason: str) -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason


class EgressProxy:
    """An HTTP proxy on the Unix socket ``path`` whose destinations ``policy`` decides."""

    def __init__(self, policy: EgressPolicy, path: Path, *, label: str = "") -> None:
        self.policy = policy
        self.path = path
        self.label = label
        self._server: asyncio.AbstractServer | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    async def start(self) -> None:
        self._server = await asyncio.start_unix_server(
            self._accept, path=str(self.path), limit=MAX_HEAD_BYTES
        )
        os.chmod(self.path, 0o666)  # the sandbox's user connects to it

    async def close(self) -> None:
        """Stop listening and drop every connection."""
        if self._server is not None:
            self._server.close()
        for task in list(self._tasks):
            task.cancel()
        if self._tasks:
            await asyncio.wait(list(self._tasks))
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        if len(self._tasks) >= MAX_CONNECTIONS:
            await _answer(writer, "503 Service Unavailable", "too many connections at once")
            return
        self._tasks.add(task)
        try:
            await self._serve(reader, writer)
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            self._tasks.discard(task)
            writer.close()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), HEAD_TIMEOUT_SECONDS)
        except asyncio.LimitOverrunError:
            await _answer(writer, "431 Request Header Fields Too Large", "request head too large")
            return
        except TimeoutError:
            return
        lines = head[:-4].split(b"\r\n")
        parts = lines[0].split()
        if len(parts) != 3:
            await _answer(writer, "400 Bad Request", "not an HTTP request")
            return
        method, target, version = (part.decode("latin-1") for part in parts)
        try:
            if method.upper() == "CONNECT":
                host, port = _host_port(target, None)
                upstream_reader, upstream_writer = await self._open(host, port)
                writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
            else:
                host, port, request = _origin_request(method, target, version, lines[1:])
                upstream_reader, upstream_writer = await self._open(host, port)
                upstream_writer.write(request)
        except _Refusal as refusal:
            log.info("egress %s refused: %s", self.label, refusal.reason)
            await _answer(writer, refusal.status, refusal.reason)
            return
        try:
            await _splice(reader, writer, upstream_reader, upstream_writer)
        finally:
            upstream_writer.close()

    async def _open(
        self, host: str, port: int
    ) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        try:
            address = await self.policy.resolve(host, port)
        except EgressUnresolved as error:
            raise _Refusal("502 Bad Gateway", str(error)) from None
        except EgressRefused as error:
            raise _Refusal("403 Forbidden", f"egress to {host}:{port} refused: {error}") from None
        try:
            return await asyncio.wait_for(
                asyncio.open_connection(str(address), port), CONNECT_TIMEOUT_SECONDS
            )
        except TimeoutError:
            raise _Refusal("504 Gateway Timeout", f"{host}:{port} did not answer") from None
        except OSError as error:
            raise _Refusal("502 Bad Gateway", f"cannot connect to {host}:{port}: {error}") from None


def _host_port(authority: str, default_port: int | None) -> tuple[str, int]:
    host, _, port_text = authority.rpartition(":")
    if not host or "]" in port_text:  # no port, or the end of an IPv6 literal
        host, port_text = authority, ""
    host = host.strip("[]")
    if not port_text:
        if default_port is None:
            raise _Refusal("400 Bad Request", f"CONNECT needs host:port, not {authority!r}")
        return host, default_port
    if not port_text.isdigit() or not 0 < int(port_text) < 65536:
        raise _Refusal("400 Bad Request", f"invalid port in {authority!r}")
    return host, int(port_text)


def _origin_request(
    method: str, target: str, version: str, header_lines: list[bytes]
) -> tuple[str, int, bytes]:
    """An absolute-form proxy request as the origin server's request: host, port, head."""
    url = urlsplit(target)
    if url.scheme != "http" or not url.netloc:
        raise _Refusal("400 Bad Request", "only http:// URLs and CONNECT are proxied")
    host, port = _host_port(url.netloc.rpartition("@")[2], 80)
    path = (url.path or "/") + (f"?{url.query}" if url.query else "")
    kept = [
        line for line in header_lines if line.split(b":", 1)[0].strip().lower() not in HOP_HEADERS
    ]
    head = [f"{method} {path} {version}".encode("latin-1"), *kept, b"Connection: close"]
    return host, port, b"\r\n".join(head) + b"\r\n\r\n"


async def _splice(
    reader: asyncio.StreamReader,
    writer: asyncio.StreamWriter,
    upstream_reader: asyncio.StreamReader,
    upstream_writer: asyncio.StreamWriter,
) -> None:
    """Copy both ways until both sides have finished."""
    await asyncio.gather(_copy(reader, upstream_writer), _copy(upstream_reader, writer))


async def _copy(source: asyncio.StreamReader, target: asyncio.StreamWriter) -> None:
    try:
        while chunk := await source.read(BUFFER_BYTES):
            target.write(chunk)
            await target.drain()
        if target.can_write_eof():
            target.write_eof()
    except (ConnectionError, OSError):
        target.close()


async def _answer(writer: asyncio.StreamWriter, status: str, reason: str) -> None:
    body = (reason + "\n").encode("utf-8", errors="replace")
    head = (
        f"HTTP/1.1 {status}\r\nContent-Type: text/plain; charset=utf-8\r\n"
        f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    )
    with contextlib.suppress(ConnectionError, OSError):
        writer.write(head.encode("latin-1") + body)
        await writer.drain()
