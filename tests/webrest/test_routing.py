"""Routing: resource prefixes, verb decorators, path templates and route precedence."""

from __future__ import annotations

import pytest

from webrest import Delete, Get, Head, Options, Patch, Post, Put, Resource, Response, RestApi

from .support import client, mount


@Resource("/items")
class Items:
    @Get("/{id}")
    def get(self, id: str) -> dict[str, str]:
        return {"verb": "GET", "id": id}

    @Head("/{id}")
    def head(self, id: str) -> Response:
        return Response.ok().header("X-Verb", "HEAD").header("X-Id", id)

    @Post("/{id}")
    def post(self, id: str) -> dict[str, str]:
        return {"verb": "POST", "id": id}

    @Put("/{id}")
    def put(self, id: str) -> dict[str, str]:
        return {"verb": "PUT", "id": id}

    @Patch("/{id}")
    def patch(self, id: str) -> dict[str, str]:
        return {"verb": "PATCH", "id": id}

    @Delete("/{id}")
    def delete(self, id: str) -> dict[str, str]:
        return {"verb": "DELETE", "id": id}

    @Options("/{id}")
    def options(self, id: str) -> Response:
        return Response.ok().header("X-Verb", "OPTIONS").header("X-Id", id)


@pytest.mark.parametrize("verb", ["GET", "POST", "PUT", "PATCH", "DELETE"])
async def test_each_verb_routes_to_its_method(verb: str) -> None:
    async with client(mount(Items())) as http:
        response = await http.request(verb, "/items/42")
    assert response.status_code == 200
    assert response.json() == {"verb": verb, "id": "42"}


@pytest.mark.parametrize("verb", ["HEAD", "OPTIONS"])
async def test_head_and_options_route_to_their_methods(verb: str) -> None:
    async with client(mount(Items())) as http:
        response = await http.request(verb, "/items/7")
    assert response.status_code == 200
    assert response.headers["x-verb"] == verb
    assert response.headers["x-id"] == "7"
    assert response.content == b""


@Resource("/users")
class Users:
    @Get("/me")
    def me(self) -> str:
        return "me"

    @Get("/{id}")
    def by_id(self, id: str) -> str:
        return f"id {id}"

    @Get("/{id:[0-9]+}/avatar")
    def avatar(self, id: int) -> str:
        return f"avatar {id}"

    @Get("/{id}/avatar")
    def avatar_named(self, id: str) -> str:
        return f"avatar of {id}"

    @Get("/{id}/posts/{post}")
    def post(self, id: str, post: str) -> list[str]:
        return [id, post]


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("/users/me", "me"),
        ("/users/1549", "id 1549"),
        ("/users/friebe", "id friebe"),
        ("/users/1549/avatar", "avatar 1549"),
        ("/users/friebe/avatar", "avatar of friebe"),
        ("/users/1/posts/2", ["1", "2"]),
    ],
)
async def test_path_values_bind_same_named_parameters(path: str, expected: object) -> None:
    async with client(mount(Users())) as http:
        response = await http.get(path)
    assert response.status_code == 200
    assert response.json() == expected


@Resource("/numbers")
class Numbers:
    @Get("/{id:[0-9]+}")
    def number(self, id: int) -> int:
        return id


async def test_constraint_mismatch_is_not_found() -> None:
    async with client(mount(Numbers())) as http:
        assert (await http.get("/numbers/123")).json() == 123
        response = await http.get("/numbers/abc")
    assert response.status_code == 404
    assert response.json() == {"status": 404, "message": "Cannot route request to /numbers/abc"}


async def test_constraint_is_anchored_to_the_whole_segment() -> None:
    async with client(mount(Numbers())) as http:
        assert (await http.get("/numbers/12ab")).status_code == 404
        assert (await http.get("/numbers/12/34")).status_code == 404


@Resource("/files")
class Files:
    @Get("/{path:.+}")
    def file(self, path: str) -> str:
        return f"file {path}"

    @Get("/{path:.+}/meta")
    def meta(self, path: str) -> str:
        return f"meta {path}"


async def test_longer_template_beats_its_prefix() -> None:
    async with client(mount(Files())) as http:
        assert (await http.get("/files/a/b/c")).json() == "file a/b/c"
        assert (await http.get("/files/a/b/meta")).json() == "meta a/b"


# Two resources whose routes overlap; the winner must not depend on the declaration order.


class Literal:
    @Get("/things/latest")
    def zz_latest(self) -> str:
        return "literal"


class Constrained:
    @Get("/things/{id:[0-9]+}")
    def mm_number(self, id: int) -> str:
        return "constrained"


class Plain:
    @Get("/things/{name}")
    def aa_name(self, name: str) -> str:
        return "plain"


class Prefixed:
    @Get("/things/{name}/{rest}")
    def bb_rest(self, name: str, rest: str) -> str:
        return "longer"


@pytest.mark.parametrize("reverse", [False, True], ids=["declared", "reversed"])
async def test_most_specific_route_wins_whatever_the_order(reverse: bool) -> None:
    resources: list[object] = [Literal(), Constrained(), Plain(), Prefixed()]
    if reverse:
        resources.reverse()
    app = mount(*resources)
    async with client(app) as http:
        assert (await http.get("/things/latest")).json() == "literal"
        assert (await http.get("/things/123")).json() == "constrained"
        assert (await http.get("/things/abc")).json() == "plain"
        assert (await http.get("/things/abc/def")).json() == "longer"
        assert (await http.get("/things/abc/def/ghi")).status_code == 404


@pytest.mark.parametrize("reverse", [False, True], ids=["declared", "reversed"])
def test_route_table_order_does_not_depend_on_registration(reverse: bool) -> None:
    resources: list[object] = [Literal(), Constrained(), Plain(), Prefixed()]
    if reverse:
        resources.reverse()
    api = RestApi(*resources)
    assert [template.template for template, _ in api.routes.routes()] == [
        "/things/latest",
        "/things/{id:[0-9]+}",
        "/things/{name}/{rest}",
        "/things/{name}",
    ]


@Resource("/slashes")
class Slashes:
    @Get("/")
    def index(self) -> str:
        return "index"

    @Get("/static")
    def static(self) -> str:
        return "static"

    @Get("/{id}")
    def dynamic(self, id: str) -> str:
        return f"dynamic {id}"


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("/slashes", "index"),
        ("/slashes/", "index"),
        ("/slashes/static", "static"),
        ("/slashes/static/", "static"),
        ("/slashes/1", "dynamic 1"),
        ("/slashes/1/", "dynamic 1"),
    ],
)
async def test_trailing_slash_is_tolerated(path: str, expected: str) -> None:
    async with client(mount(Slashes())) as http:
        response = await http.get(path)
    assert response.status_code == 200
    assert response.json() == expected


@Resource("/users/{user}/avatars/")
class Avatars:
    @Get("/{id:[0-9]+}")
    def avatar(self, user: str, id: int) -> list[object]:
        return [user, id]

    @Get()
    def all(self, user: str) -> list[object]:
        return [user]


async def test_resource_prefix_with_a_parameter() -> None:
    async with client(mount(Avatars())) as http:
        assert (await http.get("/users/~friebe/avatars/1")).json() == ["~friebe", 1]
        assert (await http.get("/users/~friebe/avatars")).json() == ["~friebe"]
        assert (await http.get("/users/~friebe/avatars/")).json() == ["~friebe"]


@Resource("/")
class Root:
    @Get()
    def index(self) -> str:
        return "root"


async def test_root_resource() -> None:
    async with client(mount(Root())) as http:
        assert (await http.get("/")).json() == "root"
        assert (await http.get("/other")).status_code == 404


class Unprefixed:
    @Get("/hello")
    def hello(self) -> str:
        return "hello"


async def test_class_without_resource_decorator_has_no_prefix() -> None:
    async with client(mount(Unprefixed())) as http:
        assert (await http.get("/hello")).json() == "hello"


@Resource("/")
class Variants:
    @Get("/{filter}")
    def variants(self, filter: str) -> str:
        return filter

    @Get("/named/{name}")
    def named(self, name: str) -> str:
        return name


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("/variants=a%26b", "variants=a&b"),
        ("/named/J%C3%BCrgen", "Jürgen"),
        ("/named/a%20b", "a b"),
        ("/named/%7Efriebe", "~friebe"),
    ],
)
async def test_path_values_are_url_decoded(path: str, expected: str) -> None:
    async with client(mount(Variants())) as http:
        response = await http.get(path)
    assert response.status_code == 200
    assert response.json() == expected


@Resource("/multi")
class Multi:
    @Get("/{id}")
    @Delete("/{id}")
    def both(self, id: str) -> str:
        return id

    @Post("/one")
    @Put("/two")
    def write(self, data: dict[str, object]) -> dict[str, object]:
        return data


async def test_method_with_two_verb_decorators() -> None:
    async with client(mount(Multi())) as http:
        assert (await http.get("/multi/1")).json() == "1"
        assert (await http.delete("/multi/2")).json() == "2"
        assert (await http.post("/multi/one", json={"a": 1})).json() == {"a": 1}
        assert (await http.put("/multi/two", json={"b": 2})).json() == {"b": 2}
        assert (await http.put("/multi/one", json={})).status_code == 405
        assert (await http.post("/multi/two", json={})).status_code == 405


def test_duplicate_route_is_an_error_at_registration() -> None:
    class Twice:
        @Get("/a")
        def first(self) -> None: ...

        @Get("/a")
        def second(self) -> None: ...

    with pytest.raises(ValueError, match=r"GET /a is declared twice"):
        RestApi(Twice())


def test_duplicate_parameterized_route_is_an_error_at_registration() -> None:
    class Twice:
        @Get("/users/{id}")
        def by_id(self, id: str) -> None: ...

        @Get("/users/{name}/")
        def by_name(self, name: str) -> None: ...

    with pytest.raises(ValueError, match=r"declared twice"):
        RestApi(Twice())


def test_duplicate_route_across_resources_is_an_error() -> None:
    class One:
        @Post("/x")
        def a(self) -> None: ...

    class Two:
        @Post("/x/")
        def b(self) -> None: ...

    with pytest.raises(ValueError, match=r"POST /x is declared twice"):
        RestApi(One(), Two())


def test_same_path_different_verbs_is_fine() -> None:
    class Both:
        @Get("/users/{id}")
        def find(self, id: str) -> None: ...

        @Delete("/users/{id}")
        def remove(self, id: str) -> None: ...

    api = RestApi(Both())
    assert sorted(endpoint.method for endpoint in api.endpoints) == ["DELETE", "GET"]


def test_class_without_routes_is_a_type_error() -> None:
    class Nothing:
        def method(self) -> None: ...

    with pytest.raises(TypeError, match="Nothing declares no routes"):
        RestApi(Nothing())


@pytest.mark.parametrize(
    "template",
    ["/{id", "/id}", "/{1abc}", "/{a}/{a}", "/{id:[0-9}"],
)
def test_malformed_templates_fail_at_registration(template: str) -> None:
    class Bad:
        @Get(template)
        def method(self) -> None: ...

    with pytest.raises(Exception) as raised:
        RestApi(Bad())
    assert isinstance(raised.value, (ValueError, TypeError))


async def test_query_string_is_not_part_of_the_path() -> None:
    async with client(mount(Users())) as http:
        response = await http.get("/users/me?x=1")
    assert response.json() == "me"


async def test_unknown_path_is_not_found() -> None:
    async with client(mount(Users())) as http:
        response = await http.get("/nope")
    assert response.status_code == 404
    assert response.json() == {"status": 404, "message": "Cannot route request to /nope"}


async def test_a_parameter_regex_may_contain_slashes() -> None:
    """``{name:regex}`` is read brace-aware, so a regex admitting ``/`` spans segments."""
    from webrest import Application, Get, Resource, RestApi

    @Resource("/files")
    class Files:
        @Get("/{path:[a-z]+(?:/[a-z]+)*}/raw")
        def raw(self, path: str) -> dict[str, str]:
            return {"path": path}

    app = Application({"/files": RestApi(Files())})
    async with client(app) as http:
        assert (await http.get("/files/a/b/c/raw")).json() == {"path": "a/b/c"}
        assert (await http.get("/files/a%2Fb/raw")).json() == {"path": "a/b"}
        assert (await http.get("/files/A/raw")).status_code == 404
