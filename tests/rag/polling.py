"""Waiting in async tests for something that happens in the background."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable


async def wait_until(condition: Callable[[], bool], seconds: float = 30.0) -> None:
    """Poll ``condition()`` until it is true, failing after ``seconds``."""
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "condition not reached in time"
        await asyncio.sleep(0.001)
