"""The services' entry points: settings from the environment, logging, then the service.

An invalid setting stops the program before anything starts, with one line on stderr naming
the variable (``agents-server: AGENTS_PORT='x' is invalid: …``) and exit status 2.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import TypeVar

from handlers.common.logs import configure_logging
from handlers.common.settings import ServiceSettings, SettingsError

__all__ = ["run_service"]

S = TypeVar("S", bound=ServiceSettings)


def run_service(
    settings_class: type[S], serve: Callable[[S], int], *, program: str | None = None
) -> int:
    """Read ``settings_class`` from the environment, set logging up, run ``serve``; its exit
    status, or 2 for invalid settings. ``program`` (default ``settings_class.program``) starts
    the error line."""
    try:
        settings = settings_class.from_env()
    except SettingsError as error:
        print(f"{program or settings_class.program}: {error}", file=sys.stderr)
        return 2
    configure_logging(
        settings.log_level, settings.log_format, always_shown=settings_class.always_logged
    )
    return serve(settings)
