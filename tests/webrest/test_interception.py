"""Filters (around routing) and interceptors (around the method, with its target)."""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable
from typing import Annotated

import pytest

from webrest import (
    Application,
    FilterChain,
    Get,
    Invocation,
    Param,
    Post,
    Request,
    Resource,
    Response,
    RestApi,
    Value,
    annotate,
)
from webrest.binding import Kind
from webrest.errors import RegistrationError

from .support import client


@dataclasses.dataclass(frozen=True)
class Cached:
    ttl: int


class ElementNotFound(Exception):
    pass


@Resource("/users")
class Users:
    def __init__(self) -> None:
        self.calls: list[str] = []

    @Get("/me")
    def me(self, user: Annotated[str, Value("user")]) -> dict[str, str]:
        self.calls.append("me")
        return {"user": user}

    @Get("/{id}")
    @annotate(Cached(ttl=3600))
    def find(self, id: int, fields: Annotated[str, Param] = "all") -> dict[str, object]:
        self.calls.append("find")
        if id == 0:
            raise ElementNotFound(f"No user #{id}")
        return {"id": id, "fields": fields}

    @Post()
    async def create(self, user: dict[str, str]) -> Response:
        self.calls.append("create")
        return Response.created("/users/{name}", user["name"])


# -- filters -----------------------------------------------------------------------------------


async def test_filter_before_and_after() -> None:
    async def timing(request: Request, chain: FilterChain) -> Response:
        request.pass_value("user", "before")
        response = await chain.proceed(request)
        return response.header("X-Filtered", "after")

    app = Application({"/users": RestApi(Users())}, filters=[timing])
    async with client(app) as http:
        response = await http.get("/users/me")
        missing = await http.get("/nope")
    assert response.json() == {"user": "before"}
    assert response.headers["x-filtered"] == "after"
    assert missing.status_code == 404
    assert missing.headers["x-filtered"] == "after"


async def test_filter_short_circuits() -> None:
    users = Users()

    async def auth(request: Request, chain: FilterChain) -> Response:
        if request.headers.get("authorization") != "Bearer secret":
            return Response.error(401, "Authentication required")
        request.pass_value("user", "authenticated")
        return await chain.proceed(request)

    app = Application({"/users": RestApi(users)}, filters=[auth])
    async with client(app) as http:
        denied = await http.get("/users/me")
        allowed = await http.get("/users/me", headers={"Authorization": "Bearer secret"})
    assert denied.status_code == 401
    assert denied.json() == {"status": 401, "message": "Authentication required"}
    assert denied.headers["x-content-type-options"] == "nosniff"
    assert allowed.json() == {"user": "authenticated"}
    assert users.calls == ["me"]


async def test_filters_run_in_registration_order() -> None:
    order: list[str] = []

    def recording(name: str):  # type: ignore[no-untyped-def]
        async def record(request: Request, chain: FilterChain) -> Response:
            order.append(f"{name} before")
            request.pass_value("user", name)
            response = await chain.proceed(request)
            order.append(f"{name} after")
            return response

        return record

    app = Application({"/users": RestApi(Users())}, filters=[recording("first")])
    app.install(recording("second")).install(recording("third"))
    async with client(app) as http:
        response = await http.get("/users/me")
    assert response.json() == {"user": "third"}
    assert order == [
        "first before",
        "second before",
        "third before",
        "third after",
        "second after",
        "first after",
    ]


async def test_filter_error_is_rendered(caplog: pytest.LogCaptureFixture) -> None:
    async def broken(request: Request, chain: FilterChain) -> Response:
        raise RuntimeError("filter secret")

    app = Application({"/users": RestApi(Users())}, filters=[broken])
    with caplog.at_level("ERROR", logger="webrest"):
        async with client(app) as http:
            response = await http.get("/users/me")
    assert response.status_code == 500
    assert response.json() == {"status": 500, "message": "Internal Server Error"}
    assert "filter secret" in caplog.text


# -- interceptors ------------------------------------------------------------------------------


def app_for(users: Users, *interceptors: object) -> Application:
    api = RestApi(users)
    for interceptor in interceptors:
        api.intercepting(interceptor)  # type: ignore[arg-type]
    return Application({"/users": api})


async def test_interceptor_sees_the_target_and_arguments() -> None:
    seen: list[object] = []

    async def inspect(invocation: Invocation, arguments: dict[str, object]) -> object:
        target = invocation.target
        seen.append(target.name)
        seen.append(target.annotations)
        seen.append([(p.name, p.kind, p.key) for p in target.parameters])
        seen.append(dict(arguments))
        return await invocation.proceed(arguments)

    async with client(app_for(Users(), inspect)) as http:
        response = await http.get("/users/1549?fields=name")
    assert response.json() == {"id": 1549, "fields": "name"}
    assert seen == [
        f"{__name__}.Users.find",
        (Cached(ttl=3600),),
        [("id", Kind.PATH, "id"), ("fields", Kind.QUERY, "fields")],
        {"id": 1549, "fields": "name"},
    ]


async def test_interceptor_reads_annotations() -> None:
    async def caching(invocation: Invocation, arguments: dict[str, object]) -> object:
        result = await invocation.proceed(arguments)
        for annotation in invocation.target.annotations:
            if isinstance(annotation, Cached):
                return (
                    Response.ok()
                    .header("Cache-Control", f"max-age={annotation.ttl}")
                    .entity(result)
                )
        return result

    async with client(app_for(Users(), caching)) as http:
        cached = await http.get("/users/1")
        uncached = await http.post("/users", json={"name": "x"})
    assert cached.headers["cache-control"] == "max-age=3600"
    assert cached.json() == {"id": 1, "fields": "all"}
    assert uncached.headers.get("cache-control") != "max-age=3600"  # no default, or no-cache
    assert uncached.status_code == 201


async def test_interceptor_replaces_arguments() -> None:
    async def override(invocation: Invocation, arguments: dict[str, object]) -> object:
        return await invocation.proceed({**arguments, "fields": "replaced"})

    async with client(app_for(Users(), override)) as http:
        response = await http.get("/users/1?fields=name")
    assert response.json() == {"id": 1, "fields": "replaced"}


async def test_interceptor_short_circuits_with_a_value_or_response() -> None:
    users = Users()

    async def value(invocation: Invocation, arguments: dict[str, object]) -> object:
        if invocation.target.name.endswith(".find"):
            return {"from": "interceptor"}
        return Response.error(403, "Forbidden")

    async with client(app_for(users, value)) as http:
        found = await http.get("/users/1")
        created = await http.post("/users", json={"name": "x"})
    assert found.status_code == 200
    assert found.json() == {"from": "interceptor"}
    assert created.status_code == 403
    assert created.json() == {"status": 403, "message": "Forbidden"}
    assert users.calls == []


async def test_interceptor_maps_exceptions() -> None:
    async def not_found(invocation: Invocation, arguments: dict[str, object]) -> object:
        try:
            return await invocation.proceed(arguments)
        except ElementNotFound as exc:
            return Response.not_found(exc)

    async with client(app_for(Users(), not_found)) as http:
        response = await http.get("/users/0")
    assert response.status_code == 404
    assert response.json() == {"status": 404, "message": "No user #0"}


async def test_interceptor_around_a_coroutine_method() -> None:
    async def passing(invocation: Invocation, arguments: dict[str, object]) -> object:
        return await invocation.proceed(arguments)

    async with client(app_for(Users(), passing)) as http:
        response = await http.post("/users", json={"name": "Jürgen"})
    assert response.status_code == 201
    assert response.headers["location"] == "/users/J%C3%BCrgen"


async def test_interceptors_run_in_registration_order() -> None:
    order: list[str] = []

    def recording(name: str):  # type: ignore[no-untyped-def]
        async def record(invocation: Invocation, arguments: dict[str, object]) -> object:
            order.append(f"{name} before")
            try:
                return await invocation.proceed(arguments)
            finally:
                order.append(f"{name} after")

        return record

    users = Users()
    api = RestApi(users).intercepting(recording("first")).intercepting(recording("second"))
    async with client(Application({"/users": api})) as http:
        await http.get("/users/1")
    assert order == ["first before", "second before", "second after", "first after"]
    assert users.calls == ["find"]


async def test_interceptors_do_not_run_when_binding_fails() -> None:
    called: list[str] = []

    async def record(invocation: Invocation, arguments: dict[str, object]) -> object:
        called.append(invocation.target.name)
        return await invocation.proceed(arguments)

    async with client(app_for(Users(), record)) as http:
        response = await http.get("/users/abc")
    assert response.status_code == 400
    assert called == []


# -- plain functions as filters and interceptors (issue 22) ---------------------------------------


async def test_plain_function_filters() -> None:
    def passing(request: Request, chain: FilterChain) -> Awaitable[Response]:
        request.pass_value("user", "plain")
        return chain.proceed(request)

    def answering(request: Request, chain: FilterChain) -> Response | Awaitable[Response]:
        if request.url.path == "/users/blocked":
            return Response.error(403, "Blocked")
        return chain.proceed(request)

    app = Application({"/users": RestApi(Users())}, filters=[passing, answering])
    async with client(app) as http:
        response = await http.get("/users/me")
        blocked = await http.get("/users/blocked")
    assert response.json() == {"user": "plain"}
    assert blocked.status_code == 403
    assert blocked.json() == {"status": 403, "message": "Blocked"}


async def test_filter_returning_no_response_is_a_clear_server_error(
    caplog: pytest.LogCaptureFixture,
) -> None:
    def forgetful(request: Request, chain: FilterChain) -> None:
        chain.proceed(request).close()  # not awaited: closed

    app = Application({"/users": RestApi(Users())}, filters=[forgetful])  # type: ignore[list-item]
    with caplog.at_level("ERROR", logger="webrest"):
        async with client(app) as http:
            response = await http.get("/users/me")
    assert response.status_code == 500
    assert "Filter" in caplog.text and "forgetful returned NoneType, not a Response" in caplog.text


async def test_plain_function_interceptors() -> None:
    calls: list[str] = []

    def logging(invocation: Invocation, arguments: dict[str, object]) -> Awaitable[object]:
        calls.append(invocation.target.name.rsplit(".", 1)[-1])
        return invocation.proceed(arguments)

    def blocking(invocation: Invocation, arguments: dict[str, object]) -> object:
        if arguments.get("id") == 0:
            return Response.not_found("No such user")
        return invocation.proceed(arguments)

    users = Users()
    async with client(app_for(users, logging, blocking)) as http:
        found = await http.get("/users/1")
        missing = await http.get("/users/0")
        created = await http.post("/users", json={"name": "x"})
    assert found.json() == {"id": 1, "fields": "all"}
    assert missing.status_code == 404
    assert missing.json() == {"status": 404, "message": "No such user"}
    assert created.status_code == 201
    assert calls == ["find", "find", "create"]
    assert users.calls == ["find", "create"]


def test_interceptor_that_cannot_be_called_is_refused_at_registration() -> None:
    with pytest.raises(RegistrationError, match="Interceptor 42 is not callable"):
        RestApi(Users()).intercepting(42)  # type: ignore[arg-type]
