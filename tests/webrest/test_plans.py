"""Binding plans are computed once, at registration; requests need no reflection."""

from __future__ import annotations

import dataclasses
import inspect
import typing
from collections.abc import AsyncIterator
from typing import Annotated, Any, NoReturn

import pytest
from pydantic import BaseModel

import webrest
from webrest import (
    Application,
    Async,
    Body,
    Entity,
    FilterChain,
    Get,
    Header,
    Invocation,
    Matrix,
    Multipart,
    Param,
    Post,
    Resource,
    Response,
    RestApi,
    SeparatedBy,
    Stream,
    Value,
)
from webrest.binding import MISSING, Kind

from .support import client


class NewUser(BaseModel):
    name: str


@dataclasses.dataclass
class Filters:
    status: str


@Resource("/users")
class Users:
    @Get("/{id:[0-9]+}")
    def find(
        self,
        id: int,
        fields: Annotated[list[str], SeparatedBy(",")] = ["id"],  # noqa: B006
        trace: Annotated[str | None, Header("X-Trace")] = None,
    ) -> dict[str, object]:
        return {"id": id, "fields": fields, "trace": trace}

    @Get("/{filter}/search")
    async def search(
        self,
        filter: Annotated[Filters, Matrix],
        user: Annotated[str, Value] = "anonymous",
        page: int = 1,
    ) -> dict[str, object]:
        return {"status": filter.status, "user": user, "page": page}

    @Post()
    def create(self, user: NewUser, dry_run: Annotated[bool, Param] = False) -> Response:
        return Response.created("/users/{name}", user.name).entity({"dry_run": dry_run})

    @Post("/{id}/notes")
    def note(self, id: int, text: Annotated[str, Body]) -> Async:
        async def work() -> str:
            return f"{id}: {text}"

        return Async(work)

    @Post("/{id}/raw")
    async def raw(
        self, id: int, chunks: Annotated[AsyncIterator[bytes], Stream], request: webrest.Request
    ) -> int:
        return sum([len(chunk) async for chunk in chunks])

    @Post("/{id}/uploads")
    def upload(self, id: int, parts: Multipart) -> Async:
        async def work() -> list[str | None]:
            return [part.name async for part in parts]

        return Async(work)

    @Post("/{id}/entity")
    def entity(self, id: int, data: Annotated[dict[str, int], Entity]) -> dict[str, int]:
        return data


def plan(api: RestApi, method: str, path: str) -> list[tuple[str, Kind, str, object]]:
    endpoint = next(e for e in api.endpoints if e.method == method and e.path == path)
    return [(p.name, p.kind, p.key, p.default) for p in endpoint.plan.parameters]


def test_plans_show_kind_key_and_default() -> None:
    api = RestApi(Users())
    assert plan(api, "GET", "/users/{id:[0-9]+}") == [
        ("id", Kind.PATH, "id", MISSING),
        ("fields", Kind.QUERY, "fields", ["id"]),
        ("trace", Kind.HEADER, "X-Trace", None),
    ]
    assert plan(api, "GET", "/users/{filter}/search") == [
        ("filter", Kind.PATH, "filter", MISSING),
        ("user", Kind.VALUE, "user", "anonymous"),
        ("page", Kind.QUERY, "page", 1),
    ]
    assert plan(api, "POST", "/users") == [
        ("user", Kind.ENTITY, "user", MISSING),
        ("dry_run", Kind.QUERY, "dry_run", False),
    ]
    assert plan(api, "POST", "/users/{id}/notes") == [
        ("id", Kind.PATH, "id", MISSING),
        ("text", Kind.BODY, "text", MISSING),
    ]
    assert plan(api, "POST", "/users/{id}/raw") == [
        ("id", Kind.PATH, "id", MISSING),
        ("chunks", Kind.STREAM, "chunks", MISSING),
        ("request", Kind.REQUEST, "request", MISSING),
    ]
    assert plan(api, "POST", "/users/{id}/uploads") == [
        ("id", Kind.PATH, "id", MISSING),
        ("parts", Kind.MULTIPART, "parts", MISSING),
    ]
    assert plan(api, "POST", "/users/{id}/entity") == [
        ("id", Kind.PATH, "id", MISSING),
        ("data", Kind.ENTITY, "data", MISSING),
    ]


def test_plan_properties() -> None:
    api = RestApi(Users())
    endpoint = next(e for e in api.endpoints if e.path == "/users/{id:[0-9]+}")
    id_, fields, trace = endpoint.plan.parameters
    assert id_.required and not fields.required and not trace.required
    assert fields.is_list and not id_.is_list
    assert [id_.location, fields.location, trace.location] == ["path", "query", "header"]
    assert endpoint.plan.reads_body is False
    create = next(e for e in api.endpoints if e.method == "POST" and e.path == "/users")
    assert create.plan.reads_entity and create.plan.reads_body
    assert create.plan.json_entity is create.plan.parameters[0]


async def test_requests_need_no_reflection(monkeypatch: pytest.MonkeyPatch) -> None:
    async def passing(request: webrest.Request, chain: FilterChain) -> Response:
        request.pass_value("user", "timm")
        return await chain.proceed(request)

    async def intercepting(invocation: Invocation, arguments: dict[str, object]) -> object:
        return await invocation.proceed(arguments)

    api = RestApi(Users()).intercepting(intercepting)
    app = Application({"/users": api}, filters=[passing])

    def forbidden(*args: object, **kwargs: object) -> NoReturn:
        raise AssertionError("reflection at request time")

    monkeypatch.setattr(inspect, "signature", forbidden)
    monkeypatch.setattr(typing, "get_type_hints", forbidden)

    async with client(app) as http:
        found = await http.get("/users/7?fields=id,name", headers={"X-Trace": "t"})
        search = await http.get("/users/status=open/search?page=2")
        created = await http.post("/users?dry_run=true", json={"name": "Timm"})
        note = await http.post("/users/1/notes", content=b"hello")
        raw = await http.post("/users/1/raw", content=b"12345")
        entity = await http.post("/users/1/entity", json={"a": 1})
        upload = await http.post("/users/1/uploads", files={"f": ("f.txt", b"x")})
        defaults = await http.get("/users/7")
    assert found.json() == {"id": 7, "fields": ["id", "name"], "trace": "t"}
    assert search.json() == {"status": "open", "user": "timm", "page": 2}
    assert created.status_code == 201
    assert created.json() == {"dry_run": True}
    assert note.json() == "1: hello"
    assert raw.json() == 5
    assert entity.json() == {"a": 1}
    assert upload.json() == ["f"]
    assert defaults.json() == {"id": 7, "fields": ["id"], "trace": None}

    # a new API cannot be planned without reflection, which shows it is used at registration
    with pytest.raises(AssertionError, match="reflection"):
        RestApi(Users())


# -- bad declarations fail at registration -----------------------------------------------------


class Plain:
    """Not convertible from a request value."""

    def __init__(self, value: str) -> None:
        self.value = value


def test_var_positional_is_rejected() -> None:
    class Bad:
        @Get("/a")
        def method(self, *args: str) -> None: ...

    with pytest.raises(TypeError, match=r"\*args and \*\*kwargs cannot be bound"):
        RestApi(Bad())


def test_var_keyword_is_rejected() -> None:
    class Bad:
        @Get("/a")
        def method(self, **kwargs: str) -> None: ...

    with pytest.raises(TypeError, match=r"\*args and \*\*kwargs cannot be bound"):
        RestApi(Bad())


def test_unconvertible_query_parameter_is_rejected() -> None:
    class Bad:
        @Get("/a")
        def method(self, value: Plain) -> None: ...

    with pytest.raises(TypeError, match=r"Bad.method\(value\): cannot convert request values"):
        RestApi(Bad())


def test_unconvertible_path_parameter_is_rejected() -> None:
    class Bad:
        @Get("/a/{value}")
        def method(self, value: Plain) -> None: ...

    with pytest.raises(TypeError, match="cannot convert request values"):
        RestApi(Bad())


def test_unconvertible_entity_is_rejected() -> None:
    class Bad:
        @Post("/a")
        def method(self, value: Plain) -> None: ...

    with pytest.raises(TypeError, match="cannot convert request values"):
        RestApi(Bad())


def test_unresolvable_annotation_is_rejected() -> None:
    class Bad:
        @Get("/a")
        def method(self, value: Undefined) -> None: ...  # type: ignore[name-defined]  # noqa: F821

    with pytest.raises(NameError):
        RestApi(Bad())


def test_untyped_parameters_are_passed_as_received() -> None:
    class Untyped:
        @Get("/a")
        def method(self, value, other: Any = None):  # type: ignore[no-untyped-def]
            return [value, other]

    api = RestApi(Untyped())
    (value, other) = api.endpoints[0].plan.parameters
    assert value.adapter is None and other.adapter is None
    assert value.kind is Kind.QUERY
