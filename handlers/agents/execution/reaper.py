"""The stale-lease reaper every worker and the server run.

Every ``heartbeat_seconds``, executions whose worker stopped renewing its lease are retried or
failed (:func:`~handlers.agents.execution.leases.reap_stale`). Reapers of several processes
never step on each other (``SKIP LOCKED``, lease guards).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from functools import partial

from handlers.agents.execution.dispatch import Dispatcher
from handlers.agents.execution.leases import reap_stale
from handlers.agents.settings import Settings
from handlers.agents.storage.database import Database

__all__ = ["StaleReaper"]

log = logging.getLogger("agents.worker")


class StaleReaper:
    """Finds executions whose worker is gone."""

    def __init__(
        self,
        database: Database,
        settings: Settings,
        dispatcher: Dispatcher,
        on_end: Callable[[str], None],
    ) -> None:
        self.database = database
        self.settings = settings
        self.dispatcher = dispatcher
        self.on_end = on_end

    async def sweep(self) -> None:
        """One pass."""
        reaped = await self.database.write(
            partial(
                reap_stale,
                stale_after=self.settings.stale_after_seconds,
                max_attempts=self.settings.max_attempts,
            )
        )
        for execution_id in reaped.retried:
            log.warning("execution %s: worker lost, queued again", execution_id)
        for execution_id in reaped.ended:
            log.warning("execution %s: worker lost, no attempt left: ended", execution_id)
            self.on_end(execution_id)
        await self.dispatcher.dispatch(reaped.retried)

    async def run(self) -> None:
        """Sweep every ``heartbeat_seconds`` until cancelled."""
        while True:
            try:
                await self.sweep()
            except Exception as error:  # database or queue down: log, try again next time
                log.warning("stale execution sweep failed: %s: %s", type(error).__name__, error)
            await asyncio.sleep(self.settings.heartbeat_seconds)
