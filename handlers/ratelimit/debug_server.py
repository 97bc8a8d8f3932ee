"""The debug port (DEBUG_HOST:DEBUG_PORT, default 0.0.0.0:6070), as the upstream's:

- ``/``: the endpoints, sorted, one ``path: help`` line each;
- ``/rlconfig``: the loaded rules, one line each (``<key>: unit=<UNIT> requests_per_unit=<n>,
  shadow_mode: <bool>, quota_mode: <bool>``); empty when none is loaded;
- ``/stats``: every statistic, ``name: value`` sorted by name (timers as
  ``name: count=<n> total_ms=<ms>``), with several workers the sum over all of them;
- ``/debug/pprof/``: the Python equivalents of Go's profiles (:mod:`handlers.ratelimit.profiling`):
  ``goroutine`` (thread and asyncio task stacks), ``profile?seconds=N`` (cProfile text, or
  ``&format=pstats`` for a ``.prof`` file), ``heap`` (tracemalloc top sites; ``?stop=true``)
  and ``cmdline``.

Every answer is ``text/plain`` (the ``.prof`` file ``application/octet-stream``).
"""

from __future__ import annotations

import asyncio
import sys
from typing import Annotated, Literal

from pydantic import Field

from handlers.ratelimit.config.parse import dump
from handlers.ratelimit.profiling import (
    CpuProfiler,
    ProfilerBusy,
    heap_profile,
    stats_file,
    stats_text,
    stop_heap_profile,
    task_stacks,
    thread_stacks,
)
from handlers.ratelimit.service import RateLimitService
from handlers.ratelimit.sinks.sources import StatsSource
from webrest import Application, Get, HttpError, Request, Resource, Response, RestApi

TEXT = "text/plain; charset=utf-8"
MAX_PROFILE_SECONDS = 300

ENDPOINTS = {
    "/debug/pprof/": "root of various pprof endpoints. hit for help.",
    "/debug/pprof/profile": "CPU profiling endpoint",
    "/rlconfig": "print out the currently loaded configuration for debugging",
    "/stats": "print out stats",
}

PPROF_PROFILES = {
    "cmdline": "The command line of the process.",
    "goroutine": "Stack traces of all threads and all asyncio tasks.",
    "heap": "Top allocation sites (tracemalloc; the first request starts tracing, "
    "?stop=true stops it). ?top=N sites, default 50.",
    "profile": "CPU profile of the event loop thread (cProfile). ?seconds=N, default 30; "
    "&format=pstats answers a .prof file instead of text.",
}


def _text(body: str) -> Response:
    return Response.ok().type(TEXT).body(body)


def stats_lines(source: StatsSource) -> list[str]:
    """``name: value`` per statistic, sorted by name."""
    values: dict[str, str] = {}
    for name, value in source.counters().items():
        values[name] = str(value)
    for name, value in source.gauges().items():
        values[name] = str(value)
    for name, (count, total_ms) in source.timer_totals().items():
        values[name] = f"count={count} total_ms={total_ms:.3f}"
    return [f"{name}: {values[name]}" for name in sorted(values)]


@Resource("")
class DebugEndpoints:
    """The debug port's endpoints over a service and its statistics."""

    def __init__(self, service: RateLimitService, stats: StatsSource) -> None:
        self._service = service
        self._stats = stats
        self._profiler = CpuProfiler()

    @Get("/")
    def index(self) -> Response:
        """The endpoints."""
        return _text("".join(f"{path}: {ENDPOINTS[path]}\n" for path in sorted(ENDPOINTS)))

    @Get("/rlconfig")
    def rlconfig(self) -> Response:
        """The loaded rules."""
        rules = self._service.rules
        return _text("".join(line + "\n" for line in dump(rules)) if rules is not None else "")

    @Get("/stats")
    def stats(self) -> Response:
        """Every statistic."""
        return _text("".join(line + "\n" for line in stats_lines(self._stats)))

    @Get("/debug/pprof/")
    def pprof_index(self) -> Response:
        """The profiles."""
        lines = [f"/debug/pprof/{name}: {PPROF_PROFILES[name]}" for name in sorted(PPROF_PROFILES)]
        return _text("\n".join(lines) + "\n")

    @Get("/debug/pprof/cmdline")
    def cmdline(self) -> Response:
        return _text("\x00".join(sys.argv))

    @Get("/debug/pprof/goroutine")
    def goroutine(self, request: Request) -> Response:
        """Thread and task stacks."""
        del request
        loop = asyncio.get_running_loop()
        return _text("threads:\n\n" + thread_stacks() + "\nasyncio tasks:\n\n" + task_stacks(loop))

    @Get("/debug/pprof/profile")
    async def profile(
        self,
        seconds: Annotated[int, Field(ge=1, le=MAX_PROFILE_SECONDS)] = 30,
        format: Literal["text", "pstats"] = "text",
    ) -> Response:
        """A CPU profile over ``seconds``."""
        try:
            stats = await self._profiler.profile(seconds)
        except ProfilerBusy as error:
            raise HttpError(409, str(error)) from None
        if format == "pstats":
            return (
                Response.ok()
                .type("application/octet-stream")
                .header("Content-Disposition", 'attachment; filename="profile.prof"')
                .body(stats_file(stats))
            )
        return _text(stats_text(stats, seconds, limit=100))

    @Get("/debug/pprof/heap")
    async def heap(
        self, top: Annotated[int, Field(ge=1, le=1000)] = 50, stop: bool = False
    ) -> Response:
        """Top allocation sites."""
        if stop:
            return _text(stop_heap_profile())
        return _text(await asyncio.to_thread(heap_profile, top))


def plain_error(error: HttpError, request: Request) -> Response:
    """Errors as one text line: the message (webrest's validation messages for bad input)."""
    del request
    message = error.message
    if error.details:
        message += ": " + "; ".join(
            f"{'.'.join(map(str, detail.loc))}: {detail.msg}" for detail in error.details
        )
    return Response.status(error.status).type(TEXT).body(message + "\n")


def create_debug_app(service: RateLimitService, stats: StatsSource) -> Application:
    """The debug port's ASGI application."""
    return Application(
        {"/": RestApi(DebugEndpoints(service, stats))},
        error_renderer=plain_error,
        openapi_path=None,
        title="ratelimit debug",
    )
