"""Paging: ``Paging``, ``Pagination``, ``PageParameters`` and ``LinkHeader`` (upstream's
``PagingTest``, ``PaginationTest`` and ``PageParametersTest``, plus first/last links, bounds and
validation)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from webrest import (
    BadRequest,
    Get,
    LinkHeader,
    PageParameters,
    Pagination,
    Paging,
    Request,
    Resource,
    Response,
)
from webrest.paging import Behavior

from .support import client, mount

SIZE = 5


def request_for(
    target: str = "/",
    *,
    host: str | None = "localhost",
    scheme: str = "http",
    raw_query: bytes | None = None,
) -> Request:
    path, _, query = target.partition("?")
    headers = [(b"host", host.encode())] if host is not None else []
    scope: dict[str, Any] = {
        "type": "http",
        "method": "GET",
        "scheme": scheme,
        "path": path,
        "raw_path": path.encode(),
        "root_path": "",
        "query_string": query.encode() if raw_query is None else raw_query,
        "headers": headers,
        "server": ("localhost", 80),
    }

    async def receive() -> dict[str, Any]:
        return {"type": "http.disconnect"}

    async def send(message: Any) -> None:
        raise AssertionError("not sent")

    return Request(scope, receive, send)


def pagination(target: str = "/", size: int = SIZE, max_size: int = 100) -> Pagination:
    return Paging(size, [PageParameters("page", "per_page")], max_size=max_size).on(
        request_for(target)
    )


def link(response: Response) -> str | None:
    return response.headers.get("Link")


# -- offsets and limits -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("query", "start"),
    [
        ("", 0),
        ("?page=1", 0),
        ("?page=2", SIZE),
        ("?page=1&per_page=10", 0),
        ("?page=2&per_page=10", 10),
    ],
)
def test_start(query: str, start: int) -> None:
    assert pagination("/" + query).start() == start


@pytest.mark.parametrize(
    ("query", "end"),
    [("", SIZE), ("?page=1", SIZE), ("?page=1&per_page=10", 10), ("?page=2&per_page=10", 20)],
)
def test_end(query: str, end: int) -> None:
    assert pagination("/" + query).end() == end


def test_limit_defaults_to_size() -> None:
    assert pagination().limit() == SIZE


def test_limit_explicitly_given() -> None:
    assert pagination("/?per_page=10").limit() == 10


def test_limit_is_capped_at_max_size() -> None:
    paged = pagination("/?per_page=1000&page=3", max_size=50)
    assert (paged.limit(), paged.start(), paged.end()) == (50, 100, 150)


def test_the_last_value_of_a_repeated_parameter_applies() -> None:
    assert pagination("/?page=1&page=3").start() == 2 * SIZE


@pytest.mark.parametrize("name", ["page", "per_page"])
@pytest.mark.parametrize(
    ("value", "kind"),
    [
        ("0", "greater_than_equal"),
        ("00", "greater_than_equal"),
        ("-1", "int_parsing"),
        ("x", "int_parsing"),
        ("1.5", "int_parsing"),
        ("", "int_parsing"),
        ("+1", "int_parsing"),
        ("%201", "int_parsing"),
        ("1_0", "int_parsing"),
        ("%D9%A1", "int_parsing"),  # ARABIC-INDIC DIGIT ONE: int() would take it
        ("9" * 19, "int_parsing"),
    ],
)
def test_invalid_parameters_are_bad_requests(name: str, value: str, kind: str) -> None:
    with pytest.raises(BadRequest) as raised:
        pagination(f"/?{name}={value}")
    error = raised.value
    assert error.status == 400
    assert error.message.startswith(f"Invalid argument {name} (query): ")
    [detail] = error.details
    assert (detail.loc, detail.type) == (("query", name), kind)


def test_leading_zeros_are_accepted() -> None:
    assert pagination("/?page=02&per_page=007").start() == 7


# -- paginate: the elements ---------------------------------------------------------------------


def entity(response: Response) -> object:
    assert response.has_entity
    return response.entity_value


def test_paginate_on_empty() -> None:
    response = pagination().paginate([])
    assert entity(response) == []
    assert link(response) is None
    assert response.status_code == 200


@pytest.mark.parametrize(
    "items", [[1, 2, 3], (1, 2, 3), range(1, 4), iter([1, 2, 3]), (n for n in (1, 2, 3))]
)
def test_paginate_on(items: Any) -> None:
    assert entity(pagination().paginate(items)) == [1, 2, 3]


@pytest.mark.parametrize("by", [1, 2, SIZE])
def test_paginate_removes_excess_elements_from_a_list(by: int) -> None:
    assert entity(pagination().paginate(["element"] * (SIZE + by))) == ["element"] * SIZE


@pytest.mark.parametrize("by", [1, 2, SIZE])
def test_paginate_removes_excess_elements_from_a_generator(by: int) -> None:
    generator = ("element" for _ in range(SIZE + by))
    assert entity(pagination().paginate(generator)) == ["element"] * SIZE


def test_paginate_reads_at_most_one_element_beyond_the_page_and_closes_the_source() -> None:
    read: list[int] = []
    closed: list[bool] = []

    def rows() -> Iterator[int]:
        try:
            for number in range(1_000):
                read.append(number)
                yield number
        finally:
            closed.append(True)

    response = pagination().paginate(rows())
    assert entity(response) == [0, 1, 2, 3, 4]
    assert read == [0, 1, 2, 3, 4, 5]
    assert closed == [True]
    assert link(response) == '<http://localhost/?page=2>; rel="next"'


def test_paginate_with_a_status_or_a_response() -> None:
    partial = pagination().paginate([1], 206)
    assert (partial.status_code, entity(partial)) == (206, [1])
    given = Response.ok().header("X-Total", "1")
    assert pagination().paginate([1], given) is given
    assert (given.headers["X-Total"], entity(given)) == ("1", [1])


# -- paginate: the Link header ------------------------------------------------------------------


def test_no_link_header_if_elements_exactly_fill_the_page() -> None:
    assert link(pagination().paginate(["element"] * SIZE)) is None


def test_no_link_header_if_a_generator_exactly_fills_the_page() -> None:
    assert link(pagination().paginate("element" for _ in range(SIZE))) is None


def test_link_to_the_next_page_if_elements_exceed_the_page() -> None:
    response = pagination().paginate(["element"] * (SIZE + 1))
    assert link(response) == '<http://localhost/?page=2>; rel="next"'


def test_links_to_the_first_and_previous_pages() -> None:
    response = pagination("/?page=2").paginate([1, 2, 3])
    assert link(response) == (
        '<http://localhost/?page=1>; rel="first", <http://localhost/?page=1>; rel="prev"'
    )


def test_links_to_the_first_previous_and_next_pages() -> None:
    response = pagination("/?page=3").paginate(["element"] * (SIZE + 1))
    assert link(response) == (
        '<http://localhost/?page=1>; rel="first", <http://localhost/?page=2>; rel="prev",'
        ' <http://localhost/?page=4>; rel="next"'
    )


def test_a_known_total_links_the_last_page() -> None:
    response = pagination("/?page=2").paginate(["element"] * SIZE, total=23)
    assert link(response) == (
        '<http://localhost/?page=1>; rel="first", <http://localhost/?page=1>; rel="prev",'
        ' <http://localhost/?page=3>; rel="next", <http://localhost/?page=5>; rel="last"'
    )


def test_the_total_tells_that_a_next_page_exists() -> None:
    response = pagination().paginate(["element"] * SIZE, total=SIZE + 1)
    assert link(response) == (
        '<http://localhost/?page=2>; rel="next", <http://localhost/?page=2>; rel="last"'
    )


@pytest.mark.parametrize("total", [0, 1, SIZE])
def test_no_link_header_when_the_total_fits_on_the_first_page(total: int) -> None:
    assert link(pagination().paginate(["element"] * total, total=total)) is None


def test_no_next_and_last_links_on_the_last_page() -> None:
    response = pagination("/?page=3").paginate(["element"] * 3, total=2 * SIZE + 3)
    assert link(response) == (
        '<http://localhost/?page=1>; rel="first", <http://localhost/?page=2>; rel="prev"'
    )


def test_beyond_the_last_page_prev_links_the_last_page() -> None:
    response = pagination("/?page=9").paginate([], total=2 * SIZE + 3)
    assert link(response) == (
        '<http://localhost/?page=1>; rel="first", <http://localhost/?page=3>; rel="prev"'
    )


def test_links_keep_the_other_parameters_as_sent() -> None:
    paged = pagination("/users?ids=1&roles=a%2Cb&page=2&ids=2&q=x+y&flag&empty=")
    response = paged.paginate(["element"] * (SIZE + 1))
    base = "http://localhost/users?ids=1&roles=a%2Cb&page={}&ids=2&q=x+y&flag&empty="
    assert link(response) == (
        f'<{base.format(1)}>; rel="first", <{base.format(1)}>; rel="prev",'
        f' <{base.format(3)}>; rel="next"'
    )


def test_links_set_a_repeated_page_parameter_once() -> None:
    response = pagination("/?page=1&x=1&page=2").paginate([1])
    assert link(response) == (
        '<http://localhost/?page=1&x=1>; rel="first", <http://localhost/?page=1&x=1>; rel="prev"'
    )


def test_links_carry_the_capped_page_size_when_the_request_gave_one() -> None:
    response = pagination("/?per_page=500", size=2, max_size=2).paginate([1, 2, 3])
    assert link(response) == '<http://localhost/?per_page=2&page=2>; rel="next"'


def test_links_escape_what_a_header_cannot_carry() -> None:
    query = 'q=<"é">&raw='.encode() + b"\xe9"  # a byte that is not UTF-8, as sent
    paged = Paging(1).on(request_for("/a b/ü", raw_query=query))
    assert paged.paginate([1, 2]).headers["Link"] == (
        '<http://localhost/a%20b/%C3%BC?q=%3C%22%C3%A9%22%3E&raw=%E9&page=2>; rel="next"'
    )


def test_links_are_absolute_uris_of_the_request() -> None:
    secure = Paging(1).on(request_for("/users?page=1", host="api.example.com:8443", scheme="https"))
    assert secure.paginate([1, 2]).headers["Link"] == (
        '<https://api.example.com:8443/users?page=2>; rel="next"'
    )
    no_host = Paging(1).on(request_for("/users", host=None))
    assert no_host.paginate([1, 2]).headers["Link"] == '<http://localhost/users?page=2>; rel="next"'


def test_custom_parameter_names() -> None:
    paged = Paging(2, [PageParameters("p", "size")]).on(request_for("/?p=2&size=1&page=7"))
    assert (paged.start(), paged.limit()) == (1, 1)
    assert paged.paginate([1, 2]).headers["Link"] == (
        '<http://localhost/?p=1&size=1&page=7>; rel="first",'
        ' <http://localhost/?p=1&size=1&page=7>; rel="prev",'
        ' <http://localhost/?p=3&size=1&page=7>; rel="next"'
    )


# -- Paging and behaviours -----------------------------------------------------------------------


class Offsets:
    """A behaviour of the test's own: ``?offset=10&limit=5``, only when ``offset`` is given."""

    def paginates(self, request: Request) -> bool:
        return "offset" in request.query_params

    def limit(self, request: Request, size: int) -> int:
        return int(request.query_params.get("limit", size))

    def start(self, request: Request, limit: int) -> int:
        return int(request.query_params["offset"])

    def links(
        self, request: Request, start: int, limit: int, more: bool, total: int | None
    ) -> LinkHeader:
        return LinkHeader({"next": f"/?offset={start + limit}" if more else None})


def test_the_first_behavior_that_applies_is_used() -> None:
    behaviors: list[Behavior] = [Offsets(), PageParameters()]
    paging = Paging(10, behaviors)
    by_offset = paging.on(request_for("/?offset=3&limit=4"))
    assert (by_offset.start(), by_offset.end(), by_offset.limit()) == (3, 7, 4)
    assert by_offset.paginate(range(10)).headers["Link"] == '</?offset=7>; rel="next"'
    by_page = paging.on(request_for("/?page=2"))
    assert (by_page.start(), by_page.limit()) == (10, 10)


def test_no_behavior_applies() -> None:
    with pytest.raises(LookupError, match="No paging behavior applies"):
        Paging(10, [Offsets()]).on(request_for("/"))


def test_the_default_behavior_is_page_parameters() -> None:
    paged = Paging().on(request_for("/?page=2&per_page=30"))
    assert (paged.start(), paged.limit()) == (30, 30)
    assert Paging().on(request_for("/")).limit() == 20
    assert Paging().on(request_for("/?per_page=1000")).limit() == 100


@pytest.mark.parametrize(("size", "max_size"), [(0, 10), (11, 10), (-1, 10)])
def test_invalid_sizes(size: int, max_size: int) -> None:
    with pytest.raises(ValueError, match="page size"):
        Paging(size, max_size=max_size)


def test_link_header() -> None:
    header = LinkHeader({"prev": "http://x/?page=1", "next": None, "last": "http://x/?page=3"})
    assert header
    assert str(header) == '<http://x/?page=1>; rel="prev", <http://x/?page=3>; rel="last"'
    assert header == LinkHeader({"prev": "http://x/?page=1", "last": "http://x/?page=3"})
    assert hash(header) == hash(LinkHeader(header.links))
    assert not LinkHeader({"next": None})
    assert repr(LinkHeader({"next": "/n"})) == "LinkHeader({'next': '/n'})"


# -- in a resource -------------------------------------------------------------------------------

NUMBERS = list(range(1, 24))


@Resource("/numbers")
class Numbers:
    paging = Paging(5, max_size=10)

    @Get("/")
    def list_numbers(self, request: Request) -> Response:
        pagination = self.paging.on(request)
        selected = NUMBERS[pagination.start() : pagination.end() + 1]
        return pagination.paginate(selected, total=len(NUMBERS))

    @Get("/stream")
    async def stream(self, request: Request) -> Response:
        pagination = self.paging.on(request)
        return pagination.paginate(iter(NUMBERS[pagination.start() :]))


async def test_a_resource_answers_pages_with_links() -> None:
    async with client(mount(Numbers())) as http:
        first = await http.get("/numbers")
        middle = await http.get("/numbers", params={"page": 2, "per_page": 10, "x": "y"})
        last = await http.get("/numbers?page=5")
        streamed = await http.get("/numbers/stream?page=5")
    assert (first.status_code, first.json()) == (200, [1, 2, 3, 4, 5])
    assert first.headers["link"] == (
        '<http://test/numbers?page=2>; rel="next", <http://test/numbers?page=5>; rel="last"'
    )
    assert middle.json() == list(range(11, 21))
    assert middle.links["next"]["url"] == "http://test/numbers?page=3&per_page=10&x=y"
    assert middle.links["last"]["url"] == "http://test/numbers?page=3&per_page=10&x=y"
    assert middle.links["prev"]["url"] == "http://test/numbers?page=1&per_page=10&x=y"
    assert last.json() == [21, 22, 23]
    assert set(last.links) == {"first", "prev"}
    assert streamed.json() == [21, 22, 23]
    assert set(streamed.links) == {"first", "prev"}


@pytest.mark.parametrize("query", ["page=0", "per_page=x", "page=1&per_page=-5"])
async def test_a_resource_answers_bad_requests_for_invalid_pages(query: str) -> None:
    async with client(mount(Numbers())) as http:
        response = await http.get(f"/numbers?{query}")
    assert response.status_code == 400
    assert response.json()["message"].startswith("Invalid argument ")
