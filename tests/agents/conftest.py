"""Fixtures of the agents service tests: every server test runs on SQLite and on PostgreSQL."""

from __future__ import annotations

import secrets
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from generated.agents.client import ServiceClient
from tests.agents.support import (
    PostgresDatabases,
    RunningServer,
    Storage,
    postgres_unreachable_reason,
    running,
)

BACKENDS = ["sqlite", "postgresql"]


@pytest.fixture(scope="session")
def postgres_databases() -> Iterator[PostgresDatabases]:
    reason = postgres_unreachable_reason()
    if reason is not None:
        pytest.skip(reason)
    databases = PostgresDatabases()
    yield databases
    databases.drop_all()


@pytest.fixture(scope="session", params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture(scope="session")
def new_storage(
    backend: str, tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest
) -> Callable[[], Storage]:
    """Makes empty storage (a data directory and a fresh database) of the backend."""

    def make() -> Storage:
        data_dir = tmp_path_factory.mktemp("agents")
        if backend == "sqlite":
            return Storage(data_dir, f"sqlite:///{data_dir / 'agents.db'}")
        databases: PostgresDatabases = request.getfixturevalue("postgres_databases")
        return Storage(data_dir, databases.create())

    return make


@pytest.fixture(scope="session")
def server(new_storage: Callable[[], Storage]) -> Iterator[RunningServer]:
    """One server per backend, shared by the tests (each test uses its own names)."""
    with running(new_storage()) as running_server:
        yield running_server


@pytest.fixture(scope="session")
def admin_key(server: RunningServer) -> str:
    return server.key("admin", scope_all=True, can_create_agents=True)


@pytest.fixture
def admin(server: RunningServer, admin_key: str) -> Iterator[ServiceClient]:
    with server.client(admin_key) as client:
        yield client


@pytest.fixture
def unique() -> str:
    """A short random token to keep names of one test apart from the others'."""
    return secrets.token_hex(4)


@pytest.fixture
def postgres_storage(postgres_databases: PostgresDatabases, tmp_path: Path) -> Storage:
    """A fresh PostgreSQL database (skipped when PostgreSQL is unreachable): agents-worker
    processes need one, so the tests using it do not run on the SQLite backend at all."""
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    return Storage(data_dir, postgres_databases.create())
