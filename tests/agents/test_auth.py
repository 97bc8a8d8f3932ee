"""API keys on every request: 401 without a live key, scopes, isolation between keys."""

from __future__ import annotations

from functools import partial

import httpx
import pytest

from generated.agents.client import (
    ServiceAuthError,
    ServiceClient,
    ServiceForbiddenError,
    ServiceNotFoundError,
)
from handlers.agents.domain.keys import revoke_key
from tests.agents.support import RunningServer


def _get(server: RunningServer, headers: dict[str, str]) -> httpx.Response:
    with httpx.Client(base_url=server.url, headers=headers) as http:
        return http.get("/api/v1/agents")


@pytest.mark.parametrize(
    "headers",
    [
        {},
        {"authorization": "Bearer sk_0123456789abcdef_" + "A" * 43},
        {"authorization": "Bearer not-a-key"},
        {"authorization": "Basic dXNlcjpwYXNz"},
        {"authorization": "Bearer"},
    ],
    ids=["missing", "unknown", "malformed", "basic", "empty"],
)
def test_requests_without_a_valid_key_are_401(
    server: RunningServer, headers: dict[str, str]
) -> None:
    response = _get(server, headers)
    assert response.status_code == 401
    body = response.json()
    assert body["issues"][0]["code"] == "unauthorized"
    assert body["requestId"] == response.headers["x-request-id"]
    assert response.headers["www-authenticate"] == "Bearer"


def test_a_tampered_secret_is_401(server: RunningServer, admin_key: str) -> None:
    tampered = admin_key[:-1] + ("A" if admin_key[-1] != "A" else "B")
    assert _get(server, {"authorization": f"Bearer {tampered}"}).status_code == 401
    assert _get(server, {"authorization": f"Bearer {admin_key}"}).status_code == 200


def test_a_revoked_key_is_401_from_its_next_request(server: RunningServer) -> None:
    key = server.key("soon-revoked", scope_all=True)
    with server.client(key) as client:
        client.agents.list()
        key_id = key.split("_")[1]
        server.server.database.write_sync(partial(revoke_key, key_id=key_id))
        with pytest.raises(ServiceAuthError):
            client.agents.list()


def test_creating_agents_needs_the_right_to(server: RunningServer, unique: str) -> None:
    with server.client(server.key("reader", scope_all=True)) as client:
        with pytest.raises(ServiceForbiddenError) as caught:
            client.agents.create({"name": "x", "slug": f"forbidden-{unique}"})
        assert caught.value.envelope["issues"][0]["code"] == "forbidden"


def test_keys_only_see_their_own_agents(server: RunningServer, unique: str) -> None:
    alice_key = server.key("alice", can_create_agents=True)
    bob_key = server.key("bob", can_create_agents=True)
    with server.client(alice_key) as alice, server.client(bob_key) as bob:
        mine = alice.agents.create({"name": "A", "slug": f"alice-{unique}"}).agent
        theirs = bob.agents.create({"name": "B", "slug": f"bob-{unique}"}).agent

        assert [a.id for a in alice.agents.list().data] == [mine.id]
        assert [a.id for a in bob.agents.list().data] == [theirs.id]
        assert alice.agents.list().total == 1
        for ref in (theirs.id, theirs.slug):
            with pytest.raises(ServiceNotFoundError):
                alice.agents.get(ref)
            with pytest.raises(ServiceNotFoundError):
                alice.agents.update(ref, {"name": "stolen"})
            with pytest.raises(ServiceNotFoundError):
                alice.agents.list_files(ref)
            with pytest.raises(ServiceNotFoundError):
                alice.agents.put_file(ref, {"content": "x"}, path="evil.txt")
        assert bob.agents.get(theirs.id).agent.name == "B"


def test_a_key_scoped_by_slug_sees_that_agent(
    server: RunningServer, admin: ServiceClient, unique: str
) -> None:
    agent = admin.agents.create({"name": "Shared", "slug": f"shared-{unique}"}).agent
    admin.agents.create({"name": "Private", "slug": f"private-{unique}"})

    with server.client(server.key("scoped", agents=(f"shared-{unique}",))) as scoped:
        assert [a.id for a in scoped.agents.list().data] == [agent.id]
        assert scoped.agents.get(agent.id).agent.slug == agent.slug
        with pytest.raises(ServiceNotFoundError):
            scoped.agents.get(f"private-{unique}")
        with pytest.raises(ServiceForbiddenError):
            scoped.agents.create({"name": "x", "slug": f"no-right-{unique}"})


def test_the_star_scope_sees_every_agent(
    server: RunningServer, admin: ServiceClient, unique: str
) -> None:
    with server.client(server.key("creator", can_create_agents=True)) as creator:
        agent = creator.agents.create({"name": "C", "slug": f"star-{unique}"}).agent
    assert admin.agents.get(agent.id).agent.id == agent.id
    assert agent.id in {a.id for a in admin.agents.list(search=f"star-{unique}").data}


def test_workflow_list_is_empty_and_lookups_are_404(admin: ServiceClient) -> None:
    page = admin.workflows.list(name="demo")  # other tests of the session create workflows
    assert (page.data, page.total) == ([], 0)
    with pytest.raises(ServiceNotFoundError):
        admin.workflows.get("demo")
