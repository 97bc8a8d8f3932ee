"""Collections, metadata, filters and search modes through a real HTTP server (uvicorn on
loopback) over the real stack (MiniLM, LanceDB, a tiny generator)."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from tests.rag.loopback import loopback_client
from tests.rag.stack import RagStack

REFUNDS = "Annual plans can be refunded in full within 30 days of purchase."
SHIPPING = "Parcels ship worldwide within five working days; express takes two days."


@pytest.fixture
async def http(stack: RagStack) -> AsyncIterator[httpx.AsyncClient]:
    async with loopback_client(stack.app) as client:
        yield client


async def upload(client: httpx.AsyncClient, name: str, text: str, **fields: str) -> httpx.Response:
    return await client.post("/uploadDocument", files={"file": (name, text.encode())}, data=fields)


async def search(client: httpx.AsyncClient, **body: Any) -> list[dict[str, Any]]:
    response = await client.post("/documentSearch", json={"content": "refund", **body})
    assert response.status_code == 200, response.text
    results: list[dict[str, Any]] = response.json()
    return results


async def test_documents_live_in_collections_with_metadata(http: httpx.AsyncClient) -> None:
    seed = await upload(http, "refunds.txt", REFUNDS)
    assert seed.status_code == 200, seed.text
    legal = await upload(
        http,
        "refunds.txt",
        REFUNDS,
        collection="legal",
        metadata=json.dumps({"year": 2024, "tags": ["policy"], "public": True}),
    )
    assert legal.status_code == 200, legal.text
    other = await upload(
        http, "shipping.txt", SHIPPING, collection="legal", metadata='{"year": 2019}'
    )
    assert other.status_code == 200

    # the seed's request shapes are unchanged: the default collection
    default_hits = await search(http)
    assert {hit["document_id"] for hit in default_hits} == {seed.json()["document_id"]}
    assert default_hits[0]["collection"] == "default"
    listed = (await http.get("/documents")).json()
    assert [(d["filename"], d["collection"], d["metadata"]) for d in listed] == [
        ("refunds.txt", "default", {})
    ]
    legal_docs = (await http.get("/documents", params={"collection": "legal"})).json()
    assert {d["filename"] for d in legal_docs} == {"refunds.txt", "shipping.txt"}

    hits = await search(http, collection="legal", filter={"year": {"$gte": 2020}}, num_docs=10)
    assert {hit["document_id"] for hit in hits} == {legal.json()["document_id"]}
    assert hits[0]["metadata"] == {"year": 2024, "tags": ["policy"], "public": True}
    either = {"$or": [{"tags": "policy"}, {"year": {"$in": [2019]}}]}
    assert (
        len({h["document_id"] for h in await search(http, collection="legal", filter=either)}) == 2
    )
    assert await search(http, collection="legal", filter={"public": False}) == []
    for mode in ("vector", "text", "hybrid"):
        assert await search(http, collection="legal", mode=mode, num_docs=1)

    answer = await http.post(
        "/generate",
        headers={"accept": "text/event-stream"},
        json={
            "question": "Can annual plans be refunded?",
            "context": "",
            "num_tokens": 4,
            "collection": "legal",
            "filter": {"year": 2019},
        },
    )
    assert answer.status_code == 200
    done = answer.text.split("event: done\ndata: ")[1]
    sources = json.loads(done)["sources"]
    assert {s["document_id"] for s in sources} == {other.json()["document_id"]}

    assert (await http.delete(f"/documents/{legal.json()['document_id']}")).status_code == 204
    assert len((await http.get("/documents", params={"collection": "legal"})).json()) == 1


async def test_ingestion_jobs_take_a_collection_and_metadata(http: httpx.AsyncClient) -> None:
    response = await http.post(
        "/ingestionJobs",
        files={"file1": ("a.txt", REFUNDS.encode()), "file2": ("b.txt", SHIPPING.encode())},
        data={"collection": "jobs", "metadata": '{"batch": 7}'},
    )
    assert response.status_code == 202, response.text
    job_id = response.json()["job_id"]

    deadline = time.monotonic() + 60
    while (job := (await http.get(f"/ingestionJobs/{job_id}")).json())["state"] != "succeeded":
        assert job["state"] in ("queued", "running") and time.monotonic() < deadline, job
        await asyncio.sleep(0.1)
    documents = (await http.get("/documents", params={"collection": "jobs"})).json()
    assert sorted((d["filename"], d["metadata"]["batch"]) for d in documents) == [
        ("a.txt", 7),
        ("b.txt", 7),
    ]
    assert len(await search(http, collection="jobs", filter={"batch": 7}, num_docs=10)) == 2


@pytest.mark.parametrize(
    ("request_body", "loc"),
    [
        ({"filter": {"year": {"$regex": "x"}}}, ["body", "filter", "year", "$regex"]),
        (
            {"filter": {"$or": [{"a": 1}, {"b": {"$in": [{}]}}]}},
            ["body", "filter", "$or", 1, "b", "$in", 0],
        ),
        ({"filter": {"k'; --": 1}}, ["body", "filter", "k'; --"]),
        ({"collection": "Not Valid"}, ["body", "collection"]),
        ({"mode": "fuzzy"}, ["body", "mode"]),
    ],
)
async def test_bad_retrieval_fields_are_422s(
    http: httpx.AsyncClient, request_body: dict[str, Any], loc: list[Any]
) -> None:
    response = await http.post("/documentSearch", json={"content": "x", **request_body})
    assert response.status_code == 422, response.text
    assert response.json()["detail"][0]["loc"] == loc


@pytest.mark.parametrize(
    ("fields", "loc"),
    [
        ({"metadata": '{"a": {"nested": 1}}'}, ["body", "metadata"]),
        ({"metadata": "not json"}, ["body", "metadata"]),
        ({"collection": "UPPER"}, ["body", "collection"]),
        ({"collection": "a'b"}, ["body", "collection"]),
    ],
)
async def test_bad_upload_fields_are_422s(
    http: httpx.AsyncClient, fields: dict[str, str], loc: list[str]
) -> None:
    response = await upload(http, "a.txt", REFUNDS, **fields)
    assert response.status_code == 422, response.text
    assert response.json()["detail"][0]["loc"] == loc
    assert (await http.get("/documents")).json() == []
