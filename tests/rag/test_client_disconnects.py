"""Clients that go away are an ordinary event: one INFO line each, no error, no traceback,
over a real uvicorn server (an upload cut off mid-body; an answer left mid-stream)."""

from __future__ import annotations

import asyncio
import logging
import time

import httpx
import pytest

from tests.rag.stack import RagStack, serve_on_loopback
from tests.rag.test_stored_names import BOUNDARY, multipart

DEADLINE_S = 10.0
DISCONNECT_LINE = "client disconnected before the end of the request body: POST /uploadDocument"


async def wait_for_line(caplog: pytest.LogCaptureFixture, start: str) -> None:
    deadline = time.monotonic() + DEADLINE_S
    while not any(r.getMessage().startswith(start) for r in caplog.records):
        assert time.monotonic() < deadline, [r.getMessage() for r in caplog.records]
        await asyncio.sleep(0.01)


def assert_quiet(caplog: pytest.LogCaptureFixture) -> None:
    """Nothing at WARNING or above, and no traceback anywhere."""
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == []
    assert all(r.exc_info is None for r in caplog.records)


async def test_an_upload_cut_off_mid_body_is_one_info_line(
    stack: RagStack, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    async with serve_on_loopback(stack.app) as url:
        port = int(url.rsplit(":", 1)[1])
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        head = (
            "POST /uploadDocument HTTP/1.1\r\nHost: rag.test\r\n"
            f"Content-Type: multipart/form-data; boundary={BOUNDARY}\r\n"
            "Content-Length: 500000\r\n\r\n"
        )
        body = multipart(b"notes.txt", b"words " * 20_000)[:100_000]  # a fifth of what it said
        writer.write(head.encode() + body)
        await writer.drain()
        writer.close()
        await writer.wait_closed()
        await wait_for_line(caplog, DISCONNECT_LINE)
        reader.feed_eof()
    lines = [r for r in caplog.records if "disconnect" in r.getMessage()]
    assert [(r.name, r.levelname, r.getMessage()) for r in lines] == [
        ("rag.http", "INFO", DISCONNECT_LINE)
    ]
    assert_quiet(caplog)
    assert await stack.service.list_documents() == []


async def test_a_client_leaving_an_answer_is_one_info_line(
    stack: RagStack, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    prompt = {"question": "Tell me a long story", "context": "", "use_knowledge_base": False}
    async with serve_on_loopback(stack.app) as url, httpx.AsyncClient(base_url=url) as client:
        complete = await client.post("/generate", json={**prompt, "num_tokens": 5})
        assert complete.status_code == 200
        long_answer = {**prompt, "num_tokens": 1024}
        async with client.stream("POST", "/generate", json=long_answer) as response:
            assert await anext(response.aiter_raw())
        await wait_for_line(caplog, "client disconnected during the answer, after ")
    lines = [r for r in caplog.records if "disconnect" in r.getMessage()]
    assert [(r.name, r.levelname) for r in lines] == [("rag.http", "INFO")]  # not the first
    assert_quiet(caplog)
