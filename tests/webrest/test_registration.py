"""Declarations that could not work are refused when they are made or the API is built,
with a ``RegistrationError`` naming the class, the method and the reason, never at request
time as a 500 (issue 22)."""

from __future__ import annotations

import functools
from collections.abc import AsyncIterator, Callable
from typing import Annotated, Any, Optional

import pytest

from webrest import (
    Application,
    Get,
    Head,
    Header,
    Invocation,
    Multipart,
    Param,
    Post,
    Put,
    Request,
    Resource,
    Response,
    RestApi,
    SeparatedBy,
    Stream,
)
from webrest.errors import RegistrationError
from webrest.interception import FilterChain, check_filter, check_interceptor

from .support import client, mount


def test_registration_error_is_a_type_error_and_a_value_error() -> None:
    """What the checks it replaces raised, so code catching either keeps working."""
    assert issubclass(RegistrationError, TypeError)
    assert issubclass(RegistrationError, ValueError)


# -- path templates ----------------------------------------------------------------------------


def test_placeholder_without_parameter() -> None:
    class Users:
        @Get("/users/{usr_id}")
        def find(self, user_id: int) -> None: ...

    with pytest.raises(RegistrationError, match=r"Users\.find: path placeholder \{usr_id\}"):
        RestApi(Users())


def test_placeholder_bound_from_another_source() -> None:
    class Users:
        @Get("/users/{id}")
        def find(self, id: Annotated[str, Param("other")]) -> None: ...

    with pytest.raises(RegistrationError, match=r"Users\.find: path placeholder \{id\}"):
        RestApi(Users())


def test_placeholder_of_the_resource_prefix_needs_a_parameter_too() -> None:
    @Resource("/tenants/{tenant}")
    class Tenants:
        @Get("/health")
        def health(self) -> None: ...

    with pytest.raises(RegistrationError, match=r"Tenants\.health: path placeholder \{tenant\}"):
        RestApi(Tenants())


async def test_underscore_placeholder_only_matches() -> None:
    class Versions:
        @Get("/{_version:v[0-9]+}/status")
        def status(self) -> str:
            return "up"

    async with client(mount(Versions())) as http:
        assert (await http.get("/v2/status")).json() == "up"
        assert (await http.get("/x/status")).status_code == 404


async def test_placeholder_bound_by_an_aliased_param() -> None:
    class Documents:
        @Get("/documents/{document_id}")
        def find(self, ident: Annotated[str, Param("document_id")]) -> str:
            return ident

    async with client(mount(Documents())) as http:
        assert (await http.get("/documents/a1")).json() == "a1"


@pytest.mark.parametrize(
    ("template", "reason"),
    [
        ("/{id:[0-9}", "Invalid regex"),
        ("/{id:(?i)[a-z]+}", "Invalid regex"),  # compiles alone, not inside the route's pattern
        ("/{id:(?P<other>x)}/{other}", "Invalid regex"),  # the same group name twice
        ("/{id:}", "Empty regex"),
        ("/{id", "Unbalanced"),
        ("/{1d}", "Invalid parameter name"),
    ],
)
def test_malformed_template(template: str, reason: str) -> None:
    class Bad:
        @Get(template)
        def method(self, id: str, other: str = "") -> None: ...

    with pytest.raises(RegistrationError, match=rf"Bad\.method: {reason}"):
        RestApi(Bad())


def test_duplicate_route_names_both_methods() -> None:
    class One:
        @Post("/x")
        def a(self) -> None: ...

    class Two:
        @Post("/x/")
        def b(self) -> None: ...

    with pytest.raises(RegistrationError, match=r"Two\.b: Route POST /x is declared twice") as e:
        RestApi(One(), Two())
    assert "One.a" in str(e.value)


def test_the_same_resource_twice_is_a_duplicate() -> None:
    class Users:
        @Get("/users")
        def all(self) -> None: ...

    with pytest.raises(RegistrationError, match="declared twice"):
        RestApi(Users(), Users())


async def test_base_without_leading_slash() -> None:
    class Users:
        @Get("/users")
        def all(self) -> list[str]:
            return ["a"]

    async with client(Application({"/": RestApi(Users(), base="api/1.0")})) as http:
        assert (await http.get("/api/1.0/users")).json() == ["a"]


# -- the decorated thing ------------------------------------------------------------------------


def test_route_decorator_without_parentheses() -> None:
    with pytest.raises(RegistrationError, match=r"Users\.find: write @Get\(\) or @Get\('/path'\)"):

        class Users:
            @Get  # type: ignore[arg-type]
            def find(self) -> None: ...


def test_resource_decorator_without_parentheses() -> None:
    with pytest.raises(RegistrationError, match=r"Users: write @Resource\(\)"):

        @Resource  # type: ignore[arg-type]
        class Users: ...


def test_route_on_a_property_below_it() -> None:
    class Users:
        @property
        @Get("/me")
        def me(self) -> str:
            return "me"

    with pytest.raises(RegistrationError, match=r"Users\.me: a route is a method, not a property"):
        RestApi(Users())


def test_route_on_a_property_above_it() -> None:
    with pytest.raises(RegistrationError, match=r"Users\.me: @Get applies to a method, not to a"):

        class Users:
            @Get("/me")  # type: ignore[prop-decorator]
            @property
            def me(self) -> str:
                return "me"


def test_route_on_a_cached_property() -> None:
    class Users:
        @functools.cached_property
        @Get("/me")
        def me(self) -> str:
            return "me"

    with pytest.raises(RegistrationError, match=r"Users\.me: a route is a method, not a property"):
        RestApi(Users())


async def test_routes_on_static_and_class_methods_in_either_order() -> None:
    """The route is found whichever decorator comes first (it used to vanish when the route
    decorator was the outer one)."""

    class Tools:
        @Get("/static-outer")
        @staticmethod
        def static_outer(n: int) -> int:
            return n

        @staticmethod
        @Get("/static-inner")
        def static_inner(n: int) -> int:
            return n + 1

        @Get("/class-outer")
        @classmethod
        def class_outer(cls, n: int) -> str:
            return f"{cls.__name__}{n}"

        @classmethod
        @Get("/class-inner")
        def class_inner(cls, n: int) -> str:
            return f"{cls.__name__}{n + 1}"

    async with client(mount(Tools())) as http:
        assert (await http.get("/static-outer?n=1")).json() == 1
        assert (await http.get("/static-inner?n=1")).json() == 2
        assert (await http.get("/class-outer?n=1")).json() == "Tools1"
        assert (await http.get("/class-inner?n=1")).json() == "Tools2"


def test_route_on_a_special_method() -> None:
    class Users:
        @Get("/")
        def __call__(self) -> None: ...

    with pytest.raises(RegistrationError, match=r"Users\.__call__: a special method cannot be"):
        RestApi(Users())


def test_resource_class_instead_of_an_instance() -> None:
    class Users:
        @Get("/")
        def all(self) -> None: ...

    with pytest.raises(RegistrationError, match=r"Users is a class: .* RestApi\(Users\(\)\)"):
        RestApi(Users)


def test_class_without_routes() -> None:
    class Nothing:
        def method(self) -> None: ...

    with pytest.raises(RegistrationError, match="Nothing declares no routes"):
        RestApi(Nothing())


# -- the method and its parameters ------------------------------------------------------------


def test_async_generator_method() -> None:
    class Events:
        @Get("/events")
        async def events(self) -> AsyncIterator[str]:
            yield "a"

    with pytest.raises(RegistrationError, match=r"Events\.events: an async generator cannot be"):
        RestApi(Events())


async def test_generator_method_is_written_as_a_list() -> None:
    """Upstream marshals a generator lazily: a sync generator method still works."""

    class Numbers:
        @Get("/numbers")
        def numbers(self) -> Any:
            yield from (1, 2)

    async with client(mount(Numbers())) as http:
        assert (await http.get("/numbers")).json() == [1, 2]


def test_positional_only_parameter() -> None:
    class Users:
        @Get("/users")
        def find(self, page: int, /) -> None: ...

    with pytest.raises(RegistrationError, match=r"Users\.find: parameter page is positional-only"):
        RestApi(Users())


def test_two_parameters_streaming_the_body() -> None:
    class Uploads:
        @Post("/uploads")
        def upload(self, raw: Annotated[AsyncIterator[bytes], Stream], form: Multipart) -> None: ...

    with pytest.raises(RegistrationError, match=r"Uploads\.upload: parameters raw, form all read"):
        RestApi(Uploads())


async def test_streamed_body_with_a_query_parameter() -> None:
    """A query parameter beside a streamed multipart body is read from the query string only:
    reading form fields first consumed the stream, and the upload failed with a 500."""

    class Uploads:
        @Put("/uploads")
        async def upload(
            self, form: Multipart, name: Annotated[str, Param] = "default"
        ) -> dict[str, object]:
            parts = [(part.name, await part.text()) async for part in form]
            return {"name": name, "parts": parts}

    async with client(mount(Uploads())) as http:
        response = await http.put(
            "/uploads?name=q", files={"f": ("a.txt", b"hello")}, data={"name": "field"}
        )
    assert response.status_code == 200
    assert response.json() == {"name": "q", "parts": [["name", "field"], ["f", "hello"]]}


def test_conversion_class_instead_of_an_instance() -> None:
    class Users:
        @Get("/users")
        def all(self, roles: Annotated[list[str], SeparatedBy] = []) -> None: ...  # noqa: B006

    with pytest.raises(RegistrationError, match=r"Users\.all: parameter roles: SeparatedBy is a"):
        RestApi(Users())


class Opaque:
    """Not convertible from a request value."""

    def __init__(self, value: str) -> None: ...


class HeaderOrNone:
    @Get("/traces")
    def all(self, value: Annotated[str, Header("X-Trace")] | None = None) -> None: ...


class OptionalHeader:
    @Get("/traces")
    def all(self, value: Optional[Annotated[str, Header]] = None) -> None: ...  # noqa: UP045


class ConversionOrNone:
    @Get("/traces")
    def all(self, value: Annotated[list[str], SeparatedBy(",")] | None = None) -> None: ...


@pytest.mark.parametrize("resource", [HeaderOrNone, OptionalHeader, ConversionOrNone])
def test_source_or_conversion_inside_a_union(resource: type) -> None:
    """``Annotated[str, Header] | None`` hides the marker: the header was silently read from
    the query string instead."""
    name = resource.__name__
    with pytest.raises(
        RegistrationError, match=rf"{name}\.all: parameter value: .* inside a union"
    ):
        RestApi(resource())


async def test_optional_inside_annotated_reads_the_source() -> None:
    class Traces:
        @Get("/traces")
        def all(self, trace: Annotated[str | None, Header("X-Trace")] = None) -> str | None:
            return trace

    async with client(mount(Traces())) as http:
        assert (await http.get("/traces", headers={"X-Trace": "abc"})).json() == "abc"
        assert (await http.get("/traces")).json() is None


def test_unconvertible_parameter_names_class_and_method() -> None:
    class Users:
        @Get("/users")
        def all(self, value: Opaque) -> None: ...

    with pytest.raises(RegistrationError, match=r"Users\.all\(value\): cannot convert"):
        RestApi(Users())


def test_unresolvable_annotation_keeps_its_name_error_with_a_note() -> None:
    class Users:
        @Get("/users")
        def all(self, value: Undefined) -> None: ...  # type: ignore[name-defined]  # noqa: F821

    with pytest.raises(NameError) as raised:
        RestApi(Users())
    assert any("Users.all" in note for note in raised.value.__notes__)


# -- decorator arguments -----------------------------------------------------------------------


def declare(**options: Any) -> Callable[[], object]:
    def build() -> object:
        class Users:
            @Get("/users", **options)
            def all(self) -> None: ...

        return Users

    return build


@pytest.mark.parametrize(
    ("options", "reason"),
    [
        ({"status": 700}, r"status=700 is not an HTTP status"),
        ({"status": 99}, r"status=99 is not an HTTP status"),
        ({"status": True}, r"status=True is not an HTTP status"),
        ({"status": "200"}, r"status='200' is not an HTTP status"),
        ({"responses": {"default": "x"}}, r"responses: 'default' is not an HTTP status"),
        ({"responses": {1000: "x"}}, r"responses: 1000 is not an HTTP status"),
        ({"produces": "application/json"}, r"produces is a list of strings, not one string"),
        ({"produces": ["json"]}, r"produces: 'json' is not a media type"),
        ({"produces": ["text/*"]}, r"produces: 'text/\*' is a range"),
        ({"produces": ["text/plain; charset=utf-8"]}, r"produces: .* has parameters"),
        ({"consumes": "application/json"}, r"consumes is a list of strings"),
        ({"consumes": ["*/*"]}, r"consumes: '\*/\*' is a range"),
        ({"consumes": ["application/ json"]}, r"consumes: .* is not a media type"),
        ({"tags": "users"}, r"tags is a list of strings, not one string"),
        ({"max_body_size": -1}, r"max_body_size=-1 is not a number of bytes"),
        ({"max_body_size": 1.5}, r"max_body_size=1.5 is not a number of bytes"),
        ({"operation_id": 5}, r"operation_id=5 is not a string"),
        ({"summary": ["x"]}, r"summary=\['x'\] is not a string"),
    ],
)
def test_decorator_argument_that_could_not_work(options: dict[str, Any], reason: str) -> None:
    with pytest.raises(RegistrationError, match=rf"Users\.all: @Get: {reason}"):
        declare(**options)()


def test_path_that_is_not_a_string() -> None:
    with pytest.raises(RegistrationError, match=r"Users\.all: @Head: the path is a string"):

        class Users:
            @Head(5)  # type: ignore[arg-type]
            def all(self) -> None: ...


async def test_media_types_are_normalized() -> None:
    class Users:
        @Post(
            "/users",
            produces=["Application/JSON"],
            consumes=["Application/JSON; charset=utf-8"],
        )
        def create(self, user: dict[str, str]) -> dict[str, str]:
            return user

    api = RestApi(Users())
    declaration = api.endpoints[0].declaration
    assert declaration.produces == ("application/json",)
    async with client(Application({"/": api})) as http:
        response = await http.post(
            "/users", json={"a": "b"}, headers={"accept": "application/json"}
        )
    assert response.json() == {"a": "b"}


def test_rest_api_options() -> None:
    class Users:
        @Get("/users")
        def all(self) -> None: ...

    with pytest.raises(RegistrationError, match=r"max_body_size=-5 is not a size"):
        RestApi(Users(), max_body_size=-5)
    with pytest.raises(RegistrationError, match=r"base is a path"):
        RestApi(Users(), base=None)  # type: ignore[arg-type]


# -- interceptors and filters ------------------------------------------------------------------


class Users:
    @Get("/users")
    def all(self) -> list[str]:
        return ["a"]


def test_interceptor_that_is_not_callable() -> None:
    with pytest.raises(RegistrationError, match=r"Interceptor 'cache' is not callable"):
        RestApi(Users()).intercepting("cache")  # type: ignore[arg-type]


def test_interceptor_with_the_wrong_parameters() -> None:
    async def timing(invocation: Invocation) -> object:
        return await invocation.proceed({})

    with pytest.raises(
        RegistrationError,
        match=r"Interceptor .*timing cannot be called with \(invocation, arguments\)",
    ):
        RestApi(Users()).intercepting(timing)  # type: ignore[arg-type]


def test_interceptor_checks_accept_callable_objects_and_defaults() -> None:
    class Timing:
        async def __call__(self, invocation: Invocation, arguments: dict[str, object]) -> object:
            return await invocation.proceed(arguments)

    def logging(invocation: Invocation, arguments: dict[str, object], level: int = 1) -> object:
        return invocation.proceed(arguments)

    timing = Timing()
    assert check_interceptor(timing) is timing
    assert check_interceptor(logging) is logging
    assert check_interceptor(print) is print  # callable, whatever it accepts


def test_filter_checks() -> None:
    def sync(request: Request, chain: FilterChain) -> object:
        return chain.proceed(request)

    assert check_filter(sync) is sync
    with pytest.raises(RegistrationError, match=r"Filter None is not callable"):
        check_filter(None)
    with pytest.raises(RegistrationError, match=r"Filter .*lonely cannot be called"):

        async def lonely(request: Request) -> Response:
            return Response.ok()

        check_filter(lonely)


def test_application_refuses_a_filter_that_cannot_be_called() -> None:
    with pytest.raises(TypeError):
        Application({}, filters=["not a filter"])  # type: ignore[list-item]
    with pytest.raises(TypeError):
        Application({}).install(42)  # type: ignore[arg-type]
