"""Parameter binding: explicit sources via ``typing.Annotated`` and each verb's default."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Annotated, Any

import pytest

import webrest
from webrest import (
    Application,
    Body,
    Delete,
    Entity,
    FilterChain,
    Get,
    Head,
    Header,
    Matrix,
    Options,
    Param,
    Patch,
    Post,
    Put,
    Resource,
    Response,
    RestApi,
    SeparatedBy,
    Stream,
    Value,
)

from .support import client, mount


@Resource("/sources")
class Sources:
    @Get("/param")
    def param(self, name: Annotated[str, Param]) -> str:
        return name

    @Get("/param-named")
    def param_named(self, name: Annotated[str, Param("n")]) -> str:
        return name

    @Get("/value")
    def value(self, user: Annotated[dict[str, str], Value]) -> dict[str, str]:
        return user

    @Get("/value-named")
    def value_named(self, who: Annotated[dict[str, str], Value("user")]) -> dict[str, str]:
        return who

    @Get("/header")
    def header(self, x_request_id: Annotated[str, Header]) -> str:
        return x_request_id

    @Get("/header-named")
    def header_named(self, trace: Annotated[str, Header("X-Trace")]) -> str:
        return trace

    @Get("/header-int")
    def header_int(self, x_count: Annotated[int, Header] = 0) -> int:
        return x_count

    @Get("/header-list")
    def header_list(
        self,
        tags: Annotated[list[str], Header("X-Tag")] = [],  # noqa: B006
        ids: Annotated[list[int], Header("X-Ids"), SeparatedBy(",")] = [],  # noqa: B006
    ) -> list[object]:
        return [tags, ids]

    @Post("/entity")
    def entity(self, data: Annotated[dict[str, Any], Entity]) -> dict[str, Any]:
        return data

    @Put("/entity-on-put")
    def entity_on_put(self, data: Annotated[list[int], Entity]) -> int:
        return sum(data)

    @Post("/body")
    def body(self, text: Annotated[str, Body]) -> Response:
        return Response.ok().type("text/plain").body(f"<{text}>")

    @Post("/stream")
    async def stream(self, chunks: Annotated[AsyncIterator[bytes], Stream]) -> dict[str, int]:
        count = size = 0
        async for chunk in chunks:
            if chunk:
                count += 1
                size += len(chunk)
        return {"chunks": count, "size": size}

    @Put("/stream-by-type")
    async def stream_by_type(self, chunks: AsyncIterator[bytes]) -> int:
        return sum([len(chunk) async for chunk in chunks])

    @Get("/request-type")
    def request_type(self, request: webrest.Request) -> str:
        return f"{request.method} {request.url.path} {request.query_params['q']}"

    @Get("/request-marker")
    def request_marker(self, req: Annotated[Any, webrest.Request]) -> str:
        return str(req.headers["x-marker"])

    @Get("/matrix/{filter}")
    def matrix(self, filter: Annotated[dict[str, object], Matrix]) -> dict[str, object]:
        return filter


@pytest.fixture
def app() -> Application:
    async def pass_user(request: webrest.Request, chain: FilterChain) -> Response:
        request.pass_value("user", {"name": "test"})
        return await chain.proceed(request)

    return Application({"/": RestApi(Sources())}, filters=[pass_user])


async def test_param_bare(app: Application) -> None:
    async with client(app) as http:
        response = await http.get("/sources/param", params={"name": "Timm"})
    assert response.json() == "Timm"


async def test_param_named(app: Application) -> None:
    async with client(app) as http:
        named = await http.get("/sources/param-named", params={"n": "Timm"})
        own_name = await http.get("/sources/param-named", params={"name": "Timm"})
    assert named.json() == "Timm"
    assert own_name.status_code == 400
    assert own_name.json() == {"status": 400, "message": "Missing argument n (query)"}


async def test_value_passed_by_a_filter(app: Application) -> None:
    async with client(app) as http:
        assert (await http.get("/sources/value")).json() == {"name": "test"}
        assert (await http.get("/sources/value-named")).json() == {"name": "test"}


async def test_value_missing_is_bad_request() -> None:
    async with client(mount(Sources())) as http:
        response = await http.get("/sources/value")
    assert response.status_code == 400
    assert response.json() == {"status": 400, "message": "Missing argument user (value)"}


async def test_header_default_name_uses_dashes(app: Application) -> None:
    async with client(app) as http:
        response = await http.get("/sources/header", headers={"X-Request-Id": "abc-123"})
        lower = await http.get("/sources/header", headers={"x-request-id": "lower"})
    assert response.json() == "abc-123"
    assert lower.json() == "lower"


async def test_header_explicit_name(app: Application) -> None:
    async with client(app) as http:
        response = await http.get("/sources/header-named", headers={"x-trace": "t1"})
    assert response.json() == "t1"


async def test_header_missing(app: Application) -> None:
    async with client(app) as http:
        response = await http.get("/sources/header")
    assert response.status_code == 400
    assert response.json() == {"status": 400, "message": "Missing argument x-request-id (header)"}


async def test_header_converted_and_defaulted(app: Application) -> None:
    async with client(app) as http:
        assert (await http.get("/sources/header-int", headers={"X-Count": "5"})).json() == 5
        assert (await http.get("/sources/header-int")).json() == 0


async def test_header_lists(app: Application) -> None:
    async with client(app) as http:
        repeated = await http.get(
            "/sources/header-list",
            headers=[("X-Tag", "a"), ("X-Tag", "b"), ("X-Ids", "1"), ("X-Ids", "2")],
        )
        single = await http.get("/sources/header-list", headers={"X-Tag": "a", "X-Ids": "4,5"})
        absent = await http.get("/sources/header-list")
    assert repeated.json() == [["a", "b"], [1, 2]]
    assert single.json() == [["a"], [4, 5]]
    assert absent.json() == [[], []]


async def test_entity(app: Application) -> None:
    async with client(app) as http:
        response = await http.post("/sources/entity", json={"a": [1, 2]})
        on_put = await http.put("/sources/entity-on-put", json=[1, 2, 3])
    assert response.json() == {"a": [1, 2]}
    assert on_put.json() == 6


async def test_entity_missing(app: Application) -> None:
    async with client(app) as http:
        response = await http.post("/sources/entity")
    assert response.status_code == 400
    assert response.json() == {
        "status": 400,
        "message": "Expecting a request body, none transmitted",
    }


async def test_body_as_string(app: Application) -> None:
    async with client(app) as http:
        response = await http.post(
            "/sources/body", content="Hällo".encode(), headers={"Content-Type": "text/plain"}
        )
    assert response.status_code == 200
    assert response.text == "<Hällo>"


async def test_body_decoded_with_the_charset(app: Application) -> None:
    async with client(app) as http:
        response = await http.post(
            "/sources/body",
            content="Hällo".encode("latin-1"),
            headers={"Content-Type": "text/plain; charset=iso-8859-1"},
        )
    assert response.text == "<Hällo>"


async def test_body_in_an_unknown_charset(app: Application) -> None:
    async with client(app) as http:
        response = await http.post(
            "/sources/body",
            content=b"\xff\xfe",
            headers={"Content-Type": "text/plain; charset=utf-8"},
        )
    assert response.status_code == 400
    assert response.json() == {
        "status": 400,
        "message": "The request body is not valid utf-8 text",
    }


async def test_body_empty_is_bad_request(app: Application) -> None:
    async with client(app) as http:
        response = await http.post("/sources/body", content=b"")
    assert response.status_code == 400
    assert response.json() == {
        "status": 400,
        "message": "Expecting a request body, none transmitted",
    }


async def test_stream(app: Application) -> None:
    async def chunks() -> AsyncIterator[bytes]:
        for _ in range(3):
            yield b"x" * 10

    async with client(app) as http:
        response = await http.post("/sources/stream", content=chunks())
    assert response.json() == {"chunks": 3, "size": 30}


async def test_stream_by_type(app: Application) -> None:
    async with client(app) as http:
        response = await http.put("/sources/stream-by-type", content=b"12345")
    assert response.json() == 5


async def test_request_by_type(app: Application) -> None:
    async with client(app) as http:
        response = await http.get("/sources/request-type", params={"q": "x"})
    assert response.json() == "GET /sources/request-type x"


async def test_request_as_marker(app: Application) -> None:
    async with client(app) as http:
        response = await http.get("/sources/request-marker", headers={"X-Marker": "m"})
    assert response.json() == "m"


async def test_matrix(app: Application) -> None:
    async with client(app) as http:
        response = await http.get("/sources/matrix/a=1;b=x,y;c")
    assert response.json() == {"a": "1", "b": ["x", "y"], "c": None}


# -- verb defaults -------------------------------------------------------------------------


@Resource("/defaults")
class Defaults:
    @Get("/{id}")
    def get(self, id: str, name: str, page: int = 1) -> list[object]:
        return ["GET", id, name, page]

    @Delete("/{id}")
    def delete(self, id: str, name: str) -> list[object]:
        return ["DELETE", id, name]

    @Options("/{id}")
    def options(self, id: str, name: str) -> Response:
        return Response.ok().header("X-Name", name)

    @Head("/{id}")
    def head(self, id: str, name: str) -> Response:
        return Response.ok().header("X-Name", name)

    @Post("/{id}")
    def post(self, id: str, first: dict[str, Any], second: dict[str, Any]) -> list[object]:
        return ["POST", id, first, second]

    @Put("/{id}")
    def put(self, id: str, data: dict[str, Any]) -> list[object]:
        return ["PUT", id, data]

    @Patch("/{id}")
    def patch(self, id: str, data: Any) -> list[object]:
        return ["PATCH", id, data]


async def test_get_reads_request_parameters() -> None:
    async with client(mount(Defaults())) as http:
        response = await http.get("/defaults/1", params={"name": "a", "page": "3"})
        defaulted = await http.get("/defaults/1", params={"name": "a"})
    assert response.json() == ["GET", "1", "a", 3]
    assert defaulted.json() == ["GET", "1", "a", 1]


async def test_delete_options_head_read_request_parameters() -> None:
    async with client(mount(Defaults())) as http:
        deleted = await http.delete("/defaults/2", params={"name": "b"})
        options = await http.options("/defaults/2", params={"name": "c"})
        head = await http.head("/defaults/2", params={"name": "d"})
    assert deleted.json() == ["DELETE", "2", "b"]
    assert options.headers["x-name"] == "c"
    assert head.headers["x-name"] == "d"


async def test_get_ignores_the_body_for_unbound_parameters() -> None:
    async with client(mount(Defaults())) as http:
        response = await http.request("GET", "/defaults/1", json={"name": "body"})
    assert response.status_code == 400
    assert response.json() == {"status": 400, "message": "Missing argument name (query)"}


async def test_post_passes_the_whole_body_to_every_unbound_parameter() -> None:
    async with client(mount(Defaults())) as http:
        response = await http.post("/defaults/3", json={"name": "x"}, params={"first": "no"})
    assert response.json() == ["POST", "3", {"name": "x"}, {"name": "x"}]


async def test_put_and_patch_pass_the_body() -> None:
    async with client(mount(Defaults())) as http:
        put = await http.put("/defaults/4", json={"k": "v"})
        patch = await http.patch("/defaults/5", json=[1, "two"])
    assert put.json() == ["PUT", "4", {"k": "v"}]
    assert patch.json() == ["PATCH", "5", [1, "two"]]


async def test_post_without_body_is_bad_request() -> None:
    async with client(mount(Defaults())) as http:
        response = await http.post("/defaults/3")
    assert response.status_code == 400
    assert response.json() == {
        "status": 400,
        "message": "Expecting a request body, none transmitted",
    }


# -- defaults, missing and invalid parameters -----------------------------------------------


@Resource("/checks")
class Checks:
    @Get("/search")
    def search(
        self,
        q: str,
        page: int = 1,
        size: Annotated[int, Param("per_page")] = 20,
        sort: str | None = None,
    ) -> dict[str, object]:
        return {"q": q, "page": page, "size": size, "sort": sort}

    @Get("/three")
    def three(self, a: int, b: float, c: bool) -> list[object]:
        return [a, b, c]


async def test_parameter_defaults_apply_when_absent() -> None:
    async with client(mount(Checks())) as http:
        response = await http.get("/checks/search", params={"q": "x"})
        given = await http.get(
            "/checks/search", params={"q": "x", "page": "2", "per_page": "5", "sort": "name"}
        )
    assert response.json() == {"q": "x", "page": 1, "size": 20, "sort": None}
    assert given.json() == {"q": "x", "page": 2, "size": 5, "sort": "name"}


async def test_missing_required_parameter_is_named() -> None:
    async with client(mount(Checks())) as http:
        response = await http.get("/checks/search")
    assert response.status_code == 400
    assert response.json() == {"status": 400, "message": "Missing argument q (query)"}


async def test_every_invalid_parameter_is_reported_at_once() -> None:
    async with client(mount(Checks())) as http:
        response = await http.get("/checks/three", params={"a": "x", "c": "maybe"})
    assert response.status_code == 400
    message = response.json()["message"]
    assert message.startswith("Invalid argument a (query): Input should be a valid integer")
    assert "Missing argument b (query)" in message
    assert "Invalid argument c (query): Input should be a valid boolean" in message
    assert message.count("; ") == 2


# -- form fields -------------------------------------------------------------------------------


@Resource("/forms")
class Forms:
    @Post("/login")
    def login(
        self,
        user: Annotated[str, Param],
        remember: Annotated[bool, Param] = False,
        tags: Annotated[list[str], Param("tag")] = [],  # noqa: B006
    ) -> dict[str, object]:
        return {"user": user, "remember": remember, "tags": tags}

    @Post("/query-first")
    def query_first(self, user: Annotated[str, Param]) -> str:
        return user


async def test_param_reads_url_encoded_form_fields() -> None:
    async with client(mount(Forms())) as http:
        response = await http.post(
            "/forms/login", data={"user": "timm", "remember": "true", "tag": ["a", "b"]}
        )
    assert response.status_code == 200
    assert response.json() == {"user": "timm", "remember": True, "tags": ["a", "b"]}


async def test_param_reads_multipart_form_fields() -> None:
    async with client(mount(Forms())) as http:
        response = await http.post(
            "/forms/login",
            data={"user": "timm", "tag": "only"},
            files={"attachment": ("a.txt", b"content", "text/plain")},
        )
    assert response.status_code == 200
    assert response.json() == {"user": "timm", "remember": False, "tags": ["only"]}


async def test_param_prefers_the_query_string_over_form_fields() -> None:
    async with client(mount(Forms())) as http:
        response = await http.post(
            "/forms/query-first", params={"user": "query"}, data={"user": "form"}
        )
    assert response.json() == "query"


async def test_param_on_post_with_json_body_reads_only_the_query() -> None:
    async with client(mount(Forms())) as http:
        missing = await http.post("/forms/query-first", json={"user": "json"})
        given = await http.post("/forms/query-first?user=q", json={"user": "json"})
    assert missing.status_code == 400
    assert missing.json() == {"status": 400, "message": "Missing argument user (query)"}
    assert given.json() == "q"
