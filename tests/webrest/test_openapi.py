"""The OpenAPI document generated from the routes: paths, parameters, bodies, responses."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Sequence
from typing import Annotated, Any

import pytest
from openapi_spec_validator import validate
from pydantic import BaseModel, Field

from examples.webrest_example.app import create_app
from webrest import (
    Application,
    Body,
    Delete,
    Get,
    Head,
    Header,
    HttpError,
    Matrix,
    Multipart,
    Patch,
    Post,
    Put,
    Request,
    Resource,
    Response,
    RestApi,
    SeparatedBy,
    Stream,
    Value,
)
from webrest.openapi import generate_openapi

from .support import client

ERROR_REF = {"$ref": "#/components/schemas/Error"}


class Item(BaseModel):
    id: int
    name: str


class NewItem(BaseModel):
    name: str = Field(min_length=1, max_length=50)
    note: str | None = None


class Upload(BaseModel):
    file: bytes
    title: str = ""


@Resource("/items")
class Items:
    @Get("/")
    def list_items(
        self,
        tags: Annotated[Sequence[str], SeparatedBy(",")] = (),
        colours: Annotated[Sequence[str], SeparatedBy("|")] = (),
        sizes: list[int] | None = None,
        page: Annotated[int, Field(ge=1)] = 1,
        query: str | None = None,
    ) -> list[Item]:
        """All items.

        A page at a time."""
        return []

    @Get("/{id:[0-9]+}", responses={404: "No such item"})
    def find(self, id: int, trace: Annotated[str | None, Header("X-Trace")] = None) -> Item:
        return Item(id=id, name="one")

    @Get("/{code:[A-Z]{3}}/code", operation_id="itemByCode", summary="By code", tags=["codes"])
    def by_code(self, code: str) -> Item:
        return Item(id=1, name=code)

    @Get("/named/{name}")
    def by_name(self, name: str, request: Request) -> Item:
        return Item(id=1, name=name)

    @Get("/{filter}/matching")
    def matching(self, filter: Annotated[dict[str, Any], Matrix]) -> list[Item]:
        return []

    @Post("/", status=201, responses={201: Item, 409: "Duplicate name"})
    def create(self, item: NewItem, caller: Annotated[str, Value("caller")]) -> Response:
        return Response.created("/items/{id}", 1).entity(Item(id=1, name=item.name))

    @Put("/{id:[0-9]+}", consumes=["application/json"])
    def replace(self, id: int, item: NewItem) -> Item:
        return Item(id=id, name=item.name)

    @Put("/{id:[0-9]+}/bulk")
    def bulk(self, id: int, items: list[NewItem]) -> list[Item]:
        return []

    @Patch("/{id:[0-9]+}/note")
    def note(self, id: int, text: Annotated[str, Body]) -> None:
        return None

    @Put("/{id:[0-9]+}/raw", status=204)
    async def raw(self, id: int, data: Annotated[AsyncIterator[bytes], Stream]) -> None:
        return None

    @Post("/{id:[0-9]+}/upload", status=204)
    def upload(self, id: int, form: Annotated[Multipart, Upload]) -> Response:
        return Response.no_content()

    @Post("/{id:[0-9]+}/files", status=204)
    def files(self, id: int, form: Multipart) -> Response:
        return Response.no_content()

    @Delete("/{id:[0-9]+}", status=204)
    def delete(self, id: int) -> Response:
        return Response.no_content()

    @Head("/{id:[0-9]+}")
    def exists(self, id: int) -> Response:
        return Response.ok()

    @Get("/export", produces=["text/csv"])
    def export(self) -> Response:
        return Response.ok().type("text/csv").body("id,name\n")


@Resource("/other")
class Other:
    @Get("/")
    def find(self) -> dict[str, int]:
        return {}

    @Get("/again")
    @Get("/twice")
    def twice(self) -> str:
        return ""


class CsvWriter:
    media_type = "text/csv"

    def write(self, value: object) -> bytes:
        return b""


def custom_errors(error: HttpError, request: Request) -> Response:
    return Response.error(error.status).entity({"problem": error.message})


def fixture_app() -> Application:
    items = RestApi(Items(), base="/api").register("text/csv", writer=CsvWriter())
    other = RestApi(Other(), error_renderer=custom_errors)
    return Application({"/api": items, "/other": other}, title="Fixture", version="2.0")


@pytest.fixture(scope="module")
def doc() -> dict[str, Any]:
    return generate_openapi(fixture_app())


def operation(doc: dict[str, Any], method: str, path: str) -> dict[str, Any]:
    found: dict[str, Any] = doc["paths"][path][method]
    return found


def parameters(doc: dict[str, Any], method: str, path: str) -> dict[str, dict[str, Any]]:
    return {p["name"]: p for p in operation(doc, method, path).get("parameters", [])}


# -- the document ----------------------------------------------------------------------------


def test_fixture_document_is_valid_openapi_3_1(doc: dict[str, Any]) -> None:
    validate(doc)
    assert doc["openapi"] == "3.1.0"
    assert doc["info"] == {"title": "Fixture", "version": "2.0"}


def test_paths_rewrite_constraints_and_add_the_api_base(doc: dict[str, Any]) -> None:
    assert list(doc["paths"]) == sorted(doc["paths"])
    assert {
        "/api/items",
        "/api/items/{id}",
        "/api/items/{code}/code",
        "/api/items/named/{name}",
        "/api/items/{filter}/matching",
        "/api/items/{id}/bulk",
        "/api/items/export",
        "/other",
        "/other/again",
        "/other/twice",
    } <= set(doc["paths"])
    assert list(doc["paths"]["/api/items/{id}"]) == ["get", "put", "delete"]


def test_head_routes_are_not_documented(doc: dict[str, Any]) -> None:
    methods = {method for operations in doc["paths"].values() for method in operations}
    assert "head" not in methods


def test_path_parameters(doc: dict[str, Any]) -> None:
    assert parameters(doc, "get", "/api/items/{id}")["id"] == {
        "name": "id",
        "in": "path",
        "required": True,
        "schema": {"type": "integer"},
    }
    assert parameters(doc, "get", "/api/items/{code}/code")["code"]["schema"] == {
        "type": "string",
        "pattern": "^(?:[A-Z]{3})$",
    }
    assert parameters(doc, "get", "/api/items/named/{name}")["name"]["schema"] == {
        "type": "string",
        "pattern": "^[^/]+$",
    }


def test_matrix_parameters_are_strings(doc: dict[str, Any]) -> None:
    assert parameters(doc, "get", "/api/items/{filter}/matching")["filter"]["schema"] == {
        "type": "string",
        "pattern": "^[^/]+$",
    }


def test_query_parameters(doc: dict[str, Any]) -> None:
    query = parameters(doc, "get", "/api/items")
    assert query["tags"] == {
        "name": "tags",
        "in": "query",
        "required": False,
        "schema": {"default": [], "type": "array", "items": {"type": "string"}},
        "style": "form",
        "explode": False,
    }
    assert (query["colours"]["style"], query["colours"]["explode"]) == ("pipeDelimited", False)
    assert "style" not in query["sizes"]
    assert query["sizes"]["schema"] == {"type": "array", "items": {"type": "integer"}}
    assert query["page"]["schema"] == {"default": 1, "type": "integer", "minimum": 1}
    assert query["query"] == {
        "name": "query",
        "in": "query",
        "required": False,
        "schema": {"type": "string"},
    }


def test_header_parameters(doc: dict[str, Any]) -> None:
    assert parameters(doc, "get", "/api/items/{id}")["X-Trace"] == {
        "name": "X-Trace",
        "in": "header",
        "required": False,
        "schema": {"type": "string"},
    }


def test_values_and_the_request_are_not_parameters(doc: dict[str, Any]) -> None:
    assert "parameters" not in operation(doc, "post", "/api/items")
    assert list(parameters(doc, "get", "/api/items/named/{name}")) == ["name"]


def test_entity_body_in_every_format_that_reads_it(doc: dict[str, Any]) -> None:
    body = operation(doc, "post", "/api/items")["requestBody"]
    assert body["required"] is True
    content = body["content"]
    assert content["application/json"] == {"schema": {"$ref": "#/components/schemas/NewItem"}}
    form = content["application/x-www-form-urlencoded"]["schema"]
    assert form == content["multipart/form-data"]["schema"]
    assert form["type"] == "object" and form["required"] == ["name"]
    assert form["properties"]["note"] == {"title": "Note", "type": "string"}  # forms send no null
    assert "application/octet-stream" not in content


def test_consumes_limits_the_body_types(doc: dict[str, Any]) -> None:
    content = operation(doc, "put", "/api/items/{id}")["requestBody"]["content"]
    assert list(content) == ["application/json"]


def test_a_list_entity_is_json_only(doc: dict[str, Any]) -> None:
    content = operation(doc, "put", "/api/items/{id}/bulk")["requestBody"]["content"]
    assert content == {
        "application/json": {
            "schema": {"type": "array", "items": {"$ref": "#/components/schemas/NewItem"}}
        }
    }


def test_text_stream_and_multipart_bodies(doc: dict[str, Any]) -> None:
    text = operation(doc, "patch", "/api/items/{id}/note")["requestBody"]
    assert text == {
        "required": True,
        "content": {"text/plain": {"schema": {"type": "string", "minLength": 1}}},
    }
    raw = operation(doc, "put", "/api/items/{id}/raw")["requestBody"]["content"]
    assert raw == {"application/octet-stream": {"schema": {"type": "string", "format": "binary"}}}
    files = operation(doc, "post", "/api/items/{id}/files")["requestBody"]["content"]
    assert files == {
        "multipart/form-data": {
            "schema": {
                "type": "object",
                "additionalProperties": {"type": "string", "format": "binary"},
            }
        }
    }


def test_a_multipart_parameter_can_name_the_type_of_its_parts(doc: dict[str, Any]) -> None:
    media = operation(doc, "post", "/api/items/{id}/upload")["requestBody"]["content"]
    assert media["multipart/form-data"] == {
        "schema": {"$ref": "#/components/schemas/Upload"},
        "encoding": {"file": {"contentType": "application/octet-stream"}},
    }
    upload = doc["components"]["schemas"]["Upload"]
    assert upload["properties"]["file"]["format"] == "binary"


def test_success_responses(doc: dict[str, Any]) -> None:
    listed = operation(doc, "get", "/api/items")["responses"]["200"]
    assert listed["content"]["application/json"] == {
        "schema": {"type": "array", "items": {"$ref": "#/components/schemas/Item"}}
    }
    assert set(listed["content"]) == {"application/json", "text/csv"}
    created = operation(doc, "post", "/api/items")["responses"]
    assert "200" not in created
    assert created["201"]["content"]["application/json"]["schema"]["$ref"].endswith("/Item")
    assert operation(doc, "delete", "/api/items/{id}")["responses"]["204"] == {
        "description": "No Content"
    }
    assert operation(doc, "get", "/api/items/export")["responses"]["200"] == {
        "description": "OK",
        "content": {"text/csv": {}},
    }
    assert operation(doc, "patch", "/api/items/{id}/note")["responses"]["200"] == {
        "description": "OK",
        "content": {"application/json": {}, "text/csv": {}},
    }


def test_webrest_error_responses(doc: dict[str, Any]) -> None:
    def statuses(method: str, path: str) -> list[str]:
        return list(operation(doc, method, path)["responses"])

    assert statuses("get", "/api/items/export") == ["200", "405", "406", "500"]
    assert statuses("get", "/api/items") == ["200", "400", "405", "406", "500"]
    assert statuses("delete", "/api/items/{id}") == ["204", "400", "404", "405", "406", "500"]
    assert statuses("post", "/api/items") == [
        "201",
        "400",
        "405",
        "406",
        "409",
        "413",
        "415",
        "500",
    ]
    responses = operation(doc, "get", "/api/items/{id}")["responses"]
    assert responses["404"] == {
        "description": "No such item",
        "content": {"application/json": {"schema": ERROR_REF}, "text/csv": {"schema": ERROR_REF}},
    }
    assert responses["406"]["content"]["application/json"] == {"schema": ERROR_REF}
    assert responses["500"] == {"description": "Internal Server Error"}
    assert doc["components"]["schemas"]["Error"] == {
        "type": "object",
        "properties": {"status": {"type": "integer"}, "message": {"type": "string"}},
        "required": ["status", "message"],
    }


def test_a_custom_error_renderer_leaves_error_bodies_undescribed(doc: dict[str, Any]) -> None:
    responses = operation(doc, "get", "/other")["responses"]
    assert responses["405"] == {"description": "Method Not Allowed"}
    assert responses["200"]["content"]["application/json"]["schema"] == {
        "type": "object",
        "additionalProperties": {"type": "integer"},
    }


def test_operation_ids_tags_summaries_and_descriptions(doc: dict[str, Any]) -> None:
    ids = [op["operationId"] for ops in doc["paths"].values() for op in ops.values()]
    assert len(ids) == len(set(ids))
    listed = operation(doc, "get", "/api/items")
    assert listed["operationId"] == "Items.list_items"
    assert listed["tags"] == ["Items"]
    assert listed["description"] == "All items.\n\nA page at a time."
    by_code = operation(doc, "get", "/api/items/{code}/code")
    assert (by_code["operationId"], by_code["summary"], by_code["tags"]) == (
        "itemByCode",
        "By code",
        ["codes"],
    )
    twice = {operation(doc, "get", p)["operationId"] for p in ("/other/again", "/other/twice")}
    assert twice == {"Other.twice", "Other.twice_2"}


def test_components_hold_the_models(doc: dict[str, Any]) -> None:
    schemas = doc["components"]["schemas"]
    assert list(schemas) == sorted(schemas)
    assert {"Error", "NewItem", "Upload"} <= set(schemas)
    assert schemas["NewItem"]["properties"]["name"]["maxLength"] == 50


def test_generation_is_deterministic() -> None:
    first, second = generate_openapi(fixture_app()), generate_openapi(fixture_app())
    assert first == second
    assert json.dumps(first) == json.dumps(second)
    example = create_app()
    assert json.dumps(example.openapi()) == json.dumps(create_app().openapi())


async def test_the_application_serves_the_document() -> None:
    app = fixture_app()
    async with client(app) as http:
        response = await http.get("/openapi.json")
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/json"
    assert response.json() == app.openapi()


# -- the example application -------------------------------------------------------------------


@pytest.fixture(scope="module")
def example() -> dict[str, Any]:
    return create_app().openapi()


def test_example_document_is_valid_openapi_3_1(example: dict[str, Any]) -> None:
    validate(example)
    assert example["info"] == {"title": "webrest example", "version": "1.0.0"}


def test_example_paths(example: dict[str, Any]) -> None:
    assert {path: sorted(operations) for path, operations in example["paths"].items()} == {
        "/monitoring/events": ["get"],
        "/monitoring/metrics": ["get"],
        "/monitoring/status": ["get"],
        "/users": ["get", "post"],
        "/users/@{handle}": ["get"],
        "/users/count": ["get"],
        "/users/{filter}/authors": ["get"],
        "/users/{id}": ["delete", "get", "patch", "put"],
        "/users/{id}/avatar": ["get", "put"],
        "/users/{id}/avatar/alt": ["put"],
        "/users/{id}/avatar/info": ["get"],
        "/users/{id}/avatar/raw": ["put"],
    }


def test_example_parameters(example: dict[str, Any]) -> None:
    listed = parameters(example, "get", "/users")
    assert listed["roles"]["schema"]["items"] == {
        "enum": ["author", "editor", "admin"],
        "type": "string",
    }
    assert (listed["ids"]["style"], listed["ids"]["explode"]) == ("form", False)
    assert listed["per_page"]["schema"] == {
        "default": 20,
        "type": "integer",
        "maximum": 100,
        "minimum": 1,
    }
    handle = parameters(example, "get", "/users/@{handle}")["handle"]
    assert handle["schema"] == {"type": "string", "pattern": "^(?:[a-z]+)$"}
    header = parameters(example, "get", "/users/{id}")["If-None-Match"]
    assert (header["in"], header["required"]) == ("header", False)


def test_example_request_bodies(example: dict[str, Any]) -> None:
    create = operation(example, "post", "/users")["requestBody"]
    assert set(create["content"]) == {
        "application/json",
        "application/x-www-form-urlencoded",
        "multipart/form-data",
    }
    new_user = example["components"]["schemas"]["NewUser"]
    assert new_user["additionalProperties"] is False
    assert new_user["properties"]["name"] == {
        "maxLength": 100,
        "minLength": 1,
        "title": "Name",
        "type": "string",
    }
    alt = operation(example, "put", "/users/{id}/avatar/alt")["requestBody"]["content"]
    assert alt["text/plain"]["schema"] == {"maxLength": 200, "minLength": 1, "type": "string"}
    upload = operation(example, "put", "/users/{id}/avatar")["requestBody"]["content"]
    assert upload["multipart/form-data"]["schema"] == {"$ref": "#/components/schemas/AvatarUpload"}


def test_example_responses(example: dict[str, Any]) -> None:
    find = operation(example, "get", "/users/{id}")["responses"]
    assert list(find) == ["200", "304", "400", "404", "405", "406", "500"]
    assert find["200"]["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/User"
    }
    assert find["404"]["content"]["application/json"]["schema"] == ERROR_REF
    assert list(operation(example, "post", "/users")["responses"]) == [
        "201",
        "400",
        "405",
        "406",
        "409",
        "413",
        "415",
        "500",
    ]
    download = operation(example, "get", "/users/{id}/avatar")["responses"]
    assert download["200"]["content"] == {"image/png": {}}
    metrics = operation(example, "get", "/monitoring/metrics")["responses"]["200"]["content"]
    assert set(metrics) == {"application/json", "text/csv"}
