"""Conversion of request values to the annotated types, conversions and matrix parameters."""

from __future__ import annotations

import dataclasses
from datetime import date, datetime, timedelta
from decimal import Decimal
from enum import Enum
from typing import Annotated, Any
from uuid import UUID

import pytest
from pydantic import BaseModel, Field

from webrest import (
    Application,
    Get,
    HttpError,
    Matrix,
    Param,
    Post,
    Request,
    Resource,
    Response,
    RestApi,
    SeparatedBy,
)

from .support import client, mount


class Color(Enum):
    RED = "red"
    GREEN = "green"


@Resource("/convert")
class Scalars:
    @Get("/str")
    def str_(self, value: str) -> str:
        return value

    @Get("/int")
    def int_(self, value: int) -> int:
        return value

    @Get("/float")
    def float_(self, value: float) -> float:
        return value

    @Get("/bool")
    def bool_(self, value: bool) -> bool:
        return value

    @Get("/decimal")
    def decimal(self, value: Decimal) -> str:
        return f"{value!r}"

    @Get("/uuid")
    def uuid(self, value: UUID) -> str:
        return f"{value!r}"

    @Get("/date")
    def date_(self, value: date) -> str:
        return f"{value!r}"

    @Get("/datetime")
    def datetime_(self, value: datetime) -> list[object]:
        return [value.isoformat(), value.utcoffset() == timedelta(0)]

    @Get("/enum")
    def enum(self, value: Color) -> str:
        return f"{value!r}"

    @Get("/path/{id}")
    def path(self, id: int) -> list[object]:
        return [id, type(id).__name__]


@pytest.mark.parametrize(
    ("path", "raw", "expected"),
    [
        ("/convert/str", "text", "text"),
        ("/convert/int", "42", 42),
        ("/convert/int", "-7", -7),
        ("/convert/float", "1.5", 1.5),
        ("/convert/float", "3", 3.0),
        ("/convert/bool", "true", True),
        ("/convert/bool", "0", False),
        ("/convert/bool", "yes", True),
        ("/convert/decimal", "1.10", "Decimal('1.10')"),
        (
            "/convert/uuid",
            "12345678-1234-5678-1234-567812345678",
            "UUID('12345678-1234-5678-1234-567812345678')",
        ),
        ("/convert/date", "2024-02-29", "datetime.date(2024, 2, 29)"),
        (
            "/convert/datetime",
            "2024-02-29T12:30:00Z",
            ["2024-02-29T12:30:00+00:00", True],
        ),
        ("/convert/enum", "green", "<Color.GREEN: 'green'>"),
    ],
)
async def test_scalar_conversion(path: str, raw: str, expected: object) -> None:
    async with client(mount(Scalars())) as http:
        response = await http.get(path, params={"value": raw})
    assert response.status_code == 200, response.text
    assert response.json() == expected


async def test_path_value_converted() -> None:
    async with client(mount(Scalars())) as http:
        response = await http.get("/convert/path/12")
    assert response.json() == [12, "int"]


@pytest.mark.parametrize(
    ("path", "raw", "message"),
    [
        ("/convert/int", "x", "Invalid argument value (query): Input should be a valid integer"),
        ("/convert/int", "1.5", "Invalid argument value (query): Input should be a valid integer"),
        ("/convert/float", "x", "Invalid argument value (query): Input should be a valid number"),
        ("/convert/bool", "x", "Invalid argument value (query): Input should be a valid boolean"),
        (
            "/convert/decimal",
            "x",
            "Invalid argument value (query): Input should be a valid decimal",
        ),
        ("/convert/uuid", "x", "Invalid argument value (query): Input should be a valid UUID"),
        ("/convert/date", "x", "Invalid argument value (query): Input should be a valid date"),
        (
            "/convert/datetime",
            "x",
            "Invalid argument value (query): Input should be a valid datetime",
        ),
        (
            "/convert/enum",
            "blue",
            "Invalid argument value (query): Input should be 'red' or 'green'",
        ),
    ],
)
async def test_value_that_does_not_convert_is_bad_request(
    path: str, raw: str, message: str
) -> None:
    async with client(mount(Scalars())) as http:
        response = await http.get(path, params={"value": raw})
    assert response.status_code == 400
    body = response.json()
    assert body["status"] == 400
    assert body["message"].startswith(message), body["message"]


async def test_path_value_that_does_not_convert_is_bad_request() -> None:
    async with client(mount(Scalars())) as http:
        response = await http.get("/convert/path/abc")
    assert response.status_code == 400
    assert response.json()["message"].startswith(
        "Invalid argument id (path): Input should be a valid integer"
    )


# -- lists, optionals, constraints ------------------------------------------------------------


@Resource("/lists")
class Lists:
    @Get("/ints")
    def ints(self, id: list[int]) -> list[int]:
        return id

    @Get("/dates")
    def dates(self, day: list[date] = []) -> list[str]:  # noqa: B006
        return [d.isoformat() for d in day]

    @Get("/optional")
    def optional(self, page: int | None) -> list[object]:
        return [page]

    @Get("/optional-default")
    def optional_default(self, page: int | None = 5) -> list[object]:
        return [page]

    @Get("/separated")
    def separated(
        self,
        ids: Annotated[list[int], SeparatedBy(",")] = [],  # noqa: B006
    ) -> list[int]:
        return ids

    @Get("/separated-str")
    def separated_str(self, tags: Annotated[list[str], Param, SeparatedBy("|")]) -> list[str]:
        return tags

    @Get("/brackets")
    def brackets(self, a: list[str]) -> list[str]:
        return a

    @Get("/constrained")
    def constrained(
        self,
        limit: Annotated[int, Field(ge=1, le=100)] = 10,
        name: Annotated[str, Field(min_length=2)] = "ab",
    ) -> list[object]:
        return [limit, name]


async def test_repeated_parameters_make_a_list() -> None:
    async with client(mount(Lists())) as http:
        response = await http.get("/lists/ints?id=1&id=2&id=3")
        single = await http.get("/lists/ints?id=7")
        dates = await http.get("/lists/dates?day=2024-01-01&day=2024-12-31")
        no_dates = await http.get("/lists/dates")
    assert response.json() == [1, 2, 3]
    assert single.json() == [7]
    assert dates.json() == ["2024-01-01", "2024-12-31"]
    assert no_dates.json() == []


async def test_list_element_that_does_not_convert() -> None:
    async with client(mount(Lists())) as http:
        response = await http.get("/lists/ints?id=1&id=x")
    assert response.status_code == 400
    assert response.json()["message"].startswith(
        "Invalid argument id.1 (query): Input should be a valid integer"
    )


async def test_php_style_brackets() -> None:
    async with client(mount(Lists())) as http:
        response = await http.get("/lists/brackets?a[]=x&a[]=y")
    assert response.json() == ["x", "y"]


async def test_optional_parameter() -> None:
    async with client(mount(Lists())) as http:
        absent = await http.get("/lists/optional")
        given = await http.get("/lists/optional?page=2")
        defaulted = await http.get("/lists/optional-default")
        invalid = await http.get("/lists/optional?page=x")
    assert absent.json() == [None]
    assert given.json() == [2]
    assert defaulted.json() == [5]
    assert invalid.status_code == 400
    assert invalid.json()["message"].startswith("Invalid argument page (query)")


async def test_separated_by_splits() -> None:
    async with client(mount(Lists())) as http:
        split = await http.get("/lists/separated?ids=1,2,3")
        repeated = await http.get("/lists/separated?ids=4&ids=5")
        empty = await http.get("/lists/separated")
        blank = await http.get("/lists/separated?ids=")
        strings = await http.get("/lists/separated-str?tags=a|b")
    assert split.json() == [1, 2, 3]
    assert repeated.json() == [4, 5]
    assert empty.json() == []
    assert blank.json() == []
    assert strings.json() == ["a", "b"]


async def test_separated_values_are_converted() -> None:
    async with client(mount(Lists())) as http:
        response = await http.get("/lists/separated?ids=1,x")
    assert response.status_code == 400
    assert response.json()["message"].startswith(
        "Invalid argument ids.1 (query): Input should be a valid integer"
    )


async def test_field_constraints_apply() -> None:
    async with client(mount(Lists())) as http:
        ok = await http.get("/lists/constrained?limit=100&name=abc")
        too_big = await http.get("/lists/constrained?limit=101")
        too_small = await http.get("/lists/constrained?limit=0")
        too_short = await http.get("/lists/constrained?name=a")
    assert ok.json() == [100, "abc"]
    assert too_big.status_code == 400
    assert too_big.json()["message"] == (
        "Invalid argument limit (query): Input should be less than or equal to 100"
    )
    assert too_small.json()["message"] == (
        "Invalid argument limit (query): Input should be greater than or equal to 1"
    )
    assert too_short.json()["message"] == (
        "Invalid argument name (query): String should have at least 2 characters"
    )


# -- user-defined conversions ------------------------------------------------------------------


class Branches:
    """``main...feature`` → ``["main", "feature"]`` (upstream's test conversion)."""

    def convert(self, value: object) -> object:
        assert isinstance(value, str), f"expected the raw string, got {value!r}"
        branches = value.split("...")
        if len(branches) != 2:
            raise ValueError(f'Malformed input "{value}"')
        return branches


class Upper:
    def convert(self, value: object) -> object:
        return value.upper() if isinstance(value, str) else value


@Resource("/repos")
class Repos:
    @Get("/compare")
    def compare(self, branches: Annotated[list[str], Branches()]) -> list[str]:
        return branches

    @Get("/compare/{branches}")
    def compare_path(self, branches: Annotated[list[str], Branches()]) -> list[str]:
        return branches

    @Get("/chain")
    def chain(self, value: Annotated[list[str], Upper(), Branches()]) -> list[str]:
        return value


async def test_user_conversion() -> None:
    async with client(mount(Repos())) as http:
        query = await http.get("/repos/compare", params={"branches": "main...feature"})
        path = await http.get("/repos/compare/main...feature")
    assert query.json() == ["main", "feature"]
    assert path.json() == ["main", "feature"]


async def test_user_conversion_value_error_is_bad_request_with_its_message() -> None:
    """As upstream and the README promise: the 400's message is the exception's message."""
    async with client(mount(Repos())) as http:
        response = await http.get("/repos/compare", params={"branches": "main"})
        path = await http.get("/repos/compare/main")
    assert response.status_code == 400
    assert response.json() == {"status": 400, "message": 'Malformed input "main"'}
    assert path.status_code == 400
    assert path.json() == {"status": 400, "message": 'Malformed input "main"'}


@Resource("/twice")
class Twice:
    @Get("/")
    def both(
        self,
        a: Annotated[list[str], Branches()],
        n: int,
        b: Annotated[list[str], Branches()],
    ) -> list[str]:
        return a + b


async def test_the_first_failed_conversion_gives_the_message_and_details_list_every_problem() -> (
    None
):
    seen: list[HttpError] = []

    def renderer(error: HttpError, request: Request) -> Response:
        seen.append(error)
        return Response.error(error.status, error.message)

    app = Application({"/": RestApi(Twice())}, error_renderer=renderer)
    async with client(app) as http:
        response = await http.get("/twice/", params={"a": "x", "n": "y", "b": "z"})
    assert response.status_code == 400
    assert response.json()["message"] == 'Malformed input "x"'
    [error] = seen
    assert [(d.loc, d.msg, d.type) for d in error.details] == [
        (("query", "a"), 'Malformed input "x"', "value_error"),
        (
            ("query", "n"),
            "Input should be a valid integer, unable to parse string as an integer",
            "int_parsing",
        ),
        (("query", "b"), 'Malformed input "z"', "value_error"),
    ]


async def test_conversions_apply_in_declaration_order() -> None:
    async with client(mount(Repos())) as http:
        response = await http.get("/repos/chain", params={"value": "a...b"})
    assert response.json() == ["A", "B"]


# -- models and dataclasses ------------------------------------------------------------------


class Filters(BaseModel):
    status: str
    orgunits: list[str]


@dataclasses.dataclass
class DataFilters:
    status: str
    orgunits: list[str]


class NewUser(BaseModel):
    name: str = Field(min_length=1)
    age: int


@dataclasses.dataclass
class Point:
    x: int
    y: int


@Resource("/")
class Models:
    @Get("/{filter}/authors")
    def authors(self, filter: Annotated[dict[str, object], Matrix]) -> dict[str, object]:
        return filter

    @Get("/{filter}/model")
    def model(self, filter: Annotated[Filters, Matrix]) -> dict[str, object]:
        return {"type": type(filter).__name__, **filter.model_dump()}

    @Get("/{filter}/dataclass")
    def dataclass(self, filter: Annotated[DataFilters, Matrix]) -> dict[str, object]:
        return {"type": type(filter).__name__, **dataclasses.asdict(filter)}

    @Get("/query-matrix")
    def query_matrix(self, f: Annotated[dict[str, Any], Param, Matrix]) -> dict[str, Any]:
        return f

    @Post("/users")
    def create(self, user: NewUser) -> dict[str, object]:
        return {"type": type(user).__name__, **user.model_dump()}

    @Post("/points")
    def point(self, point: Point) -> dict[str, object]:
        return {"type": type(point).__name__, "sum": point.x + point.y}

    @Post("/points/{scale}")
    def scaled(self, scale: int, point: Point, verbose: Annotated[bool, Param] = False) -> int:
        return (point.x + point.y) * scale


async def test_matrix_parameters() -> None:
    async with client(mount(Models())) as http:
        response = await http.get("/status=COMPLETED;orgunits=A,B/authors")
        flag = await http.get("/status=OPEN;archived/authors")
    assert response.json() == {"status": "COMPLETED", "orgunits": ["A", "B"]}
    assert flag.json() == {"status": "OPEN", "archived": None}


async def test_matrix_converted_to_model_and_dataclass() -> None:
    async with client(mount(Models())) as http:
        model = await http.get("/status=COMPLETED;orgunits=A,B/model")
        dataclass = await http.get("/status=COMPLETED;orgunits=A,B/dataclass")
    assert model.json() == {"type": "Filters", "status": "COMPLETED", "orgunits": ["A", "B"]}
    assert dataclass.json() == {
        "type": "DataFilters",
        "status": "COMPLETED",
        "orgunits": ["A", "B"],
    }


async def test_matrix_that_does_not_fit_the_model() -> None:
    async with client(mount(Models())) as http:
        response = await http.get("/orgunits=A,B/model")
    assert response.status_code == 400
    assert response.json() == {
        "status": 400,
        "message": "Missing argument filter.status (path)",
    }


async def test_matrix_on_a_query_parameter() -> None:
    async with client(mount(Models())) as http:
        response = await http.get("/query-matrix", params={"f": "a=1;b=2,3"})
    assert response.json() == {"a": "1", "b": ["2", "3"]}


async def test_pydantic_model_from_json_body() -> None:
    async with client(mount(Models())) as http:
        response = await http.post("/users", json={"name": "Timm", "age": "42"})
    assert response.json() == {"type": "NewUser", "name": "Timm", "age": 42}


async def test_pydantic_model_errors() -> None:
    async with client(mount(Models())) as http:
        response = await http.post("/users", json={"name": "", "age": "x"})
    assert response.status_code == 400
    assert response.json() == {
        "status": 400,
        "message": "Invalid argument name (body): String should have at least 1 character; "
        "Invalid argument age (body): Input should be a valid integer, "
        "unable to parse string as an integer",
    }


async def test_pydantic_model_missing_field() -> None:
    async with client(mount(Models())) as http:
        response = await http.post("/users", json={"name": "x"})
    assert response.status_code == 400
    assert response.json() == {"status": 400, "message": "Missing argument age (body)"}


async def test_dataclass_from_json_body() -> None:
    async with client(mount(Models())) as http:
        response = await http.post("/points", json={"x": 1, "y": 2})
    assert response.json() == {"type": "Point", "sum": 3}


async def test_body_and_query_errors_are_reported_together() -> None:
    async with client(mount(Models())) as http:
        response = await http.post("/points/x?verbose=maybe", json={"x": 1, "y": "z"})
    assert response.status_code == 400
    message = response.json()["message"]
    assert "Invalid argument scale (path)" in message
    assert "Invalid argument y (body)" in message
    assert "Invalid argument verbose (query)" in message
