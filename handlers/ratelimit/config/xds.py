"""The xDS configuration provider (``CONFIG_TYPE=GRPC_XDS_SOTW``): an ADS state-of-the-world
client for ``RateLimitConfig`` resources.

One stream at a time to ``CONFIG_GRPC_XDS_SERVER_URL``
(``AggregatedDiscoveryService/StreamAggregatedResources``). The first request names the node
(``CONFIG_GRPC_XDS_NODE_ID``, ``CONFIG_GRPC_XDS_NODE_METADATA``), the type URL and the last
version ACKed (empty at first). Each response carries the full set of resources: they are
loaded together (:mod:`handlers.ratelimit.config.xds_resources`), off the event loop, and the
listener gets the outcome, as from the file provider. A loaded response is ACKed (its version
and nonce); a failed one is NACKed (the version ACKed before, its nonce, and the error text in
``error_detail``) and the listener keeps its rules. A stream that fails is opened again after
:class:`ReconnectBackoff`'s wait.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Sequence
from pathlib import Path

import grpc
from google.protobuf import struct_pb2

from generated.proto.envoy.config.core.v3 import base_pb2
from generated.proto.envoy.service.discovery.v3 import ads_pb2_grpc, discovery_pb2
from generated.proto.google.rpc import status_pb2
from handlers.ratelimit.config.parse import ConfigError
from handlers.ratelimit.config.provider import ConfigUpdate
from handlers.ratelimit.config.xds_backoff import ReconnectBackoff
from handlers.ratelimit.config.xds_resources import RATE_LIMIT_CONFIG_TYPE_URL, load_resources
from handlers.ratelimit.settings import Settings, SettingsError, XdsSettings

__all__ = ["XdsConfigProvider"]

logger = logging.getLogger("ratelimit.config")

INVALID_ARGUMENT = 3  # google.rpc.Code of a NACK's error_detail, as Envoy sends
STREAM_ERROR_NAME = "xds"  # config name of the errors that belong to no resource


class _StreamClosed(Exception):
    """The management server ended the stream without an error status."""


class XdsConfigProvider:
    """Receives the rules from an xDS management server; same interface as
    :class:`~handlers.ratelimit.config.provider.FileConfigProvider`."""

    def __init__(
        self,
        settings: Settings,
        listener: Callable[[ConfigUpdate], None],
        *,
        backoff: ReconnectBackoff | None = None,
    ) -> None:
        self._settings = settings
        self._xds = settings.xds
        self._listener = listener
        self._backoff = backoff if backoff is not None else ReconnectBackoff(settings.xds)
        self._task: asyncio.Task[None] | None = None
        self._first_update = asyncio.Event()
        self._acked_version = ""
        self._tls_files: tuple[bytes | None, bytes | None, bytes | None] = (None, None, None)

    @property
    def acked_version(self) -> str:
        """The version of the last response applied (empty before the first)."""
        return self._acked_version

    async def start(self) -> None:
        """Connect in the background; unless FORCE_START_WITHOUT_INITIAL_CONFIG, return only
        once the first response has been processed (loaded or not), as upstream.

        Raises :class:`SettingsError` when a TLS file cannot be read.
        """
        if self._task is not None:
            raise RuntimeError("the provider is already started")
        if self._xds.use_tls:
            self._tls_files = await asyncio.to_thread(_read_tls_files, self._xds)
        self._task = asyncio.create_task(self._run(), name="ratelimit-xds-client")
        if self._settings.force_start_without_initial_config:
            return
        logger.info(
            "waiting for the initial configuration from the xDS management server %s",
            self._xds.server_url,
        )
        try:
            await self._first_update.wait()
        except asyncio.CancelledError:
            await self.close()
            raise

    async def close(self) -> None:
        """Stop the client and close its connection."""
        task, self._task = self._task, None
        if task is None:
            return
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task

    async def _run(self) -> None:
        while True:
            try:
                await self._stream()
            except grpc.aio.AioRpcError as error:
                problem = f"{error.code().name}: {error.details() or 'no details'}"
                if error.code() == grpc.StatusCode.RESOURCE_EXHAUSTED:
                    # a response over the size limit is a configuration that cannot be loaded
                    message = (
                        f"response rejected ({problem}; XDS_CLIENT_MAX_MSG_SIZE_IN_BYTES="
                        f"{self._xds.max_msg_size_in_bytes or 'unset'})"
                    )
                    logger.error("Error loading new configuration: %s", message)
                    self._notify(ConfigUpdate(None, ConfigError(STREAM_ERROR_NAME, message)))
            except Exception as error:  # keep the client running whatever went wrong
                problem = str(error) or type(error).__name__
            delay = self._backoff.next_delay()
            logger.warning(
                "xDS stream to %s failed (%s); retrying in %.3fs",
                self._xds.server_url,
                problem,
                delay,
            )
            await asyncio.sleep(delay)

    async def _stream(self) -> None:
        """One stream, until it fails."""
        xds = self._xds
        options: list[tuple[str, str | int]] = []
        if xds.max_msg_size_in_bytes:
            options.append(("grpc.max_receive_message_length", xds.max_msg_size_in_bytes))
        if xds.use_tls:
            if xds.server_tls_san:
                options.append(("grpc.ssl_target_name_override", xds.server_tls_san))
            channel = grpc.aio.secure_channel(xds.server_url, await self._credentials(), options)
        else:
            channel = grpc.aio.insecure_channel(xds.server_url, options)
        async with channel:
            stub = ads_pb2_grpc.AggregatedDiscoveryServiceStub(channel)
            call = stub.StreamAggregatedResources(metadata=_metadata(xds.additional_headers))
            try:
                await call.write(self._request(self._acked_version, ""))
                while True:
                    response = await call.read()
                    if not isinstance(response, discovery_pb2.DiscoveryResponse):
                        raise _StreamClosed("the management server closed the stream")
                    self._backoff.reset()
                    await call.write(await self._apply(response))
            finally:
                call.cancel()

    async def _credentials(self) -> grpc.ChannelCredentials:
        """TLS credentials from the files as they are now (the last readable ones otherwise)."""
        try:
            self._tls_files = await asyncio.to_thread(_read_tls_files, self._xds)
        except SettingsError as error:
            logger.warning("%s; using the files read before", error)
        ca, key, cert = self._tls_files
        return grpc.ssl_channel_credentials(
            root_certificates=ca, private_key=key, certificate_chain=cert
        )

    async def _apply(
        self, response: discovery_pb2.DiscoveryResponse
    ) -> discovery_pb2.DiscoveryRequest:
        """Load a response, tell the listener, and answer with the ACK or NACK to send."""
        update = await asyncio.to_thread(_load, response, self._settings.merge_domain_config)
        if update.error is None:
            assert update.rules is not None
            logger.info(
                "applied xDS configuration version '%s': %d domain(s)",
                response.version_info,
                len(update.rules.domains),
            )
            self._acked_version = response.version_info
            self._notify(update)
            return self._request(response.version_info, response.nonce)
        logger.error("Error loading new configuration: %s", update.error)
        self._notify(update)
        status = status_pb2.Status(code=INVALID_ARGUMENT, message=str(update.error))
        return self._request(self._acked_version, response.nonce, status)

    def _notify(self, update: ConfigUpdate) -> None:
        try:
            self._listener(update)
        except Exception:
            logger.exception("rate limit configuration listener failed")
        self._first_update.set()

    def _request(
        self, version: str, nonce: str, error: status_pb2.Status | None = None
    ) -> discovery_pb2.DiscoveryRequest:
        xds = self._xds
        metadata = struct_pb2.Struct()
        for key, value in xds.node_metadata:
            metadata.fields[key].string_value = value
        request = discovery_pb2.DiscoveryRequest(
            version_info=version,
            node=base_pb2.Node(id=xds.node_id, metadata=metadata),
            type_url=RATE_LIMIT_CONFIG_TYPE_URL,
            response_nonce=nonce,
        )
        if error is not None:
            request.error_detail.CopyFrom(error)
        return request


def _load(response: discovery_pb2.DiscoveryResponse, merge_domains: bool) -> ConfigUpdate:
    if response.type_url != RATE_LIMIT_CONFIG_TYPE_URL:
        error = ConfigError(
            STREAM_ERROR_NAME,
            f"unexpected type URL '{response.type_url}': expected '{RATE_LIMIT_CONFIG_TYPE_URL}'",
        )
        return ConfigUpdate(None, error)
    try:
        return ConfigUpdate(load_resources(response.resources, merge_domains=merge_domains), None)
    except ConfigError as error:
        return ConfigUpdate(None, error)


def _metadata(headers: Sequence[tuple[str, str]]) -> grpc.aio.Metadata:
    metadata = grpc.aio.Metadata()
    for key, value in headers:
        metadata.add(key, value.encode() if key.endswith("-bin") else value)
    return metadata


def _read_tls_files(xds: XdsSettings) -> tuple[bytes | None, bytes | None, bytes | None]:
    """The CA (None: the system's roots), client key and client certificate."""
    contents: list[bytes | None] = []
    for name, path in (
        ("CONFIG_GRPC_XDS_SERVER_TLS_CACERT", xds.server_tls_cacert),
        ("CONFIG_GRPC_XDS_CLIENT_TLS_KEY", xds.client_tls_key),
        ("CONFIG_GRPC_XDS_CLIENT_TLS_CERT", xds.client_tls_cert),
    ):
        if not path:
            contents.append(None)
            continue
        try:
            contents.append(Path(path).read_bytes())
        except OSError as error:
            raise SettingsError(f"{name}={path!r} cannot be read: {error.strerror}") from None
    return contents[0], contents[1], contents[2]
