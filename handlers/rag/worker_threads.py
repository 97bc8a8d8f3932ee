"""Worker threads for blocking model work, driven from the event loop.

Closing needs no other thread: ``asyncio.to_thread(executor.shutdown)`` cannot run once the
interpreter is exiting (``concurrent.futures`` refuses new work then, "cannot schedule new
futures after interpreter shutdown"), which is exactly when an application left running is
stopped by an ``atexit`` hook. Instead the work still running is awaited through its futures,
and the then idle threads are joined at once.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
from collections.abc import Callable
from typing import Any, ParamSpec, TypeVar

__all__ = ["WorkerThreads"]

P = ParamSpec("P")
T = TypeVar("T")


class WorkerThreads:
    """At most ``count`` blocking calls at once, each in a thread named ``name-N``."""

    def __init__(self, count: int, name: str) -> None:
        self._executor = concurrent.futures.ThreadPoolExecutor(count, thread_name_prefix=name)
        self._unfinished: set[concurrent.futures.Future[Any]] = set()

    def run(self, function: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> asyncio.Future[T]:
        """Runs ``function`` in a worker thread; its result (or exception) as an asyncio future
        of the running loop. Cancelling that future cancels the call only if it has not started."""
        work = self._executor.submit(function, *args, **kwargs)
        self._unfinished.add(work)
        work.add_done_callback(self._unfinished.discard)
        return asyncio.wrap_future(work)

    async def close(self) -> None:
        """Cancels the calls not started, waits (without blocking the event loop) for the ones
        running, and ends the threads. Later :meth:`run` calls raise RuntimeError."""
        self._executor.shutdown(wait=False, cancel_futures=True)
        running = [asyncio.wrap_future(work) for work in list(self._unfinished)]
        if running:
            await asyncio.wait(running)
        self._executor.shutdown(wait=True)  # the threads are idle: they end at once
