"""``Async``: work a method hands back to run while the server serves other requests."""

from __future__ import annotations

import inspect
from collections.abc import AsyncGenerator, Callable, Generator
from typing import Any

import anyio.to_thread

__all__ = ["Async"]


class Async:
    """Wraps a callable whose result (a :class:`webrest.Response` or a plain value) is
    transmitted when it is done.

    * a coroutine function is awaited;
    * an async generator function is driven to its end, each ``yield`` a point where other
      requests are served; its last non-``None`` yielded value is the result;
    * a generator function is driven to its end like upstream's, each step in a worker
      thread; its ``return`` value is the result (or, when it returns ``None``, its last
      non-``None`` yielded value);
    * a plain function runs in a worker thread, so blocking work (disk, CPU) does not stall
      the event loop.

    A callable that returns an awaitable, a generator or an async generator has that awaited
    or driven in turn. The usual use is a streamed upload: the method binds a
    :class:`webrest.Multipart` and returns ``Async(store)`` where ``store`` saves each part as
    it arrives.
    """

    __slots__ = ("function",)

    def __init__(self, function: Callable[[], Any]) -> None:
        if not callable(function):
            hint = ""
            if inspect.iscoroutine(function) or inspect.isgenerator(function):
                function.close()  # not run: no "never awaited" warning on top of this error
                hint = " (pass the function, not what calling it returned: Async(work))"
            elif inspect.isasyncgen(function):
                hint = " (pass the function, not what calling it returned: Async(work))"
            raise TypeError(f"Async takes a callable, not {type(function).__name__}{hint}")
        self.function = function

    async def run(self) -> object:
        """Run the callable to completion and return its result."""
        function = self.function
        if inspect.isasyncgenfunction(function):
            return await _drive_async(function())
        if inspect.isgeneratorfunction(function):
            return await _drive(function())
        if inspect.iscoroutinefunction(function):
            result = await function()
        else:
            result = await anyio.to_thread.run_sync(function)
            if inspect.isawaitable(result):
                result = await result
        if inspect.isgenerator(result):
            return await _drive(result)
        if inspect.isasyncgen(result):
            return await _drive_async(result)
        return result


async def _drive_async(generator: AsyncGenerator[Any, Any]) -> object:
    """The last non-``None`` value ``generator`` yields."""
    result: object = None
    async for item in generator:
        if item is not None:
            result = item
    return result


def _step(generator: Generator[Any, Any, Any]) -> tuple[bool, object]:
    """``(False, yielded)`` or ``(True, returned)``: ``StopIteration`` cannot leave a thread
    into a coroutine."""
    try:
        return False, next(generator)
    except StopIteration as stop:
        return True, stop.value


async def _drive(generator: Generator[Any, Any, Any]) -> object:
    """Run ``generator`` to its end, one step at a time in a worker thread; its return value,
    or when that is ``None`` its last non-``None`` yielded value."""
    result: object = None
    try:
        while True:
            done, value = await anyio.to_thread.run_sync(_step, generator)
            if done:
                return result if value is None else value
            if value is not None:
                result = value
    finally:
        generator.close()  # when cancelled between steps; a no-op once it has ended
