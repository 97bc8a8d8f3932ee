"""The egress guard: which addresses are refused, allowlists by network, address and host name,
resolution (once, every answer checked), and ``AGENTS_EGRESS_ALLOW`` in the settings."""

from __future__ import annotations

import asyncio
import ipaddress
import socket
import time
from typing import Any

import pytest

from handlers.agents import egress
from handlers.agents.egress import EgressPolicy, EgressRefused, EgressUnresolved
from handlers.agents.settings import Settings, SettingsError

REFUSED = [
    ("127.0.0.1", "a loopback address"),
    ("::1", "a loopback address"),
    ("0.0.0.0", "an unspecified address"),
    ("::", "an unspecified address"),
    ("169.254.169.254", "a link-local address"),
    ("fe80::1", "a link-local address"),
    ("fec0::1", "a site-local address"),
    ("10.1.2.3", "a private address"),
    ("172.16.0.1", "a private address"),
    ("192.168.1.1", "a private address"),
    ("100.64.0.1", "not a globally routable address"),
    ("fd00::1", "a private address"),
    ("224.0.0.1", "a multicast address"),
    ("ff02::1", "a multicast address"),
    ("::ffff:127.0.0.1", "embedding 127.0.0.1, a loopback address"),
    ("::ffff:10.0.0.1", "embedding 10.0.0.1, a private address"),
    ("64:ff9b::7f00:1", "embedding 127.0.0.1, a loopback address"),
    ("2002:7f00:1::", "embedding 127.0.0.1, a loopback address"),
    ("2002:a9fe:a9fe::", "embedding 169.254.169.254, a link-local address"),
]

PUBLIC = ["93.184.216.34", "8.8.8.8", "2606:4700::1111", "2a00:1450:4001:80b::200e"]


def fake_dns(monkeypatch: pytest.MonkeyPatch, answers: dict[str, list[str]]) -> list[str]:
    """The event loop's getaddrinfo answers ``answers`` (name -> addresses); the names asked."""
    asked: list[str] = []

    async def getaddrinfo(
        self: asyncio.AbstractEventLoop, host: str, port: int, **kwargs: Any
    ) -> list[tuple[Any, ...]]:
        asked.append(host)
        if host not in answers:
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        return [
            (socket.AF_INET6 if ":" in a else socket.AF_INET, socket.SOCK_STREAM, 6, "", (a, port))
            for a in answers[host]
        ]

    monkeypatch.setattr(asyncio.BaseEventLoop, "getaddrinfo", getaddrinfo)
    return asked


@pytest.mark.parametrize(("address", "reason"), REFUSED)
async def test_non_public_addresses_are_refused(address: str, reason: str) -> None:
    policy = EgressPolicy()
    why = policy.refusal(ipaddress.ip_address(address))
    assert why is not None and why.endswith(reason), why
    with pytest.raises(EgressRefused) as refused:
        await policy.resolve(address, 80)
    assert str(refused.value) == f"{ipaddress.ip_address(address)} is {why}"
    assert not isinstance(refused.value, EgressUnresolved)


async def test_bracketed_literals_and_the_refusal_wording() -> None:
    policy = EgressPolicy()
    with pytest.raises(EgressRefused, match=r"^::1 is a loopback address$"):
        await policy.resolve("[::1]", 443)
    with pytest.raises(EgressRefused, match=r"^127\.0\.0\.1 is a loopback address$"):
        await policy.resolve("127.0.0.1", 443)
    with pytest.raises(
        EgressRefused,
        match=r"^::ffff:7f00:1 is an address embedding 127\.0\.0\.1, a loopback address$",
    ):
        await policy.resolve("::ffff:127.0.0.1", 80)


@pytest.mark.parametrize("address", PUBLIC)
async def test_public_addresses_are_allowed(address: str) -> None:
    policy = EgressPolicy()
    assert policy.refusal(ipaddress.ip_address(address)) is None
    assert await policy.resolve(address, 443) == ipaddress.ip_address(address)
    assert await policy.resolve(f"[{address}]" if ":" in address else address, 443) == (
        ipaddress.ip_address(address)
    )


async def test_an_allowlisted_network_opens_its_addresses_only() -> None:
    policy = EgressPolicy.parse(["10.20.0.0/16", " fd00::/8 ", ""])
    assert policy.entries == ("10.20.0.0/16", "fd00::/8")
    assert await policy.resolve("10.20.3.4", 80) == ipaddress.ip_address("10.20.3.4")
    assert await policy.resolve("fd00::1", 80) == ipaddress.ip_address("fd00::1")
    # the same address as IPv4-mapped IPv6
    assert policy.refusal(ipaddress.ip_address("::ffff:10.20.3.4")) is None
    for refused in ("10.21.0.1", "127.0.0.1", "fe80::1", "::ffff:10.21.0.1"):
        with pytest.raises(EgressRefused):
            await policy.resolve(refused, 80)
    assert await policy.resolve("93.184.216.34", 80) == ipaddress.ip_address("93.184.216.34")


async def test_an_allowlisted_address_opens_that_address_only() -> None:
    policy = EgressPolicy.parse(["10.0.0.7", "[::1]"])
    assert await policy.resolve("10.0.0.7", 80) == ipaddress.ip_address("10.0.0.7")
    assert await policy.resolve("::1", 80) == ipaddress.ip_address("::1")
    with pytest.raises(EgressRefused, match=r"^10\.0\.0\.8 is a private address$"):
        await policy.resolve("10.0.0.8", 80)


async def test_localhost_resolves_to_loopback_and_is_refused() -> None:
    with pytest.raises(EgressRefused) as refused:
        await EgressPolicy().resolve("localhost", 80)
    message = str(refused.value)
    assert message.startswith("localhost resolves to "), message
    assert message.endswith(", a loopback address"), message
    assert not isinstance(refused.value, EgressUnresolved)


async def test_an_allowlisted_host_name_is_allowed_whatever_it_resolves_to() -> None:
    policy = EgressPolicy.parse(["LocalHost."])
    assert policy.allow_hosts == frozenset({"localhost"})
    assert (await policy.resolve("localhost", 80)).is_loopback
    assert (await policy.resolve("LOCALHOST.", 80)).is_loopback
    with pytest.raises(EgressRefused):
        await policy.resolve("127.0.0.1", 80)  # the name is allowed, not its addresses


async def test_a_name_is_resolved_once_and_every_answer_is_checked(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    asked = fake_dns(
        monkeypatch,
        {
            "public.example": ["93.184.216.34", "2606:4700::1111"],
            "mixed.example": ["93.184.216.34", "10.0.0.1"],
            "metadata.example": ["169.254.169.254"],
        },
    )
    policy = EgressPolicy()
    assert await policy.resolve("public.example", 443) == ipaddress.ip_address("93.184.216.34")
    assert asked == ["public.example"]
    with pytest.raises(EgressRefused, match=r"^mixed\.example resolves to 10\.0\.0\.1, a private"):
        await policy.resolve("mixed.example", 443)
    with pytest.raises(EgressRefused, match=r"to 169\.254\.169\.254, a link-local address$"):
        await policy.resolve("Metadata.Example.", 80)
    assert asked == ["public.example", "mixed.example", "metadata.example"]
    assert await EgressPolicy.parse(["10.0.0.0/8"]).resolve("mixed.example", 80) == (
        ipaddress.ip_address("93.184.216.34")
    )


async def test_a_name_that_cannot_be_resolved_is_refused_clearly() -> None:
    with pytest.raises(EgressUnresolved) as refused:
        await EgressPolicy().resolve("no-such-host.invalid", 80)
    assert isinstance(refused.value, EgressRefused)
    assert str(refused.value).startswith("no-such-host.invalid could not be resolved"), str(
        refused.value
    )


@pytest.mark.parametrize("host", ["", "exa mple.com", "a..b", "x" * 64 + ".com", "127.1", "0"])
async def test_an_invalid_host_name_is_refused(host: str) -> None:
    with pytest.raises(EgressRefused, match="is not a valid host name"):
        await EgressPolicy().resolve(host, 80)


async def test_allow_all_turns_the_guard_off() -> None:
    policy = EgressPolicy.allow_all()
    assert not policy.enabled and policy.describe() == "off (every destination allowed)"
    assert policy.refusal(ipaddress.ip_address("127.0.0.1")) is None
    assert await policy.resolve("169.254.169.254", 80) == ipaddress.ip_address("169.254.169.254")
    assert (await policy.resolve("localhost", 80)).is_loopback
    assert EgressPolicy().describe() == "public addresses only"
    assert EgressPolicy.parse(["10.0.0.0/8", "a.internal"]).describe() == (
        "public addresses and 10.0.0.0/8, a.internal"
    )


@pytest.mark.parametrize(
    "entry",
    [
        "http://billing.internal",
        "billing.internal:8080",
        "10.0.0.0/33",
        "256.1.1.1",
        "10.0.0.1/8/8",
        "*",
        "bad name",
        "a..b",
        "fd00::/129",
        "x" * 64 + ".com",
    ],
)
def test_bad_allowlist_entries_are_rejected(entry: str) -> None:
    with pytest.raises(ValueError, match="is not a host name, address or network"):
        EgressPolicy.parse(["10.0.0.0/8", entry])


def test_too_many_allowlist_entries_are_rejected() -> None:
    with pytest.raises(ValueError, match="more than 1000 entries"):
        EgressPolicy.parse(f"10.0.{i // 250}.{i % 250}" for i in range(1001))


def test_the_setting_agents_egress_allow() -> None:
    assert Settings.from_env({}).egress == EgressPolicy()
    assert Settings.from_env({"AGENTS_EGRESS_ALLOW": " "}).egress == EgressPolicy()
    assert Settings.from_env({"AGENTS_EGRESS_ALLOW": "*"}).egress == EgressPolicy.allow_all()
    policy = Settings.from_env(
        {"AGENTS_EGRESS_ALLOW": "billing.internal, 10.20.0.0/16,fd00::/8,192.168.1.5,"}
    ).egress
    assert policy.enabled
    assert policy.allow_hosts == frozenset({"billing.internal"})
    assert policy.allow_networks == (
        ipaddress.ip_network("10.20.0.0/16"),
        ipaddress.ip_network("fd00::/8"),
        ipaddress.ip_network("192.168.1.5/32"),
    )
    for bad in ("10.0.0.0/33", "http://x", "*,10.0.0.0/8", "256.1.1.1"):
        with pytest.raises(SettingsError, match="AGENTS_EGRESS_ALLOW") as caught:
            Settings.from_env({"AGENTS_EGRESS_ALLOW": bad})
        assert "is invalid" in str(caught.value)


def test_the_hosts_own_addresses_are_refused_even_when_public(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert ipaddress.ip_address("127.0.0.1") in egress.host_addresses()
    public = ipaddress.ip_address("93.184.216.34")
    monkeypatch.setattr(egress, "_host_addresses", (time.monotonic(), frozenset({public})))

    assert EgressPolicy().refusal(public) == "an address of this host"
    assert EgressPolicy().refusal(ipaddress.ip_address("::ffff:93.184.216.34")) == (
        "an address of this host"
    )
    assert EgressPolicy.parse(["93.184.216.34"]).refusal(public) is None  # allowlisted
