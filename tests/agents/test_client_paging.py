"""The generated client against the real agents server: ``iter_<list>`` pages through every
item (sync and async, SQLite and PostgreSQL), ``with_raw_response`` gives the status and
headers, a lost answer to a keyed run is retried with the same ``Idempotency-Key`` and acts
once, and the server's own 429 ``Retry-After`` is waited out."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest

from generated.agents.client import (
    AsyncServiceClient,
    RetryPolicy,
    ServiceClient,
    ServiceRateLimitError,
)
from handlers.agents.settings import RequestRate
from tests.agents.run_support import new_agent, tuned_server
from tests.agents.support import RunningServer, Storage


class Pages:
    """An httpx response hook that records the ``limit`` and ``offset`` of each list request."""

    def __init__(self) -> None:
        self.asked: list[tuple[int, int]] = []

    def __call__(self, response: httpx.Response) -> None:
        query = parse_qs(urlsplit(str(response.request.url)).query)
        if response.request.method == "GET" and "offset" in query:
            self.asked.append((int(query["limit"][0]), int(query["offset"][0])))


@pytest.fixture
def paged(server: RunningServer, admin_key: str) -> Iterator[tuple[ServiceClient, Pages]]:
    pages = Pages()
    hooks = {"response": [pages]}
    with ServiceClient(api_key=admin_key, base_url=server.url, event_hooks=hooks) as client:
        yield client, pages


def test_iter_list_pages_through_every_agent(
    paged: tuple[ServiceClient, Pages], unique: str
) -> None:
    client, pages = paged
    slugs = {new_agent(client, f"page-{unique}", program=None) for _ in range(7)}
    every = client.agents.list(search=unique, limit=50)
    assert every.total == 7
    pages.asked.clear()

    seen = [agent.slug for agent in client.agents.iter_list(search=unique, limit=3)]
    assert set(seen) == slugs and len(seen) == 7  # every item once
    assert seen == [agent.slug for agent in every.data]  # in the list's order
    assert pages.asked == [(3, 0), (3, 3), (3, 6)]  # three pages, the last one short

    pages.asked.clear()
    assert len(list(client.agents.iter_list(search=unique))) == 7
    assert pages.asked == [(200, 0)]  # the default page: the most the API allows

    pages.asked.clear()
    assert len(list(client.agents.iter_list(search=unique, limit=2, offset=5))) == 2
    assert pages.asked == [(2, 5)]
    assert list(client.agents.iter_list(search=f"none-{unique}")) == []


def test_iter_list_of_executions_is_lazy(paged: tuple[ServiceClient, Pages], unique: str) -> None:
    client, pages = paged
    agent = new_agent(client, f"runs-{unique}", program=None)
    started = {client.agents.run(agent, {"input": {"n": n}}).execution_id for n in range(5)}
    pages.asked.clear()
    executions = client.agents.executions.iter_list(agent, limit=2)
    first = next(executions)
    assert pages.asked == [(2, 0)]  # one page fetched for the first item
    rest = [execution.id for execution in executions]
    assert {first.id, *rest} == started and len(rest) == 4
    assert pages.asked == [(2, 0), (2, 2), (2, 4)]


async def test_the_async_iterator(server: RunningServer, admin_key: str, unique: str) -> None:
    with server.client(admin_key) as setup:
        slugs = {new_agent(setup, f"aio-{unique}", program=None) for _ in range(5)}
    async with AsyncServiceClient(api_key=admin_key, base_url=server.url) as client:
        seen = [agent.slug async for agent in client.agents.iter_list(search=unique, limit=2)]
    assert sorted(seen) == sorted(slugs)


def test_the_raw_response_has_the_status_and_headers(
    paged: tuple[ServiceClient, Pages], unique: str
) -> None:
    client, _ = paged
    slug = new_agent(client, f"raw-{unique}", program=None)
    raw = client.with_raw_response.agents.get(slug)
    assert raw.status_code == 200 and raw.retries == 0
    assert raw.request_id is not None and raw.request_id.startswith("req_")
    assert raw.headers["content-type"].startswith("application/json")
    assert raw.parse().agent.slug == slug
    run = client.with_raw_response.agents.run(slug, {"input": {}}, idempotency_key=unique)
    assert run.status_code == 202
    again = client.with_raw_response.agents.run(slug, {"input": {}}, idempotency_key=unique)
    assert again.headers["idempotent-replayed"] == "true"
    assert again.parse().execution_id == run.parse().execution_id


class LoseFirstAnswer(httpx.HTTPTransport):
    """The network, except that the first answer to a POST is lost after the server acted
    (as when a connection breaks on the way back): a ``ReadError`` instead of the response."""

    def __init__(self) -> None:
        super().__init__()
        self.posts = 0

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        response = super().handle_request(request)
        if request.method == "POST":
            self.posts += 1
            if self.posts == 1:
                response.read()
                response.close()
                raise httpx.ReadError("connection reset by peer", request=request)
        return response


def test_a_lost_answer_to_a_keyed_run_is_retried_and_acts_once(
    server: RunningServer, admin_key: str, unique: str
) -> None:
    with server.client(admin_key) as setup:
        agent = new_agent(setup, f"lost-{unique}", program=None)
    flaky = LoseFirstAnswer()
    quick = RetryPolicy(initial_delay=0.01)
    with ServiceClient(
        api_key=admin_key, base_url=server.url, transport=flaky, retry=quick
    ) as client:
        run = client.agents.run(agent, {"input": {"once": True}})  # a fresh key, resent
        assert flaky.posts == 2
        executions = client.agents.executions.list(agent).executions
    assert [execution.id for execution in executions] == [run.execution_id]  # acted once

    unkeyed = LoseFirstAnswer()
    client = ServiceClient(api_key=admin_key, base_url=server.url, transport=unkeyed)
    with client, pytest.raises(httpx.ReadError):
        client.agents.archive(agent)  # no key: not repeated
    assert unkeyed.posts == 1


def test_the_servers_retry_after_is_waited_out(tmp_path: Path) -> None:
    storage = Storage(tmp_path, f"sqlite:///{tmp_path / 'agents.db'}")
    with tuned_server(storage, rate_limit=RequestRate(2, "second")) as limited:
        key = limited.key("busy", scope_all=True)
        statuses: list[int] = []
        hooks = {"response": [lambda response: statuses.append(response.status_code)]}
        with ServiceClient(api_key=key, base_url=limited.url, event_hooks=hooks) as client:
            for _ in range(6):
                client.agents.list()  # 6 calls in at most 2 windows of 2: a 429, waited out
            assert 429 in statuses and statuses[-1] == 200
            refused = statuses.index(429)
            assert statuses[refused + 1] in (200, 429)
            with pytest.raises(ServiceRateLimitError) as raised:
                for _ in range(6):
                    client.agents.list(max_retries=0)
            assert raised.value.retry_after is not None and 1 <= raised.value.retry_after <= 2
