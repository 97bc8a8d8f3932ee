"""Fixtures of the real-SDK tests: an ``EigenpalClient`` on the shared server (one per backend),
a shared worker agent, a server that runs nothing itself (its executions stay queued), and the
cancelling of long executions a test leaves behind."""

from __future__ import annotations

import secrets
from collections.abc import Callable, Iterator

import httpx
import pytest
from eigenpal import EigenpalClient

from tests.agents.real_sdk.sdk_support import Leftovers, new_agent
from tests.agents.run_support import tuned_server
from tests.agents.support import RunningServer, Storage

UNFINISHED = "created,pending,running,waiting,finalizing"


@pytest.fixture(scope="session")
def sdk(server: RunningServer, admin_key: str) -> Iterator[EigenpalClient]:
    """The SDK as a user makes it: an admin key and the server's URL as ``base_url``."""
    with EigenpalClient(api_key=admin_key, base_url=server.url) as client:
        yield client


@pytest.fixture(scope="session")
def worker_agent(sdk: EigenpalClient) -> str:
    """The slug of an agent running ``WORKER_AGENT``, shared by the tests that only need some
    execution of it (those counting executions make their own)."""
    return new_agent(sdk, f"shared-{secrets.token_hex(4)}")


@pytest.fixture(scope="session")
def queued_server(new_storage: Callable[[], Storage]) -> Iterator[RunningServer]:
    """A server without its embedded worker: what it is asked to run stays pending."""
    with tuned_server(new_storage(), embedded_worker=False) as server:
        yield server


@pytest.fixture(scope="session")
def queued_key(queued_server: RunningServer) -> str:
    return queued_server.key("queued", scope_all=True, can_create_agents=True)


@pytest.fixture(scope="session")
def queued_sdk(queued_server: RunningServer, queued_key: str) -> Iterator[EigenpalClient]:
    with EigenpalClient(api_key=queued_key, base_url=queued_server.url) as client:
        yield client


@pytest.fixture
def leftovers(server: RunningServer, admin_key: str) -> Iterator[Leftovers]:
    registry = Leftovers()
    yield registry
    headers = {"authorization": f"Bearer {admin_key}"}
    with httpx.Client(base_url=server.url, headers=headers, timeout=30.0) as http:
        for workflow_id in registry.workflows:
            listed = http.get(
                f"/api/v1/workflows/{workflow_id}/executions", params={"status": UNFINISHED}
            )
            listed.raise_for_status()
            for execution in listed.json()["data"]:
                http.post(f"/api/v1/workflows/executions/{execution['id']}/cancel")
        for execution_id in registry.agent_executions:
            http.post(f"/api/v1/agents/executions/{execution_id}/cancel")
