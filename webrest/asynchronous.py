"""``Async``: work a method hands back to run while the server serves other requests."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import anyio.to_thread

__all__ = ["Async"]


class Async:
    """Wraps a callable whose result (a :class:`webrest.Response` or a plain value) is
    transmitted when it is done.

    * a coroutine function is awaited;
    * an async generator function is driven to its end, each ``yield`` a point where other
      requests are served; its last non-``None`` yielded value is the result;
    * a plain function runs in a worker thread, so blocking work (disk, CPU) does not stall
      the event loop.

    The usual use is a streamed upload: the method binds a :class:`webrest.Multipart` and
    returns ``Async(store)`` where ``store`` saves each part as it arrives.
    """

    __slots__ = ("function",)

    def __init__(self, function: Callable[[], Any]) -> None:
        self.function = function

    async def run(self) -> object:
        """Run the callable to completion and return its result."""
        function = self.function
        if inspect.isasyncgenfunction(function):
            result: object = None
            async for item in function():
                if item is not None:
                    result = item
            return result
        if inspect.iscoroutinefunction(function):
            return await function()
        result = await anyio.to_thread.run_sync(function)
        if inspect.isawaitable(result):
            return await result
        return result
