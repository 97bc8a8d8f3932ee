"""The request metrics settings an HTTP service shares (``<PREFIX>METRICS_*``), and how they
instrument its application (:mod:`webrest.metrics`).

A service's settings class derives from :class:`MetricsSettings` instead of
``ServiceSettings`` and names its variables with :func:`metrics_variables`::

    class Settings(MetricsSettings):
        model_config = SettingsConfigDict(alias_generator=metrics_variables("RAG_"))

which gives ``RAG_METRICS_ENABLED``, ``RAG_METRICS_PORT``, ``RAG_METRICS_HOST`` and
``RAG_METRICS_PATH``. The server then calls :meth:`MetricsSettings.instrument` on its
application, and :meth:`MetricsSettings.serve_metrics` when it starts listening (a separate
port only; close what it returns when the server stops).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated

from pydantic import AliasGenerator, BeforeValidator, Field

from handlers.common.settings import Flag, ServiceSettings
from webrest.application import Application
from webrest.metrics import MetricsServer, RequestMetrics

__all__ = ["METRICS_FIELDS", "MetricsSettings", "metrics_variables"]

METRICS_FIELDS = ("metrics_enabled", "metrics_port", "metrics_host", "metrics_path")
"""The fields :func:`metrics_variables` names: ``metrics_port`` is ``<PREFIX>METRICS_PORT``."""


def _port(value: object) -> object:
    if not isinstance(value, str):
        return value
    try:
        number = int(value.strip(), 10)
    except ValueError:
        number = -1
    if not 0 <= number <= 65535:
        raise ValueError("expected a port number from 0 to 65535")
    return number


def _path(value: object) -> object:
    if isinstance(value, str) and not value.strip().startswith("/"):
        raise ValueError("expected a path starting with /")
    return value.strip() if isinstance(value, str) else value


def metrics_variables(prefix: str) -> AliasGenerator:
    """The alias generator naming :data:`METRICS_FIELDS` ``<prefix>METRICS_...``; any other
    field keeps its own ``validation_alias`` (or its name)."""

    def name(field: str) -> str:
        return prefix + field.upper() if field in METRICS_FIELDS else field

    generate: Callable[[str], str] = name
    return AliasGenerator(validation_alias=generate)


class MetricsSettings(ServiceSettings):
    """A service's settings with request metrics: the Prometheus text format of
    :mod:`webrest.metrics`, on the service's port or one of its own."""

    metrics_enabled: Flag = Field(
        True,
        description="count requests per operation (status class, latency histogram, in "
        "flight) and serve them in the Prometheus text format; `false`: no metrics endpoint",
    )
    metrics_port: Annotated[int | None, BeforeValidator(_port)] = Field(
        None,
        description="serve the metrics on this port of their own (every path) instead of "
        "at the metrics path of the service's port; `0`: any free port",
        json_schema_extra={"default_text": "the service's port"},
    )
    metrics_host: str = Field(
        "",
        description="address the separate metrics port binds",
        json_schema_extra={"default_text": "the service's host"},
    )
    metrics_path: Annotated[str, BeforeValidator(_path)] = Field(
        "/metrics",
        description="path of the metrics on the service's port (not counted itself; "
        "answered before filters, as `/openapi.json` is)",
    )

    def instrument(self, app: Application, *, namespace: str = "") -> RequestMetrics | None:
        """Instrument ``app`` as the settings say; ``None`` when metrics are off."""
        if not self.metrics_enabled:
            return None
        separate = self.metrics_port is not None
        metrics = RequestMetrics(path=None if separate else self.metrics_path, namespace=namespace)
        app.instrument(metrics)
        return metrics

    def serve_metrics(
        self, metrics: RequestMetrics | None, service_host: str
    ) -> MetricsServer | None:
        """Start the separate metrics port when one is set (``None`` otherwise); the caller
        closes what it returns when it stops."""
        if metrics is None or self.metrics_port is None:
            return None
        return metrics.serve(self.metrics_host or service_host, self.metrics_port)
