"""The services' logging set-up: one line per event, on stderr."""

from __future__ import annotations

import logging
import sys

__all__ = ["LOG_FORMAT", "configure_logging"]

LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s %(message)s"
"""Time, level, logger, message."""


def configure_logging(level: str) -> None:
    """Log records of ``level`` (a ``logging`` level name) and above, one line each, to stderr."""
    logging.basicConfig(level=level, format=LOG_FORMAT, stream=sys.stderr, force=True)
