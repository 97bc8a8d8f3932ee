"""The rate limit service's logging: the services' common set-up (``handlers.common.logs``:
``LOG_LEVEL``, ``LOG_FORMAT`` ``text`` or ``json`` as upstream writes them, or ``plain``) with
the start-up announcements (listeners, loaded domains, reloads) shown at any level.

The ``ratelimit`` entry point sets logging up through ``handlers.common.entry.run_service``;
:func:`configure` does the same in each worker process it spawns.
"""

from __future__ import annotations

from handlers.common.logs import configure_logging

__all__ = ["ALWAYS_SHOWN", "STARTUP_LOGGER", "configure"]

STARTUP_LOGGER = "ratelimit.startup"
"""The logger of the announcements: shown at INFO whatever ``LOG_LEVEL`` (and its debug lines
at ``DEBUG``)."""
ALWAYS_SHOWN = (STARTUP_LOGGER,)
"""``Settings.always_logged`` (the settings module cannot import this one)."""


def configure(level: str, log_format: str) -> None:
    """Send the service's logs to standard error in the chosen format and level."""
    configure_logging(level, log_format, always_shown=ALWAYS_SHOWN)
