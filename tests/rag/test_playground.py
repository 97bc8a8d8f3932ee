"""The playground page at ``/``, in process (no model is loaded: the page needs none): what is
served and with which headers, nothing else reachable through its paths, outside the API's
contract, off by the setting, and what its files may and may not contain. The browser tests
are ``test_playground_browser.py``."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest

from handlers.rag.playground import page as playground_page
from handlers.rag.playground.page import CONTENT_SECURITY_POLICY, FILES, PAGE_TEMPLATE, read_file
from handlers.rag.server import RagServer, create_rag_app
from handlers.rag.settings import Settings


def settings(data_dir: Path, *, playground: bool | None = None) -> Settings:
    """The server's settings from the environment; ``playground`` sets RAG_PLAYGROUND_ENABLED."""
    env = {"RAG_PORT": "0", "RAG_DATA_DIR": str(data_dir)}
    if playground is None:
        return Settings.from_env(env)
    return Settings.from_env({**env, "RAG_PLAYGROUND_ENABLED": str(playground).lower()})


@pytest.fixture
async def client(tmp_path: Path) -> AsyncIterator[httpx.AsyncClient]:
    """The real server's application with the default settings (the page on), in process."""
    server = RagServer(settings(tmp_path))
    transport = httpx.ASGITransport(app=server.app)
    async with httpx.AsyncClient(transport=transport, base_url="http://rag.test") as client:
        yield client


def referenced(page: str) -> list[str]:
    return re.findall(r'(?:href|src)="([^"]*)"', page)


async def test_the_page_is_served_at_the_root_with_a_strict_policy(
    client: httpx.AsyncClient,
) -> None:
    response = await client.get("/")
    assert response.status_code == 200
    assert response.headers["content-type"] == "text/html; charset=utf-8"
    assert response.headers["content-security-policy"] == CONTENT_SECURITY_POLICY
    policy = dict(
        directive.strip().split(" ", 1) for directive in CONTENT_SECURITY_POLICY.split(";")
    )
    assert policy["default-src"] == "'none'"
    assert policy["script-src"] == "'self'"  # no inline script, no eval
    assert policy["style-src"] == "'self'"
    assert policy["connect-src"] == "'self'"
    assert policy["frame-ancestors"] == "'none'"
    assert policy["require-trusted-types-for"] == "'script'"
    assert response.headers["x-frame-options"] == "DENY"
    assert response.headers["cache-control"] == "no-cache"
    assert response.headers["x-content-type-options"] == "nosniff"
    assert "<title>rag playground</title>" in response.text
    assert 'data-api=""' in response.text
    links = referenced(response.text)
    assets = [link for link in links if link.startswith("/playground/")]
    assert sorted(link.rsplit("/", 1)[1] for link in assets) == sorted(FILES)
    for link in assets:
        asset = await client.get(link)
        assert asset.status_code == 200
        assert asset.headers["content-type"] == FILES[link.rsplit("/", 1)[1]]
        assert asset.headers["cache-control"] == "public, max-age=31536000, immutable"
        assert asset.content == read_file(link.rsplit("/", 1)[1])
    head = await client.head("/")
    assert (head.status_code, head.content) == (200, b"")
    options = await client.options("/")
    assert (options.status_code, options.headers["allow"]) == (204, "GET, HEAD, OPTIONS")
    post = await client.post("/", content=b"x")
    assert (post.status_code, post.headers["allow"]) == (405, "GET, HEAD, OPTIONS")


async def test_under_a_root_path_the_page_links_and_calls_under_it(tmp_path: Path) -> None:
    server = RagServer(settings(tmp_path))
    transport = httpx.ASGITransport(app=server.app, root_path="/rag")
    async with httpx.AsyncClient(transport=transport, base_url="http://rag.test") as client:
        response = await client.get("/rag/")
        assert response.status_code == 200
        assert 'data-api="/rag"' in response.text
        assets = [link for link in referenced(response.text) if "/playground/" in link]
        assert assets and all(link.startswith("/rag/playground/") for link in assets)
        for link in assets:
            assert (await client.get(link)).status_code == 200


@pytest.mark.parametrize(
    "path",
    [
        "/index.html",
        "/playground",
        "/playground/",
        "/playground/{tag}",
        "/playground/{tag}/index.html",
        "/playground/{tag}/page.py",
        "/playground/{tag}/../page.py",
        "/playground/{tag}/%2e%2e/page.py",
        "/playground/{tag}/..%2fmount.py",
        "/playground/{tag}/playground.js/",
        "/playground/0000/playground.js",
    ],
)
async def test_only_the_fixed_files_are_served(client: httpx.AsyncClient, path: str) -> None:
    page = (await client.get("/")).text
    (tag,) = set(re.findall(r'"/playground/([0-9a-f]+)/', page))
    response = await client.get(path.format(tag=tag))
    assert response.status_code == 404
    assert response.json() == {"detail": "Not Found"}  # the API's own 404


async def test_the_page_is_outside_the_api_contract(client: httpx.AsyncClient) -> None:
    document = (await client.get("/openapi.json")).json()
    assert "/" not in document["paths"]
    assert not [path for path in document["paths"] if path.startswith("/playground")]


async def test_the_setting_turns_the_page_off(tmp_path: Path) -> None:
    server = RagServer(settings(tmp_path, playground=False))
    transport = httpx.ASGITransport(app=server.app)
    async with httpx.AsyncClient(transport=transport, base_url="http://rag.test") as client:
        assert (await client.get("/")).status_code == 404
        assert (await client.get("/openapi.json")).status_code == 200
    on = RagServer(settings(tmp_path / "on", playground=True))
    transport = httpx.ASGITransport(app=on.app)
    async with httpx.AsyncClient(transport=transport, base_url="http://rag.test") as client:
        assert (await client.get("/")).status_code == 200
    # the application factory's own switch
    off = create_rag_app(server.service, 1000, playground=False)
    transport = httpx.ASGITransport(app=off)
    async with httpx.AsyncClient(transport=transport, base_url="http://rag.test") as client:
        assert (await client.get("/")).status_code == 404


def test_the_files_reference_no_other_host_and_write_no_html() -> None:
    page = read_file(PAGE_TEMPLATE).decode()
    script = read_file("playground.js").decode()
    style = read_file("playground.css").decode()
    # every link of the page is its own ($assets, $api: the server's paths) or a data: URL
    for link in referenced(page):
        assert link.startswith(("$assets/", "$api/", "data:")), link
    for text in (page, script, style):
        assert not re.search(r"(?i)\b(?:https?|wss?|ftp):|//[a-z0-9.-]+\.[a-z]", text)
        assert "@import" not in text
    assert "url(" not in style
    # no inline script or style, no handler attributes
    assert re.findall(r"<script\b[^>]*>", page) == ['<script src="$assets/playground.js" defer>']
    assert not re.search(r"(?i)<style|\sstyle=|\son[a-z]+=", page)
    # the script writes no HTML and evaluates no strings; requests go to its own API base
    for sink in ("innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(",
                 "new Function", "setTimeout(\"", "srcdoc"):  # fmt: skip
        assert sink not in script, sink
    for call in re.findall(r"(?:fetch|xhr\.open)\(([^)]*)\)", script):
        assert "API + " in call, call


def test_a_file_over_the_size_bound_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(playground_page, "MAX_FILE_BYTES", 100)
    with pytest.raises(RuntimeError, match="over 100 bytes"):
        read_file.__wrapped__("playground.js")
    with pytest.raises(KeyError):
        read_file.__wrapped__("page.py")
