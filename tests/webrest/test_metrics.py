"""webrest.metrics over a real uvicorn server: the Prometheus endpoint, per-operation counters
by status class, the latency histogram, requests in flight, path templates, the off switch and
the separate port."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Awaitable, Iterator

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.webrest.support import serve
from webrest import (
    Application,
    FilterChain,
    Get,
    HttpError,
    Post,
    Request,
    Resource,
    Response,
    RestApi,
)
from webrest.metrics import RequestMetrics

JSON = {"content-type": "application/json"}
Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


@Resource("/items")
class Items:
    def __init__(self) -> None:
        self.release = threading.Event()

    @Get("/{id:[0-9]+}", operation_id="get_item")
    def find(self, id: int) -> dict[str, int]:
        if id == 0:
            raise HttpError(404, "No such item")
        return {"id": id}

    @Get("/broken")
    def broken(self) -> dict[str, int]:
        raise RuntimeError("boom")

    @Post("/", status=201, operation_id="create_item")
    def create(self, name: str) -> Response:
        return Response.created("/items/{id}", 1).entity({"name": name})

    @Get("/slow")
    async def slow(self) -> dict[str, bool]:
        return {"done": await asyncio.to_thread(self.release.wait, 10)}

    @Get("/stream")
    def stream(self) -> Response:
        async def chunks() -> AsyncIterator[bytes]:
            for _ in range(3):
                await asyncio.sleep(0.05)
                yield b"chunk\n"

        return Response.ok().type("text/plain").stream(chunks())


def refuse_secret(request: Request, chain: FilterChain) -> Awaitable[Response] | Response:
    """A filter answering before routing, as an authentication filter does."""
    if request.header(b"x-secret") == "no":
        return Response.error(401, "Authentication required")
    return chain.proceed(request)


def build(**options: object) -> tuple[Application, RequestMetrics, Items]:
    items = Items()
    app = Application({"/": RestApi(items)}, filters=[refuse_secret])
    metrics = RequestMetrics(**options)  # type: ignore[arg-type]
    app.instrument(metrics)
    return app, metrics, items


def scrape(url: str) -> Samples:
    response = httpx.get(url)
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/plain")
    samples: Samples = {}
    for family in text_string_to_metric_families(response.text):
        for sample in family.samples:
            samples[(sample.name, frozenset(sample.labels.items()))] = sample.value
    return samples


def value(samples: Samples, name: str, **labels: str) -> float:
    return samples.get((name, frozenset(labels.items())), 0.0)


def total(samples: Samples, name: str, **labels: str) -> float:
    """The sum over every series of ``name`` whose labels include ``labels``."""
    wanted = set(labels.items())
    return sum(v for (n, found), v in samples.items() if n == name and wanted <= found)


@pytest.fixture
def served() -> Iterator[tuple[str, RequestMetrics, Items]]:
    app, metrics, items = build()
    with serve(app) as server:
        yield server.url, metrics, items


def test_counters_move_by_status_class_and_operation(
    served: tuple[str, RequestMetrics, Items],
) -> None:
    url, _, _ = served
    before = scrape(url + "/metrics")
    with httpx.Client(base_url=url) as http:
        assert http.get("/items/1").status_code == 200
        assert http.get("/items/2").status_code == 200
        assert http.get("/items/0").status_code == 404
        assert http.get("/items/abc").status_code == 404  # no route
        assert http.get("/items/broken").status_code == 500
        assert http.post("/items", json={"name": "x"}).status_code == 201
        assert http.post("/items", content=b"{", headers=JSON).status_code == 400
        assert http.get("/items/3", headers={"x-secret": "no"}).status_code == 401
    after = scrape(url + "/metrics")

    def moved(operation: str, route: str, method: str, status: str) -> float:
        labels = {"operation": operation, "route": route, "method": method, "status": status}
        return value(after, "http_requests_total", **labels) - value(
            before, "http_requests_total", **labels
        )

    # two ids, one series: the route template, never the raw path
    assert moved("get_item", "/items/{id}", "GET", "2xx") == 2
    assert moved("get_item", "/items/{id}", "GET", "4xx") == 2  # the 404 and the filter's 401
    assert moved("broken", "/items/broken", "GET", "5xx") == 1
    assert moved("create_item", "/items", "POST", "2xx") == 1
    assert moved("create_item", "/items", "POST", "4xx") == 1
    assert moved("unmatched", "unmatched", "GET", "4xx") == 1
    assert not [
        labels for (name, labels) in after if name == "http_requests_total" and
        any(k == "route" and ("/items/1" in v or "/items/2" in v) for k, v in labels)
    ]  # fmt: skip
    # the histogram counts what the counter counts, per operation
    for operation in ("get_item", "create_item", "broken", "unmatched"):
        counted = total(after, "http_requests_total", operation=operation)
        assert total(after, "http_request_duration_seconds_count", operation=operation) == counted
        assert (
            total(after, "http_request_duration_seconds_bucket", operation=operation, le="+Inf")
            == counted
        )
    # the metrics endpoint itself is not counted
    assert not total(after, "http_requests_total", route="/metrics")
    assert total(after, "http_requests_total") == 8


def test_requests_in_flight_go_back_to_zero(served: tuple[str, RequestMetrics, Items]) -> None:
    url, _, items = served
    labels = {"operation": "slow", "route": "/items/slow", "method": "GET"}
    assert value(scrape(url + "/metrics"), "http_requests_in_progress", **labels) == 0
    with httpx.Client(base_url=url, timeout=10) as http:
        results: list[int] = []
        callers = [
            threading.Thread(target=lambda: results.append(http.get("/items/slow").status_code))
            for _ in range(3)
        ]
        for caller in callers:
            caller.start()
        for _ in range(500):  # until the three are in the method
            if value(scrape(url + "/metrics"), "http_requests_in_progress", **labels) == 3:
                break
        assert value(scrape(url + "/metrics"), "http_requests_in_progress", **labels) == 3
        items.release.set()
        for caller in callers:
            caller.join(10)
    assert results == [200, 200, 200]
    samples = scrape(url + "/metrics")
    assert value(samples, "http_requests_in_progress", **labels) == 0
    assert total(samples, "http_requests_in_progress") == 0


def test_a_stream_is_timed_to_its_last_chunk(served: tuple[str, RequestMetrics, Items]) -> None:
    url, _, _ = served
    assert httpx.get(url + "/items/stream").text == "chunk\n" * 3
    samples = scrape(url + "/metrics")
    labels = {"operation": "stream", "route": "/items/stream", "method": "GET"}
    assert value(samples, "http_request_duration_seconds_count", **labels) == 1
    # three chunks 50 ms apart: none of it in the buckets below 0.1 s
    assert value(samples, "http_request_duration_seconds_bucket", le="0.1", **labels) == 0
    assert value(samples, "http_request_duration_seconds_sum", **labels) >= 0.15


def test_openapi_and_methods_are_bounded_labels(served: tuple[str, RequestMetrics, Items]) -> None:
    url, _, _ = served
    with httpx.Client(base_url=url) as http:
        assert http.get("/openapi.json").status_code == 200
        assert http.request("PROPFIND", "/items/1").status_code == 405
        assert http.request("OPTIONS", "/items/1").status_code == 204
        assert http.head("/items/1").status_code == 200
    samples = scrape(url + "/metrics")
    assert (
        value(
            samples,
            "http_requests_total",
            operation="openapi",
            route="/openapi.json",
            method="GET",
            status="2xx",
        )
        == 1
    )
    assert total(samples, "http_requests_total", method="OTHER", status="4xx") == 1
    assert total(samples, "http_requests_total", method="PROPFIND") == 0
    assert total(samples, "http_requests_total", operation="unmatched", method="OPTIONS") == 1
    head = {"operation": "get_item", "route": "/items/{id}", "method": "HEAD", "status": "2xx"}
    assert value(samples, "http_requests_total", **head) == 1


def test_metrics_off_is_a_404() -> None:
    app = Application({"/": RestApi(Items())})
    with serve(app) as server:
        assert httpx.get(server.url + "/metrics").status_code == 404


def test_a_separate_port() -> None:
    app, metrics, _ = build(path=None, namespace="svc")
    exposed = metrics.serve("127.0.0.1", 0)
    try:
        with serve(app) as server:
            assert httpx.get(server.url + "/metrics").status_code == 404  # not on the API port
            assert httpx.get(server.url + "/items/7").status_code == 200
            samples = scrape(f"http://127.0.0.1:{exposed.port}/metrics")
    finally:
        exposed.close()
    labels = {"operation": "get_item", "route": "/items/{id}", "method": "GET"}
    assert value(samples, "svc_http_requests_total", status="2xx", **labels) == 1
    assert value(samples, "svc_http_requests_total", status="4xx", operation="unmatched",
                 route="unmatched", method="GET") == 1  # fmt: skip
    assert value(samples, "svc_http_request_duration_seconds_count", **labels) == 1


def test_two_applications_keep_their_own_series() -> None:
    first, first_metrics, _ = build()
    second, second_metrics, _ = build()
    assert first_metrics.registry is not second_metrics.registry
    with serve(first) as one, serve(second) as two:
        httpx.get(one.url + "/items/1")
        assert total(scrape(one.url + "/metrics"), "http_requests_total") == 1
        assert total(scrape(two.url + "/metrics"), "http_requests_total") == 0


def test_routes_under_an_api_base_keep_the_base() -> None:
    app = Application({"/api": RestApi(Items(), base="/api")})
    app.instrument(RequestMetrics())
    with serve(app) as server:
        assert httpx.get(server.url + "/api/items/5").status_code == 200
        samples = scrape(server.url + "/metrics")
    labels = {"operation": "get_item", "route": "/api/items/{id}", "method": "GET"}
    assert value(samples, "http_requests_total", status="2xx", **labels) == 1


def test_hostile_paths_and_methods_add_no_series(served: tuple[str, RequestMetrics, Items]) -> None:
    url, _, _ = served
    with httpx.Client(base_url=url) as http:
        for number in range(40):
            http.get(f"/items/{number}")
            http.get(f"/nowhere/{number}/%00%ff")
            http.request(("PROPFIND", "TRACE", "MKCOL", "LOCK")[number % 4], f"/x{number}")
    series = {
        labels for (name, labels) in scrape(url + "/metrics") if name == "http_requests_total"
    }
    assert len(series) <= 4  # get_item 2xx and 4xx (id 0), unmatched GET 4xx, unmatched OTHER
