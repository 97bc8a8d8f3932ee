"""CancelSignal: how a caller asks a running execution to stop."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable

logger = logging.getLogger(__name__)


class CancelSignal:
    """A cancellation request, set in-process with ``request()`` or observed through ``poll``.

    ``poll`` (optional) is awaited every ``poll_interval`` seconds while someone waits (the
    first time one interval after the wait begins); returning
    True counts as a request (workers use it to watch a cancel flag in the database). A failing
    poll is logged and retried at the next interval. ``request()`` must be called from the event
    loop's thread (use ``loop.call_soon_threadsafe`` from others).
    """

    def __init__(
        self,
        poll: Callable[[], Awaitable[bool]] | None = None,
        *,
        poll_interval: float = 1.0,
    ) -> None:
        if poll_interval <= 0:
            raise ValueError("poll_interval must be positive")
        self._event = asyncio.Event()
        self._poll = poll
        self._poll_interval = poll_interval

    def request(self) -> None:
        """Ask for cancellation; idempotent."""
        self._event.set()

    @property
    def requested(self) -> bool:
        """Whether cancellation was requested (or seen by a poll) so far."""
        return self._event.is_set()

    async def wait(self) -> None:
        """Return once cancellation is requested."""
        if self._poll is None:
            await self._event.wait()
            return
        while not self._event.is_set():  # the first poll after one interval: nothing to see
            with contextlib.suppress(TimeoutError):  # sooner for a run that has just begun
                await asyncio.wait_for(self._event.wait(), timeout=self._poll_interval)
            if not self._event.is_set():
                await self._check_poll()

    async def _check_poll(self) -> None:
        assert self._poll is not None
        try:
            if await self._poll():
                self._event.set()
        except Exception as exc:  # a flaky source must not end the run; try again next interval
            logger.warning("cancel poll failed: %s: %s", type(exc).__name__, exc)
