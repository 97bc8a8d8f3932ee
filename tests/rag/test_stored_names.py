"""Stored file names: the last path segment, without control characters (NUL included) or
surrounding blanks, bounded, before they are stored, logged or answered."""

from __future__ import annotations

import logging

import httpx
import pytest

from handlers.rag.service import MAX_FILENAME_CHARS, stored_filename

BOUNDARY = "edge-boundary"


def multipart(filename: bytes, content: bytes) -> bytes:
    """A one-file form with the file name's bytes exactly as given (httpx would escape them)."""
    return (
        f"--{BOUNDARY}\r\n".encode()
        + b'Content-Disposition: form-data; name="file"; filename="'
        + filename
        + b'"\r\nContent-Type: text/plain\r\n\r\n'
        + content
        + f"\r\n--{BOUNDARY}--\r\n".encode()
    )


async def test_control_characters_are_removed_from_stored_file_names(
    client: httpx.AsyncClient, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="rag")
    response = await client.post(
        "/uploadDocument",
        content=multipart(b"re\x00po\x07rt\x1b\x7f\t.txt", b"Tomatoes need sunlight."),
        headers={"content-type": f"multipart/form-data; boundary={BOUNDARY}"},
    )
    assert response.status_code == 200, response.text
    assert response.json()["filename"] == "report.txt"
    [listed] = (await client.get("/documents")).json()
    assert listed["filename"] == "report.txt"
    hits = (await client.post("/documentSearch", json={"content": "tomatoes"})).json()
    assert [hit["source"] for hit in hits] == ["report.txt"]
    [stored_line] = [r.getMessage() for r in caplog.records if r.getMessage().startswith("stored")]
    assert " filename=report.txt " in stored_line


async def test_a_name_of_control_characters_only_is_an_empty_name(
    client: httpx.AsyncClient,
) -> None:
    response = await client.post(
        "/uploadDocument",
        content=multipart(b"\x00\x01\t", b"some text"),
        headers={"content-type": f"multipart/form-data; boundary={BOUNDARY}"},
    )
    assert response.status_code == 422, response.text
    [detail] = response.json()["detail"]
    assert detail["loc"] == ["body", "file"]
    assert "no name" in detail["msg"]


@pytest.mark.parametrize(
    ("uploaded", "stored"),
    [
        ("../a/b.pdf", "b.pdf"),
        ("C:\\Users\\me\\notes.md", "notes.md"),
        ("re\x00port.pdf", "report.pdf"),
        ("tab\there\nnew\u0085line\u009f.txt", "tabherenewline.txt"),
        ("  \x00 spaced .txt\x00 ", "spaced .txt"),
        ("café 🙂 \u200d.txt", "café 🙂 \u200d.txt"),  # printable Unicode stays
        ("\x00\x1f\x7f", ""),
        (None, ""),
    ],
)
def test_stored_file_names(uploaded: str | None, stored: str) -> None:
    assert stored_filename(uploaded) == stored


def test_a_long_name_is_cut_keeping_its_extension() -> None:
    name = stored_filename("x" * 1000 + ".docx")
    assert len(name) == MAX_FILENAME_CHARS
    assert name.endswith("x.docx")
    odd = stored_filename("y" * 300 + "." + "z" * 40)  # no extension worth keeping
    assert odd == "y" * MAX_FILENAME_CHARS
