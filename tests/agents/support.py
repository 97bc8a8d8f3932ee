"""Test support: the agents server on a free loopback port, fresh databases, keys."""

from __future__ import annotations

import asyncio
import base64
import secrets
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import psycopg
from psycopg import sql

from generated.agents import models
from generated.agents.client import ServiceClient
from handlers.agents.domain.keys import create_key
from handlers.agents.server import AgentsServer
from handlers.agents.settings import Settings

POSTGRES = "host=127.0.0.1 port=5432 user=postgres dbname=postgres connect_timeout=3"
START_TIMEOUT_SECONDS = 20.0


def postgres_unreachable_reason() -> str | None:
    """Why PostgreSQL cannot be used, or ``None`` when it can."""
    try:
        with psycopg.connect(POSTGRES):
            return None
    except psycopg.Error as error:
        return f"PostgreSQL is not reachable on 127.0.0.1:5432 as postgres: {error}"


class PostgresDatabases:
    """Fresh databases (``agents_test_<random>``) dropped by :meth:`drop_all`."""

    def __init__(self) -> None:
        self.names: list[str] = []

    def create(self) -> str:
        """A new empty database; its SQLAlchemy URL."""
        name = f"agents_test_{secrets.token_hex(6)}"
        with psycopg.connect(POSTGRES, autocommit=True) as connection:
            connection.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
        self.names.append(name)
        return f"postgresql+psycopg://postgres@127.0.0.1:5432/{name}"

    def drop_all(self) -> None:
        with psycopg.connect(POSTGRES, autocommit=True) as connection:
            for name in self.names:
                connection.execute(
                    sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
                )
        self.names.clear()


@dataclass
class Storage:
    """Where a server keeps its data: a data directory and a database URL."""

    data_dir: Path
    database_url: str

    def settings(self) -> Settings:
        return Settings(
            host="127.0.0.1", port=0, data_dir=self.data_dir, database_url=self.database_url
        )


class RunningServer:
    """An :class:`AgentsServer` serving in a background thread."""

    def __init__(self, storage: Storage) -> None:
        self.storage = storage
        self.server = AgentsServer(storage.settings())
        self.thread = threading.Thread(target=lambda: asyncio.run(self.server.serve()))
        self.thread.start()
        deadline = time.monotonic() + START_TIMEOUT_SECONDS
        while not self.server.started:
            if not self.thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("the agents server did not start")
            time.sleep(0.01)

    @property
    def url(self) -> str:
        return self.server.url

    def key(
        self,
        name: str = "test",
        *,
        scope_all: bool = False,
        agents: tuple[str, ...] = (),
        can_create_agents: bool = False,
    ) -> str:
        """A new API key's secret, issued directly on the server's database."""
        issued = self.server.database.write_sync(
            partial(
                create_key,
                name=name,
                scope_all=scope_all,
                agents=agents,
                can_create_agents=can_create_agents,
            )
        )
        return issued.secret

    def client(self, api_key: str) -> ServiceClient:
        return ServiceClient(api_key=api_key, base_url=self.url, timeout_seconds=30.0)

    def stop(self) -> None:
        self.server.stop()
        self.thread.join(timeout=30)
        if self.thread.is_alive():
            raise RuntimeError("the agents server did not stop")


def workspace_listing(
    client: ServiceClient, agent: str, prefix: str | None = None
) -> list[models.AgentFileEntry]:
    """The agent's workspace files (under ``prefix``), through the generated client."""
    answer = client.agents.list_files(agent, prefix=prefix).root
    assert isinstance(answer, models.ListAgentFilesResponse), answer
    return answer.files


def workspace_file(
    client: ServiceClient, agent: str, path: str, prefix: str | None = None
) -> models.AgentFileContent:
    """One workspace file with its content, through the generated client."""
    answer = client.agents.list_files(agent, path=path, prefix=prefix).root
    assert isinstance(answer, models.AgentFileContent), answer
    return answer


def file_bytes(file: models.AgentFileContent) -> bytes:
    """The bytes of a workspace file answer (``content`` or ``contentBase64``)."""
    if isinstance(file.content, str):
        assert not isinstance(file.content_base64, str), "both content and contentBase64"
        return file.content.encode()
    assert isinstance(file.content_base64, str), "neither content nor contentBase64"
    return base64.b64decode(file.content_base64)


@contextmanager
def running(storage: Storage) -> Iterator[RunningServer]:
    """A server on ``storage`` for the duration of the block."""
    server = RunningServer(storage)
    try:
        yield server
    finally:
        server.stop()
