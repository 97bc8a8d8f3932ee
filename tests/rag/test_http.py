"""The rag API over the real stack (MiniLM, LanceDB, a tiny transformers model), in-process:
uploads of every format, replacement, search, listing, deletion, every 422 and the 413, and
the answers' content in both framings."""

from __future__ import annotations

import json
import logging
import re
from typing import Any

import httpx
import pytest
from transformers import AutoTokenizer

from generated.rag import models
from handlers.rag.generation.prompt import NO_DOCUMENTS_ANSWER
from tests.rag.ingest.files import make_docx, make_pdf
from tests.rag.stack import RagStack, build_stack

REFUNDS = (
    "Annual plans can be refunded in full within 30 days of purchase. After 30 days, "
    "refunds are prorated for the unused months of the plan."
)
SHIPPING = "Parcels ship worldwide within five working days; express delivery takes two days."
GARDEN = "Tomatoes need six hours of sunlight a day and regular watering in dry weather."


async def upload(client: httpx.AsyncClient, name: str, data: bytes) -> dict[str, Any]:
    response = await client.post("/uploadDocument", files={"file": (name, data)})
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


async def search(client: httpx.AsyncClient, text: str, num_docs: int = 4) -> list[dict[str, Any]]:
    response = await client.post("/documentSearch", json={"content": text, "num_docs": num_docs})
    assert response.status_code == 200, response.text
    results: list[dict[str, Any]] = response.json()
    return results


def sse_frames(text: str) -> list[tuple[str, dict[str, Any]]]:
    """(event, data) of each frame of a text/event-stream body; event ``message`` when unnamed."""
    frames = []
    assert text.endswith("\n\n"), text
    for block in text[:-2].split("\n\n"):
        event, data = "message", None
        for line in block.split("\n"):
            field, _, value = line.partition(": ")
            if field == "event":
                event = value
            elif field == "data":
                data = json.loads(value)
            else:
                raise AssertionError(f"unexpected line {line!r}")
        assert data is not None
        frames.append((event, data))
    return frames


FORMATS = [
    ("notes.txt", REFUNDS.encode()),
    ("notes.md", f"# Refunds\n\n{REFUNDS}\n".encode()),
    ("notes.html", f"<html><body><h1>Refunds</h1><p>{REFUNDS}</p></body></html>".encode()),
    ("notes.csv", f'topic,text\nrefunds,"{REFUNDS}"\n'.encode()),
    ("notes.json", json.dumps({"topic": "refunds", "text": REFUNDS}).encode()),
    ("notes.docx", make_docx(["Refunds", REFUNDS])),
]


@pytest.mark.parametrize(("name", "data"), FORMATS, ids=[name for name, _ in FORMATS])
async def test_each_format_is_stored_and_found(
    client: httpx.AsyncClient, name: str, data: bytes
) -> None:
    stored = await upload(client, name, data)
    assert stored["filename"] == name
    assert stored["chunks"] >= 1
    assert stored["message"] == "File uploaded successfully"
    [best] = await search(client, "refund within 30 days", num_docs=1)
    assert best["document_id"] == stored["document_id"]
    assert best["source"] == name
    assert "30 days" in best["content"]
    assert best["page"] is None


async def test_pdf_pages_are_kept(client: httpx.AsyncClient) -> None:
    stored = await upload(client, "manual.pdf", make_pdf([SHIPPING, GARDEN]))
    assert stored["chunks"] == 2
    hits = await search(client, "tomatoes sunlight watering", num_docs=2)
    assert [(hit["page"], hit["chunk"]) for hit in hits] == [(2, 1), (1, 0)]
    assert all(hit["source"] == "manual.pdf" for hit in hits)


@pytest.mark.parametrize(
    ("uploaded", "stored"),
    [("../a/b.txt", "b.txt"), ("C:\\docs\\c.txt", "c.txt"), ("d e.txt", "d e.txt")],
)
async def test_only_the_last_path_segment_is_kept(
    client: httpx.AsyncClient, uploaded: str, stored: str
) -> None:
    assert (await upload(client, uploaded, GARDEN.encode()))["filename"] == stored
    [listed] = (await client.get("/documents")).json()
    assert listed["filename"] == stored


async def test_same_filename_replaces_the_document(client: httpx.AsyncClient) -> None:
    old = await upload(client, "policy.txt", SHIPPING.encode())
    other = await upload(client, "garden.txt", GARDEN.encode())
    new = await upload(client, "policy.txt", REFUNDS.encode())
    assert new["document_id"] != old["document_id"]
    listed = (await client.get("/documents")).json()
    assert [(d["document_id"], d["filename"]) for d in listed] == [
        (new["document_id"], "policy.txt"),
        (other["document_id"], "garden.txt"),
    ]
    hits = await search(client, "parcels ship worldwide express delivery", num_docs=10)
    assert {hit["document_id"] for hit in hits} == {new["document_id"], other["document_id"]}
    assert all("Parcels" not in hit["content"] for hit in hits)


async def test_search_is_best_first_and_names_each_chunks_own_source(
    client: httpx.AsyncClient,
) -> None:
    shipping = await upload(client, "shipping.txt", SHIPPING.encode())
    garden = await upload(client, "garden.md", GARDEN.encode())
    refunds = await upload(client, "refunds.txt", REFUNDS.encode())
    hits = await search(client, "how long does express delivery of a parcel take", num_docs=3)
    for hit in hits:
        models.SearchResult.model_validate(hit)
    assert hits[0]["document_id"] == shipping["document_id"]
    scores = [hit["score"] for hit in hits]
    assert scores == sorted(scores, reverse=True)
    names = {
        shipping["document_id"]: "shipping.txt",
        garden["document_id"]: "garden.md",
        refunds["document_id"]: "refunds.txt",
    }
    assert {hit["document_id"] for hit in hits} == set(names)
    assert all(hit["source"] == names[hit["document_id"]] for hit in hits)
    assert len(await search(client, "delivery", num_docs=2)) == 2


async def test_search_of_an_empty_store_is_empty(client: httpx.AsyncClient) -> None:
    assert await search(client, "anything") == []


async def test_delete_removes_the_document_and_its_chunks(client: httpx.AsyncClient) -> None:
    stored = await upload(client, "refunds.txt", REFUNDS.encode())
    kept = await upload(client, "garden.txt", GARDEN.encode())
    response = await client.delete(f"/documents/{stored['document_id']}")
    assert response.status_code == 204
    assert response.content == b""
    assert [d["document_id"] for d in (await client.get("/documents")).json()] == [
        kept["document_id"]
    ]
    hits = await search(client, "refund within 30 days", num_docs=10)
    assert [hit["document_id"] for hit in hits] == [kept["document_id"]]
    again = await client.delete(f"/documents/{stored['document_id']}")
    assert (again.status_code, again.json()) == (404, {"detail": "Not Found"})


def file_error(message: str) -> dict[str, Any]:
    return {
        "detail": [{"type": "value_error", "loc": ["body", "file"], "msg": message, "input": None}]
    }


def raw_part(filename: str, data: bytes) -> tuple[bytes, dict[str, str]]:
    body = (
        b'--B\r\nContent-Disposition: form-data; name="file"; filename="'
        + filename.encode()
        + b'"\r\nContent-Type: application/octet-stream\r\n\r\n'
        + data
        + b"\r\n--B--\r\n"
    )
    return body, {"content-type": "multipart/form-data; boundary=B"}


async def test_rejected_uploads_are_422_at_the_file(client: httpx.AsyncClient) -> None:
    cases: list[tuple[dict[str, Any], dict[str, Any]]] = [
        (
            {"data": {"other": "x"}, "files": {"x": ("x.txt", b"x")}},
            {
                "detail": [
                    {
                        "type": "extra_forbidden",
                        "loc": ["body", "other"],
                        "msg": "Extra inputs are not permitted",
                        "input": "x",
                    },
                    {
                        "type": "extra_forbidden",
                        "loc": ["body", "x"],
                        "msg": "Extra inputs are not permitted",
                        "input": "x.txt",
                    },
                    {
                        "type": "missing",
                        "loc": ["body", "file"],
                        "msg": "Field required",
                        "input": None,
                    },
                ]
            },
        ),
        (
            {"files": {"file": ("empty.txt", b"")}},
            file_error("Value error, 'empty.txt' contains no text (the file is empty)"),
        ),
        (
            {"files": {"file": ("blank.md", b" \n\n \t")}},
            file_error("Value error, 'blank.md' contains no text"),
        ),
        (
            {"files": {"file": ("tool.exe", b"MZ\x90\x00")}},
            file_error(
                "Value error, Unsupported file type '.exe'; supported: .csv, .docx, .htm, "
                ".html, .json, .markdown, .md, .pdf, .txt"
            ),
        ),
        (
            {"files": {"file": ("latin.txt", "café crème".encode("latin-1"))}},
            file_error(
                "Value error, 'latin.txt' is not valid UTF-8 text (invalid byte at offset 3); "
                "save it as UTF-8 and upload it again"
            ),
        ),
    ]
    for request, expected in cases:
        response = await client.post("/uploadDocument", **request)
        assert (response.status_code, response.json()) == (422, expected), request
    body, headers = raw_part("", b"some text")
    response = await client.post("/uploadDocument", content=body, headers=headers)
    assert (response.status_code, response.json()) == (
        422,
        file_error("Value error, The file has no name"),
    )
    assert (await client.get("/documents")).json() == []


async def test_a_broken_pdf_is_422(client: httpx.AsyncClient) -> None:
    response = await client.post("/uploadDocument", files={"file": ("x.pdf", b"%PDF-1.4 junk")})
    assert response.status_code == 422
    [item] = response.json()["detail"]
    assert (item["loc"], item["type"]) == (["body", "file"], "value_error")
    assert "x.pdf" in item["msg"]


async def test_a_file_over_the_limit_is_413_and_nothing_is_stored(
    tmp_path: Any, minilm: Any, tiny_model: Any
) -> None:
    stack: RagStack = build_stack(
        tmp_path / "data", minilm=minilm, generator_model=tiny_model, max_upload_bytes=1000
    )
    transport = httpx.ASGITransport(app=stack.app)
    try:
        async with httpx.AsyncClient(transport=transport, base_url="http://rag.test") as client:
            at_limit = await client.post("/uploadDocument", files={"file": ("a.txt", b"a " * 500)})
            assert at_limit.status_code == 200
            for size in (1001, 200_000):  # within the multipart allowance, and far beyond it
                response = await client.post(
                    "/uploadDocument", files={"file": ("big.txt", b"b" * size)}
                )
                assert response.status_code == 413
                [item] = response.json()["detail"]
                assert (item["type"], item["loc"]) == ("file_too_large", ["body", "file"])
            over = await client.post("/uploadDocument", files={"file": ("b.txt", b"b" * 1001)})
            assert over.json()["detail"][0]["msg"] == "File exceeds the upload limit of 1000 bytes"
            assert [d["filename"] for d in (await client.get("/documents")).json()] == ["a.txt"]
    finally:
        await stack.close()


async def test_no_spooled_copy_is_left_behind(client: httpx.AsyncClient, stack: RagStack) -> None:
    await upload(client, "a.txt", GARDEN.encode())
    await client.post("/uploadDocument", files={"file": ("b.txt", b"\xff\xfe\xfd")})
    assert list((stack.data_dir / "uploads").iterdir()) == []


async def test_an_empty_knowledge_base_answers_that_nothing_was_found(
    client: httpx.AsyncClient,
) -> None:
    prompt = {"question": "What is the refund policy?", "context": ""}
    plain = await client.post("/generate", json=prompt)
    assert plain.status_code == 200
    assert plain.headers["content-type"] == "text/plain; charset=utf-8"
    assert plain.text == NO_DOCUMENTS_ANSWER
    events = await client.post("/generate", json=prompt, headers={"accept": "text/event-stream"})
    assert events.headers["content-type"].startswith("text/event-stream")
    assert sse_frames(events.text) == [
        ("message", {"delta": NO_DOCUMENTS_ANSWER}),
        ("done", {"finish_reason": "stop", "sources": []}),
    ]


async def test_the_done_frame_lists_the_sources(client: httpx.AsyncClient) -> None:
    refunds = await upload(client, "refunds.txt", REFUNDS.encode())
    garden = await upload(client, "garden.txt", GARDEN.encode())
    prompt = {"question": "Can I get a refund?", "context": "", "num_tokens": 4}
    response = await client.post("/generate", json=prompt, headers={"accept": "text/event-stream"})
    frames = sse_frames(response.text)
    *deltas, (event, done) = frames
    assert event == "done"
    assert all(event == "message" and set(data) == {"delta"} for event, data in deltas)
    assert done["finish_reason"] in ("stop", "length")
    sources = [models.SearchResult.model_validate(item) for item in done["sources"]]
    assert sources[0].document_id == refunds["document_id"]
    assert {s.document_id for s in sources} <= {refunds["document_id"], garden["document_id"]}
    assert {s.source for s in sources} <= {"refunds.txt", "garden.txt"}


async def test_num_tokens_bounds_the_answer(client: httpx.AsyncClient, tiny_model: Any) -> None:
    tokenizer = AutoTokenizer.from_pretrained(tiny_model, local_files_only=True)
    # re-encoding decoded text need not give back the generated ids, so bound the text by the
    # longest piece (in bytes) a token can decode to
    longest = max(len(piece) for piece in tokenizer.get_vocab())
    for num_tokens in (1, 7):
        prompt = {
            "question": "Tell me a story",
            "context": "",
            "use_knowledge_base": False,
            "num_tokens": num_tokens,
        }
        headers = {"accept": "text/event-stream"}
        frames = sse_frames((await client.post("/generate", json=prompt, headers=headers)).text)
        assert frames[-1][0] == "done"
        assert frames[-1][1] == {"finish_reason": "length", "sources": []}
        answer = "".join(data["delta"] for _, data in frames[:-1])
        assert len(answer.encode()) <= num_tokens * longest
        plain = await client.post("/generate", json=prompt)
        assert len(plain.text.encode()) <= num_tokens * longest
        # a single token may be part of a character, held back; seven make some text
        assert num_tokens == 1 or (answer and plain.text)


async def test_each_upload_logs_one_line_with_its_chunks_and_time(
    client: httpx.AsyncClient, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="rag")
    stored = await upload(client, "notes.txt", f"{REFUNDS}\n\n{SHIPPING}".encode())

    [line] = [r.getMessage() for r in caplog.records if r.getMessage().startswith("stored ")]
    assert f"filename=notes.txt id={stored['document_id']} " in line
    assert f" chunks={stored['chunks']} " in line
    assert re.search(r" seconds=\d+\.\d{3}$", line), line
