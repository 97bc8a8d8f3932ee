"""The remote reranker against a real HTTP server on the loopback: the request it sends, the
scores it reads back, and every way an endpoint can fail it (slow, erroring, oversized,
malformed), each a RerankError within the timeout."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from handlers.rag.rerank.base import MAX_PASSAGE_CHARS, MAX_QUERY_CHARS, Reranker, RerankError
from handlers.rag.rerank.remote import RemoteReranker

PASSAGES = ["paris is the capital of france", "the cat is on the moon", "rain"]


@dataclass
class Endpoint:
    """A loopback /rerank server; ``answer`` decides what each path returns."""

    base: str
    requests: list[tuple[str, dict[str, str], Any]] = field(default_factory=list)
    release: threading.Event = field(default_factory=threading.Event)


def _answer(path: str, body: Any, endpoint: Endpoint) -> tuple[int, bytes, dict[str, str]]:
    documents = body.get("documents", []) if isinstance(body, dict) else []
    count = len(documents)
    # the fake model: longer documents are more relevant, results sent best first
    ranked = sorted(range(count), key=lambda i: -len(documents[i]))
    results = [{"index": i, "relevance_score": len(documents[i]) / 100} for i in ranked]
    if path == "/rerank":
        return 200, json.dumps({"id": "x", "results": results}).encode(), {}
    if path == "/slow":
        endpoint.release.wait(10)
        return 200, json.dumps({"results": results}).encode(), {}
    if path == "/error":
        return 503, b"overloaded " * 1000, {}
    if path == "/huge":
        return 200, b'{"results": [' + b" " * (2 * 1024 * 1024) + b"]}", {}
    if path == "/huge-chunked":
        return 200, b'{"results": [' + b" " * (2 * 1024 * 1024) + b"]}", {"chunked": "1"}
    if path == "/not-json":
        return 200, b"<html>hello</html>", {}
    if path == "/missing":
        return 200, json.dumps({"results": results[1:]}).encode(), {}
    if path == "/twice":
        return 200, json.dumps({"results": [*results, results[0]]}).encode(), {}
    if path == "/bad-index":
        return 200, json.dumps({"results": [{"index": count, "relevance_score": 1}]}).encode(), {}
    if path == "/bad-score":
        bad = [{"index": r["index"], "relevance_score": "high"} for r in results]
        return 200, json.dumps({"results": bad}).encode(), {}
    if path == "/no-results":
        return 200, json.dumps({"data": []}).encode(), {}
    return 404, b"not found", {}


@pytest.fixture
def endpoint() -> Iterator[Endpoint]:
    state: dict[str, Endpoint] = {}

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            length = int(self.headers.get("content-length", "0"))
            raw = self.rfile.read(length)
            body = json.loads(raw)
            current = state["endpoint"]
            current.requests.append((self.path, dict(self.headers.items()), body))
            status, content, extra = _answer(self.path, body, current)
            try:
                self.send_response(status)
                self.send_header("content-type", "application/json")
                if extra.get("chunked"):
                    self.send_header("transfer-encoding", "chunked")
                    self.end_headers()
                    for start in range(0, len(content), 65536):
                        piece = content[start : start + 65536]
                        self.wfile.write(f"{len(piece):x}\r\n".encode() + piece + b"\r\n")
                    self.wfile.write(b"0\r\n\r\n")
                else:
                    self.send_header("content-length", str(len(content)))
                    self.end_headers()
                    self.wfile.write(content)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client stopped reading: what an oversized answer gets

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    host, port = server.server_address[:2]
    state["endpoint"] = Endpoint(base=f"http://{host!s}:{port}")
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield state["endpoint"]
    state["endpoint"].release.set()
    server.shutdown()
    server.server_close()
    thread.join(5)


@pytest.fixture
async def client(endpoint: Endpoint) -> AsyncIterator[RemoteReranker]:
    reranker = RemoteReranker(
        f"{endpoint.base}/rerank", model="bge-reranker", api_key="s3cret", timeout=5
    )
    yield reranker
    await reranker.close()


async def test_scores_come_back_in_the_passages_order(
    client: RemoteReranker, endpoint: Endpoint
) -> None:
    assert isinstance(client, Reranker)
    assert client.name == "bge-reranker"
    scores = await client.rerank("capital of france", PASSAGES)
    assert scores == [len(p) / 100 for p in PASSAGES]  # sent best first, read back by index
    ((path, headers, body),) = endpoint.requests
    assert path == "/rerank"
    assert headers["Authorization"] == "Bearer s3cret"
    assert body == {
        "model": "bge-reranker",
        "query": "capital of france",
        "documents": PASSAGES,
        "top_n": 3,
        "return_documents": False,
    }


async def test_queries_and_passages_are_cut_and_no_passages_sends_nothing(
    client: RemoteReranker, endpoint: Endpoint
) -> None:
    assert await client.rerank("q", []) == []
    assert endpoint.requests == []
    await client.rerank("q" * 100_000, ["p" * 100_000, "short"])
    ((_, _, body),) = endpoint.requests
    assert len(body["query"]) == MAX_QUERY_CHARS
    assert [len(d) for d in body["documents"]] == [MAX_PASSAGE_CHARS, 5]


async def test_no_model_and_no_key_are_left_out(endpoint: Endpoint) -> None:
    reranker = RemoteReranker(f"{endpoint.base}/rerank")
    try:
        await reranker.rerank("q", PASSAGES)
    finally:
        await reranker.close()
    ((_, headers, body),) = endpoint.requests
    assert "model" not in body
    assert "Authorization" not in headers
    assert reranker.name == f"{endpoint.base}/rerank"


async def test_a_slow_endpoint_fails_at_the_timeout(endpoint: Endpoint) -> None:
    reranker = RemoteReranker(f"{endpoint.base}/slow", timeout=0.3)
    started = time.monotonic()
    try:
        with pytest.raises(RerankError, match=r"did not answer within 0\.3 s"):
            await reranker.rerank("q", PASSAGES)
    finally:
        await reranker.close()
    assert time.monotonic() - started < 5  # not the server's 10 s


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("/error", "answered 503: 'overloaded overloaded"),
        ("/missing-path", "answered 404"),
        ("/huge", r"answer is 2097167 bytes \(at most 1048576\)"),
        ("/huge-chunked", "longer than 1048576 bytes"),
        ("/not-json", "not JSON"),
        ("/no-results", "no list of results"),
        ("/missing", "left out 1 of 3 documents"),
        ("/twice", "scored document 0 twice"),
        ("/bad-index", "without a valid index: 3"),
        ("/bad-score", "the score 'high'"),
    ],
)
async def test_an_endpoint_that_answers_otherwise_gives_a_rerank_error(
    endpoint: Endpoint, path: str, message: str
) -> None:
    reranker = RemoteReranker(f"{endpoint.base}{path}", timeout=5)
    try:
        with pytest.raises(RerankError, match=message) as caught:
            await reranker.rerank("q", PASSAGES)
    finally:
        await reranker.close()
    assert len(str(caught.value)) < 400  # an error answer is quoted, not copied whole


async def test_an_endpoint_that_is_not_there_gives_a_rerank_error(endpoint: Endpoint) -> None:
    reranker = RemoteReranker("http://127.0.0.1:9/rerank", timeout=2)
    try:
        with pytest.raises(RerankError, match="cannot be reached"):
            await reranker.rerank("q", PASSAGES)
    finally:
        await reranker.close()


async def test_a_closed_client_refuses_work(endpoint: Endpoint) -> None:
    reranker = RemoteReranker(f"{endpoint.base}/rerank")
    await reranker.close()
    with pytest.raises(RerankError, match="closed"):
        await reranker.rerank("q", PASSAGES)
