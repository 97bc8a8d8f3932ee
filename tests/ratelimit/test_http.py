"""The HTTP port: ``/json`` answers as the upstream's (reference §2.19), ``/healthcheck``."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import httpx
import pytest

from handlers.ratelimit import health as components
from handlers.ratelimit.health import Health
from handlers.ratelimit.http import HttpHandlers, create_http_app
from handlers.ratelimit.memo import PARSED_BODY_MAX_BYTES
from tests.ratelimit.conftest import Harness, harness
from webrest import Response

RULES = """
domain: edge
descriptors:
  - key: remote_address
    rate_limit: {unit: minute, requests_per_unit: 1}
"""


@pytest.fixture
def h() -> Harness:
    return harness(RULES)


@pytest.fixture
def health() -> Health:
    return Health()


@pytest.fixture
async def client(h: Harness, health: Health) -> AsyncIterator[httpx.AsyncClient]:
    transport = httpx.ASGITransport(app=create_http_app(h.service, health))
    async with httpx.AsyncClient(transport=transport, base_url="http://rl") as c:
        yield c


BODY = {"domain": "edge", "descriptors": [{"entries": [{"key": "remote_address", "value": "a"}]}]}


async def test_ok_then_over_limit(client: httpx.AsyncClient) -> None:
    first = await client.post("/json", json=BODY)
    assert first.status_code == 200
    assert first.headers["content-type"] == "application/json"
    assert first.content == (
        b'{"overallCode":"OK","statuses":[{"code":"OK","currentLimit":'
        b'{"requestsPerUnit":1,"unit":"MINUTE"},"durationUntilReset":"26s"}]}'
    )
    second = await client.post("/json", json=BODY)
    assert second.status_code == 429
    assert second.json()["overallCode"] == "OVER_LIMIT"


async def test_unknown_domain_is_ok(client: httpx.AsyncClient) -> None:
    response = await client.post("/json", json={**BODY, "domain": "other"})
    assert response.status_code == 200
    assert response.content == b'{"overallCode":"OK","statuses":[{"code":"OK"}]}'


@pytest.mark.parametrize(
    "body",
    [
        b"",
        b"{not json",
        b'{"domain": "edge", "unknown": 1}',
        b'{"domain": "", "descriptors": [{"entries": []}]}',
        b'{"domain": "edge"}',
        b'{"domain": "edge", "descriptors": [{"entries": [{"key": 1}]}]}',
        b'{"domain": "edge", "hitsAddend": -1, "descriptors": [{}]}',
        b"\xff\xfe",
    ],
)
async def test_bad_requests_are_plain_text_400(client: httpx.AsyncClient, body: bytes) -> None:
    response = await client.post("/json", content=body)
    assert response.status_code == 400
    assert response.text == "Bad Request\n"
    assert response.headers["content-type"] == "text/plain; charset=utf-8"
    assert response.headers["x-content-type-options"] == "nosniff"


async def test_proto_field_names_and_enum_numbers_are_accepted(
    client: httpx.AsyncClient, h: Harness
) -> None:
    body = (
        b'{"domain": "edge", "hits_addend": 0, "descriptors": [{"entries": '
        b'[{"key": "x", "value": "y"}], "limit": {"requests_per_unit": 3, "unit": 1}}]}'
    )
    response = await client.post("/json", content=body)
    assert response.status_code == 200
    assert response.json()["statuses"][0] == {
        "code": "OK",
        "currentLimit": {"requestsPerUnit": 3, "unit": "SECOND"},
        "limitRemaining": 2,
        "durationUntilReset": "1s",
    }


async def test_any_method_and_any_content_type(client: httpx.AsyncClient) -> None:
    response = await client.put("/json", json=BODY, headers={"content-type": "text/plain"})
    assert response.status_code == 200
    assert (await client.post("/healthcheck")).text == "OK"


async def test_healthcheck(client: httpx.AsyncClient, health: Health) -> None:
    ok = await client.get("/healthcheck")
    assert (ok.status_code, ok.text) == (200, "OK")
    health.set(components.SIGTERM, False)
    down = await client.get("/healthcheck")
    assert (down.status_code, down.content) == (500, b"")


async def test_a_body_seen_before_is_decided_and_counted_again(h: Harness) -> None:
    handlers = HttpHandlers(h.service, Health())
    body = json.dumps(BODY).encode()
    first = await handlers.should_rate_limit(body=body)
    second = await handlers.should_rate_limit(body=body)
    assert isinstance(first, Response) and isinstance(second, Response)
    assert (first.status_code, second.status_code) == (200, 429)
    assert h.rule("edge.remote_address")["total_hits"] == 2
    for _ in range(2):  # bad bodies are rejected every time: unparsable, or refused
        for bad_body in (b"{not json", b'{"domain": "edge"}'):
            bad = await handlers.should_rate_limit(body=bad_body)
            assert isinstance(bad, Response) and bad.status_code == 400
    assert h.counter("ratelimit.service.call.should_rate_limit.service_error") == 2
    entry = {"key": "remote_address", "value": "b" * 2000}
    large = json.dumps({"domain": "edge", "descriptors": [{"entries": [entry]}]}).encode()
    assert len(large) > PARSED_BODY_MAX_BYTES
    for expected in (200, 429):
        answer = await handlers.should_rate_limit(body=large)
        assert isinstance(answer, Response) and answer.status_code == expected
    # what is remembered: parsed bodies up to the size bound
    parsed = handlers._requests
    assert body in parsed and b'{"domain": "edge"}' in parsed and len(parsed) == 2
