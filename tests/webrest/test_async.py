"""``Async``: work a method hands back, run while the server keeps serving other requests."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Generator, Iterator
from pathlib import Path

import httpx
import pytest

from webrest import Async, Get, Multipart, Post, Resource, Response

from .support import client, mount


@Resource("/async")
class Work:
    def __init__(self) -> None:
        self.threads: list[threading.Thread] = []

    @Get("/coroutine")
    def coroutine(self) -> Async:
        async def work() -> Response:
            await asyncio.sleep(0)
            return Response.created("/things/{id}", 1)

        return Async(work)

    @Get("/coroutine-value")
    def coroutine_value(self) -> Async:
        async def work() -> dict[str, bool]:
            return {"success": True}

        return Async(work)

    @Get("/generator")
    def generator(self) -> Async:
        async def work() -> AsyncIterator[object]:
            yield None
            yield {"partial": True}
            yield Response.no_content()
            yield None

        return Async(work)

    @Get("/generator-value")
    def generator_value(self) -> Async:
        async def work() -> AsyncIterator[object]:
            yield None
            yield {"success": True}

        return Async(work)

    @Get("/generator-nothing")
    def generator_nothing(self) -> Async:
        async def work() -> AsyncIterator[object]:
            yield None

        return Async(work)

    @Get("/thread")
    def thread(self) -> Async:
        def work() -> Response:
            self.threads.append(threading.current_thread())
            return Response.accepted().header("X-Worked", "yes")

        return Async(work)

    @Get("/thread-value")
    def thread_value(self) -> Async:
        def work() -> list[int]:
            self.threads.append(threading.current_thread())
            return [1, 2, 3]

        return Async(work)

    @Get("/from-coroutine-method")
    async def from_coroutine_method(self) -> Async:
        async def work() -> str:
            return "awaited"

        return Async(work)

    @Get("/failing")
    def failing(self) -> Async:
        async def work() -> None:
            raise RuntimeError("secret detail")

        return Async(work)


async def test_coroutine_function_returning_a_response() -> None:
    async with client(mount(Work())) as http:
        response = await http.get("/async/coroutine")
    assert response.status_code == 201
    assert response.headers["location"] == "/things/1"


async def test_coroutine_function_returning_a_value() -> None:
    async with client(mount(Work())) as http:
        response = await http.get("/async/coroutine-value")
    assert response.status_code == 200
    assert response.json() == {"success": True}


async def test_async_generator_result_is_its_last_non_none_yield() -> None:
    async with client(mount(Work())) as http:
        response = await http.get("/async/generator")
        value = await http.get("/async/generator-value")
        nothing = await http.get("/async/generator-nothing")
    assert response.status_code == 204
    assert value.json() == {"success": True}
    assert nothing.status_code == 200
    assert nothing.content == b"null"


async def test_plain_function_runs_in_a_worker_thread() -> None:
    work = Work()
    async with client(mount(work)) as http:
        response = await http.get("/async/thread")
        value = await http.get("/async/thread-value")
    assert response.status_code == 202
    assert response.headers["x-worked"] == "yes"
    assert value.json() == [1, 2, 3]
    assert len(work.threads) == 2
    assert threading.current_thread() not in work.threads


async def test_async_from_a_coroutine_method() -> None:
    async with client(mount(Work())) as http:
        response = await http.get("/async/from-coroutine-method")
    assert response.json() == "awaited"


async def test_failure_in_async_work_is_a_server_error() -> None:
    async with client(mount(Work())) as http:
        response = await http.get("/async/failing")
    assert response.status_code == 500
    assert response.json() == {"status": 500, "message": "Internal Server Error"}
    assert "secret" not in response.text


# -- streamed multipart upload -----------------------------------------------------------------

BOUNDARY = "----webrestAsyncBoundary"


def part(name: str, data: bytes, filename: str | None = None) -> bytes:
    disposition = f'form-data; name="{name}"'
    if filename is not None:
        disposition += f'; filename="{filename}"'
    head = f"--{BOUNDARY}\r\nContent-Disposition: {disposition}\r\n\r\n".encode()
    return head + data + b"\r\n"


@Resource("/uploads")
class Uploads:
    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.fields: dict[str, str] = {}

    @Post()
    def upload(self, parts: Multipart) -> Async:
        async def store() -> Response:
            names = []
            async for item in parts:
                if item.is_file:
                    assert item.filename is not None
                    await item.save(self.folder / item.filename)
                    names.append(item.filename)
                elif item.name is not None:
                    self.fields[item.name] = await item.text()
            return Response.created("/uploads/{names}", ",".join(names)).entity(names)

        return Async(store)

    @Get("/status")
    def status(self) -> dict[str, int]:
        return {"files": len(list(self.folder.iterdir()))}


async def test_streamed_multipart_upload(tmp_path: Path) -> None:
    uploads = Uploads(tmp_path)
    body = (
        part("comment", b"two files")
        + part("first", b"a" * 100_000, "a.bin")
        + part("second", b"hello", "b.txt")
        + f"--{BOUNDARY}--\r\n".encode()
    )
    async with client(mount(uploads)) as http:
        response = await http.post(
            "/uploads",
            content=body,
            headers={"Content-Type": f"multipart/form-data; boundary={BOUNDARY}"},
        )
    assert response.status_code == 201
    assert response.headers["location"] == "/uploads/a.bin%2Cb.txt"
    assert response.json() == ["a.bin", "b.txt"]
    assert (tmp_path / "a.bin").read_bytes() == b"a" * 100_000
    assert (tmp_path / "b.txt").read_bytes() == b"hello"
    assert uploads.fields == {"comment": "two files"}


async def test_other_requests_are_served_while_an_upload_is_in_progress(tmp_path: Path) -> None:
    uploads = Uploads(tmp_path)
    first_part_sent = asyncio.Event()
    release = asyncio.Event()

    async def slow_body() -> AsyncIterator[bytes]:
        yield part("first", b"x" * 1000, "first.bin")
        first_part_sent.set()
        await release.wait()
        yield part("second", b"y" * 10, "second.bin") + f"--{BOUNDARY}--\r\n".encode()

    async with client(mount(uploads)) as http:

        async def upload() -> httpx.Response:
            return await http.post(
                "/uploads",
                content=slow_body(),
                headers={"Content-Type": f"multipart/form-data; boundary={BOUNDARY}"},
            )

        task = asyncio.create_task(upload())
        try:
            await asyncio.wait_for(first_part_sent.wait(), timeout=10)
            status = await asyncio.wait_for(http.get("/uploads/status"), timeout=10)
            assert status.status_code == 200
            assert not task.done()
        finally:
            release.set()
        response = await asyncio.wait_for(task, timeout=10)
    assert response.status_code == 201
    assert response.json() == ["first.bin", "second.bin"]
    assert (tmp_path / "first.bin").read_bytes() == b"x" * 1000
    assert (tmp_path / "second.bin").read_bytes() == b"y" * 10


async def test_malformed_multipart_upload_is_bad_request(tmp_path: Path) -> None:
    async with client(mount(Uploads(tmp_path))) as http:
        response = await http.post(
            "/uploads",
            content=part("first", b"never ends", "x.bin"),
            headers={"Content-Type": f"multipart/form-data; boundary={BOUNDARY}"},
        )
        wrong_type = await http.post("/uploads", json={"a": 1})
    assert response.status_code == 400
    assert response.json() == {"status": 400, "message": "Multipart body ended unexpectedly"}
    assert wrong_type.status_code == 400


# -- generators and what a callable returns (issue 22) ------------------------------------------


@Resource("/sync")
class SyncGenerators:
    def __init__(self) -> None:
        self.threads: list[threading.Thread] = []
        self.closed = False

    @Get("/returning")
    def returning(self) -> Async:
        def work() -> Iterator[None]:
            self.threads.append(threading.current_thread())
            yield None
            self.threads.append(threading.current_thread())
            yield None
            return Response.no_content()  # type: ignore[return-value]  # upstream's shape

        return Async(work)

    @Get("/returning-value")
    def returning_value(self) -> Async:
        def work() -> Generator[None, None, dict[str, bool]]:
            yield None
            return {"success": True}

        return Async(work)

    @Get("/yielding")
    def yielding(self) -> Async:
        def work() -> Iterator[object]:
            yield {"partial": True}
            yield Response.accepted()
            yield None

        return Async(work)

    @Get("/no-yield")
    def no_yield(self) -> Async:
        def work() -> Iterator[object]:
            return
            yield

        return Async(work)

    @Get("/failing")
    def failing(self) -> Async:
        def work() -> Iterator[object]:
            try:
                yield None
                raise RuntimeError("secret detail")
            finally:
                self.closed = True

        return Async(work)

    @Get("/function-returning-generator")
    def function_returning_generator(self) -> Async:
        def steps() -> Generator[None, None, str]:
            yield None
            return "driven"

        return Async(lambda: steps())

    @Get("/function-returning-async-generator")
    def function_returning_async_generator(self) -> Async:
        async def steps() -> AsyncIterator[str | None]:
            yield "driven too"
            yield None

        return Async(lambda: steps())

    @Get("/coroutine-returning-generator")
    def coroutine_returning_generator(self) -> Async:
        def steps() -> Generator[None, None, int]:
            yield None
            return 3

        async def work() -> Generator[None, None, int]:
            return steps()

        return Async(work)


async def test_sync_generator_result_is_its_return_value() -> None:
    """Upstream's Async: the yields are steps, the return value is what is sent."""
    work = SyncGenerators()
    async with client(mount(work)) as http:
        response = await http.get("/sync/returning")
        value = await http.get("/sync/returning-value")
    assert response.status_code == 204
    assert value.json() == {"success": True}
    assert len(work.threads) == 2
    assert threading.current_thread() not in work.threads  # each step in a worker thread


async def test_sync_generator_returning_nothing_gives_its_last_non_none_yield() -> None:
    async with client(mount(SyncGenerators())) as http:
        response = await http.get("/sync/yielding")
        nothing = await http.get("/sync/no-yield")
    assert response.status_code == 202
    assert nothing.status_code == 200
    assert nothing.content == b"null"


async def test_failing_sync_generator_is_a_server_error() -> None:
    work = SyncGenerators()
    async with client(mount(work)) as http:
        response = await http.get("/sync/failing")
    assert response.status_code == 500
    assert "secret" not in response.text
    assert work.closed


async def test_generators_returned_by_the_callable_are_driven() -> None:
    async with client(mount(SyncGenerators())) as http:
        generator = await http.get("/sync/function-returning-generator")
        async_generator = await http.get("/sync/function-returning-async-generator")
        from_coroutine = await http.get("/sync/coroutine-returning-generator")
    assert generator.json() == "driven"
    assert async_generator.json() == "driven too"
    assert from_coroutine.json() == 3


def test_async_of_something_not_callable_fails_where_it_is_made() -> None:
    with pytest.raises(TypeError, match="Async takes a callable, not int"):
        Async(42)  # type: ignore[arg-type]


def test_async_of_a_coroutine_says_to_pass_the_function() -> None:
    async def work() -> None: ...

    with pytest.raises(TypeError, match=r"not coroutine \(pass the function, not what"):
        Async(work())  # type: ignore[arg-type]  # closed: no "never awaited" warning


def test_async_of_a_generator_says_to_pass_the_function() -> None:
    def work() -> Iterator[None]:
        yield None

    with pytest.raises(TypeError, match=r"not generator \(pass the function"):
        Async(work())  # type: ignore[arg-type]
