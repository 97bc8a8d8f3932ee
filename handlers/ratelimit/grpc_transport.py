"""The gRPC port's transport: TLS with certificates reloaded when their files change, mTLS
with an optional SAN check, and connection ageing (GRPC_MAX_CONNECTION_AGE[_GRACE]).

Certificates are read again on the first handshake after any of the files changed (gRPC's
dynamic server credentials ask before every handshake; we compare modification times), so a
rotated certificate serves new connections without a restart while established ones go on.
An unreadable replacement keeps the previous certificate and logs one line.

The SAN check (GRPC_CLIENT_TLS_SAN) runs when a call arrives: a client certificate without
that DNS name gets UNAUTHENTICATED. (The upstream rejects it during the handshake; gRPC
Python cannot hook certificate verification, so the connection opens but no call passes.)

Connection ageing is gRPC core's: after the age (with its own +/-10 % jitter; a 1 s age gave
reconnects 0.92 to 1.11 s apart) the server sends GOAWAY, and after the grace period it
closes the connection.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import grpc

from handlers.ratelimit.settings import GrpcTransportSettings

log = logging.getLogger("ratelimit.grpc")

__all__ = ["SanCheck", "server_credentials", "server_options"]


def server_options(settings: GrpcTransportSettings) -> list[tuple[str, int]]:
    """Channel arguments for connection ageing (0 leaves a connection unaged)."""
    options: list[tuple[str, int]] = []
    if settings.max_connection_age > 0:
        options.append(("grpc.max_connection_age_ms", round(settings.max_connection_age * 1000)))
        options.append(
            ("grpc.max_connection_age_grace_ms", round(settings.max_connection_age_grace * 1000))
        )
    return options


class _CertificateFiles:
    """The certificate, key and client CA, re-read when a file's modification time changes."""

    def __init__(self, settings: GrpcTransportSettings) -> None:
        self._paths = [settings.cert, settings.key] + (
            [settings.client_ca] if settings.client_ca else []
        )
        self._stamp = self._stamps()
        self.initial = self._load()  # raises OSError: startup fails on unreadable files

    def _stamps(self) -> tuple[float, ...]:
        return tuple(os.stat(path).st_mtime_ns for path in self._paths)

    def _load(self) -> grpc.ServerCertificateConfiguration:
        cert, key, *ca = (Path(path).read_bytes() for path in self._paths)
        return grpc.ssl_server_certificate_configuration(
            [(key, cert)], root_certificates=ca[0] if ca else None
        )

    def fetch(self) -> grpc.ServerCertificateConfiguration | None:
        """What gRPC calls before each handshake: a new configuration, or None to keep."""
        try:
            stamp = self._stamps()
            if stamp == self._stamp:
                return None
            configuration = self._load()
        except OSError as error:
            log.warning("keeping the current gRPC TLS certificate: %s", error)
            return None
        self._stamp = stamp
        log.info("reloaded the gRPC TLS certificate from %s", self._paths[0])
        return configuration


def server_credentials(settings: GrpcTransportSettings) -> grpc.ServerCredentials:
    """TLS credentials that reload their files; client certificates are required (and
    verified against GRPC_CLIENT_TLS_CACERT) when that CA is set."""
    files = _CertificateFiles(settings)
    return grpc.dynamic_ssl_server_credentials(
        files.initial,
        files.fetch,  # type: ignore[arg-type]  # None keeps the current one (gRPC's contract)
        require_client_authentication=bool(settings.client_ca),
    )


class SanCheck(grpc.aio.ServerInterceptor):
    """Lets a call through only when the client certificate names ``san`` (a DNS SAN)."""

    def __init__(self, san: str) -> None:
        self._san = san.encode()

    async def intercept_service(
        self,
        continuation: Callable[
            [grpc.HandlerCallDetails], Awaitable[grpc.RpcMethodHandler[Any, Any] | None]
        ],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler[Any, Any] | None:
        handler = await continuation(handler_call_details)
        if handler is None or handler.unary_unary is None:
            return handler
        inner = handler.unary_unary
        san = self._san

        async def checked(request: Any, context: grpc.aio.ServicerContext[Any, Any]) -> Any:
            names = context.auth_context().get("x509_subject_alternative_name", [])
            if san not in names:
                await context.abort(
                    grpc.StatusCode.UNAUTHENTICATED,
                    f"client certificate does not name {san.decode()!r}",
                )
            return await inner(request, context)  # type: ignore[arg-type]  # aio context

        return grpc.unary_unary_rpc_method_handler(
            checked,
            request_deserializer=handler.request_deserializer,
            response_serializer=handler.response_serializer,
        )
