"""Health: the overall status is healthy only when every enabled component is.

Components (the seed's table): ``cache`` (always on; unhealthy without an active cache
connection when KVSTORE_HEALTH_CHECK_ACTIVE_CONNECTION is true), ``config`` (only with
HEALTHY_WITH_AT_LEAST_ONE_CONFIG_LOADED: healthy while at least one domain is loaded) and
``sigterm`` (unhealthy once SIGTERM is received). Listeners (the gRPC health service) are
told of every change of the overall status.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

log = logging.getLogger("ratelimit.health")

CACHE = "cache"
CONFIG = "config"
SIGTERM = "sigterm"


class Health:
    """The components' states and the overall status derived from them."""

    def __init__(
        self,
        *,
        config_required: bool = False,
        cache_connected: Callable[[], bool] | None = None,
    ) -> None:
        self._components: dict[str, bool] = {CACHE: True, SIGTERM: True}
        if config_required:
            self._components[CONFIG] = False
        self._cache_connected = cache_connected
        self._listeners: list[Callable[[bool], None]] = []
        self._last = self.healthy()

    def healthy(self) -> bool:
        if self._cache_connected is not None:
            self._components[CACHE] = self._cache_connected()
        return all(self._components.values())

    def set(self, component: str, healthy: bool) -> None:
        """Record a component's state (ignored for a component that is not enabled)."""
        if component not in self._components:
            return
        if self._components[component] != healthy:
            log.info("health component %s is now %s", component, _word(healthy))
        self._components[component] = healthy
        self.refresh()

    def config_loaded(self, domains: int) -> None:
        self.set(CONFIG, domains > 0)

    def refresh(self) -> None:
        """Re-evaluate (polled components included) and notify listeners of a change."""
        now = self.healthy()
        if now != self._last:
            self._last = now
            for listener in self._listeners:
                listener(now)

    def subscribe(self, listener: Callable[[bool], None]) -> None:
        """Call ``listener(healthy)`` now and on every change."""
        self._listeners.append(listener)
        listener(self._last)


def _word(healthy: bool) -> str:
    return "healthy" if healthy else "unhealthy"
