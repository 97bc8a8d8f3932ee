"""The application: mounting APIs, HTTP correctness, errors, body limits and the lifespan."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Annotated, Any

import httpx
import pytest
from starlette.types import Message

from webrest import (
    Application,
    Async,
    BadRequest,
    Body,
    Delete,
    FilterChain,
    Get,
    Head,
    HttpError,
    Multipart,
    Options,
    Post,
    Put,
    Request,
    Resource,
    Response,
    RestApi,
    Stream,
)

from .support import asgi_call, client, mount, serve


@Resource("/users")
class Users:
    @Get()
    def list(self) -> list[str]:
        return ["users"]

    @Get("/{id}")
    def find(self, id: int) -> dict[str, int]:
        return {"id": id}

    @Delete("/{id}")
    def remove(self, id: int) -> Response:
        return Response.no_content()


@Resource("/users/admins")
class Admins:
    @Get()
    def list(self) -> list[str]:
        return ["admins"]


@Resource("/monitoring")
class Monitoring:
    @Get("/status")
    def status(self) -> str:
        return "ok"


# -- wiring ------------------------------------------------------------------------------------


def wired() -> Application:
    return Application(
        {
            "/users": RestApi(Users()),
            "/users/admins": RestApi(Admins()),
            "/monitoring": RestApi(Monitoring()),
        }
    )


async def test_several_apis_in_one_application() -> None:
    async with client(wired()) as http:
        assert (await http.get("/users")).json() == ["users"]
        assert (await http.get("/users/1")).json() == {"id": 1}
        assert (await http.get("/monitoring/status")).json() == "ok"


async def test_longest_prefix_wins() -> None:
    async with client(wired()) as http:
        assert (await http.get("/users/admins")).json() == ["admins"]
        assert (await http.get("/users/admins/")).json() == ["admins"]


async def test_prefixes_are_segment_aware() -> None:
    async with client(wired()) as http:
        response = await http.get("/usersx")
        monitoring = await http.get("/monitoringx/status")
    assert response.status_code == 404
    assert response.json() == {"status": 404, "message": "Cannot route request to /usersx"}
    assert monitoring.status_code == 404


async def test_base_is_stripped() -> None:
    app = Application({"/api/1.0": RestApi(Users(), base="/api/1.0")})
    async with client(app) as http:
        assert (await http.get("/api/1.0/users")).json() == ["users"]
        assert (await http.get("/api/1.0/users/7")).json() == {"id": 7}
        assert (await http.get("/users")).status_code == 404
        assert (await http.get("/api/1.0x/users")).status_code == 404


async def test_root_mount_with_base() -> None:
    app = Application({"/": RestApi(Users(), base="/api/1.0/")})
    async with client(app) as http:
        assert (await http.get("/api/1.0/users")).json() == ["users"]
        assert (await http.get("/api/1.0")).status_code == 404
        assert (await http.get("/users")).status_code == 404


async def test_root_path_is_stripped() -> None:
    app = Application({"/users": RestApi(Users())})
    transport = httpx.ASGITransport(app=app, root_path="/mounted")
    async with httpx.AsyncClient(transport=transport, base_url="http://test") as http:
        response = await http.get("/mounted/users/3")
    assert response.json() == {"id": 3}


async def test_runs_under_uvicorn() -> None:
    events: list[str] = []

    @asynccontextmanager
    async def lifespan(app: Application) -> AsyncIterator[None]:
        events.append("startup")
        yield
        events.append("shutdown")

    app = Application({"/users": RestApi(Users())}, lifespan=lifespan)
    with serve(app, lifespan="on") as server:
        async with httpx.AsyncClient(base_url=server.url) as http:
            found = await http.get("/users/1549")
            created = await http.post("/users/1", json={})
            head = await http.head("/users/1549")
        assert events == ["startup"]
    assert events == ["startup", "shutdown"]
    assert found.status_code == 200
    assert found.json() == {"id": 1549}
    assert found.headers["content-length"] == "11"
    assert found.headers["x-content-type-options"] == "nosniff"
    assert created.status_code == 405
    assert created.headers["allow"] == "GET, HEAD, DELETE, OPTIONS"
    assert head.status_code == 200
    assert head.headers["content-length"] == "11"
    assert head.content == b""


# -- HTTP correctness --------------------------------------------------------------------------


@Resource("/docs")
class Documents:
    @Get("/{id}")
    def get(self, id: str) -> dict[str, str]:
        return {"id": id, "via": "get"}

    @Put("/{id}")
    def put(self, id: str, doc: dict[str, Any]) -> dict[str, Any]:
        return doc

    @Get("/{id}/content")
    def content(self, id: str) -> Response:
        return Response.ok().header("X-Via", "get").body(b"0123456789")

    @Head("/{id}/content")
    def content_head(self, id: str) -> Response:
        return Response.ok().header("X-Via", "head")

    @Post("/actions")
    def act(self, action: dict[str, Any]) -> None:
        return None

    @Options("/actions")
    def act_options(self) -> Response:
        return Response.ok().header("X-Via", "options").entity({"actions": ["run"]})


async def test_no_route_is_not_found() -> None:
    async with client(mount(Documents())) as http:
        response = await http.get("/elsewhere")
    assert response.status_code == 404
    assert response.json() == {"status": 404, "message": "Cannot route request to /elsewhere"}
    assert "allow" not in response.headers


async def test_wrong_method_is_405_with_allow() -> None:
    async with client(mount(Documents())) as http:
        response = await http.delete("/docs/1")
        post = await http.get("/docs/actions")  # matches /docs/{id} as well
        wired_response = await http.patch("/docs/1/content")
    assert response.status_code == 405
    assert response.headers["allow"] == "GET, HEAD, PUT, OPTIONS"
    assert response.json() == {"status": 405, "message": "Method DELETE not allowed"}
    assert post.status_code == 200
    assert post.json() == {"id": "actions", "via": "get"}
    assert wired_response.headers["allow"] == "GET, HEAD, OPTIONS"


async def test_405_allow_lists_every_method_of_the_path() -> None:
    async with client(wired()) as http:
        response = await http.post("/users/1")
    assert response.status_code == 405
    assert response.headers["allow"] == "GET, HEAD, DELETE, OPTIONS"


async def test_head_is_answered_by_the_get_route() -> None:
    messages = await asgi_call(mount(Documents()), "HEAD", "/docs/7")
    start, body = messages
    assert start["status"] == 200
    headers = dict(start["headers"])
    expected = b'{"id":"7","via":"get"}'
    assert headers[b"content-length"] == str(len(expected)).encode()
    assert headers[b"content-type"] == b"application/json"
    assert headers[b"x-content-type-options"] == b"nosniff"
    assert body == {"type": "http.response.body", "body": b""}


async def test_explicit_head_wins_over_get() -> None:
    async with client(mount(Documents())) as http:
        response = await http.head("/docs/7/content")
        get = await http.get("/docs/7/content")
    assert response.headers["x-via"] == "head"
    assert get.headers["x-via"] == "get"
    assert get.content == b"0123456789"


async def test_options_is_answered_automatically() -> None:
    async with client(mount(Documents())) as http:
        response = await http.options("/docs/7")
    assert response.status_code == 204
    assert response.headers["allow"] == "GET, HEAD, PUT, OPTIONS"
    assert response.content == b""
    assert response.headers["x-content-type-options"] == "nosniff"


async def test_options_on_unknown_path_is_not_found() -> None:
    async with client(mount(Documents())) as http:
        response = await http.options("/unknown")
    assert response.status_code == 404


async def test_explicit_options_wins() -> None:
    async with client(mount(Documents())) as http:
        response = await http.options("/docs/actions")
    assert response.status_code == 200
    assert response.headers["x-via"] == "options"
    assert response.json() == {"actions": ["run"]}


@Resource("/n")
class Nosniff:
    @Get("/ok")
    def ok(self) -> str:
        return "ok"

    @Get("/stream")
    def stream(self) -> Response:
        return Response.ok().stream([b"a"])

    @Get("/error")
    def error(self) -> Response:
        return Response.error(409, "Conflict")

    @Get("/broken")
    def broken(self) -> None:
        raise RuntimeError("broken")


@pytest.mark.parametrize(
    "path", ["/n/ok", "/n/stream", "/n/error", "/n/broken", "/n/missing", "/other"]
)
async def test_nosniff_on_every_response(path: str) -> None:
    async with client(mount(Nosniff())) as http:
        response = await http.get(path)
    assert response.headers["x-content-type-options"] == "nosniff"


async def test_nosniff_on_405_and_options() -> None:
    async with client(mount(Nosniff())) as http:
        not_allowed = await http.post("/n/ok")
        options = await http.options("/n/ok")
    assert not_allowed.headers["x-content-type-options"] == "nosniff"
    assert options.headers["x-content-type-options"] == "nosniff"


# -- errors ------------------------------------------------------------------------------------


@Resource("/e")
class Failing:
    @Get("/unhandled")
    def unhandled(self) -> None:
        raise RuntimeError("the database password is hunter2")

    @Get("/http-error")
    def http_error(self) -> None:
        raise HttpError(402, "Payment Required")

    @Get("/int")
    def int_(self, a: int, b: int) -> int:
        return a + b

    @Post("/body")
    def body(self, text: Annotated[str, Body]) -> str:
        return text


async def test_default_error_body() -> None:
    async with client(mount(Failing())) as http:
        response = await http.get("/e/http-error")
    assert response.status_code == 402
    assert response.headers["content-type"] == "application/json"
    assert response.json() == {"status": 402, "message": "Payment Required"}


@Resource("/phrases")
class Phrases:
    @Get("/{status:[0-9]+}")
    def status(self, status: int) -> None:
        raise HttpError(status)


@pytest.mark.parametrize(
    ("status", "message"),
    [
        (402, "Payment Required"),
        (404, "Not Found"),
        (418, "I'm a Teapot"),
        (503, "Service Unavailable"),
        (499, "Client Error"),
        (599, "Server Error"),
    ],
)
async def test_http_error_without_message_says_the_reason_phrase(status: int, message: str) -> None:
    async with client(mount(Phrases())) as http:
        response = await http.get(f"/phrases/{status}")
    assert response.status_code == status
    assert response.json() == {"status": status, "message": message}


def test_http_error_signature_is_unchanged() -> None:
    error = HttpError(405, "Not here", headers={"Allow": "GET"})
    assert (error.status, error.message, error.headers) == (405, "Not here", {"Allow": "GET"})
    assert str(error) == "405 Not here"
    assert HttpError(402).message == "Payment Required"
    assert HttpError(402, None).message == "Payment Required"  # type: ignore[arg-type]
    assert HttpError(402, "").message == "Payment Required"
    assert HttpError(status=409, message="Taken").args == (409, "Taken")
    assert BadRequest("Wrong").message == "Wrong"


@pytest.mark.parametrize("status", [0, 99, 600, 1000])
def test_http_error_with_a_status_that_cannot_be_sent(status: int) -> None:
    with pytest.raises(ValueError, match="is not an HTTP status"):
        HttpError(status)


async def test_unhandled_exception_is_500_without_details(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level("ERROR", logger="webrest"):
        async with client(mount(Failing())) as http:
            response = await http.get("/e/unhandled")
    assert response.status_code == 500
    assert response.content == b'{"status":500,"message":"Internal Server Error"}'
    assert "hunter2" not in response.text
    records = [r for r in caplog.records if r.name == "webrest"]
    assert len(records) == 1
    assert records[0].exc_info is not None
    assert "hunter2" in caplog.text
    assert "Traceback" in caplog.text
    assert "GET /e/unhandled" in records[0].getMessage()


def validation_renderer(error: HttpError, request: Request) -> Response:
    """FastAPI's shape: 422 ``{"detail": [...]}`` for binding errors."""
    if isinstance(error, BadRequest):
        detail = [{"loc": list(d.loc), "msg": d.msg, "type": d.type} for d in error.details]
        return Response.status(422).entity({"detail": detail})
    response = Response.status(error.status).entity({"detail": error.message})
    for name, value in error.headers.items():  # Allow of a 405
        response.header(name, value)
    return response


async def test_error_renderer_of_the_api() -> None:
    app = Application({"/": RestApi(Failing(), error_renderer=validation_renderer)})
    async with client(app) as http:
        response = await http.get("/e/int", params={"a": "x"})
        empty = await http.post("/e/body")
        missing = await http.get("/e/nowhere")
    assert response.status_code == 422
    assert response.json() == {
        "detail": [
            {
                "loc": ["query", "a"],
                "msg": "Input should be a valid integer, unable to parse string as an integer",
                "type": "int_parsing",
            },
            {"loc": ["query", "b"], "msg": "Field required", "type": "missing"},
        ]
    }
    assert empty.status_code == 422
    assert empty.json() == {
        "detail": [{"loc": ["body"], "msg": "Field required", "type": "missing"}]
    }
    assert missing.status_code == 404
    assert missing.json() == {"detail": "Cannot route request to /e/nowhere"}


async def test_error_renderer_of_the_application() -> None:
    app = Application(
        {"/e": RestApi(Failing()), "/users": RestApi(Users(), error_renderer=None)},
        error_renderer=validation_renderer,
    )
    async with client(app) as http:
        invalid = await http.get("/e/int", params={"a": "1", "b": "y"})
        unmounted = await http.get("/nowhere")
        unrouted = await http.get("/e/nowhere")
        unhandled = await http.get("/e/unhandled")
        not_allowed = await http.post("/users/1")
    assert invalid.status_code == 422
    assert invalid.json()["detail"][0]["loc"] == ["query", "b"]
    assert unmounted.status_code == 404
    assert unmounted.json() == {"detail": "Cannot route request to /nowhere"}
    assert unrouted.json() == {"detail": "Cannot route request to /e/nowhere"}
    assert unhandled.status_code == 500
    assert unhandled.json() == {"detail": "Internal Server Error"}
    assert not_allowed.status_code == 405
    assert not_allowed.headers["allow"] == "GET, HEAD, DELETE, OPTIONS"


async def test_api_renderer_beats_the_application_renderer() -> None:
    def teapot(error: HttpError, request: Request) -> Response:
        return Response.status(418).body(error.message)

    app = Application(
        {"/e": RestApi(Failing(), error_renderer=teapot)}, error_renderer=validation_renderer
    )
    async with client(app) as http:
        response = await http.get("/e/int")
        unmounted = await http.get("/nowhere")
    assert response.status_code == 418
    assert response.text == "Missing argument a (query); Missing argument b (query)"
    assert unmounted.json() == {"detail": "Cannot route request to /nowhere"}


async def test_error_renderer_in_filters() -> None:
    async def reject(request: Request, chain: FilterChain) -> Response:
        raise BadRequest("Rejected by filter")

    app = Application(
        {"/e": RestApi(Failing())}, filters=[reject], error_renderer=validation_renderer
    )
    async with client(app) as http:
        response = await http.get("/e/int")
    assert response.status_code == 422
    assert response.json() == {"detail": []}


# -- request body limits -------------------------------------------------------------------------


@Resource("/limits")
class Limits:
    @Post("/default")
    def default(self, text: Annotated[str, Body]) -> int:
        return len(text)

    @Post("/large", max_body_size=100)
    def large(self, text: Annotated[str, Body]) -> int:
        return len(text)

    @Post("/small", max_body_size=5)
    def small(self, text: Annotated[str, Body]) -> int:
        return len(text)

    @Post("/stream")
    async def stream(self, body: Annotated[AsyncIterator[bytes], Stream]) -> int:
        return sum([len(chunk) async for chunk in body])

    @Put("/json")
    def json(self, data: list[int]) -> int:
        return len(data)

    @Post("/upload")
    def upload(self, parts: Multipart) -> Async:
        async def store() -> int:
            return sum([len(await part.read()) async for part in parts])

        return Async(store)


async def chunked(size: int, pieces: int = 4) -> AsyncIterator[bytes]:
    for _ in range(pieces):
        yield b"x" * (size // pieces)


async def send(app: Application, path: str, size: int, *, chunks: bool) -> httpx.Response:
    async with client(app) as http:
        if chunks:
            return await http.post(path, content=chunked(size))
        return await http.post(path, content=b"x" * size)


@pytest.mark.parametrize("chunks", [False, True], ids=["content-length", "chunked"])
async def test_application_limit(chunks: bool) -> None:
    app = Application({"/": RestApi(Limits())}, max_body_size=20)
    assert (await send(app, "/limits/default", 20, chunks=chunks)).json() == 20
    response = await send(app, "/limits/default", 24, chunks=chunks)
    assert response.status_code == 413
    assert response.json() == {
        "status": 413,
        "message": "The request body is larger than the limit of 20 bytes",
    }
    stream = await send(app, "/limits/stream", 40, chunks=chunks)
    assert stream.status_code == 413


@pytest.mark.parametrize("chunks", [False, True], ids=["content-length", "chunked"])
async def test_api_limit(chunks: bool) -> None:
    app = Application({"/": RestApi(Limits(), max_body_size=12)}, max_body_size=20)
    assert (await send(app, "/limits/default", 12, chunks=chunks)).json() == 12
    assert (await send(app, "/limits/default", 16, chunks=chunks)).status_code == 413


@pytest.mark.parametrize("chunks", [False, True], ids=["content-length", "chunked"])
async def test_route_limit(chunks: bool) -> None:
    app = Application({"/": RestApi(Limits(), max_body_size=12)}, max_body_size=20)
    assert (await send(app, "/limits/large", 80, chunks=chunks)).json() == 80
    assert (await send(app, "/limits/large", 120, chunks=chunks)).status_code == 413
    assert (await send(app, "/limits/small", 8, chunks=chunks)).status_code == 413


@pytest.mark.parametrize("chunks", [False, True], ids=["content-length", "chunked"])
async def test_route_limit_with_filters(chunks: bool) -> None:
    async def passing(request: Request, chain: FilterChain) -> Response:
        return await chain.proceed(request)

    app = Application({"/": RestApi(Limits())}, max_body_size=20, filters=[passing])
    assert (await send(app, "/limits/large", 80, chunks=chunks)).json() == 80
    assert (await send(app, "/limits/large", 120, chunks=chunks)).status_code == 413
    assert (await send(app, "/limits/default", 24, chunks=chunks)).status_code == 413


async def test_limit_applies_to_bodies_read_by_filters() -> None:
    async def reading(request: Request, chain: FilterChain) -> Response:
        await request.body()
        return await chain.proceed(request)

    app = Application({"/": RestApi(Limits())}, max_body_size=20, filters=[reading])
    response = await send(app, "/limits/stream", 40, chunks=True)
    assert response.status_code == 413


async def test_limit_on_a_streamed_multipart_upload() -> None:
    boundary = "b0undary"

    async def upload(size: int) -> AsyncIterator[bytes]:
        disposition = 'Content-Disposition: form-data; name="f"; filename="f"'
        yield f"--{boundary}\r\n{disposition}\r\n\r\n".encode()
        for _ in range(size // 10):
            yield b"x" * 10
        yield f"\r\n--{boundary}--\r\n".encode()

    app = Application({"/": RestApi(Limits())}, max_body_size=200)
    headers = {"Content-Type": f"multipart/form-data; boundary={boundary}"}
    async with client(app) as http:
        ok = await http.post("/limits/upload", content=upload(100), headers=headers)
        too_large = await http.post("/limits/upload", content=upload(300), headers=headers)
    assert ok.json() == 100
    assert too_large.status_code == 413


async def test_no_limit() -> None:
    app = Application({"/": RestApi(Limits())}, max_body_size=None)
    assert (await send(app, "/limits/default", 100_000, chunks=True)).json() == 100_000


async def test_limit_on_json_entity() -> None:
    app = Application({"/": RestApi(Limits())}, max_body_size=10)
    async with client(app) as http:
        ok = await http.put("/limits/json", content=b"[1,2,3]")
        too_large = await http.put("/limits/json", content=b"[1,2,3,4,5,6]")
    assert ok.json() == 3
    assert too_large.status_code == 413


# -- lifespan ----------------------------------------------------------------------------------


async def run_lifespan(app: Application, messages: list[Message]) -> list[Message]:
    sent: list[Message] = []

    async def receive() -> Message:
        return messages.pop(0)

    async def send(message: Message) -> None:
        sent.append(message)

    await app({"type": "lifespan", "asgi": {"version": "3.0"}}, receive, send)
    return sent


async def test_lifespan_runs_on_startup_and_shutdown() -> None:
    events: list[str] = []

    @asynccontextmanager
    async def lifespan(app: Application) -> AsyncIterator[None]:
        events.append("startup")
        app.state["connection"] = "open"
        yield
        events.append("shutdown")

    app = Application({"/users": RestApi(Users())}, lifespan=lifespan)
    sent = await run_lifespan(app, [{"type": "lifespan.startup"}, {"type": "lifespan.shutdown"}])
    assert sent == [{"type": "lifespan.startup.complete"}, {"type": "lifespan.shutdown.complete"}]
    assert events == ["startup", "shutdown"]
    assert app.state == {"connection": "open"}


async def test_lifespan_without_context() -> None:
    sent = await run_lifespan(
        wired(), [{"type": "lifespan.startup"}, {"type": "lifespan.shutdown"}]
    )
    assert sent == [{"type": "lifespan.startup.complete"}, {"type": "lifespan.shutdown.complete"}]


async def test_lifespan_startup_failure(caplog: pytest.LogCaptureFixture) -> None:
    @asynccontextmanager
    async def lifespan(app: Application) -> AsyncIterator[None]:
        raise RuntimeError("cannot connect")
        yield

    app = Application({"/users": RestApi(Users())}, lifespan=lifespan)
    with caplog.at_level("ERROR", logger="webrest"):
        sent = await run_lifespan(app, [{"type": "lifespan.startup"}])
    assert sent == [{"type": "lifespan.startup.failed", "message": "cannot connect"}]
    assert "Application startup failed" in caplog.text


async def test_lifespan_shutdown_failure(caplog: pytest.LogCaptureFixture) -> None:
    @asynccontextmanager
    async def lifespan(app: Application) -> AsyncIterator[None]:
        yield
        raise RuntimeError("cannot close")

    app = Application({"/users": RestApi(Users())}, lifespan=lifespan)
    with caplog.at_level("ERROR", logger="webrest"):
        sent = await run_lifespan(
            app, [{"type": "lifespan.startup"}, {"type": "lifespan.shutdown"}]
        )
    assert sent == [
        {"type": "lifespan.startup.complete"},
        {"type": "lifespan.shutdown.failed", "message": "cannot close"},
    ]
