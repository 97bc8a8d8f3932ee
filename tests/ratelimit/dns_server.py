"""A small authoritative DNS server for the tests: UDP on a free loopback port, in the
test's event loop.

It answers SRV questions from :attr:`AuthoritativeDns.srv`, a dict the test changes at any
time (``name -> [(priority, weight, port, target), ...]``); a name it does not hold gets
NXDOMAIN, and with :attr:`AuthoritativeDns.failing` set every question gets SERVFAIL (a
broken server). Queries are parsed and answers built with dnspython's ``dns.message``;
:attr:`AuthoritativeDns.questions` records the names asked. :meth:`AuthoritativeDns.resolver`
is a dnspython resolver that asks this server only.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import cast

import dns.asyncresolver
import dns.exception
import dns.flags
import dns.message
import dns.rcode
import dns.rdatatype
import dns.rrset

from tests.ratelimit.server_process import HOST

SrvRecord = tuple[int, int, int, str]
"""An SRV record: priority, weight, port, target (a name ending in a dot)."""


class AuthoritativeDns(asyncio.DatagramProtocol):
    """The zone's SRV records, served over UDP once :func:`dns_server` has started it."""

    def __init__(self, ttl: int = 0) -> None:
        self.ttl = ttl
        self.srv: dict[str, list[SrvRecord]] = {}
        self.failing = False
        self.questions: list[str] = []
        self.port = 0
        self._transport: asyncio.DatagramTransport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # a datagram endpoint's transport (not a DatagramTransport subclass before 3.12)
        self._transport = cast(asyncio.DatagramTransport, transport)
        self.port = transport.get_extra_info("sockname")[1]

    def datagram_received(self, data: bytes, addr: tuple[str | bytes, int]) -> None:
        try:
            query = dns.message.from_wire(data)
        except dns.exception.DNSException:
            return  # not DNS: a real server drops it too
        assert self._transport is not None
        self._transport.sendto(self.answer(query).to_wire(), addr)

    def answer(self, query: dns.message.Message) -> dns.message.Message:
        """The response to ``query`` (one question)."""
        response = dns.message.make_response(query)
        response.flags |= dns.flags.AA
        question = query.question[0]
        name = question.name.to_text(omit_final_dot=True)
        self.questions.append(name)
        if self.failing:
            response.set_rcode(dns.rcode.SERVFAIL)
        elif name not in self.srv:
            response.set_rcode(dns.rcode.NXDOMAIN)
        elif question.rdtype == dns.rdatatype.SRV:
            texts = [f"{p} {w} {port} {target}" for p, w, port, target in self.srv[name]]
            answer = dns.rrset.from_text_list(question.name, self.ttl, "IN", "SRV", texts)
            response.answer.append(answer)
        return response  # another type of a known name: NOERROR without records

    def resolver(self, lifetime: float = 2.0) -> dns.asyncresolver.Resolver:
        """A resolver asking this server only (no system configuration, no cache)."""
        resolver = dns.asyncresolver.Resolver(configure=False)
        resolver.port = self.port  # before the nameservers, which take the port when set
        resolver.nameservers = [HOST]
        resolver.lifetime = lifetime
        return resolver

    def close(self) -> None:
        if self._transport is not None:
            self._transport.close()


@contextlib.asynccontextmanager
async def dns_server(ttl: int = 0) -> AsyncIterator[AuthoritativeDns]:
    """An :class:`AuthoritativeDns` listening on ``127.0.0.1`` (a free port) for the block."""
    server = AuthoritativeDns(ttl)
    await asyncio.get_running_loop().create_datagram_endpoint(lambda: server, local_addr=(HOST, 0))
    try:
        yield server
    finally:
        server.close()
