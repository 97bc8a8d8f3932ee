"""Which memcached node holds a key, and where the node list comes from.

Keys are spread as upstream's client (gomemcache's ``ServerList.PickServer``) spreads them:
the CRC-32 (IEEE) of the key modulo the number of nodes, in list order. With the same node
list, a key therefore lives on the same node as in an upstream deployment, and the two can
share the memcached nodes during a migration. (pymemcache's ``HashClient`` uses rendezvous
hashing, which moves fewer keys when the list changes but picks other nodes.) The list is
``ALTCACHE_HOST_PORT`` in its order, or the targets of the ``ALTCACHE_SRV`` record as
``target:port`` strings sorted as upstream sorts them, re-read every
``ALTCACHE_SRV_REFRESH``: a failed refresh keeps the current list and logs one line.
"""

from __future__ import annotations

import asyncio
import logging
import zlib
from collections.abc import Awaitable, Callable, Sequence

import dns.asyncresolver

from handlers.ratelimit.backends.base import BackendError
from handlers.ratelimit.backends.memcache_connections import Node

logger = logging.getLogger(__name__)

RETIRE_WITHIN = 5.0
"""Seconds a node dropped from the list has to answer its calls in flight before closing."""
SrvResolver = Callable[[str], Awaitable[Sequence[str]]]
"""Looks up an SRV name and returns its records as ``target:port`` strings."""


def pick(key: bytes, count: int) -> int:
    """The index of the node holding ``key`` among ``count`` (gomemcache's selection)."""
    return 0 if count == 1 else zlib.crc32(key) % count


def srv_resolver(resolver: dns.asyncresolver.Resolver | None = None) -> SrvResolver:
    """An :data:`SrvResolver` that asks DNS through ``resolver``; by default the system's
    (``/etc/resolv.conf``). Pass a
    ``dns.asyncresolver.Resolver(configure=False)`` with ``nameservers`` and ``port`` set to
    ask a given server (as the tests ask theirs).

    Each record becomes ``target:port``, the target with its final dot (as Go's
    ``net.LookupSRV`` gives it, so that the sorted order is upstream's)."""

    async def lookup(name: str) -> list[str]:
        if resolver is None:
            answer = await dns.asyncresolver.resolve(name, "SRV")
        else:
            answer = await resolver.resolve(name, "SRV")
        return [f"{record.target.to_text()}:{record.port}" for record in answer]

    return lookup


resolve_srv: SrvResolver = srv_resolver()
"""The SRV lookup through the system's resolver (what the service uses)."""


class ServerList:
    """The current nodes, in order; ``make_node`` builds the node of an address."""

    def __init__(self, make_node: Callable[[str], Node]) -> None:
        self._make_node = make_node
        self.nodes: list[Node] = []
        self._retiring: set[asyncio.Task[None]] = set()

    def node_for(self, key: bytes) -> Node:
        nodes = self.nodes
        if not nodes:
            raise BackendError("memcache: no servers configured or available")
        return nodes[pick(key, len(nodes))]

    def set_servers(self, addresses: Sequence[str]) -> None:
        """Use ``addresses`` from now on; nodes still listed keep their connections, the
        others are closed once their calls in flight are answered."""
        current = {node.address: node for node in self.nodes}
        self.nodes = [current.get(address) or self._make_node(address) for address in addresses]
        kept = set(addresses)
        for address, node in current.items():
            if address not in kept:
                task = asyncio.get_running_loop().create_task(node.close(drain=RETIRE_WITHIN))
                self._retiring.add(task)
                task.add_done_callback(self._retiring.discard)

    async def close(self) -> None:
        nodes, self.nodes = self.nodes, []
        await asyncio.gather(*(node.close() for node in nodes), *self._retiring)


class SrvDiscovery:
    """Keeps a :class:`ServerList` on the targets of an SRV record."""

    def __init__(self, servers: ServerList, name: str, resolver: SrvResolver) -> None:
        self._servers = servers
        self._name = name
        self._resolver = resolver
        self._task: asyncio.Task[None] | None = None

    async def refresh(self) -> list[str]:
        """Look the record up and use its targets; raises :class:`BackendError` (and changes
        nothing) when the lookup fails or finds no target."""
        try:
            addresses = sorted(await self._resolver(self._name))
        except Exception as error:  # NXDOMAIN, timeouts, a broken resolver: all keep the list
            raise BackendError(f"SRV lookup of {self._name} failed: {error}") from error
        if not addresses:
            raise BackendError(f"SRV lookup of {self._name} found no targets")
        if addresses != [node.address for node in self._servers.nodes]:
            logger.info("memcache hosts from SRV %s: %s", self._name, ", ".join(addresses))
            self._servers.set_servers(addresses)
        return addresses

    def refresh_every(self, interval: float) -> None:
        """Refresh in the background every ``interval`` seconds until :meth:`close`."""
        logger.info("refreshing memcache hosts from SRV %s every %gs", self._name, interval)
        self._task = asyncio.get_running_loop().create_task(self._periodically(interval))

    async def _periodically(self, interval: float) -> None:
        while True:
            await asyncio.sleep(interval)
            try:
                await self.refresh()
            except BackendError as error:
                kept = len(self._servers.nodes)
                logger.warning(
                    "failed to refresh memcache hosts: %s; keeping %d hosts", error, kept
                )

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None
