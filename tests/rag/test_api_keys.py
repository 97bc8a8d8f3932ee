"""API keys scoped to collections (``RAG_API_KEYS``), through a real HTTP server over the real
stack: 401 without a valid key, 403 for a collection the key may not use, and retrieval never
returns a chunk of a collection the key may not read."""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator

import httpx
import pytest

from handlers.common.settings import SettingsError
from handlers.rag.api_keys import ApiKeys
from handlers.rag.settings import Settings
from tests.rag.loopback import loopback_client
from tests.rag.stack import RagStack

TEAM = "team-key-0123456789"
ADMIN = "admin-key-0123456789"
KEYS = f"{TEAM}:default,legal ; {ADMIN}:*"


def bearer(key: str) -> dict[str, str]:
    return {"authorization": f"Bearer {key}"}


@pytest.fixture
async def http(stack: RagStack) -> AsyncIterator[httpx.AsyncClient]:
    stack.service.options = dataclasses.replace(stack.service.options, api_keys=ApiKeys.parse(KEYS))
    async with loopback_client(stack.app) as client:
        yield client


def test_the_setting_is_parsed_and_checked() -> None:
    assert Settings.from_env({}).api_key_scopes is None
    keys = Settings.from_env({"RAG_API_KEYS": KEYS}).api_key_scopes
    assert keys is not None
    team, admin = keys.scope(TEAM), keys.scope(ADMIN)
    assert team is not None and team.may_use("legal") and not team.may_use("hr")
    assert admin is not None and admin.may_use("hr")
    assert keys.scope("team-key-012345678") is None
    for bad in ("short:default", f"{TEAM}", f"{TEAM}:Bad", f"{TEAM}:a {TEAM}:b", "k'ey" * 8 + ":a"):
        with pytest.raises(SettingsError, match="RAG_API_KEYS"):
            Settings.from_env({"RAG_API_KEYS": bad})


async def test_keys_scope_every_operation(http: httpx.AsyncClient) -> None:
    assert (await http.get("/health")).status_code in (200, 503)  # open to all
    missing = await http.get("/documents")
    assert missing.status_code == 401 and missing.headers["www-authenticate"] == "Bearer"
    assert (await http.get("/documents", headers=bearer("wrong-key-0123456789"))).status_code == 401
    assert (await http.get("/documents", headers={"authorization": TEAM})).status_code == 401

    for collection, key in (("legal", TEAM), ("hr", ADMIN)):
        stored = await http.post(
            "/uploadDocument",
            files={"file": (f"{collection}.txt", b"Salaries are reviewed every spring.")},
            data={"collection": collection},
            headers=bearer(key),
        )
        assert stored.status_code == 200, stored.text
    hr_id = stored.json()["document_id"]
    refused = await http.post(
        "/uploadDocument",
        files={"file": ("x.txt", b"words")},
        data={"collection": "hr"},
        headers=bearer(TEAM),
    )
    assert refused.status_code == 403

    search = {"content": "salaries", "num_docs": 10}
    team_hits = await http.post("/documentSearch", json=search, headers=bearer(TEAM))
    assert team_hits.status_code == 200 and team_hits.json() == []  # nothing in default
    legal = await http.post(
        "/documentSearch", json={**search, "collection": "legal"}, headers=bearer(TEAM)
    )
    assert {hit["collection"] for hit in legal.json()} == {"legal"}
    hr = await http.post(
        "/documentSearch", json={**search, "collection": "hr"}, headers=bearer(TEAM)
    )
    assert hr.status_code == 403
    answer = await http.post(
        "/generate",
        json={"question": "salaries?", "context": "", "collection": "hr"},
        headers=bearer(TEAM),
    )
    assert answer.status_code == 403
    listed = await http.get("/documents", params={"collection": "hr"}, headers=bearer(TEAM))
    assert listed.status_code == 403
    assert (await http.delete(f"/documents/{hr_id}", headers=bearer(TEAM))).status_code == 403
    assert (await http.delete(f"/documents/{hr_id}", headers=bearer(ADMIN))).status_code == 204

    job = await http.post(
        "/ingestionJobs",
        files={"file1": ("a.txt", b"words")},
        data={"collection": "hr"},
        headers=bearer(ADMIN),
    )
    assert job.status_code == 202
    job_id = job.json()["job_id"]
    assert (await http.get(f"/ingestionJobs/{job_id}", headers=bearer(TEAM))).status_code == 403
    assert (await http.get("/ingestionJobs", headers=bearer(TEAM))).json() == []
    admin_jobs = (await http.get("/ingestionJobs", headers=bearer(ADMIN))).json()
    assert [item["job_id"] for item in admin_jobs] == [job_id]
