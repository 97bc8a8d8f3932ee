"""Request metrics in the Prometheus text format: per operation, a request counter by method
and status class, a latency histogram and the requests in flight.

::

    metrics = RequestMetrics()            # GET /metrics on the application's own port
    app.instrument(metrics)
    # or: RequestMetrics(path=None), then metrics.serve("0.0.0.0", 9100) on a port of its own

Series are labelled by ``operation`` (the route's ``operation_id``, else the method's name),
``route`` (its path template, ``/documents/{id}``: never the raw path, so the number of
series stays bounded) and ``method``. A request no route answers is ``operation="unmatched",
route="unmatched"``; the OpenAPI document and the docs page are ``openapi`` and ``docs``. A
request a filter answered before routing (a ``401``, a ``429``) counts for the operation its
path and method route to. The metrics endpoint itself is not counted.

Latency runs from the request's arrival to the end of its response body as handed to the
server, so a streamed response is timed to its last chunk. Each application gets its own
``CollectorRegistry`` (two applications in one process never share series).

``prometheus_client`` is imported when a :class:`RequestMetrics` is created, not with webrest:
without it, webrest works and only metrics fail, with an ``ImportError`` saying what to install.
"""

from __future__ import annotations

import importlib
from bisect import bisect_left
from collections.abc import Iterator
from dataclasses import dataclass
from itertools import accumulate
from time import perf_counter
from typing import TYPE_CHECKING, Any

from starlette.types import ASGIApp, Receive, Scope, Send

from webrest.application import relative_path
from webrest.response import Response

if TYPE_CHECKING:
    from prometheus_client import CollectorRegistry
    from prometheus_client.metrics_core import Metric

    from webrest.api import Endpoint
    from webrest.application import Application

__all__ = ["DEFAULT_BUCKETS", "MetricsServer", "RequestMetrics", "UNMATCHED"]

DEFAULT_BUCKETS: tuple[float, ...] = (
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0,
    120.0,
)  # fmt: skip
"""Latency buckets in seconds: from a cached lookup (1 ms) to a long generation (2 min)."""

UNMATCHED = "unmatched"
"""The ``operation`` and ``route`` of a request that no route answers (404, 405, ``OPTIONS``)."""

_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})
_STATUS_CLASSES = ("", "1xx", "2xx", "3xx", "4xx", "5xx")  # by status // 100
_LABELS = ("operation", "route", "method")

Labels = tuple[str, str, str]
"""``(operation, route, method)``."""


def _prometheus() -> Any:
    """The ``prometheus_client`` module, or an ``ImportError`` saying how to get it."""
    try:
        return importlib.import_module("prometheus_client")
    except ImportError as error:
        raise ImportError(
            "webrest request metrics need prometheus_client: pip install prometheus-client "
            "(or switch the metrics off)"
        ) from error


def _endpoint_labels(endpoint: Endpoint, base: str) -> Labels:
    """The labels of a route of an API whose base is ``base``: its ``operation_id`` (else the
    method's name), its template under the base, its HTTP method."""
    operation = endpoint.declaration.operation_id or endpoint.target.name.rsplit(".", 1)[-1]
    plain = endpoint.template.plain
    route = (base if plain == "/" else base + plain) if base else plain
    return (operation, route, endpoint.method)


@dataclass(frozen=True, slots=True)
class MetricsServer:
    """The metrics on a port of their own (prometheus_client's server, in a daemon thread):
    every path answers the metrics. ``close()`` stops it."""

    host: str
    port: int
    _server: Any
    _thread: Any

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)


class _Series:
    """What was recorded for one ``(operation, route, method)``: answers by status class
    (index ``status // 100``), latency bucket counts (the last one beyond every bound) and
    the latency sum. Updated on the event loop without locks: one ``+=`` each."""

    __slots__ = ("buckets", "seconds", "statuses")

    def __init__(self, buckets: int) -> None:
        self.statuses = [0] * 6
        self.buckets = [0] * (buckets + 1)
        self.seconds = 0.0


class RequestMetrics:
    """The request metrics of one :class:`~webrest.application.Application`.

    ``path`` serves them on the application's port (``None``: not there; use :meth:`serve`);
    ``namespace`` prefixes every name (``rag`` gives ``rag_http_requests_total``);
    ``buckets`` are the latency histogram's upper bounds in seconds; ``registry`` is the
    ``CollectorRegistry`` they are collected in (default: a new one, this object's alone).

    Metrics (labels ``operation``, ``route``, ``method``): ``http_requests_total`` (and
    ``status``: ``1xx`` ... ``5xx``), ``http_request_duration_seconds`` (a histogram),
    ``http_requests_in_progress`` (a gauge). Requests are recorded in plain counters on the
    event loop (a few hundred nanoseconds: no locks, no label validation per request) and
    turned into metric families when scraped, from any thread.
    """

    def __init__(
        self,
        *,
        path: str | None = "/metrics",
        namespace: str = "",
        buckets: tuple[float, ...] = DEFAULT_BUCKETS,
        registry: CollectorRegistry | None = None,
    ) -> None:
        prometheus = _prometheus()
        if path is not None and not path.startswith("/"):
            raise ValueError(f"the metrics path {path!r} must start with /")
        if not buckets or list(buckets) != sorted(set(buckets)):
            raise ValueError(f"the buckets {buckets!r} must be distinct and increasing")
        self.path = path
        self.namespace = namespace
        self.buckets = tuple(float(bound) for bound in buckets)
        self.registry: CollectorRegistry = (
            registry if registry is not None else prometheus.CollectorRegistry(auto_describe=True)
        )
        self._app: Application | None = None
        self._labels: dict[int, Labels] = {}  # id(endpoint) -> its labels (method: declared)
        self._series: dict[Labels, _Series] = {}
        self._by_endpoint: dict[int, dict[str, _Series]] = {}  # id(endpoint), method
        self._in_flight: dict[int, Scope] = {}
        self.registry.register(_Collector(self))

    # -- wiring ------------------------------------------------------------------------------

    def attach(self, app: Application) -> None:
        """Called by ``app.instrument(self)``: learn the routes, serve :attr:`path`."""
        if self._app is not None:
            raise ValueError("these metrics already instrument an application")
        self._app = app
        for _prefix, api in app.mounts:
            for endpoint in api.endpoints:
                self._labels[id(endpoint)] = _endpoint_labels(endpoint, api.base)
        if self.path is not None:
            app.answer(self.path, self.response)

    def serve(self, host: str, port: int) -> MetricsServer:
        """Serve the metrics on ``host``:``port`` (``0``: any free port) until closed."""
        prometheus = _prometheus()
        server, thread = prometheus.start_http_server(port, addr=host, registry=self.registry)
        return MetricsServer(host, int(server.server_port), server, thread)

    def response(self) -> Response:
        """The metrics now, in the Prometheus text format."""
        exposition = importlib.import_module("prometheus_client.exposition")
        body: bytes = exposition.generate_latest(self.registry)
        return Response.ok().type(exposition.CONTENT_TYPE_LATEST).body(body)

    # -- per request -------------------------------------------------------------------------

    async def observe(self, scope: Scope, receive: Receive, send: Send, app: ASGIApp) -> None:
        """Run ``app`` on the request and record it (the metrics path is passed through)."""
        if self.path is not None and relative_path(scope) == self.path:
            await app(scope, receive, send)
            return
        started = perf_counter()
        key = id(scope)
        self._in_flight[key] = scope
        try:
            await app(scope, receive, send)
        finally:
            elapsed = perf_counter() - started
            del self._in_flight[key]
            series = self._series_of(scope)
            # the status the application sent; none: it failed, the server answers 500
            status = scope.get("webrest.status", 500) // 100
            series.statuses[status if 0 < status < 6 else 5] += 1
            series.buckets[bisect_left(self.buckets, elapsed)] += 1
            series.seconds += elapsed

    def _series_of(self, scope: Scope) -> _Series:
        """Where a request is recorded: found by its endpoint and method (one lookup each
        for a routed request), else by its labels."""
        endpoint = scope.get("webrest.endpoint")
        by_method = self._by_endpoint.get(id(endpoint)) if endpoint is not None else None
        if by_method is not None:
            found = by_method.get(scope["method"])
            if found is not None:
                return found
        labels = self.labels_of(scope)
        series = self._series.get(labels)
        if series is None:
            series = self._series[labels] = _Series(len(self.buckets))
        if endpoint is not None:  # its methods: the declared one, HEAD for a GET
            self._by_endpoint.setdefault(id(endpoint), {})[scope["method"]] = series
        return series

    def labels_of(self, scope: Scope) -> Labels:
        """``(operation, route, method)`` of a request (routed or not yet)."""
        method: str = scope["method"]
        if method not in _METHODS:
            method = "OTHER"
        endpoint: Endpoint | None = scope.get("webrest.endpoint")
        if endpoint is None and self._app is not None:  # answered before routing, or no route
            found = self._app.route_for(scope)
            if isinstance(found, str):
                return (*self._fixed_labels(found), method)
            endpoint = found
        if endpoint is None:
            return (UNMATCHED, UNMATCHED, method)
        known = self._labels.get(id(endpoint))
        if known is None:  # an endpoint of an API mounted after instrument()
            known = self._labels[id(endpoint)] = _endpoint_labels(endpoint, "")
        return (known[0], known[1], method)

    def _fixed_labels(self, path: str) -> tuple[str, str]:
        """The labels of a path the application answers itself (its document, its docs)."""
        app = self._app
        if app is not None and app.docs is not None and path.startswith(app.docs.path):
            return ("docs", app.docs.path)
        return ("openapi", path)

    def in_progress(self) -> dict[Labels, int]:
        """The requests in flight now by labels, with a 0 for every route."""
        counts: dict[Labels, int] = dict.fromkeys(list(self._labels.values()), 0)
        for scope in list(self._in_flight.values()):  # a copy: scraped from another thread
            labels = self.labels_of(scope)
            counts[labels] = counts.get(labels, 0) + 1
        return counts

    def series(self) -> list[tuple[Labels, list[int], list[int], float]]:
        """A copy of what was recorded: labels, answers by status class, bucket counts, sum."""
        return [
            (labels, list(found.statuses), list(found.buckets), found.seconds)
            for labels, found in list(self._series.items())
        ]


class _Collector:
    """The three metric families, made from :class:`RequestMetrics` when scraped."""

    def __init__(self, metrics: RequestMetrics) -> None:
        self._metrics = metrics
        prefix = f"{metrics.namespace}_" if metrics.namespace else ""
        self._names = (
            prefix + "http_requests",
            prefix + "http_request_duration_seconds",
            prefix + "http_requests_in_progress",
        )

    def describe(self) -> list[Metric]:
        return list(self._families())

    def _families(self) -> tuple[Any, Any, Any]:
        core = importlib.import_module("prometheus_client.metrics_core")
        requests, duration, in_progress = self._names
        return (
            core.CounterMetricFamily(
                requests,
                "HTTP requests answered, by operation, route template, method and status class",
                labels=(*_LABELS, "status"),
            ),
            core.HistogramMetricFamily(
                duration,
                "Time from a request's arrival to the end of its response body, in seconds",
                labels=_LABELS,
            ),
            core.GaugeMetricFamily(
                in_progress,
                "HTTP requests being answered, by operation, route template and method",
                labels=_LABELS,
            ),
        )

    def collect(self) -> Iterator[Metric]:
        requests, duration, in_progress = self._families()
        bounds = [repr(bound) for bound in self._metrics.buckets] + ["+Inf"]
        for labels, statuses, buckets, seconds in sorted(self._metrics.series()):
            for index, count in enumerate(statuses):
                if count:
                    requests.add_metric([*labels, _STATUS_CLASSES[index]], count)
            cumulative = list(accumulate(buckets))
            duration.add_metric(list(labels), list(zip(bounds, cumulative, strict=True)), seconds)
        for labels, count in sorted(self._metrics.in_progress().items()):
            in_progress.add_metric(list(labels), count)
        yield requests
        yield duration
        yield in_progress
