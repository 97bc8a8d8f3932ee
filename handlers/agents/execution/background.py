"""Long-running tasks of a process (the queue's workers, the reaper, deliverers, schedulers):
registered before the process starts serving, run together, stopped together.

``agents-server`` and ``agents-worker`` each keep one :class:`BackgroundTasks`; a service that
needs a loop of its own in either process registers it with :meth:`BackgroundTasks.add` where
the process is put together (``server.py``, ``worker.py``). A task that stops with an error is
logged; the others go on.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Callable, Coroutine
from typing import Any

__all__ = ["BackgroundTasks", "BackgroundWork"]

log = logging.getLogger("agents.background")

BackgroundWork = Callable[[], Coroutine[Any, Any, None]]
"""Makes the coroutine of one task (it runs until cancelled)."""


class BackgroundTasks:
    """Named tasks of one process."""

    def __init__(self) -> None:
        self._work: list[tuple[str, BackgroundWork]] = []

    def add(self, name: str, work: BackgroundWork) -> None:
        """Run ``work()`` as task ``name`` while :meth:`running` is entered."""
        self._work.append((name, work))

    @property
    def names(self) -> list[str]:
        """The registered tasks' names, in registration order."""
        return [name for name, _ in self._work]

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        """Start every registered task; cancel and await them all when the block ends."""
        tasks = [asyncio.create_task(work(), name=name) for name, work in self._work]
        for task in tasks:
            task.add_done_callback(_report_crash)
        try:
            yield
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)


def _report_crash(task: asyncio.Task[None]) -> None:
    if not task.cancelled() and task.exception() is not None:
        log.error("background task %s stopped: %r", task.get_name(), task.exception())
