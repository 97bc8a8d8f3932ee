"""The documentation page (Swagger UI over the OpenAPI document) and the methods of the paths
the application answers itself."""

from __future__ import annotations

import html
import re
from collections.abc import AsyncIterator
from typing import Any, cast

import httpx
import pytest

from generated.agents.routes import create_app as create_agents_app
from generated.rag.routes import create_app as create_rag_app
from generated.ratelimit.routes import create_app as create_ratelimit_app
from handlers.agents.settings import Settings as AgentsSettings
from handlers.rag.settings import Settings as RagSettings
from handlers.ratelimit.backends.memory import MemoryStore
from handlers.ratelimit.health import Health
from handlers.ratelimit.http import create_http_app
from handlers.ratelimit.limiter import Limiter
from handlers.ratelimit.service import RateLimitService
from handlers.ratelimit.settings import Settings as RatelimitSettings
from handlers.ratelimit.stats import ServiceStats
from webrest import Application, Get, Resource, RestApi
from webrest.docs import ASSETS, CONTENT_SECURITY_POLICY

from .support import asgi_call, client


@Resource("/docs")
class Documents:
    @Get("/{id}")
    def get(self, id: str) -> dict[str, str]:
        return {"id": id}


@Resource("/users")
class Users:
    @Get("")
    def list_users(self) -> list[str]:
        return ["timm"]


def app(**options: Any) -> Application:
    return Application(
        {"/": RestApi(Users(), Documents())}, title="Users <&> more", version="2.0", **options
    )


@pytest.fixture
async def http() -> AsyncIterator[httpx.AsyncClient]:
    async with client(app()) as http:
        yield http


def links(page: str) -> list[str]:
    """The page's script sources and link targets."""
    return re.findall(r'(?:src|href)="([^"]+)"', page)


# -- the page ------------------------------------------------------------------------------------


async def test_the_page_points_at_the_document_and_its_own_assets(
    http: httpx.AsyncClient,
) -> None:
    response = await http.get("/docs")
    assert response.status_code == 200
    assert response.headers["content-type"] == "text/html; charset=utf-8"
    assert response.headers["cache-control"] == "no-cache"
    assert response.headers["x-content-type-options"] == "nosniff"
    page = response.text
    assert '<div id="swagger-ui" data-openapi-url="/openapi.json">' in page
    assert "<title>Users &lt;&amp;&gt; more</title>" in page  # the document's title, escaped
    assets = {link.rsplit("/", 1)[1] for link in links(page)}
    assert assets == set(ASSETS)
    assert all(re.fullmatch(r"/docs/[0-9.]+-[0-9a-f]{8}/[a-z0-9.-]+", link) for link in links(page))
    assert "//" not in page.replace("<!DOCTYPE", "")  # no other host, no protocol-relative URL


async def test_the_page_forbids_inline_scripts_and_other_origins(http: httpx.AsyncClient) -> None:
    response = await http.get("/docs")
    policy = response.headers["content-security-policy"]
    assert policy == CONTENT_SECURITY_POLICY
    directives = dict(d.strip().split(" ", 1) for d in policy.split(";"))
    assert directives["default-src"] == "'self'"
    assert directives["script-src"] == "'self'"
    assert directives["style-src"] == "'self'"
    assert directives["connect-src"] == "'self'"
    assert directives["frame-ancestors"] == "'none'"
    assert "unsafe" not in policy
    # every script is a file: none has inline content
    assert re.findall(r"<script[^>]*>([^<]*)</script>", response.text) == ["", ""]
    assert response.headers["referrer-policy"] == "no-referrer"
    assert response.headers["x-frame-options"] == "DENY"


async def test_the_page_also_answers_with_a_trailing_slash_and_head(
    http: httpx.AsyncClient,
) -> None:
    page = await http.get("/docs")
    slash = await http.get("/docs/")
    head = await http.head("/docs")
    assert slash.text == page.text
    assert head.status_code == 200
    assert head.content == b""
    assert head.headers["content-length"] == str(len(page.content))


async def test_every_asset_is_served_with_its_type_and_cached(http: httpx.AsyncClient) -> None:
    page = (await http.get("/docs")).text
    for link in links(page):
        response = await http.get(link)
        name = link.rsplit("/", 1)[1]
        assert response.status_code == 200, link
        assert response.headers["content-type"] == ASSETS[name]
        assert response.headers["cache-control"] == "public, max-age=31536000, immutable"
        assert response.headers["x-content-type-options"] == "nosniff"
        assert len(response.content) > 100
        head = await http.head(link)
        assert (head.status_code, head.content) == (200, b"")
    bundle = (await http.get(next(link for link in links(page) if "bundle" in link))).content
    assert b"SwaggerUIBundle" in bundle
    assert b"sourceMappingURL" not in bundle[-200:]  # source maps are not served
    start = (await http.get(next(link for link in links(page) if "docs.js" in link))).text
    assert "validatorUrl: null" in start  # Swagger UI's online validator would leave the host
    assert 'getAttribute("data-openapi-url")' in start
    png = (await http.get(next(link for link in links(page) if link.endswith(".png")))).content
    assert png.startswith(b"\x89PNG\r\n\x1a\n")


async def test_only_the_listed_assets_are_served(http: httpx.AsyncClient) -> None:
    application = Application({"/": RestApi(Users())})  # no API route under /docs
    page = (await http.get("/docs")).text
    assets = next(link for link in links(page) if link.endswith("docs.js")).rsplit("/", 1)[0]
    refused = [  # as the server hands them over: decoded, not normalised
        f"{assets}/../../openapi.json",
        f"{assets}/../../../../etc/passwd",
        f"{assets}/..\\..\\pyproject.toml",
        f"{assets}/docs.js/../../../webrest/docs.py",
        f"{assets}/swagger-ui-bundle.js.map",
        f"{assets}/index.html",
        f"{assets}/swagger-initializer.js",
        f"{assets}/",
        assets,
        "/docs/swagger-ui.css",  # without the tag
        "/docs/0.0.0-00000000/docs.js",  # another tag
        "/docs/docs.py",
        "/docs//etc/passwd",
    ]
    for path in refused:
        start, body = await asgi_call(application, "GET", path)
        assert start["status"] == 404, path
        assert body["body"].startswith(b'{"status":404'), path


async def test_the_apis_still_answer_other_paths_under_the_docs_path(
    http: httpx.AsyncClient,
) -> None:
    response = await http.get("/docs/7")
    assert response.json() == {"id": "7"}


async def test_root_path_is_honoured() -> None:
    transport = httpx.ASGITransport(app=app(), root_path="/api/v1")
    async with httpx.AsyncClient(transport=transport, base_url="http://test") as http:
        response = await http.get("/api/v1/docs")
        page = response.text
        assert 'data-openapi-url="/api/v1/openapi.json"' in page
        for link in links(page):
            assert link.startswith("/api/v1/docs/")
            assert (await http.get(link)).status_code == 200
        document = await http.get("/api/v1/openapi.json")
    assert document.json()["info"]["title"] == "Users <&> more"


async def test_paths_of_their_own() -> None:
    async with client(app(docs_path="/api-docs/", openapi_path="/spec.json")) as http:
        page = await http.get("/api-docs")
        old = await http.get("/docs")
    assert 'data-openapi-url="/spec.json"' in page.text
    assert all(link.startswith("/api-docs/") for link in links(page.text))
    assert old.status_code == 404


@pytest.mark.parametrize(
    "options", [{"docs_path": None}, {"openapi_path": None}], ids=["docs off", "no document"]
)
async def test_switched_off(options: dict[str, Any]) -> None:
    application = app(**options)
    async with client(application) as http:
        page = await http.get("/docs")
        slash = await http.get("/docs/")
        document = await http.get("/openapi.json")
    assert application.docs is None
    assert page.status_code == 404
    assert slash.status_code == 404
    assert document.status_code == (404 if options.get("openapi_path", 1) is None else 200)


@pytest.mark.parametrize(
    ("docs_path", "openapi_path"),
    [("docs", "/openapi.json"), ("/", "/openapi.json"), ("/spec", "/spec")],
)
def test_a_docs_path_that_cannot_work_is_refused(docs_path: str, openapi_path: str) -> None:
    with pytest.raises(ValueError, match="docs path"):
        Application({}, docs_path=docs_path, openapi_path=openapi_path)


# -- methods of the application's own paths ------------------------------------------------------


async def test_options_of_the_document_and_the_page(http: httpx.AsyncClient) -> None:
    for path in ("/openapi.json", "/docs"):
        response = await http.options(path)
        assert response.status_code == 204, path
        assert response.headers["allow"] == "GET, HEAD, OPTIONS"
        assert response.content == b""


async def test_head_of_the_document(http: httpx.AsyncClient) -> None:
    get = await http.get("/openapi.json")
    head = await http.head("/openapi.json")
    assert (head.status_code, head.content) == (200, b"")
    assert head.headers["content-length"] == str(len(get.content))


@pytest.mark.parametrize("method", ["POST", "PUT", "PATCH", "DELETE"])
async def test_other_methods_are_not_allowed(http: httpx.AsyncClient, method: str) -> None:
    page = (await http.get("/docs")).text
    asset = links(page)[0]
    for path in ("/openapi.json", "/docs", asset):
        response = await http.request(method, path)
        assert response.status_code == 405, path
        assert response.headers["allow"] == "GET, HEAD, OPTIONS"
        assert response.json() == {"status": 405, "message": f"Method {method} not allowed"}


# -- the services' generated applications --------------------------------------------------------

SERVICES = {
    "rag": create_rag_app,
    "ratelimit": create_ratelimit_app,
    "agents": create_agents_app,
}
ERROR_SHAPES = {  # the start of each API's 405 body, in its own error shape
    "rag": b'{"detail":"Method Not Allowed"}',
    "ratelimit": b"Method Not Allowed",
    "agents": b'{"issues":[{"field":"<root>","message":"Method POST not allowed"',
}


@pytest.mark.parametrize("service", SERVICES)
async def test_every_service_serves_its_docs(service: str) -> None:
    application = SERVICES[service](cast(Any, object()))  # no handler is called
    title = application.openapi()["info"]["title"]
    async with client(application) as http:
        page = await http.get("/docs")
        options = await http.options("/openapi.json")
        post = await http.post("/openapi.json")
        for link in links(page.text):
            assert (await http.get(link)).status_code == 200
    assert page.status_code == 200
    assert f"<title>{html.escape(title)}</title>" in page.text
    assert 'data-openapi-url="/openapi.json"' in page.text
    assert options.status_code == 204
    assert options.headers["allow"] == "GET, HEAD, OPTIONS"
    assert post.status_code == 405
    assert post.headers["allow"] == "GET, HEAD, OPTIONS"
    assert post.content.startswith(ERROR_SHAPES[service])


@pytest.mark.parametrize("service", SERVICES)
async def test_a_service_without_docs(service: str) -> None:
    application = SERVICES[service](cast(Any, object()), docs_path=None)
    async with client(application) as http:
        page = await http.get("/docs")
        document = await http.get("/openapi.json")
    assert page.status_code == 404
    assert document.status_code == 200


@pytest.mark.parametrize(
    ("settings", "variable"),
    [
        (RagSettings, "RAG_DOCS_ENABLED"),
        (AgentsSettings, "AGENTS_DOCS_ENABLED"),
        (RatelimitSettings, "DOCS_ENABLED"),
    ],
)
def test_every_service_has_a_docs_setting(settings: Any, variable: str) -> None:
    assert settings.from_env({}).docs_enabled is True
    assert settings.from_env({variable: "false"}).docs_enabled is False


async def test_the_ratelimit_http_port_follows_its_setting() -> None:
    service = RateLimitService(Limiter(MemoryStore()), ServiceStats())
    for docs, status in ((True, 200), (False, 404)):
        async with client(create_http_app(service, Health(), docs=docs)) as http:
            assert (await http.get("/docs")).status_code == status
