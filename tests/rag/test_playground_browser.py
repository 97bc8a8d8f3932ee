"""The playground page in a real browser: headless Chromium (Debian's) drives the page of a
real ``rag-server`` process (all-MiniLM-L6-v2 and the tiny test generator) on 127.0.0.1.

- Loaded as the docs pages are (``tests/webrest/test_docs_browser.py``'s ``render``: no host
  but 127.0.0.1 resolves, everything else goes to a closed proxy, and Chromium's NetLog
  witnesses every request): every request of the page went to the server and was answered,
  its policy refused nothing, and the page shows the service ready.
- Driven over the DevTools protocol: a file uploaded through the page is listed with its
  progress at 100 % (through ``/uploadDocument``, and through an ingestion job), a question's
  answer streams in (the answer's text grows several times before the end) with a source
  naming the uploaded file, a search finds it, the document is deleted; names and texts with
  markup are shown as text; the page made no request elsewhere and violated no policy.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from websockets.asyncio.client import ClientConnection, connect

from tests.webrest.test_docs_browser import CHROMIUM, isolated_chromium, render

pytestmark = pytest.mark.skipif(
    CHROMIUM is None,
    reason="chromium is not installed (make test installs it: "
    "./scripts/ensure-debian-packages.sh chromium)",
)

REPO_ROOT = Path(__file__).resolve().parents[2]
WAIT_S = 90.0

DOCUMENT = (
    "Refund policy. Annual plans are refundable within 30 days of purchase. "
    "Monthly plans can be cancelled at any time. <script>alert('not run')</script>\n"
)
MARKUP_NAME = "<img src=x onerror=alert(1)> refunds.txt"
"""A file name that would be an element (and a request to /x) if the page wrote it as HTML."""


# -- the server --------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def rag_url(tmp_path_factory: pytest.TempPathFactory, tiny_model: Path) -> Iterator[str]:
    """A ``rag-server`` process on a free loopback port, once its components are ready."""
    data = tmp_path_factory.mktemp("playground-data")
    env = {
        **os.environ,
        "RAG_PORT": "0",
        "RAG_DATA_DIR": str(data),
        "RAG_LLM_MODEL": str(tiny_model),
    }
    log = (data / "server.log").open("w+")
    process = subprocess.Popen(
        [sys.executable, "-m", "handlers.rag.server"],
        cwd=REPO_ROOT,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=log,
        text=True,
    )
    try:
        deadline = time.monotonic() + WAIT_S
        found = None
        while found is None:
            assert process.poll() is None and time.monotonic() < deadline, _tail(data)
            found = re.search(r"rag listening on (http://127\.0\.0\.1:\d+) ", _tail(data))
            time.sleep(0.1)
        url = found.group(1)
        with httpx.Client(base_url=url, timeout=30) as client:
            while client.get("/health").status_code != 200:
                assert time.monotonic() < deadline, _tail(data)
                time.sleep(0.2)
        yield url
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        log.close()


def _tail(data: Path) -> str:
    return (data / "server.log").read_text()[-4000:]


# -- Chromium over the DevTools protocol -----------------------------------------------------------


class DevTools:
    """One page of Chromium, driven over its DevTools protocol; events are kept by method."""

    def __init__(self, socket: ClientConnection) -> None:
        self.socket = socket
        self.events: dict[str, list[dict[str, Any]]] = {}
        self._next = 0
        self._waiting: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self._reader = asyncio.create_task(self._read())

    async def _read(self) -> None:
        async for message in self.socket:
            data = json.loads(message)
            if "id" in data:
                self._waiting.pop(data["id"]).set_result(data)
            else:
                self.events.setdefault(data["method"], []).append(data.get("params", {}))

    async def call(self, method: str, **params: Any) -> dict[str, Any]:
        self._next += 1
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._waiting[self._next] = future
        await self.socket.send(json.dumps({"id": self._next, "method": method, "params": params}))
        answer = await asyncio.wait_for(future, WAIT_S)
        assert "error" not in answer, (method, answer)
        result: dict[str, Any] = answer["result"]
        return result

    async def evaluate(self, expression: str) -> Any:
        """The value of ``expression`` in the page (awaited when it is a promise)."""
        result = await self.call(
            "Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True
        )
        assert "exceptionDetails" not in result, result
        return result["result"].get("value")

    async def wait_for(self, expression: str) -> Any:
        """The value of ``expression`` once it is truthy (at most :data:`WAIT_S`)."""
        deadline = time.monotonic() + WAIT_S
        while not (value := await self.evaluate(expression)):
            assert time.monotonic() < deadline, f"timed out waiting for {expression}"
            await asyncio.sleep(0.1)
        return value

    async def close(self) -> None:
        self._reader.cancel()
        await self.socket.close()


@asynccontextmanager
async def chromium(directory: Path) -> AsyncIterator[DevTools]:
    """Headless Chromium that can reach 127.0.0.1 only (as ``render`` does), driven over
    its DevTools protocol on a free loopback port."""
    assert CHROMIUM is not None
    profile = directory / "profile"
    command = [
        *isolated_chromium(profile),
        "--remote-debugging-address=127.0.0.1",
        "--remote-debugging-port=0",
        "--window-size=1280,2000",
        "about:blank",
    ]
    process = await asyncio.create_subprocess_exec(
        *command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        port_file = profile / "DevToolsActivePort"
        deadline = time.monotonic() + WAIT_S
        while not port_file.exists() or not port_file.read_text().strip():
            assert process.returncode is None and time.monotonic() < deadline
            await asyncio.sleep(0.1)
        port = int(port_file.read_text().split()[0])
        async with httpx.AsyncClient() as client:
            targets = (await client.get(f"http://127.0.0.1:{port}/json/list")).json()
        (target,) = [t for t in targets if t["type"] == "page"]
        socket = await connect(target["webSocketDebuggerUrl"], max_size=None)
        tools = DevTools(socket)
        try:
            yield tools
        finally:
            await tools.close()
    finally:
        process.terminate()
        try:
            await asyncio.wait_for(process.wait(), 20)
        except TimeoutError:
            process.kill()
            await process.wait()
        shutil.rmtree(profile, ignore_errors=True)


# -- the tests -----------------------------------------------------------------------------------


def test_the_page_loads_offline_and_its_policy_refuses_nothing(
    rag_url: str, tmp_path: Path
) -> None:
    rendered = render(f"{rag_url}/", tmp_path / "render")
    assert "<title>rag playground</title>" in rendered.dom
    assert re.search(r'<p id="health"[^>]*data-state="ready"', rendered.dom), rendered.dom[:3000]
    assert 'id="documents-status" class="status" data-state="ready">0 documents' in rendered.dom
    page = [r for r in rendered.requests if r.main_frame or r.initiator == rag_url]
    urls = {r.url.split("?", 1)[0] for r in page}
    assert {f"{rag_url}/", f"{rag_url}/health", f"{rag_url}/documents"} <= urls
    assert sum(url.endswith(("/playground.js", "/playground.css")) for url in urls) == 2
    for request in page:
        assert request.url.startswith(f"{rag_url}/"), request.url
        assert request.answered and request.error == 0, request
    for request in rendered.requests:  # Chromium's own requests never got out
        if request not in page:
            assert not request.answered and request.error < 0, request
    refused = [line for line in rendered.console if "Content Security Policy" in line]
    assert refused == []


async def test_upload_list_ask_search_and_delete_through_the_page(
    rag_url: str, tmp_path: Path
) -> None:
    direct = tmp_path / "direct" / MARKUP_NAME
    queued = tmp_path / "queued" / "plans.md"
    plans = "# Plans\n\nEnterprise plans are billed yearly.\n"
    for path, text in ((direct, DOCUMENT), (queued, plans)):
        path.parent.mkdir()
        path.write_text(text)
    async with chromium(tmp_path) as page:
        await page.call("Page.enable")
        await page.call("Network.enable")
        await page.call("Log.enable")
        await page.call("Runtime.enable")
        await page.call(
            "Page.addScriptToEvaluateOnNewDocument",
            source="window.violations = []; document.addEventListener("
            "'securitypolicyviolation', (e) => window.violations.push(e.violatedDirective));",
        )
        await page.call("Page.navigate", url=f"{rag_url}/")
        await page.wait_for("document.getElementById('health')?.dataset.state === 'ready'")

        # upload through /uploadDocument: progress at 100 %, the document listed
        await upload(page, direct, mode="upload")
        row = "document.querySelector('#uploads li')"
        assert await page.wait_for(f"{row}.dataset.state !== 'sending' && "
                                   f"{row}.dataset.state !== 'processing' && "
                                   f"{row}.dataset.state") == "stored"  # fmt: skip
        assert await page.evaluate(f"{row}.querySelector('progress').value") == 100
        assert await page.evaluate(f"{row}.querySelector('.percent').textContent") == "100 %"
        assert await page.evaluate(f"{row}.querySelector('.upload-status').textContent") == (
            "stored · 1 chunks"
        )
        await page.wait_for("document.querySelectorAll('#documents tbody tr').length === 1")
        listed = await page.evaluate(
            "Array.from(document.querySelectorAll('#documents tbody td.filename'))"
            ".map((cell) => cell.textContent)"
        )
        assert listed == [MARKUP_NAME]
        assert await page.evaluate("document.querySelectorAll('img').length") == 0

        # upload through an ingestion job: polled to 100 %
        await upload(page, queued, mode="job")
        assert await page.wait_for(f"['stored', 'failed'].includes({row}.dataset.state) && "
                                   f"{row}.dataset.state") == "stored"  # fmt: skip
        assert await page.evaluate(f"{row}.querySelector('progress').value") == 100
        assert await page.evaluate(f"{row}.querySelector('.name').textContent") == "plans.md"
        await page.wait_for("document.querySelectorAll('#documents tbody tr').length === 2")

        # a question: the answer streams in, its sources are shown
        await page.evaluate(
            "window.lengths = []; new MutationObserver(() => window.lengths.push("
            "document.getElementById('answer').textContent.length)).observe("
            "document.getElementById('answer'), {subtree: true, characterData: true, "
            "childList: true}); true"
        )
        await page.evaluate(
            "document.getElementById('question').value = 'What is the refund policy?';"
            "document.getElementById('num-tokens').value = '96';"
            "document.getElementById('ask-button').click(); true"
        )
        status = "document.getElementById('answer-status').dataset.state"
        await page.wait_for(f"['done', 'error'].includes({status})")
        assert await page.evaluate(status) == "done", await page.evaluate(
            "document.getElementById('answer-status').textContent"
        )
        answer = await page.evaluate("document.getElementById('answer').textContent")
        lengths = [n for n in await page.evaluate("window.lengths") if n > 0]
        assert answer and lengths[-1] == len(answer)
        assert len(set(lengths)) >= 2, lengths  # shown while it arrived, not at the end
        sources = await page.evaluate(
            "Array.from(document.querySelectorAll('#sources li')).map((item) => "
            "[item.querySelector('.source').textContent, "
            "item.querySelector('.content').textContent])"
        )
        assert [MARKUP_NAME, DOCUMENT.strip()] in [[s, c.strip()] for s, c in sources]

        # a search finds the document; its markup is text
        await page.evaluate(
            "document.getElementById('search-text').value = 'refundable annual plans';"
            "document.getElementById('search-button').click(); true"
        )
        await page.wait_for("document.getElementById('search-status').dataset.state === 'done'")
        first = await page.evaluate(
            "document.querySelector('#search-results li .source').textContent"
        )
        assert first == MARKUP_NAME
        assert await page.evaluate("document.querySelectorAll('main script, img').length") == 0

        # delete: a first click arms the button, the second deletes
        delete = (
            "Array.from(document.querySelectorAll('#documents tbody tr')).find((row) => "
            f"row.querySelector('.filename').textContent === {json.dumps(MARKUP_NAME)})"
            ".querySelector('button.delete').click(); true"
        )
        await page.evaluate(delete)
        assert await page.evaluate("document.querySelectorAll('#documents tbody tr').length") == 2
        await page.evaluate(delete)
        await page.wait_for("document.querySelectorAll('#documents tbody tr').length === 1")
        async with httpx.AsyncClient(base_url=rag_url) as client:
            remaining = (await client.get("/documents")).json()
        assert [document["filename"] for document in remaining] == ["plans.md"]

        # nothing refused, nothing asked of another host
        assert await page.evaluate("window.violations") == []
        requested = [e["request"]["url"] for e in page.events["Network.requestWillBeSent"]]
        assert requested and all(
            url.startswith(f"{rag_url}/") or url.startswith("data:") for url in requested
        ), requested
        errors = [
            e for e in page.events.get("Log.entryAdded", []) if e["entry"]["level"] == "error"
        ]
        assert errors == [], errors
        assert page.events.get("Runtime.exceptionThrown", []) == []


async def upload(page: DevTools, path: Path, *, mode: str) -> None:
    """Chooses ``path`` in the page's file input and submits it in ingestion ``mode``."""
    document = await page.call("DOM.getDocument")
    found = await page.call(
        "DOM.querySelector", nodeId=document["root"]["nodeId"], selector="#files"
    )
    await page.call("DOM.setFileInputFiles", files=[str(path)], nodeId=found["nodeId"])
    await page.evaluate(
        f"document.getElementById('ingest-mode').value = {json.dumps(mode)};"
        "document.getElementById('upload-button').click(); true"
    )
