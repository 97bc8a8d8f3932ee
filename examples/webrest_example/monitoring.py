"""``/monitoring``: the upstream ``Monitoring`` fixture, with an interceptor reading a method's
annotations (``@annotate(Cached(ttl=...))``), a ``text/csv`` writer and a streamed response."""

from __future__ import annotations

import csv
import io
import threading
import time
from collections import Counter
from collections.abc import AsyncIterator, Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Annotated

import anyio.lowlevel
from pydantic import BaseModel, Field

from examples.webrest_example.models import Metric, Status
from examples.webrest_example.store import UserStore
from webrest import Get, Invocation, Resource, Response, annotate

__all__ = ["Cached", "CsvWriter", "Metrics", "Monitoring", "ResultCache"]


@dataclass(frozen=True, slots=True)
class Cached:
    """Marks a method whose result may be reused for ``ttl`` seconds (see :class:`ResultCache`)."""

    ttl: float


class Metrics:
    """Counts calls by method; :meth:`count` is the interceptor that does it."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._calls: Counter[str] = Counter()

    async def count(self, invocation: Invocation, arguments: dict[str, object]) -> object:
        name = ".".join(invocation.target.name.rsplit(".", 2)[-2:])  # Class.method
        with self._lock:
            self._calls[name] += 1
        return await invocation.proceed(arguments)

    def snapshot(self) -> list[Metric]:
        with self._lock:
            return [Metric(name=name, calls=calls) for name, calls in sorted(self._calls.items())]


class ResultCache:
    """Interceptor: a method annotated ``Cached(ttl)`` (and called without arguments) answers
    from this cache for ``ttl`` seconds, with a matching ``Cache-Control`` header."""

    def __init__(self) -> None:
        self._results: dict[str, tuple[float, object]] = {}

    async def __call__(self, invocation: Invocation, arguments: dict[str, object]) -> object:
        cached = next((a for a in invocation.target.annotations if isinstance(a, Cached)), None)
        if cached is None or arguments:
            return await invocation.proceed(arguments)
        now = time.monotonic()
        key = invocation.target.name
        hit = self._results.get(key)
        if hit is None or hit[0] <= now:
            hit = (now + cached.ttl, await invocation.proceed(arguments))
            self._results[key] = hit
        max_age = f"max-age={int(cached.ttl)}"
        return Response.ok().header("Cache-Control", max_age).entity(hit[1])


class CsvWriter:
    """``text/csv``: a list of models or mappings as a header line and one line per item
    (a single object, such as an error, is one line)."""

    media_type = "text/csv; charset=utf-8"

    def write(self, value: object) -> bytes:
        rows = [value] if isinstance(value, (BaseModel, Mapping)) else value
        if not isinstance(rows, Iterable) or isinstance(rows, (str, bytes)):
            rows = [{"value": value}]
        records = [
            row.model_dump(mode="json") if isinstance(row, BaseModel) else row for row in rows
        ]
        out = io.StringIO()
        if records and all(isinstance(record, Mapping) for record in records):
            writer = csv.DictWriter(out, fieldnames=list(records[0]), extrasaction="ignore")
            writer.writeheader()
            writer.writerows(records)
        else:
            csv.writer(out).writerows([record] for record in records)
        return out.getvalue().encode()


@Resource("/monitoring")
class Monitoring:
    """The service's state."""

    def __init__(self, store: UserStore, metrics: Metrics) -> None:
        self.store = store
        self.metrics = metrics
        self.started = datetime.now(UTC)

    @Get("/status")
    @annotate(Cached(ttl=2))
    def status(self) -> Status:
        """Whether the service is up; cached for two seconds."""
        return Status(status="ok", started=self.started, users=len(self.store))

    @Get("/metrics")
    def metrics_table(self) -> list[Metric]:
        """Calls by method, as JSON or (``Accept: text/csv``) CSV."""
        return self.metrics.snapshot()

    @Get("/events", produces=["application/x-ndjson"])
    def events(self, count: Annotated[int, Field(ge=1, le=100)] = 10) -> Response:
        """``count`` status snapshots, one JSON object per line, streamed as they are made."""

        async def lines() -> AsyncIterator[str]:
            for number in range(1, count + 1):
                await anyio.lowlevel.checkpoint()
                yield f'{{"event": {number}, "users": {len(self.store)}}}\n'

        return Response.ok().type("application/x-ndjson").stream(lines())
