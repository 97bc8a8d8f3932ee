"""HTTP details: bounded JSON bodies, repeated header lines, form text decoding, the request
parameter accessors (``Request.param`` and co.) and client disconnects."""

from __future__ import annotations

import json
from typing import Annotated, Any

import pytest
from pydantic import BaseModel
from starlette.types import Message

from webrest import (
    Application,
    Entity,
    Get,
    Header,
    HttpError,
    JsonReader,
    Param,
    Post,
    Request,
    Resource,
    Response,
    RestApi,
    default_formats,
)
from webrest.formats import MAX_JSON_DEPTH, MAX_JSON_NUMBER_DIGITS
from webrest.request import (
    MAX_FORM_FIELDS,
    ClientDisconnected,
    decode_text,
    parse_form_urlencoded,
)

from .support import asgi_call, client, mount

JSON = {"Content-Type": "application/json"}
FORM = {"Content-Type": "application/x-www-form-urlencoded"}


class Item(BaseModel):
    value: Any = None
    number: float = 0.0


@Resource("/json")
class Bodies:
    @Post("/any")
    def any(self, body: Annotated[object, Entity]) -> object:
        return {"echo": body}

    @Post("/typed")
    def typed(self, item: Item) -> Item:
        return item


def nested(depth: int, opener: str = "[") -> bytes:
    closer = {"[": "]", "{": "}"}[opener]
    if opener == "[":
        return ("[" * depth + "]" * depth).encode()
    return ('{"a":' * depth + "1" + closer * depth).encode()


# -- bounded JSON ------------------------------------------------------------------------------


@pytest.mark.parametrize("path", ["/json/any", "/json/typed"])
@pytest.mark.parametrize("opener", ["[", "{"])
async def test_nesting_up_to_the_limit_is_read_one_level_more_is_a_400(
    path: str, opener: str
) -> None:
    def wrap(inner: bytes) -> bytes:
        return b'{"value": ' + inner + b"}" if path == "/json/typed" else inner

    at_limit = wrap(nested(MAX_JSON_DEPTH - (path == "/json/typed"), opener))
    beyond = wrap(nested(MAX_JSON_DEPTH + 1, opener))
    async with client(mount(Bodies())) as http:
        fine = await http.post(path, content=at_limit, headers=JSON)
        deep = await http.post(path, content=beyond, headers=JSON)
    assert fine.status_code == 200, fine.text
    assert deep.status_code == 400
    assert deep.json() == {
        "status": 400,
        "message": f"Malformed JSON: Arrays and objects nested deeper than {MAX_JSON_DEPTH} levels",
    }


@pytest.mark.parametrize("path", ["/json/any", "/json/typed"])
@pytest.mark.parametrize("depth", [1000, 100_000])
async def test_a_deeply_nested_body_is_a_400_not_a_recursion_error(path: str, depth: int) -> None:
    """The issue's case: 1,000 nested arrays (2 KB) used to raise RecursionError (500)."""
    async with client(mount(Bodies())) as http:
        arrays = await http.post(path, content=nested(depth), headers=JSON)
        unclosed = await http.post(path, content=b"[" * depth, headers=JSON)
        objects = await http.post(path, content=b'{"value":' * depth, headers=JSON)
    for response in (arrays, unclosed, objects):
        assert response.status_code == 400, response.text
        assert response.json()["message"].startswith("Malformed JSON")


async def test_brackets_and_literals_inside_strings_are_text() -> None:
    value = {
        "value": "[" * 500 + "{" * 500 + " NaN Infinity 1e999 " + "9" * 500,
        "number": 1.5e-300,
    }
    body = json.dumps(value).encode()
    async with client(mount(Bodies())) as http:
        untyped = await http.post("/json/any", content=body, headers=JSON)
        typed = await http.post("/json/typed", content=body, headers=JSON)
    assert untyped.json() == {"echo": value}
    assert typed.json() == value


async def test_many_shallow_values_are_fine() -> None:
    body = json.dumps([{"a": [i, {"b": [i]}]} for i in range(2000)]).encode()
    async with client(mount(Bodies())) as http:
        response = await http.post("/json/any", content=body, headers=JSON)
    assert response.status_code == 200
    assert len(response.json()["echo"]) == 2000


@pytest.mark.parametrize("path", ["/json/any", "/json/typed"])
@pytest.mark.parametrize(
    ("number", "accepted"),
    [
        ("9" * MAX_JSON_NUMBER_DIGITS, True),
        ("-" + "9" * MAX_JSON_NUMBER_DIGITS, True),
        ("9" * (MAX_JSON_NUMBER_DIGITS + 1), False),
        ("9" * 4301, False),  # the case: Python's int conversion limit (500 before)
        ("9" * 100_000, False),
        ("0." + "1" * (MAX_JSON_NUMBER_DIGITS - 1), True),
        ("1." + "1" * MAX_JSON_NUMBER_DIGITS, False),
        ("1e308", True),
        ("-1.7976931348623157e308", True),
        ("1e-999", True),  # underflows to 0.0, as any tiny float
        ("1e309", False),
        ("1e999", False),
        ("-1E+999", False),
        ("1e0000000000000000000000000000002", True),
        ("NaN", False),
        ("Infinity", False),
        ("-Infinity", False),
    ],
)
async def test_numbers_are_bounded_and_finite(path: str, number: str, accepted: bool) -> None:
    field = "number" if path == "/json/typed" and "9" * 50 not in number else "value"
    body = f'{{"{field}": {number}}}'.encode() if path == "/json/typed" else number.encode()
    async with client(mount(Bodies())) as http:
        response = await http.post(path, content=body, headers=JSON)
    if accepted:
        assert response.status_code == 200, response.text
    else:
        assert response.status_code == 400, response.text
        assert response.json()["message"].startswith("Malformed JSON: ")


@pytest.mark.parametrize(
    "body",
    [
        b'"\\ud800"',  # a lone surrogate: no text can hold it
        b'"\\udc00 x"',
        b"\xef\xbb\xbf{}",  # a byte order mark: RFC 8259 JSON has none
        '{"a": 1}'.encode("utf-16"),
        b'{"a": "\xff"}',
        b'{"a": ',
    ],
)
async def test_json_that_is_not_utf8_unicode_text_is_a_400(body: bytes) -> None:
    async with client(mount(Bodies())) as http:
        untyped = await http.post("/json/any", content=b"[" + body + b"]", headers=JSON)
        typed = await http.post("/json/typed", content=b'{"value": ' + body + b"}", headers=JSON)
    for response in (untyped, typed):
        assert response.status_code == 400, response.text
        assert response.json()["message"].startswith("Malformed JSON")


async def test_the_malformed_json_error_keeps_its_position_and_details() -> None:
    seen: list[HttpError] = []

    def renderer(error: HttpError, request: Request) -> Response:
        seen.append(error)
        return Response.error(error.status, error.message)

    app = Application({"/": RestApi(Bodies())}, error_renderer=renderer)
    async with client(app) as http:
        malformed = await http.post("/json/any", content=b'{"a": ', headers=JSON)
        deep = await http.post("/json/any", content=nested(500), headers=JSON)
    assert malformed.json()["message"] == "Malformed JSON: Expecting value at position 6"
    first, second = seen
    assert [(d.loc, d.msg, d.type, d.ctx) for d in first.details] == [
        (("body", 6), "JSON decode error", "json_invalid", {"error": "Expecting value"})
    ]
    assert deep.status_code == 400
    [detail] = second.details
    assert (detail.loc, detail.type) == (("body",), "json_invalid")


async def test_the_limits_are_the_readers_to_choose() -> None:
    formats = default_formats()
    formats.register("application/json", JsonReader(max_depth=3, max_number_digits=3))
    app = Application({"/": RestApi(Bodies(), formats=formats)})
    async with client(app) as http:
        shallow = await http.post("/json/any", content=b"[[[999]]]", headers=JSON)
        deep = await http.post("/json/any", content=b"[[[[1]]]]", headers=JSON)
        long = await http.post("/json/any", content=b"[1000]", headers=JSON)
        typed_deep = await http.post("/json/typed", content=b'{"value": [[[1]]]}', headers=JSON)
    assert shallow.json() == {"echo": [[[999]]]}
    assert (deep.status_code, long.status_code, typed_deep.status_code) == (400, 400, 400)
    assert "nested deeper than 3 levels" in deep.json()["message"]
    assert "more than 3 digits" in long.json()["message"]


@pytest.mark.parametrize("depth", [0, 201])
def test_a_depth_the_parser_cannot_honour_is_refused(depth: int) -> None:
    with pytest.raises(ValueError, match="max_depth"):
        JsonReader(max_depth=depth)


def test_parse_and_check_directly() -> None:
    reader = JsonReader()
    assert reader.parse(b'{"a": [1, 2.5, "x", null, true]}') == {"a": [1, 2.5, "x", None, True]}
    assert reader.parse('{"é": "\\u00e9"}') == {"é": "é"}  # text, as a form field gives it
    for text in ["[" * 1000, "9" * 5000, '"\ud800"', "[1e999]"]:
        with pytest.raises(HttpError):
            reader.parse(text)
    reader.check(b"[1e308]")
    with pytest.raises(HttpError) as info:
        reader.check(b"[1e309]")
    assert info.value.status == 400


# -- parameters ------------------------------------------------------------------------------


@Resource("/numbers")
class Numbers:
    @Get("/query")
    def query(self, n: int) -> str:
        return str(n)

    @Get("/path/{n}")
    def path(self, n: int) -> str:
        return str(n)

    @Get("/header")
    def header(self, n: Annotated[int, Header("X-N")]) -> str:
        return str(n)

    @Get("/list")
    def many(self, n: list[int]) -> list[str]:
        return [str(i) for i in n]


@pytest.mark.parametrize("digits", [4301, 5000, 20_000])
async def test_huge_integer_parameters_are_a_400(digits: int) -> None:
    huge = "7" * digits
    async with client(mount(Numbers())) as http:
        answers = [
            await http.get("/numbers/query", params={"n": huge}),
            await http.get(f"/numbers/path/{huge}"),
            await http.get("/numbers/header", headers={"X-N": huge}),
            await http.get("/numbers/list", params=[("n", "1"), ("n", huge)]),
        ]
    for response in answers:
        assert response.status_code == 400, response.text
        assert "exceeded maximum size" in response.json()["message"]


# -- Accept on several lines -------------------------------------------------------------------


@Resource("/negotiated")
class Negotiated:
    @Get("/")
    def get(self) -> dict[str, int]:
        return {"a": 1}


async def test_two_accept_lines_are_one_list() -> None:
    """RFC 9110 §5.3: ``Accept: application/xml`` and ``Accept: application/json`` on two
    lines are ``Accept: application/xml, application/json``: JSON, not a 406."""
    app = mount(Negotiated())
    headers = [(b"accept", b"application/xml"), (b"accept", b"application/json")]
    sent = await asgi_call(app, "GET", "/negotiated", headers=headers)
    assert sent[0]["status"] == 200
    assert (b"content-type", b"application/json") in sent[0]["headers"]
    only_xml = await asgi_call(app, "GET", "/negotiated", headers=headers[:1])
    assert only_xml[0]["status"] == 406


async def test_two_accept_lines_weigh_together() -> None:
    formats = default_formats()

    class Csv:
        media_type = "text/csv"

        def write(self, value: object) -> bytes:
            return b"a\n1\n"

    formats.register("text/csv", writer=Csv())
    app = Application({"/": RestApi(Negotiated(), formats=formats)})
    headers = [(b"accept", b"application/json;q=0.5"), (b"accept", b"text/csv")]
    sent = await asgi_call(app, "GET", "/negotiated", headers=headers)
    assert sent[0]["status"] == 200
    assert (b"content-type", b"text/csv") in sent[0]["headers"]


@pytest.mark.parametrize("q", ["nan", "NaN", "-1", "-inf", "x", ""])
async def test_an_accept_entry_with_a_meaningless_quality_is_not_acceptable(q: str) -> None:
    app = mount(Negotiated())
    headers = [(b"accept", f"application/json;q={q}".encode())]
    sent = await asgi_call(app, "GET", "/negotiated", headers=headers)
    assert sent[0]["status"] == 406


# -- form bodies: text is valid UTF-8 (or the charset's), raw or percent-encoded ---------------


@Resource("/forms")
class Forms:
    @Post("/")
    def fields(self, body: Annotated[dict[str, Any], Entity]) -> dict[str, Any]:
        return body

    @Post("/param")
    def param(self, name: Annotated[str, Param]) -> str:
        return name


@pytest.mark.parametrize(
    "body",
    [b"name=\xff", b"name=%FF", b"name=%C3%28", b"name=\xc3\x28", b"%FF=x", b"\xff=x"],
)
@pytest.mark.parametrize("path", ["/forms/", "/forms/param"])
async def test_invalid_utf8_in_a_form_is_a_400_raw_or_escaped(body: bytes, path: str) -> None:
    async with client(mount(Forms())) as http:
        response = await http.post(path, content=body, headers=FORM)
    assert response.status_code == 400
    assert response.json()["message"].startswith("Malformed form body: field ")
    assert "is not valid utf-8 text" in response.json()["message"]


@pytest.mark.parametrize(
    "body", [b"name=%C3%A9t%C3%A9", "name=été".encode(), b"name=%C3%A9t\xc3\xa9"]
)
async def test_utf8_in_a_form_is_read_alike_raw_or_escaped(body: bytes) -> None:
    """Raw UTF-8 bytes used to be read as Latin-1 (``Ã©``), escaped ones as UTF-8."""
    async with client(mount(Forms())) as http:
        response = await http.post("/forms/", content=body, headers=FORM)
    assert response.json() == {"name": "été"}


async def test_form_decoding_details() -> None:
    body = b"a=1+2%2B3&&b=%zz&b=&c&=v&d=%E2%82%AC"
    async with client(mount(Forms())) as http:
        response = await http.post("/forms/", content=body, headers=FORM)
    assert response.json() == {"a": "1 2+3", "b": ["%zz", ""], "c": "", "": "v", "d": "€"}


async def test_a_form_in_a_named_charset() -> None:
    async with client(mount(Forms())) as http:
        latin = await http.post(
            "/forms/",
            content="name=été".encode("latin-1"),
            headers={"Content-Type": "application/x-www-form-urlencoded; charset=ISO-8859-1"},
        )
        unknown = await http.post(
            "/forms/",
            content=b"name=x",
            headers={"Content-Type": "application/x-www-form-urlencoded; charset=no-such"},
        )
        utf7 = await http.post(
            "/forms/",
            content=b"name=%2B2AA-",  # UTF-7 for a lone surrogate
            headers={"Content-Type": "application/x-www-form-urlencoded; charset=utf-7"},
        )
    assert latin.json() == {"name": "été"}
    assert unknown.status_code == 400
    assert "unknown charset" in unknown.json()["message"]
    assert utf7.status_code == 400


@pytest.mark.parametrize("charset", ["undefined", "utf-8\x00", "x" * 500, "rot13", "hex"])
async def test_a_charset_that_decodes_no_text_is_a_400(charset: str) -> None:
    app = mount(Forms(), Params())
    headers = [
        (b"content-type", b"application/x-www-form-urlencoded; charset=" + charset.encode()),
    ]
    form_body, multipart_type = multipart((b'name="name"', b"x"))
    multipart_headers = [(b"content-type", f"{multipart_type}; charset={charset}".encode())]
    answers = [
        await asgi_call(app, "POST", "/forms/", headers=headers, body=b"name=x"),
        await asgi_call(app, "POST", "/params/", headers=headers, body=b"name=x"),
        await asgi_call(app, "POST", "/forms/", headers=multipart_headers, body=form_body),
        await asgi_call(app, "POST", "/params/", headers=multipart_headers, body=form_body),
    ]
    assert [sent[0]["status"] for sent in answers] == [400, 400, 400, 400]


def test_form_limits() -> None:
    assert len(parse_form_urlencoded(b"&".join([b"a=1"] * MAX_FORM_FIELDS))) == MAX_FORM_FIELDS
    with pytest.raises(HttpError, match="more than 1000 fields"):
        parse_form_urlencoded(b"&".join([b"a=1"] * (MAX_FORM_FIELDS + 1)))
    with pytest.raises(HttpError, match="larger than 10 bytes"):
        parse_form_urlencoded(b"a=" + b"x" * 9, max_field_size=10)


def multipart(*parts: tuple[bytes, bytes], boundary: str = "b0und") -> tuple[bytes, str]:
    chunks = []
    for disposition, value in parts:
        chunks.append(
            b"--"
            + boundary.encode()
            + b"\r\nContent-Disposition: form-data; "
            + disposition
            + b"\r\n\r\n"
            + value
            + b"\r\n"
        )
    chunks.append(b"--" + boundary.encode() + b"--\r\n")
    return b"".join(chunks), f"multipart/form-data; boundary={boundary}"


@pytest.mark.parametrize(
    ("disposition", "value"),
    [(b'name="a"', b"\xff"), (b'name="\xff"', b"x"), (b'name="a"', b"\xc3\x28")],
)
async def test_invalid_utf8_in_a_multipart_field_is_a_400(disposition: bytes, value: bytes) -> None:
    body, content_type = multipart((disposition, value))
    async with client(mount(Forms())) as http:
        response = await http.post("/forms/", content=body, headers={"Content-Type": content_type})
    assert response.status_code == 400
    assert "is not valid utf-8 text" in response.json()["message"]


async def test_multipart_file_names_keep_the_latin1_fallback() -> None:
    body, content_type = multipart(
        ('name="é"'.encode(), "été".encode()),
        (b'name="f"; filename="r\xe9sum\xe9.txt"', b"\xff\xfe binary is fine"),
    )

    @Resource("/upload")
    class Upload:
        @Post("/")
        async def upload(self, body: Annotated[dict[str, Any], Entity]) -> dict[str, str]:
            file = body["f"]
            return {"é": body["é"], "filename": file.filename, "data": (await file.read()).hex()}

    async with client(mount(Upload())) as http:
        response = await http.post("/upload/", content=body, headers={"Content-Type": content_type})
    assert response.json() == {
        "é": "été",
        "filename": "résumé.txt",
        "data": b"\xff\xfe binary is fine".hex(),
    }


def test_decode_text_refuses_lone_surrogates_whatever_the_codec() -> None:
    assert decode_text("é".encode(), "utf-8") == "é"
    assert decode_text(b"\xe9", "latin-1") == "é"
    for data, codec in [(b"+2AA-", "utf-7"), (b"\\ud800", "unicode_escape"), (b"\xff", "utf-8")]:
        with pytest.raises(UnicodeDecodeError):
            decode_text(data, codec)


# -- request parameters: Request.param, param_values, params -----------------------------------


@Resource("/params")
class Params:
    @Get("/")
    async def get(self, request: Request) -> dict[str, Any]:
        return await self.describe(request)

    @Post("/")
    async def post(self, request: Request) -> dict[str, Any]:
        return await self.describe(request)

    async def describe(self, request: Request) -> dict[str, Any]:
        return {
            "name": await request.param("name"),
            "missing": await request.param("missing", "default"),
            "names": await request.param_values("name"),
            "tags": await request.param_values("tag"),
            "params": await request.params(),
        }


async def test_param_reads_the_query_string() -> None:
    async with client(mount(Params())) as http:
        response = await http.get("/params/?name=a&tag=x&tag=y&name=b")
    assert response.json() == {
        "name": "b",  # the last value, as Param parameters read it
        "missing": "default",
        "names": ["a", "b"],
        "tags": ["x", "y"],
        "params": {"name": "b", "tag": "y"},
    }


async def test_param_reads_a_form_body_the_query_string_wins() -> None:
    async with client(mount(Params())) as http:
        form = await http.post("/params/", content=b"name=f%C3%A9&tag=1&tag=2", headers=FORM)
        both = await http.post(
            "/params/?name=q&other=o", content=b"name=f&tag=1&tag=2", headers=FORM
        )
    assert form.json() == {
        "name": "fé",
        "missing": "default",
        "names": ["fé"],
        "tags": ["1", "2"],
        "params": {"name": "fé", "tag": "2"},
    }
    assert both.json() == {
        "name": "q",
        "missing": "default",
        "names": ["q"],
        "tags": ["1", "2"],
        "params": {"name": "q", "tag": "2", "other": "o"},
    }


async def test_param_reads_the_text_fields_of_a_multipart_body() -> None:
    body, content_type = multipart(
        (b'name="name"', b"m"), (b'name="tag"; filename="t.txt"', b"file data")
    )
    async with client(mount(Params())) as http:
        response = await http.post("/params/", content=body, headers={"Content-Type": content_type})
    assert response.json() == {
        "name": "m",
        "missing": "default",
        "names": ["m"],
        "tags": [],  # files are no parameters
        "params": {"name": "m"},
    }


async def test_param_leaves_other_bodies_alone() -> None:
    @Resource("/both")
    class Both:
        @Post("/")
        async def post(self, request: Request) -> dict[str, Any]:
            return {"name": await request.param("name"), "body": await request.json()}

    async with client(mount(Both())) as http:
        response = await http.post("/both/?name=q", content=b'{"name": "j"}', headers=JSON)
    assert response.json() == {"name": "q", "body": {"name": "j"}}


async def test_param_of_an_invalid_form_is_a_400() -> None:
    async with client(mount(Params())) as http:
        response = await http.post("/params/", content=b"name=%FF", headers=FORM)
    assert response.status_code == 400


# -- a client gone before the end of its body --------------------------------------------------


@pytest.mark.parametrize("path", ["/json/any", "/json/typed"])
async def test_a_client_gone_mid_body_is_no_unhandled_error(
    path: str, caplog: pytest.LogCaptureFixture
) -> None:
    app = mount(Bodies())
    scope: dict[str, Any] = {
        "type": "http",
        "method": "POST",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "headers": [(b"content-type", b"application/json"), (b"content-length", b"100")],
    }
    messages: list[Message] = [
        {"type": "http.request", "body": b'{"value": ', "more_body": True},
        {"type": "http.disconnect"},
    ]
    sent: list[Message] = []

    async def receive() -> Message:
        return messages.pop(0)

    async def send(message: Message) -> None:
        sent.append(message)

    with caplog.at_level("ERROR", logger="webrest"):
        await app(scope, receive, send)
    assert sent[0]["status"] == 400
    assert not [r for r in caplog.records if r.levelname == "ERROR"]
    assert issubclass(ClientDisconnected, HttpError)
