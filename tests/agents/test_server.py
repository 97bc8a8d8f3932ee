"""The server process: persistence across restarts, the entry point, its settings."""

from __future__ import annotations

import base64
import os
import re
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest

from handlers.agents.settings import Settings, SettingsError
from tests.agents.support import Storage, file_bytes, running, workspace_file


def test_everything_survives_a_restart(new_storage: Callable[[], Storage]) -> None:
    storage = new_storage()
    blob = bytes(range(256)) * 3
    with running(storage) as first:
        key = first.key("persist", scope_all=True, can_create_agents=True)
        scoped = first.key("scoped", can_create_agents=True)
        with first.client(key) as client:
            agent = client.agents.create(
                {"name": "Persisted", "slug": "persisted", "description": "kept"}
            ).agent
            client.agents.put_file(
                agent.id, {"contentBase64": base64.b64encode(blob).decode()}, path="data/b.bin"
            )
            client.agents.update(agent.id, {"config": {"entrypoint": ["python", "x.py"]}})
            before = client.agents.get(agent.id, include=["files"])
        with first.client(scoped) as client:
            own = client.agents.create({"name": "Own", "slug": "own"}).agent

    with running(storage) as second:
        with second.client(key) as client:
            after = client.agents.get("persisted", include=["files"])
            assert after == before
            assert file_bytes(workspace_file(client, agent.id, "data/b.bin")) == blob
        with second.client(scoped) as client:
            assert [a.id for a in client.agents.list().data] == [own.id]


def test_agents_server_entry_point_announces_its_url_and_serves(tmp_path: Path) -> None:
    env = {
        **os.environ,
        "AGENTS_PORT": "0",
        "AGENTS_DATA_DIR": str(tmp_path / "data"),
        "LOG_LEVEL": "debug",
    }
    env.pop("AGENTS_DATABASE_URL", None)
    process = subprocess.Popen(
        [sys.executable, "-m", "handlers.agents.server"],
        env=env,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stderr is not None
        deadline = time.monotonic() + 30
        url = None
        lines = []
        while url is None and time.monotonic() < deadline:
            line = process.stderr.readline()
            if not line:
                break
            lines.append(line)
            if "agents-server listening on " in line:
                url = line.split("listening on ", 1)[1].split()[0]
        assert url is not None and url.startswith("http://127.0.0.1:")
        # startup's heap is out of the garbage collector's scans before the first request
        (frozen,) = re.findall(r"startup heap frozen: (\d+) objects", "".join(lines))
        assert int(frozen) > 50_000
        assert (tmp_path / "data" / "agents.db").is_file()
        response = httpx.get(url + "/api/v1/agents", timeout=10)
        while response.status_code != 401 and time.monotonic() < deadline:
            response = httpx.get(url + "/api/v1/agents", timeout=10)
        assert response.status_code == 401
    finally:
        process.terminate()
        process.wait(timeout=30)
        if process.stderr is not None:
            process.stderr.close()


def test_several_server_processes_share_one_port_and_stop_together(
    postgres_storage: Storage,
) -> None:
    env = {
        **os.environ,
        "AGENTS_PORT": "0",
        "AGENTS_DATA_DIR": str(postgres_storage.data_dir),
        "AGENTS_DATABASE_URL": postgres_storage.database_url,
        "AGENTS_SERVER_PROCESSES": "2",
        "AGENTS_EMBEDDED_WORKER": "false",
    }
    process = subprocess.Popen(
        [sys.executable, "-m", "handlers.agents.server"],
        env=env,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stderr is not None
        deadline = time.monotonic() + 60
        urls: list[str] = []
        children: list[int] = []
        while (len(urls) < 2 or not children) and time.monotonic() < deadline:
            line = process.stderr.readline()
            if not line:
                break
            if "agents-server listening on " in line:
                urls.append(line.split("listening on ", 1)[1].split()[0])
            found = re.search(r"agents-server: 2 processes \(pids ([0-9, ]+)\)", line)
            if found:
                children = [int(pid) for pid in found.group(1).split(", ")]
        # both processes announce the one URL the parent bound
        assert len(urls) == 2 and len(set(urls)) == 1 and len(children) == 2, (urls, children)
        url = urls[0]
        answers = {httpx.get(url + "/api/v1/agents", timeout=10).status_code for _ in range(20)}
        assert answers == {401}
    finally:
        process.terminate()
        assert process.wait(timeout=30) == 0
        if process.stderr is not None:
            process.stderr.close()
    for pid in children:  # the parent passed SIGTERM on and waited for both
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)


def test_settings_from_the_environment() -> None:
    settings = Settings.from_env({})
    assert (settings.host, settings.port, settings.log_level) == ("127.0.0.1", 8090, "INFO")
    assert settings.effective_database_url.startswith("sqlite:///")
    assert settings.effective_database_url.endswith("/.data/agents/agents.db")
    custom = Settings.from_env(
        {
            "AGENTS_HOST": "0.0.0.0",
            "AGENTS_PORT": "9000",
            "AGENTS_DATA_DIR": "/srv/agents",
            "AGENTS_DATABASE_URL": "postgresql://u@db/agents",
            "LOG_LEVEL": "debug",
        }
    )
    assert custom == Settings(
        host="0.0.0.0",
        port=9000,
        data_dir=Path("/srv/agents"),
        database_url="postgresql://u@db/agents",
        log_level="DEBUG",
    )
    assert custom.effective_database_url == "postgresql://u@db/agents"
    assert custom.blob_dir == Path("/srv/agents/blobs")


@pytest.mark.parametrize(
    ("env", "named"),
    [
        ({"AGENTS_PORT": "http"}, "AGENTS_PORT"),
        ({"AGENTS_PORT": "70000"}, "AGENTS_PORT"),
        ({"LOG_LEVEL": "loud"}, "LOG_LEVEL"),
        ({"AGENTS_DATABASE_URL": "mysql://x"}, "AGENTS_DATABASE_URL"),
    ],
)
def test_invalid_settings_name_the_variable(env: dict[str, str], named: str) -> None:
    with pytest.raises(SettingsError, match=named):
        Settings.from_env(env)
