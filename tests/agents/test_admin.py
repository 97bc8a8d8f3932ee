"""``agents-admin`` as a subprocess: create, list and revoke keys the server then honours."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable

import pytest

from generated.agents.client import ServiceAuthError, ServiceForbiddenError, ServiceNotFoundError
from tests.agents.support import Storage, running

TIMEOUT_SECONDS = 60


def _admin(storage: Storage, *args: str) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "AGENTS_DATA_DIR": str(storage.data_dir),
        "AGENTS_DATABASE_URL": storage.database_url,
    }
    return subprocess.run(
        [sys.executable, "-m", "handlers.agents.admin", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=TIMEOUT_SECONDS,
        check=False,
    )


def _fields(output: str) -> dict[str, str]:
    return dict(line.split(": ", 1) for line in output.splitlines() if ": " in line)


def test_create_list_and_revoke_keys(new_storage: Callable[[], Storage]) -> None:
    storage = new_storage()
    created = _admin(storage, "create-key", "--name", "ci", "--scope", "*", "--can-create")
    assert created.returncode == 0, created.stderr
    fields = _fields(created.stdout)
    assert fields["name"] == "ci" and fields["scope"] == "*"
    assert fields["secret"].startswith(f"sk_{fields['id']}_")
    assert "not shown again" in created.stderr

    scoped = _admin(storage, "create-key", "--name", "team", "--agent", "only-this")
    assert scoped.returncode == 0, scoped.stderr
    scoped_fields = _fields(scoped.stdout)

    listed = _admin(storage, "list-keys")
    assert listed.returncode == 0, listed.stderr
    rows = [line.split("\t") for line in listed.stdout.splitlines()[1:]]
    assert [(row[0], row[1], row[2], row[3]) for row in rows] == [
        (fields["id"], "ci", "*", "yes"),
        (scoped_fields["id"], "team", "agents: only-this", "no"),
    ]
    assert fields["secret"] not in listed.stdout

    with running(storage) as server:
        with server.client(fields["secret"]) as client:
            client.agents.create({"name": "Only", "slug": "only-this"})
            client.agents.create({"name": "Other", "slug": "other"})
        with server.client(scoped_fields["secret"]) as client:
            assert [a.slug for a in client.agents.list().data] == ["only-this"]
            with pytest.raises(ServiceNotFoundError):
                client.agents.get("other")
            with pytest.raises(ServiceForbiddenError):
                client.agents.create({"name": "New", "slug": "new"})

        revoked = _admin(storage, "revoke-key", scoped_fields["id"])
        assert revoked.returncode == 0, revoked.stderr
        assert revoked.stdout.startswith(f"revoked {scoped_fields['id']}")
        with server.client(scoped_fields["secret"]) as client, pytest.raises(ServiceAuthError):
            client.agents.list()

    again = _admin(storage, "revoke-key", scoped_fields["id"])
    assert again.returncode == 0  # idempotent
    listed = _admin(storage, "list-keys")
    assert listed.stdout.splitlines()[2].split("\t")[5] != "-"


def test_bad_invocations_fail_clearly(tmp_path_factory: pytest.TempPathFactory) -> None:
    data_dir = tmp_path_factory.mktemp("admin")
    storage = Storage(data_dir, f"sqlite:///{data_dir / 'agents.db'}")

    unknown = _admin(storage, "revoke-key", "0123456789abcdef")
    assert unknown.returncode == 1 and "no key with id" in unknown.stderr
    no_scope = _admin(storage, "create-key", "--name", "x")
    assert no_scope.returncode == 2 and "needs a scope" in no_scope.stderr
    bad_ref = _admin(storage, "create-key", "--name", "x", "--agent", "../etc")
    assert bad_ref.returncode == 2 and "not an id or slug" in bad_ref.stderr
    both = _admin(storage, "create-key", "--name", "x", "--scope", "*", "--agent", "a")
    assert both.returncode == 2
