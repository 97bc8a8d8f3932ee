"""Python equivalents of Go's pprof profiles, for the debug server's ``/debug/pprof/``.

- stacks (``goroutine``): every thread's stack, then every asyncio task's stack.
- CPU (``profile``): cProfile of the event-loop thread for N seconds. All of the service's
  Python code (gRPC and HTTP handlers, the limiter, cache clients) runs on that thread; other
  threads (gRPC core's, the relay's) are not profiled. cProfile slows the profiled code down
  (roughly 1.5-2x) only while a profile runs; one profile at a time.
- heap: tracemalloc's top allocation sites. Tracing starts on the first request and stays on
  until ``stop``: it costs memory for every traced block and slows allocations (often 20-30 %
  CPU), so stop it when done.
"""

from __future__ import annotations

import asyncio
import cProfile
import io
import marshal
import pstats
import sys
import threading
import traceback
import tracemalloc

TRACEMALLOC_FRAMES = 1


class ProfilerBusy(RuntimeError):
    """A CPU profile is already running."""


def thread_stacks() -> str:
    """Every thread's current stack, the main thread first."""
    threads = {thread.ident: thread for thread in threading.enumerate()}
    parts = []
    for ident, frame in sorted(sys._current_frames().items(), key=lambda item: item[0]):
        thread = threads.get(ident)
        name = thread.name if thread is not None else "unknown"
        daemon = " daemon" if thread is not None and thread.daemon else ""
        stack = "".join(traceback.format_stack(frame))
        parts.append(f"thread {ident} [{name}]{daemon}:\n{stack}")
    return "\n".join(parts)


def task_stacks(loop: asyncio.AbstractEventLoop) -> str:
    """Every asyncio task of ``loop`` with its stack (where it is suspended)."""
    parts = []
    for task in sorted(asyncio.all_tasks(loop), key=lambda t: t.get_name()):
        # Task.print_stack fails on frames without a line number (3.11); format them here
        frames = [
            (frame, frame.f_lineno or frame.f_code.co_firstlineno) for frame in task.get_stack()
        ]
        stack = "".join(traceback.format_list(traceback.StackSummary.extract(frames)))
        parts.append(f"task {task.get_name()} ({task.get_coro()!r}):\n{stack}")
    return "\n".join(parts)


class CpuProfiler:
    """cProfile of the event-loop thread, one profile at a time."""

    def __init__(self) -> None:
        self._running = False

    async def profile(self, seconds: float) -> pstats.Stats:
        """Profile this thread for ``seconds`` while the loop serves; ProfilerBusy if another
        profile is running."""
        if self._running:
            raise ProfilerBusy("a CPU profile is already running")
        self._running = True
        profiler = cProfile.Profile()
        try:
            profiler.enable()
            try:
                await asyncio.sleep(seconds)
            finally:
                profiler.disable()
        finally:
            self._running = False
        return pstats.Stats(profiler)


def stats_text(stats: pstats.Stats, seconds: float, limit: int) -> str:
    """pstats' table, sorted by cumulative time, ``limit`` lines."""
    out = io.StringIO()
    stats.stream = out  # type: ignore[attr-defined]
    out.write(f"CPU profile of the event loop thread over {seconds:g} s\n")
    stats.sort_stats(pstats.SortKey.CUMULATIVE).print_stats(limit)
    return out.getvalue()


def stats_file(stats: pstats.Stats) -> bytes:
    """The profile as a ``.prof`` file (``python -m pstats``, snakeviz)."""
    return marshal.dumps(stats.stats)  # type: ignore[attr-defined]


def heap_profile(limit: int) -> str:
    """The ``limit`` largest allocation sites since tracing started; starts tracing first if
    it is off."""
    if not tracemalloc.is_tracing():
        tracemalloc.start(TRACEMALLOC_FRAMES)
        return (
            "tracemalloc was off and is tracing allocations from now on; request again to see "
            "them, and add ?stop=true when done (tracing costs memory and CPU)\n"
        )
    snapshot = tracemalloc.take_snapshot()
    current, peak = tracemalloc.get_traced_memory()
    lines = [f"traced memory: current {current} B, peak {peak} B", f"top {limit} allocation sites:"]
    for statistic in snapshot.statistics("lineno")[:limit]:
        lines.append(str(statistic))
    return "\n".join(lines) + "\n"


def stop_heap_profile() -> str:
    if tracemalloc.is_tracing():
        tracemalloc.stop()
        return "tracemalloc stopped\n"
    return "tracemalloc was not tracing\n"
