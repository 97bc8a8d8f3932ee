"""Tests for the streaming multipart/form-data reader."""

from __future__ import annotations

import hashlib
import tracemalloc
from collections.abc import AsyncIterator, Iterable, Iterator
from pathlib import Path

import pytest
from starlette.requests import Request
from starlette.types import Message

from webrest.errors import BadRequest
from webrest.multipart import Multipart, Part

pytestmark = pytest.mark.anyio

BOUNDARY = "----webrestBoundary7MA4YWxk"
CONTENT_TYPE = f"multipart/form-data; boundary={BOUNDARY}"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


# -- helpers -------------------------------------------------------------------------------------


def part(
    name: str | None,
    data: bytes,
    *,
    filename: str | None = None,
    content_type: str | None = None,
    disposition: str | None = None,
    extra_headers: Iterable[str] = (),
    boundary: str = BOUNDARY,
) -> bytes:
    """One encapsulated part, starting with its boundary line."""
    if disposition is None:
        disposition = "form-data"
        if name is not None:
            disposition += f'; name="{name}"'
        if filename is not None:
            disposition += f'; filename="{filename}"'
    lines = [f"--{boundary}", f"Content-Disposition: {disposition}"]
    if content_type is not None:
        lines.append(f"Content-Type: {content_type}")
    lines.extend(extra_headers)
    head = ("\r\n".join(lines) + "\r\n\r\n").encode("utf-8")
    return head + data + b"\r\n"


def closing(boundary: str = BOUNDARY) -> bytes:
    return f"--{boundary}--\r\n".encode()


def body(*parts: bytes, boundary: str = BOUNDARY) -> bytes:
    return b"".join(parts) + closing(boundary)


async def chunked(data: bytes, size: int | None = None) -> AsyncIterator[bytes]:
    """``data`` as an async body stream, in ``size``-byte chunks (one chunk when None)."""
    if size is None:
        yield data
        return
    for start in range(0, len(data), size):
        yield data[start : start + size]


def rechunk(pieces: Iterable[bytes], size: int) -> Iterator[bytes]:
    """Re-cut a lazy stream of byte pieces into ``size``-byte chunks (the last may be shorter)."""
    buffer = bytearray()
    for piece in pieces:
        buffer += piece
        while len(buffer) >= size:
            yield bytes(buffer[:size])
            del buffer[:size]
    if buffer:
        yield bytes(buffer)


async def collect(multipart: Multipart) -> list[tuple[str | None, str | None, bytes]]:
    return [(p.name, p.filename, await p.read()) async for p in multipart]


async def first_error(multipart: Multipart) -> BadRequest:
    with pytest.raises(BadRequest) as info:
        async for p in multipart:
            await p.read()
    assert info.value.status == 400
    return info.value


CHUNK_SIZES = [1, 7, 64, None]

FORM = body(
    part("title", b"Holiday pictures"),
    part("tags", b"sea"),
    part(
        "first",
        b"\x89PNG\r\n\x1a\n" + bytes(range(256)),
        filename="a.png",
        content_type="image/png",
    ),
    part("tags", b"sun"),
    part(
        "second",
        b"second file\r\n--not a boundary\r\n",
        filename="b.txt",
        content_type="text/plain",
        extra_headers=["X-Custom: yes"],
    ),
)


# -- reading -------------------------------------------------------------------------------------


@pytest.mark.parametrize("size", CHUNK_SIZES)
async def test_fields_and_files_in_order(size: int | None) -> None:
    parts: list[Part] = []
    datas: list[bytes] = []
    async for p in Multipart(CONTENT_TYPE, chunked(FORM, size)):
        parts.append(p)
        datas.append(await p.read())

    assert [(p.name, p.filename, p.content_type, p.is_file) for p in parts] == [
        ("title", None, None, False),
        ("tags", None, None, False),
        ("first", "a.png", "image/png", True),
        ("tags", None, None, False),
        ("second", "b.txt", "text/plain", True),
    ]
    assert datas == [
        b"Holiday pictures",
        b"sea",
        b"\x89PNG\r\n\x1a\n" + bytes(range(256)),
        b"sun",
        b"second file\r\n--not a boundary\r\n",
    ]
    second = parts[4]
    assert second.headers["x-custom"] == "yes"
    assert second.headers["Content-Type"] == "text/plain"
    assert second.headers["content-disposition"] == 'form-data; name="second"; filename="b.txt"'


@pytest.mark.parametrize("size", [1, 2, 3, 5, 7, 13, 31, 64, 1000])
async def test_data_split_across_chunks_is_reassembled_exactly(size: int) -> None:
    # Data full of near-boundaries: CRLFs, dashes, and prefixes of the real delimiter.
    tricky = (
        b"\r\n\r\n--\r\n-" + f"\r\n--{BOUNDARY[:-1]}".encode() + b"\r\n--" + BOUNDARY[:5].encode()
    ) * 20 + bytes(range(256)) * 4
    data = body(part("f", tricky, filename="t.bin"), part("g", b""), part("h", b"\r\n"))
    chunks: list[bytes] = []
    result = []
    async for p in Multipart(CONTENT_TYPE, chunked(data, size)):
        pieces = [chunk async for chunk in p]
        chunks.extend(pieces)
        result.append(b"".join(pieces))
    assert result == [tricky, b"", b"\r\n"]
    assert all(chunks), "no empty chunk is yielded"


async def test_large_file_is_streamed_in_bounded_chunks() -> None:
    total = 20 * 1024 * 1024
    net_chunk = 64 * 1024
    block = hashlib.sha256(b"seed").digest() * 2048  # 64 KiB of non-trivial data

    def pieces() -> Iterator[bytes]:
        yield part("name", b"big")
        yield part("upload", b"", filename="big.bin")[:-2]  # headers only, no trailing CRLF
        for _ in range(total // len(block)):
            yield block
        yield b"\r\n" + closing()

    expected = hashlib.sha256()
    for _ in range(total // len(block)):
        expected.update(block)

    async def stream() -> AsyncIterator[bytes]:
        for chunk in rechunk(pieces(), net_chunk):
            assert len(chunk) <= net_chunk
            yield chunk

    received = 0
    largest = 0
    digest = hashlib.sha256()
    tracemalloc.start()
    try:
        async for p in Multipart(CONTENT_TYPE, stream()):
            if not p.is_file:
                assert await p.read() == b"big"
                continue
            async for chunk in p:
                received += len(chunk)
                largest = max(largest, len(chunk))
                digest.update(chunk)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()

    assert received == total
    assert 0 < largest <= net_chunk
    assert digest.hexdigest() == expected.hexdigest()
    assert peak < 2 * 1024 * 1024, f"peak traced memory {peak} bytes: the file was buffered"


@pytest.mark.parametrize("size", CHUNK_SIZES)
async def test_skipping_a_part_drains_it(size: int | None) -> None:
    names = []
    values = []
    skipped: list[Part] = []
    async for p in Multipart(CONTENT_TYPE, chunked(FORM, size)):
        names.append(p.name)
        if p.name == "tags":
            values.append(await p.read())
        elif p.name == "second":
            # partly read, then the rest is dropped when the body ends
            async for _ in p:
                break
        else:
            skipped.append(p)
    assert names == ["title", "tags", "first", "tags", "second"]
    assert values == [b"sea", b"sun"]
    # Once the Multipart moved on, a skipped part has nothing left to give.
    for p in skipped:
        assert await p.read() == b""
        assert [chunk async for chunk in p] == []


@pytest.mark.parametrize("size", CHUNK_SIZES)
async def test_partly_read_part_then_next(size: int | None) -> None:
    data = body(part("a", b"x" * 1000, filename="a.bin"), part("b", b"after"))
    parts = Multipart(CONTENT_TYPE, chunked(data, size))
    iterator = parts.__aiter__()
    first = await iterator.__anext__()
    chunk = await first.__aiter__().__anext__()
    assert chunk and set(chunk) == {ord("x")}
    second = await iterator.__anext__()
    assert second.name == "b"
    assert await second.read() == b"after"
    assert await first.read() == b""
    with pytest.raises(StopAsyncIteration):
        await iterator.__anext__()


@pytest.mark.parametrize("size", [7, None])
async def test_read_twice_returns_rest(size: int | None) -> None:
    data = body(part("a", b"hello"))
    async for p in Multipart(CONTENT_TYPE, chunked(data, size)):
        assert await p.read() == b"hello"
        assert await p.read() == b""
        assert await p.text() == ""


@pytest.mark.parametrize("size", [7, None])
async def test_save_writes_exact_bytes(tmp_path: Path, size: int | None) -> None:
    payload = bytes(range(256)) * 500 + b"\r\n--" + BOUNDARY[:10].encode()
    data = body(part("note", b"keep"), part("upload", payload, filename="p.bin"))
    target = tmp_path / "saved.bin"
    fields = {}
    async for p in Multipart(CONTENT_TYPE, chunked(data, size)):
        if p.is_file:
            assert await p.save(target) == len(payload)
        else:
            fields[p.name] = await p.text()
    assert target.read_bytes() == payload
    assert fields == {"note": "keep"}


async def test_save_large_file_in_network_chunks(tmp_path: Path) -> None:
    block = hashlib.sha256(b"block").digest() * 1000
    payload = block * 40  # 1.28 MB
    data = body(part("upload", payload, filename="big.bin"))
    async for p in Multipart(CONTENT_TYPE, chunked(data, 64 * 1024)):
        assert await p.save(tmp_path / "big.bin") == len(payload)
    assert (tmp_path / "big.bin").read_bytes() == payload


async def test_save_accepts_str_path(tmp_path: Path) -> None:
    data = body(part("upload", b"abc", filename="p.bin"))
    async for p in Multipart(CONTENT_TYPE, chunked(data, 2)):
        assert await p.save(str(tmp_path / "s.bin")) == 3
    assert (tmp_path / "s.bin").read_bytes() == b"abc"


@pytest.mark.parametrize("size", CHUNK_SIZES)
async def test_fields(size: int | None) -> None:
    fields = await Multipart(CONTENT_TYPE, chunked(FORM, size)).fields()
    assert fields == {"title": "Holiday pictures", "tags": ["sea", "sun"]}


async def test_fields_three_repeats_and_utf8() -> None:
    data = body(
        part("k", "é".encode()),
        part("k", b"2"),
        part("k", b"3"),
        part("empty", b""),
    )
    fields = await Multipart(CONTENT_TYPE, chunked(data, 3)).fields()
    assert fields == {"k": ["é", "2", "3"], "empty": ""}


async def test_text_with_encoding() -> None:
    data = body(part("a", "café".encode("latin-1")))
    async for p in Multipart(CONTENT_TYPE, chunked(data)):
        assert await p.text("latin-1") == "café"


async def test_quoted_boundary_and_parameters() -> None:
    boundary = "simple boundary:with=odd;chars"
    data = body(part("a", b"1", boundary=boundary), boundary=boundary)
    content_type = f'Multipart/Form-Data; charset=utf-8; boundary="{boundary}"'
    assert await collect(Multipart(content_type, chunked(data, 7))) == [("a", None, b"1")]


async def test_empty_form() -> None:
    assert await collect(Multipart(CONTENT_TYPE, chunked(closing(), 3))) == []


async def test_epilogue_is_ignored() -> None:
    data = body(part("a", b"1")) + b"epilogue\r\nmore"
    assert await collect(Multipart(CONTENT_TYPE, chunked(data, 7))) == [("a", None, b"1")]


async def test_filename_star_form() -> None:
    disposition = (
        'form-data; name="doc"; filename="fallback.txt"; '
        "filename*=UTF-8''%E2%82%AC%20rates%3B%20%22q%22.txt"
    )
    data = body(part(None, b"x", disposition=disposition))
    parts = await collect(Multipart(CONTENT_TYPE, chunked(data, 7)))
    assert parts == [("doc", '€ rates; "q".txt', b"x")]


async def test_filename_star_alone_and_latin1() -> None:
    data = body(
        part(None, b"1", disposition="form-data; name=a; filename*=utf-8'en'na%C3%AFve.txt"),
        part(None, b"2", disposition="form-data; name=b; filename*=iso-8859-1''caf%E9.txt"),
    )
    parts = await collect(Multipart(CONTENT_TYPE, chunked(data)))
    assert parts == [("a", "naïve.txt", b"1"), ("b", "café.txt", b"2")]


async def test_invalid_filename_star_falls_back_to_filename() -> None:
    data = body(
        part(
            None,
            b"1",
            disposition="form-data; name=a; filename=\"plain.txt\"; filename*=UTF-8''%FF%FE.txt",
        ),
        part(
            None, b"2", disposition='form-data; name=b; filename="p2.txt"; filename*=no-quotes.txt'
        ),
        part(None, b"3", disposition="form-data; name=c; filename=\"x; filename*=utf-8''evil\""),
    )
    parts = await collect(Multipart(CONTENT_TYPE, chunked(data, 7)))
    assert parts == [
        ("a", "plain.txt", b"1"),
        ("b", "p2.txt", b"2"),
        ("c", "x; filename*=utf-8''evil", b"3"),
    ]


async def test_utf8_field_name_and_filename() -> None:
    data = body(part("prénom", b"1", filename="résumé.pdf"))
    async for p in Multipart(CONTENT_TYPE, chunked(data, 7)):
        assert (p.name, p.filename) == ("prénom", "résumé.pdf")
        await p.read()


async def test_empty_filename_is_a_file() -> None:
    data = body(part("upload", b"", filename=""))
    async for p in Multipart(CONTENT_TYPE, chunked(data)):
        assert p.is_file
        assert p.filename == ""
        assert await p.read() == b""


async def test_second_iteration_raises() -> None:
    multipart = Multipart(CONTENT_TYPE, chunked(FORM, 7))
    await collect(multipart)
    with pytest.raises(RuntimeError, match="only once"):
        multipart.__aiter__()
    fresh = Multipart(CONTENT_TYPE, chunked(FORM, 7))
    fresh.__aiter__()
    with pytest.raises(RuntimeError):
        await fresh.fields()


async def test_break_out_early() -> None:
    multipart = Multipart(CONTENT_TYPE, chunked(FORM, 7))
    async for p in multipart:
        assert p.name == "title"
        break


# -- from_request --------------------------------------------------------------------------------


def make_request(data: bytes, content_type: str | None, chunk: int = 100) -> Request:
    headers = [(b"content-length", str(len(data)).encode())]
    if content_type is not None:
        headers.append((b"content-type", content_type.encode("latin-1")))
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": "/upload",
        "raw_path": b"/upload",
        "query_string": b"",
        "root_path": "",
        "headers": headers,
        "client": ("127.0.0.1", 12345),
        "server": ("testserver", 80),
    }
    messages: list[Message] = [
        {"type": "http.request", "body": data[i : i + chunk], "more_body": True}
        for i in range(0, len(data), chunk)
    ]
    messages.append({"type": "http.request", "body": b"", "more_body": False})

    async def receive() -> Message:
        return messages.pop(0)

    return Request(scope, receive)


async def test_from_request(tmp_path: Path) -> None:
    request = make_request(FORM, CONTENT_TYPE, chunk=50)
    multipart = Multipart.from_request(request)
    seen: list[tuple[str | None, str | int]] = []
    async for p in multipart:
        if p.is_file:
            seen.append((p.name, await p.save(tmp_path / f"{p.name}.bin")))
        else:
            seen.append((p.name, await p.text()))
    assert seen == [
        ("title", "Holiday pictures"),
        ("tags", "sea"),
        ("first", 264),
        ("tags", "sun"),
        ("second", 31),
    ]
    assert (tmp_path / "second.bin").read_bytes() == b"second file\r\n--not a boundary\r\n"


async def test_from_request_fields_and_limits() -> None:
    fields = await Multipart.from_request(make_request(FORM, CONTENT_TYPE)).fields()
    assert fields == {"title": "Holiday pictures", "tags": ["sea", "sun"]}
    limited = Multipart.from_request(make_request(FORM, CONTENT_TYPE), max_files=1)
    error = await first_error(limited)
    assert error.message == "Too many files: maximum is 1"


async def test_from_request_without_content_type() -> None:
    with pytest.raises(BadRequest) as info:
        Multipart.from_request(make_request(FORM, None))
    assert info.value.status == 400


# -- errors --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "content_type",
    [
        "multipart/form-data",
        "multipart/form-data; charset=utf-8",
        'multipart/form-data; boundary=""',
        "multipart/form-data; boundary=",
    ],
)
def test_missing_boundary(content_type: str) -> None:
    with pytest.raises(BadRequest) as info:
        Multipart(content_type, chunked(FORM))
    assert info.value.status == 400
    assert info.value.message == "Missing boundary in multipart/form-data content type"


@pytest.mark.parametrize(
    "content_type",
    ["", "application/x-www-form-urlencoded", "multipart/mixed; boundary=abc", "text/plain"],
)
def test_not_multipart_form_data(content_type: str) -> None:
    with pytest.raises(BadRequest) as info:
        Multipart(content_type, chunked(FORM))
    assert info.value.status == 400
    assert "Expected a multipart/form-data content type" in info.value.message


def test_boundary_too_long() -> None:
    with pytest.raises(BadRequest) as info:
        Multipart("multipart/form-data; boundary=" + "b" * 300, chunked(FORM))
    assert info.value.status == 400
    assert info.value.message.startswith("Invalid multipart boundary")


@pytest.mark.parametrize("size", CHUNK_SIZES)
@pytest.mark.parametrize(
    "data",
    [
        b"not multipart at all",
        f"--{BOUNDARY}\r\nContent-Disposition form-data\r\n\r\nx\r\n".encode() + closing(),
        f"--{BOUNDARY}XX\r\n".encode(),
        f"--{BOUNDARY}\r\n\x00bad: header\r\n\r\nx\r\n".encode() + closing(),
    ],
    ids=["garbage", "header-without-colon", "bad-boundary-line", "bad-header-name"],
)
async def test_malformed_body(data: bytes, size: int | None) -> None:
    error = await first_error(Multipart(CONTENT_TYPE, chunked(data, size)))
    assert error.message.startswith("Invalid multipart body: ")
    assert error.__cause__ is not None


@pytest.mark.parametrize("size", CHUNK_SIZES)
@pytest.mark.parametrize(
    "data",
    [
        b"",
        FORM[: len(FORM) // 2],
        FORM[: -len(closing())],
        FORM[:-4],
        part("a", b"1")[:-5],
    ],
    ids=["empty", "half", "no-closing-boundary", "closing-boundary-cut", "inside-part"],
)
async def test_body_ended_unexpectedly(data: bytes, size: int | None) -> None:
    error = await first_error(Multipart(CONTENT_TYPE, chunked(data, size)))
    assert error.message == "Multipart body ended unexpectedly"


@pytest.mark.parametrize("size", CHUNK_SIZES)
async def test_closing_boundary_without_final_crlf(size: int | None) -> None:
    assert len(await collect(Multipart(CONTENT_TYPE, chunked(FORM[:-2], size)))) == 5


async def test_ended_unexpectedly_while_reading_a_file(tmp_path: Path) -> None:
    data = body(part("f", b"z" * 10_000, filename="z.bin"))[:5000]
    async for p in Multipart(CONTENT_TYPE, chunked(data, 1000)):
        with pytest.raises(BadRequest, match="ended unexpectedly"):
            await p.save(tmp_path / "z.bin")
        break


@pytest.mark.parametrize("size", CHUNK_SIZES)
async def test_too_many_fields(size: int | None) -> None:
    multipart = Multipart(CONTENT_TYPE, chunked(FORM, size), max_fields=2)
    names = []
    with pytest.raises(BadRequest) as info:
        async for p in multipart:
            names.append(p.name)
    assert info.value.status == 400
    assert info.value.message == "Too many fields: maximum is 2"
    # The parts before the limit was hit were delivered, in order.
    assert names == ["title", "tags", "first"]


@pytest.mark.parametrize("size", CHUNK_SIZES)
async def test_too_many_files(size: int | None) -> None:
    error = await first_error(Multipart(CONTENT_TYPE, chunked(FORM, size), max_files=1))
    assert error.message == "Too many files: maximum is 1"


async def test_limits_exactly_reached_are_fine() -> None:
    multipart = Multipart(CONTENT_TYPE, chunked(FORM, 7), max_fields=3, max_files=2)
    assert len(await collect(multipart)) == 5


@pytest.mark.parametrize("size", CHUNK_SIZES)
async def test_part_header_too_large(size: int | None) -> None:
    data = body(part("a", b"1", extra_headers=["X-Big: " + "v" * 300]))
    error = await first_error(
        Multipart(CONTENT_TYPE, chunked(data, size), max_part_header_size=256)
    )
    assert error.message == "Part headers too large: maximum is 256 bytes"


async def test_many_headers_add_up() -> None:
    headers = [f"X-H{i}: {'v' * 40}" for i in range(6)]
    data = body(part("a", b"1", extra_headers=headers))
    error = await first_error(Multipart(CONTENT_TYPE, chunked(data, 7), max_part_header_size=200))
    assert error.message == "Part headers too large: maximum is 200 bytes"
    ok = Multipart(CONTENT_TYPE, chunked(data, 7), max_part_header_size=400)
    assert await collect(ok) == [("a", None, b"1")]


@pytest.mark.parametrize("size", CHUNK_SIZES)
@pytest.mark.parametrize(
    "disposition",
    ["form-data", 'form-data; filename="a.txt"', "form-data; nam=x", None],
)
async def test_part_without_name(disposition: str | None, size: int | None) -> None:
    if disposition is None:  # no Content-Disposition header at all
        data = f"--{BOUNDARY}\r\nContent-Type: text/plain\r\n\r\nx\r\n".encode() + closing()
    else:
        data = body(part(None, b"x", disposition=disposition))
    error = await first_error(Multipart(CONTENT_TYPE, chunked(data, size)))
    assert error.message == 'A multipart part has no Content-Disposition "name"'


async def test_undecodable_text_names_the_field() -> None:
    data = body(part("comment", b"\xff\xfe bad"))
    async for p in Multipart(CONTENT_TYPE, chunked(data, 7)):
        with pytest.raises(BadRequest) as info:
            await p.text()
        assert info.value.status == 400
        assert "'comment'" in info.value.message
        assert isinstance(info.value.__cause__, UnicodeDecodeError)


async def test_fields_with_undecodable_value() -> None:
    data = body(part("comment", b"\xff"))
    with pytest.raises(BadRequest, match="'comment'"):
        await Multipart(CONTENT_TYPE, chunked(data)).fields()


async def test_error_is_raised_again_on_later_reads() -> None:
    data = body(part("f", b"z" * 100, filename="z.bin"))[:-20]
    async for p in Multipart(CONTENT_TYPE, chunked(data, 7)):
        with pytest.raises(BadRequest, match="ended unexpectedly"):
            await p.read()
        with pytest.raises(BadRequest, match="ended unexpectedly"):
            await p.read()
        break


async def test_error_surfaces_from_part_iteration() -> None:
    data = body(part("f", b"y" * 500, filename="y.bin"))
    # A delimiter followed by padding then garbage: the part is never ended.
    data = data[:300] + b"\r\n--" + BOUNDARY.encode() + b" \t x\r\n"
    async for p in Multipart(CONTENT_TYPE, chunked(data, 64)):
        received = 0
        with pytest.raises(BadRequest, match="Invalid multipart body"):
            async for chunk in p:
                received += len(chunk)
        assert received > 0
        break


# -- text that is not valid in the charset -------------------------------------------------------


async def test_a_field_name_that_is_not_valid_utf8_is_a_400() -> None:
    head = f'--{BOUNDARY}\r\nContent-Disposition: form-data; name="\xff"\r\n\r\n'
    data = head.encode("latin-1") + b"x\r\n" + closing()
    error = await first_error(Multipart(CONTENT_TYPE, chunked(data, 7)))
    assert error.message == "The name of field '\ufffd' is not valid utf-8 text"


async def test_a_file_name_that_is_not_valid_utf8_is_read_as_latin1() -> None:
    head = f'--{BOUNDARY}\r\nContent-Disposition: form-data; name="f"; filename="caf\xe9"\r\n\r\n'
    data = head.encode("latin-1") + b"x\r\n" + closing()
    assert await collect(Multipart(CONTENT_TYPE, chunked(data))) == [("f", "café", b"x")]


async def test_no_codec_gives_a_lone_surrogate() -> None:
    disposition = "form-data; name=a; filename=\"plain.txt\"; filename*=utf-7''%2B2AA-"
    data = body(part(None, b"1", disposition=disposition), part("b", b"+2AA-"))
    names = []
    async for p in Multipart(f"{CONTENT_TYPE}; charset=utf-7", chunked(data)):
        names.append(p.filename)  # the extended name is no text: the plain one counts
        if p.name == "b":
            with pytest.raises(BadRequest, match="'b' is not valid utf-7 text"):
                await p.text("utf-7")
    assert names == ["plain.txt", None]


def test_an_unknown_charset_is_a_400() -> None:
    with pytest.raises(BadRequest, match="Unknown charset 'no-such'"):
        Multipart(f"{CONTENT_TYPE}; charset=no-such", chunked(b""))
