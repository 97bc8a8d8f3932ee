"""The egress guard: which network destinations tenant-controlled code may reach.

Workflow ``http`` steps and agent programs with ``network: outbound`` both connect where a
tenant says. Without a guard they reach the host's own services (loopback, the rate limit debug
port), the cloud metadata endpoint (``169.254.169.254``) and the private network. The guard
refuses every address that is not globally routable, unless an operator's allowlist
(``AGENTS_EGRESS_ALLOW``) opens it:

* loopback, link-local, private (RFC 1918, ULA ``fc00::/7``), shared (``100.64.0.0/10``),
  multicast, unspecified, reserved and documentation addresses, in IPv4 and IPv6 alike;
* the addresses of the host's own interfaces, public ones included;
* IPv6 addresses that embed an IPv4 address (IPv4-mapped ``::ffff:a.b.c.d``, NAT64
  ``64:ff9b::/96``, 6to4 ``2002::/16``, Teredo) are judged by the embedded address too.

A host name is resolved **once**; every address it resolves to must be allowed (a name that
mixes public and private records is refused), and the caller connects to the address that
was checked, never resolving the name again, so DNS rebinding between the check and the
connection is impossible.

Allowlist entries: a host name (``billing.internal``: every address it resolves to is
allowed), an IP address (``10.0.0.7``) or a network (``10.20.0.0/16``, ``fd00::/8``).
"""

from __future__ import annotations

import asyncio
import ipaddress
import itertools
import math
import socket
import time
from collections.abc import Iterable
from dataclasses import dataclass, field

__all__ = ["EgressPolicy", "EgressRefused", "EgressUnresolved", "IPAddress", "address_refusal"]

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network

MAX_ALLOW_ENTRIES = 1000
RESOLVE_TIMEOUT_SECONDS = 10.0

_NAT64 = ipaddress.IPv6Network("64:ff9b::/96")


class EgressRefused(Exception):
    """A destination the guard does not allow (or a name that cannot be resolved)."""


class EgressUnresolved(EgressRefused):
    """A host name that could not be resolved (possibly a passing DNS failure)."""


def _embedded_ipv4(address: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    if address.ipv4_mapped is not None:
        return address.ipv4_mapped
    if address in _NAT64:
        return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    if address.sixtofour is not None:
        return address.sixtofour
    if address.teredo is not None:
        return address.teredo[1]
    return None


def address_refusal(address: IPAddress) -> str | None:
    """Why ``address`` is not a public destination, or None when it is."""
    if isinstance(address, ipaddress.IPv6Address):
        embedded = _embedded_ipv4(address)
        if embedded is not None:
            reason = address_refusal(embedded)
            return None if reason is None else f"an address embedding {embedded}, {reason}"
    site_local = isinstance(address, ipaddress.IPv6Address) and address.is_site_local
    checks = (
        (address.is_unspecified, "an unspecified address"),
        (address.is_loopback, "a loopback address"),
        (address.is_link_local, "a link-local address"),
        (site_local, "a site-local address"),
        (address.is_multicast, "a multicast address"),
        (address.is_private, "a private address"),
        (address.is_reserved, "a reserved address"),
        (not address.is_global, "not a globally routable address"),
    )
    return next((reason for refused, reason in checks if refused), None)


HOST_ADDRESSES_TTL_SECONDS = 30.0
_host_addresses: tuple[float, frozenset[IPAddress]] = (-math.inf, frozenset())


def host_addresses() -> frozenset[IPAddress]:
    """The addresses of this host's own interfaces (read from /proc on Linux, again every
    HOST_ADDRESSES_TTL_SECONDS): a public address of the host is refused like loopback, so
    that its services are not reached through it."""
    global _host_addresses
    read_at, addresses = _host_addresses
    if time.monotonic() - read_at > HOST_ADDRESSES_TTL_SECONDS:
        addresses = frozenset(_local_ipv4() | _local_ipv6())
        _host_addresses = (time.monotonic(), addresses)
    return addresses


def _local_ipv4() -> set[IPAddress]:
    """Host routes of the local table (``/proc/net/fib_trie``: an address line, then
    ``/32 host LOCAL``)."""
    found: set[IPAddress] = set()
    try:
        with open("/proc/net/fib_trie", encoding="ascii", errors="replace") as trie:
            lines = trie.read().splitlines()
    except OSError:
        return found
    for line, after in itertools.pairwise(lines):
        if line.strip().startswith("|-- ") and after.split() == ["/32", "host", "LOCAL"]:
            literal = _literal(line.strip()[4:])
            if literal is not None:
                found.add(literal)
    return found


def _local_ipv6() -> set[IPAddress]:
    """``/proc/net/if_inet6``: one address (32 hex digits) per line."""
    found: set[IPAddress] = set()
    try:
        with open("/proc/net/if_inet6", encoding="ascii", errors="replace") as table:
            for line in table:
                digits = line.split()[0] if line.split() else ""
                if len(digits) == 32:
                    found.add(ipaddress.IPv6Address(int(digits, 16)))
    except (OSError, ValueError):
        pass
    return found


@dataclass(frozen=True)
class EgressPolicy:
    """Public destinations, plus the allowlisted hosts and networks."""

    allow_hosts: frozenset[str] = frozenset()
    allow_networks: tuple[IPNetwork, ...] = ()
    enabled: bool = True
    """False: every destination is allowed (the guard is off; for trusted development)."""
    entries: tuple[str, ...] = field(default=(), compare=False)
    """The allowlist as the operator wrote it (for the startup log)."""

    @classmethod
    def parse(cls, entries: Iterable[str]) -> EgressPolicy:
        """A policy allowing ``entries`` (hosts, addresses, networks); raises ValueError
        naming the first unusable entry."""
        hosts: set[str] = set()
        networks: list[IPNetwork] = []
        shown: list[str] = []
        for raw in entries:
            entry = raw.strip()
            if not entry:
                continue
            try:
                networks.append(ipaddress.ip_network(entry.strip("[]"), strict=False))
            except ValueError:
                host = _host_name(entry)
                if host is None:
                    raise ValueError(f"{entry!r} is not a host name, address or network") from None
                hosts.add(host)
            shown.append(entry)
        if len(shown) > MAX_ALLOW_ENTRIES:
            raise ValueError(f"more than {MAX_ALLOW_ENTRIES} entries")
        return cls(frozenset(hosts), tuple(networks), True, tuple(shown))

    @classmethod
    def allow_all(cls) -> EgressPolicy:
        """No guard: every destination is allowed."""
        return cls(enabled=False)

    def describe(self) -> str:
        """One line for the startup log."""
        if not self.enabled:
            return "off (every destination allowed)"
        if not self.entries:
            return "public addresses only"
        return "public addresses and " + ", ".join(self.entries)

    def refusal(self, address: IPAddress) -> str | None:
        """Why ``address`` may not be reached, or None."""
        if not self.enabled or any(address in network for network in self.allow_networks):
            return None
        if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
            mapped = address.ipv4_mapped
            if any(mapped in network for network in self.allow_networks):
                return None
        reason = address_refusal(address)
        if reason is not None:
            return reason
        own = host_addresses()
        if address in own or (
            isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped in own
        ):
            return "an address of this host"
        return None

    async def resolve(self, host: str, port: int) -> IPAddress:
        """The address to connect to for ``host``: resolved once, every answer checked.

        Raises :class:`EgressRefused` saying why (a refused address, or no answer).
        """
        literal = _literal(host)
        if literal is not None:
            reason = self.refusal(literal)
            if reason is not None:
                raise EgressRefused(f"{literal} is {reason}")
            return literal
        name = _host_name(host)
        if name is None:
            raise EgressRefused(f"{host!r} is not a valid host name")
        addresses = await _lookup(name, port)
        if not self.enabled or name in self.allow_hosts:
            return addresses[0]
        for address in addresses:
            reason = self.refusal(address)
            if reason is not None:
                raise EgressRefused(f"{name} resolves to {address}, {reason}")
        return addresses[0]


def _literal(host: str) -> IPAddress | None:
    try:
        return ipaddress.ip_address(host.strip("[]").split("%", 1)[0])
    except ValueError:
        return None


def _host_name(text: str) -> str | None:
    """``text`` as a lower-case host name without a trailing dot, or None when it is not one."""
    name = text.strip().rstrip(".").lower()
    try:
        encoded = name.encode("idna").decode("ascii") if name else ""
    except UnicodeError:
        return None
    if not encoded or len(encoded) > 253:
        return None
    labels = encoded.split(".")
    if any(not label or len(label) > 63 for label in labels):
        return None
    if any(not (c.isascii() and (c.isalnum() or c in "-_")) for label in labels for c in label):
        return None
    if labels[-1].isdigit():  # 256.1.1.1, 127.1, 2130706433: a malformed address, not a name
        return None
    return encoded


async def _lookup(name: str, port: int) -> list[IPAddress]:
    loop = asyncio.get_running_loop()
    try:
        answers = await asyncio.wait_for(
            loop.getaddrinfo(name, port, type=socket.SOCK_STREAM), RESOLVE_TIMEOUT_SECONDS
        )
    except TimeoutError:
        seconds = RESOLVE_TIMEOUT_SECONDS
        raise EgressUnresolved(f"{name} could not be resolved within {seconds:g} s") from None
    except (OSError, UnicodeError) as error:
        raise EgressUnresolved(f"{name} could not be resolved: {error}") from None
    addresses: list[IPAddress] = []
    for _family, _type, _proto, _canonical, sockaddr in answers:
        address = _literal(str(sockaddr[0]))
        if address is not None and address not in addresses:
            addresses.append(address)
    if not addresses:
        raise EgressUnresolved(f"{name} has no address")
    return addresses
