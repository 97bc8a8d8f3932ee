"""The generated clients against the generated routes (with the contract test handlers)."""

from __future__ import annotations

import importlib
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import uvicorn
import yaml

from generated.rag.client import AsyncRagClient, RagClient, RagValidationError
from generated.rag.routes import create_app as create_rag_app
from generated.ratelimit.client import AsyncRatelimitClient, RatelimitValidationError
from generated.ratelimit.routes import create_app as create_ratelimit_app
from tests.contract.implementations import RagContract, ratelimit_handlers

SPECS = Path(__file__).resolve().parents[2] / "specs"
# each generated client: its package and its error classes' prefix
CLIENTS = {"agents": "Service", "rag": "Rag", "ratelimit": "Ratelimit"}
# the typed error of each status (ServerError: any 5xx)
TYPED = {
    400: "Validation",
    401: "Auth",
    403: "Forbidden",
    404: "NotFound",
    409: "Conflict",
    413: "PayloadTooLarge",
    415: "UnsupportedMediaType",
    422: "Validation",
    429: "RateLimit",
}


def _documented_error_statuses() -> set[int]:
    """Every 4xx and 5xx status an operation of any spec documents."""
    statuses: set[int] = set()
    for spec in SPECS.glob("*.openapi.yaml"):
        document = yaml.safe_load(spec.read_text(encoding="utf-8"))
        for item in document["paths"].values():
            for operation in item.values():
                if isinstance(operation, dict):
                    responses = operation.get("responses", {})
                    statuses.update(int(s) for s in responses if str(s).isdigit())
    return {status for status in statuses if status >= 400}


@pytest.mark.parametrize(("package", "prefix"), CLIENTS.items())
def test_every_documented_error_status_has_a_typed_error(package: str, prefix: str) -> None:
    """The client template is shared: each client has a typed error for every status any
    spec documents, exported, with the status, the body and the request id."""
    module = importlib.import_module(f"generated.{package}.client")
    base = getattr(module, f"{prefix}Error")
    statuses = _documented_error_statuses()
    assert {409, 413, 415} <= statuses
    for status in sorted(statuses):
        name = f"{prefix}{TYPED.get(status, 'Server' if status >= 500 else '')}Error"
        assert name in module.__all__, name
        kind = getattr(module, name)
        assert issubclass(kind, base) and kind is not base, name
        headers = {"x-request-id": f"req_{status}", "retry-after": "7"}
        error = module._error(httpx.Response(status, json={"issues": []}, headers=headers))
        assert type(error) is kind, (status, type(error).__name__)
        assert (error.status, error.request_id, error.requestId) == (status, *[f"req_{status}"] * 2)
        assert error.envelope == {"issues": []} and error.retry_after == 7
    # an undocumented status: the base class
    other = module._error(httpx.Response(418, headers={"x-request-id": "req_418"}))
    assert type(other) is base and other.status == 418 and other.request_id == "req_418"


def _rag() -> AsyncRagClient:
    transport = httpx.ASGITransport(app=create_rag_app(RagContract()))
    return AsyncRagClient(base_url="http://rag", transport=transport)


async def test_async_client_uploads_streams_and_searches(tmp_path: Path) -> None:
    document = tmp_path / "refunds.txt"
    document.write_text("Annual plans are refundable within 30 days.")
    async with _rag() as client:
        uploaded = await client.upload_document(document)
        assert uploaded.filename == "refunds.txt" and uploaded.chunks == 1
        text = [c async for c in client.generate({"question": "refund window?", "context": ""})]
        assert "".join(text).split() == ["refund", "window?"]
        frames = "".join(
            [
                c
                async for c in client.generate(
                    {"question": "hi", "context": ""}, accept="text/event-stream"
                )
            ]
        )
        assert frames.startswith("data: ")
        hits = await client.document_search({"content": "refund", "num_docs": 1})
        assert [hit.source for hit in hits] == ["refunds.txt"]


async def test_async_client_raises_typed_errors_with_the_body() -> None:
    async with _rag() as client:
        with pytest.raises(RagValidationError) as raised:
            await client.document_search({"content": "", "num_docs": 0})
    error = raised.value
    assert error.status == 422
    assert isinstance(error.envelope, dict)
    assert {tuple(item["loc"]) for item in error.envelope["detail"]} == {
        ("body", "content"),
        ("body", "num_docs"),
    }
    assert str(error).startswith("body.")


async def test_plain_text_errors_of_the_ratelimit_api() -> None:
    transport = httpx.ASGITransport(app=create_ratelimit_app(ratelimit_handlers()))
    async with AsyncRatelimitClient(base_url="http://rl", transport=transport) as client:
        decision = await client.should_rate_limit(
            {"domain": "edge", "descriptors": [{"entries": [{"key": "k", "value": "v"}]}]}
        )
        assert decision.overall_code == "OK"
        with pytest.raises(RatelimitValidationError) as raised:
            await client.should_rate_limit({"domain": "edge", "descriptors": [], "bogus": 1})
    assert raised.value.status == 400 and raised.value.envelope == "Bad Request\n"


async def test_an_error_status_with_the_success_body_is_an_answer() -> None:
    """The decision's 429 carries the decision: the client returns it instead of raising."""
    transport = httpx.ASGITransport(app=create_ratelimit_app(ratelimit_handlers()))
    login = {
        "domain": "edge_proxy",
        "descriptors": [{"entries": [{"key": "path", "value": "/api/login"}]}],
    }
    async with AsyncRatelimitClient(base_url="http://rl", transport=transport) as client:
        assert (await client.should_rate_limit(login)).overall_code == "OK"
        over = await client.should_rate_limit(login)
    assert over.overall_code == "OVER_LIMIT"
    assert over.statuses is not None and over.statuses[0].code == "OVER_LIMIT"


@pytest.fixture
def rag_server() -> Iterator[str]:
    """The generated rag app under a real uvicorn server on loopback."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    config = uvicorn.Config(
        create_rag_app(RagContract()), host="127.0.0.1", port=port, log_level="warning"
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        assert time.monotonic() < deadline, "uvicorn did not start"
        time.sleep(0.01)
    yield f"http://127.0.0.1:{port}"
    server.should_exit = True
    thread.join(10)


def test_sync_client_over_http_streams_as_it_goes(rag_server: str) -> None:
    with RagClient(base_url=rag_server) as client:
        uploaded = client.upload_document(("notes.md", b"# Notes\nshipping takes 3 days"))
        assert uploaded.filename == "notes.md"
        chunks = list(client.generate({"question": "how long does shipping take", "context": ""}))
        assert len(chunks) >= 1 and "".join(chunks).split()[0] == "how"
        with pytest.raises(RagValidationError):
            client.generate({"question": "", "context": ""}).__next__()


def test_settings_come_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAG_BASE_URL", "http://from-env:1234/")
    client = RagClient()
    assert client.base_url == "http://from-env:1234"
    client.close()
    assert RagClient(base_url="http://arg").base_url == "http://arg"


async def test_service_client_runs_an_agent_with_files(tmp_path: Path) -> None:
    from generated.agents.client import AsyncServiceClient, ServiceNotFoundError
    from tests.agents.support import Storage, running

    invoice = tmp_path / "invoice.pdf"
    invoice.write_bytes(b"%PDF-1.4 total 42 EUR")
    data_dir = tmp_path / "agents"
    data_dir.mkdir()
    with running(Storage(data_dir, f"sqlite:///{data_dir}/agents.db")) as server:
        key = server.key("client", scope_all=True, can_create_agents=True)
        async with AsyncServiceClient(api_key=key, base_url=server.url) as client:
            created = await client.agents.create(
                {"name": "Invoice extractor", "slug": "invoice-extractor-2"}
            )
            agent = created.agent
            run = await client.agents.run(
                agent.id, {"input": {"currency": "EUR"}}, files={"invoice": invoice}
            )
            execution = await client.agents.executions.get(run.execution_id, include=["feedback"])
            assert execution.execution.id == run.execution_id
            with pytest.raises(ServiceNotFoundError) as raised:
                await client.workflows.get("no-such-workflow")
    error = raised.value
    assert error.status == 404 and error.request_id and error.request_id == error.requestId
    assert error.envelope["requestId"] == error.request_id


def test_service_client_needs_a_key(monkeypatch: pytest.MonkeyPatch) -> None:
    from generated.agents.client import ServiceClient

    monkeypatch.delenv("SERVICE_API_KEY", raising=False)
    with pytest.raises(ValueError, match="SERVICE_API_KEY"):
        ServiceClient()
    monkeypatch.setenv("SERVICE_API_KEY", "from-env")
    client = ServiceClient(base_url="http://x")
    assert client._http.headers["authorization"] == "Bearer from-env"
    client.close()
    explicit = ServiceClient(api_key="from-arg", base_url="http://x")
    assert explicit._http.headers["authorization"] == "Bearer from-arg"
    explicit.close()
