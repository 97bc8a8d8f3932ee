"""The ``ratelimit`` process: wires settings, store, rules, service and the listeners, and
runs one or more worker processes sharing the ports (SO_REUSEPORT).

Startup: settings (an invalid one stops with a message naming it), the cache (PING with
retries), the first configuration load (waited for unless FORCE_START_WITHOUT_INITIAL_CONFIG),
then the gRPC and HTTP listeners, each announced in the log. SIGTERM turns health unhealthy
and shuts down gracefully: listeners stop accepting, in-flight calls finish.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import multiprocessing
import os
import signal
import socket
import sys
import time
from collections.abc import Callable

import grpc
import uvicorn

from handlers.common.entry import run_service
from handlers.ratelimit import health as health_components
from handlers.ratelimit import logs
from handlers.ratelimit.asgi_listener import AsgiListener
from handlers.ratelimit.backends.base import BackendError, CounterStore
from handlers.ratelimit.backends.memory import MemoryStore
from handlers.ratelimit.config.parse import dump
from handlers.ratelimit.config.provider import ConfigUpdate, FileConfigProvider
from handlers.ratelimit.config.xds import XdsConfigProvider
from handlers.ratelimit.debug_server import create_debug_app
from handlers.ratelimit.grpc_server import create_grpc_server
from handlers.ratelimit.health import Health
from handlers.ratelimit.http import create_http_app
from handlers.ratelimit.limiter import Limiter
from handlers.ratelimit.local_cache import LocalCache
from handlers.ratelimit.service import RateLimitService
from handlers.ratelimit.settings import Modes, Settings, SettingsError
from handlers.ratelimit.sinks import StatsReporting
from handlers.ratelimit.sinks.relay import StatsQueue
from handlers.ratelimit.stats import ServiceStats
from handlers.ratelimit.tracing import create_tracer_provider
from handlers.startup_heap import freeze_startup_heap

log = logging.getLogger("ratelimit.startup")

SHUTDOWN_GRACE_SECONDS = 10.0
HEALTH_POLL_SECONDS = 1.0


def build_store(settings: Settings, stats: ServiceStats) -> CounterStore:
    """The counter store BACKEND_TYPE names."""
    if settings.backend_type == "memory":
        return MemoryStore()
    if settings.backend_type == "redis":
        from handlers.ratelimit.backends.redis import RedisStore

        per_second = settings.kvstore_persecond_settings if settings.kvstore_persecond else None
        return RedisStore(settings.kvstore, per_second=per_second, stats=stats.store)
    if settings.backend_type == "memcache":
        from handlers.ratelimit.backends.memcache import MemcacheStore

        if settings.stop_cache_key_increment_when_overlimit:
            log.warning(
                "STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT has no effect with BACKEND_TYPE=memcache"
            )
        return MemcacheStore(settings.altcache, stats=stats.store)
    raise SettingsError(
        f"BACKEND_TYPE={settings.backend_type!r} is not available in this build: "
        "expected redis, memcache or memory"
    )


def worker_count(settings: Settings) -> int:
    """WORKERS, or one per core with a shared backend; the memory backend runs one."""
    if settings.backend_type == "memory":
        if settings.workers > 1:
            log.warning(
                "WORKERS=%d ignored: the memory backend keeps its counters in one process, "
                "so it runs one worker (use BACKEND_TYPE=redis to use every core)",
                settings.workers,
            )
        return 1
    return settings.workers or os.cpu_count() or 1


def _listening_socket(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # IPPROTO_TCP explicitly: asyncio sets TCP_NODELAY only on sockets that say they are TCP,
    # and without it a response's second write waits for the client's delayed ACK (~40 ms)
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    sock.bind((host, port))
    sock.listen(2048)
    sock.setblocking(False)
    return sock


def _grpc_address(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


class RateLimitServer:
    """One worker: the decision service behind its gRPC and HTTP listeners."""

    def __init__(
        self,
        settings: Settings,
        *,
        store: CounterStore | None = None,
        clock: Callable[[], float] = time.time,
        worker: int = 0,
        stats_channel: StatsQueue | None = None,
    ) -> None:
        self.settings = settings
        self.stats = ServiceStats()
        self.store = store if store is not None else build_store(settings, self.stats)
        local_cache = (
            LocalCache(settings.local_cache_size_in_bytes, self.stats.store)
            if settings.local_cache_size_in_bytes > 0
            else None
        )
        self.limiter = Limiter(
            self.store,
            cache_key_prefix=settings.cache_key_prefix,
            near_limit_ratio=settings.near_limit_ratio,
            expiration_jitter_max_seconds=settings.expiration_jitter_max_seconds,
            # as upstream, memcache increments after deciding and does not implement the flag
            stop_increment_when_over_limit=settings.stop_cache_key_increment_when_overlimit
            and settings.backend_type != "memcache",
            local_cache=local_cache,
            clock=clock,
        )
        self.service = RateLimitService(self.limiter, self.stats, settings.modes)
        self.health = Health(
            config_required=settings.healthy_with_at_least_one_config_loaded,
            cache_connected=(
                self.store.connected if settings.kvstore_health_check_active_connection else None
            ),
        )
        self.provider: FileConfigProvider | XdsConfigProvider
        if settings.config_type == "GRPC_XDS_SOTW":
            self.provider = XdsConfigProvider(settings, self._on_config)
        else:
            self.provider = FileConfigProvider(settings, self._on_config)
        self.grpc_server: grpc.aio.Server | None = None
        self.grpc_port = 0
        self.http_server: uvicorn.Server | None = None
        self.http_port = 0
        self._http_socket: socket.socket | None = None
        self._tasks: list[asyncio.Task[None]] = []
        # statistics: with several workers, worker 0 reports for all and owns the debug port
        self.worker = worker
        self.reporting = StatsReporting(
            settings.stats,
            self.stats.store,
            worker=worker,
            channel=stats_channel,
            stdout_enabled=settings.log_level == "DEBUG",  # LOG_LEVEL=debug or trace
        )
        self.debug_listener: AsgiListener | None = None
        self.tracer_provider = (
            create_tracer_provider(settings.tracing) if settings.tracing.enabled else None
        )

    def _on_config(self, update: ConfigUpdate) -> None:
        if update.rules is None:
            self.stats.config_load_error.add()
            return
        self.stats.config_load_success.add()
        self.service.set_rules(update.rules, Modes.from_env())
        self.health.config_loaded(len(update.rules.domains))
        for domain in update.rules.domains:
            log.info("loaded domain '%s'", domain)
        for line in dump(update.rules):
            log.info("loaded descriptor %s", line)

    async def start(self) -> None:
        """Connect the cache, load the rules, open the listeners."""
        settings = self.settings
        await self.store.start()
        await self.provider.start()
        log.info("waiting for runtime update")
        if self.service.rules is None and not settings.force_start_without_initial_config:
            log.warning("no configuration loaded: decisions fail until a valid one loads")

        if settings.grpc_uds:
            address = "unix:" + settings.grpc_uds
        else:
            address = _grpc_address(settings.grpc_host, settings.grpc_port)
        self.grpc_server, ports = await create_grpc_server(
            self.service,
            self.health,
            self.stats.store,
            [address],
            transport=settings.grpc_transport,
            tracer_provider=self.tracer_provider,
        )
        self.grpc_port = ports[0]
        shown = address if settings.grpc_uds else f"{settings.grpc_host}:{self.grpc_port}"
        log.info("Listening for gRPC on '%s'", shown)

        self._http_socket = _listening_socket(settings.host, settings.port)
        self.http_port = self._http_socket.getsockname()[1]
        config = uvicorn.Config(
            create_http_app(self.service, self.health, docs=settings.docs_enabled),
            lifespan="off",
            access_log=False,
            log_config=None,
            timeout_graceful_shutdown=int(SHUTDOWN_GRACE_SECONDS),
        )
        config.load()
        self.http_server = uvicorn.Server(config)
        self.http_server.lifespan = config.lifespan_class(config)
        await self.http_server.startup(sockets=[self._http_socket])
        log.info("Listening for HTTP on '%s:%d'", settings.host, self.http_port)
        await self.reporting.start()
        if self.worker == 0:
            await self._start_debug_listener()
        if settings.kvstore_health_check_active_connection:
            self._tasks.append(asyncio.create_task(self._poll_health()))

    async def _start_debug_listener(self) -> None:
        settings = self.settings
        app = create_debug_app(self.service, self.reporting.source)
        listener = AsgiListener(app, settings.debug_host, settings.debug_port)
        try:
            await listener.start()
        except OSError as error:  # as upstream, the service runs on without its debug port
            log.error("Failed to open debug HTTP listener: %s", error)
            return
        self.debug_listener = listener
        log.info("Listening for debug on '%s:%d'", settings.debug_host, listener.port)

    async def _poll_health(self) -> None:
        while True:
            await asyncio.sleep(HEALTH_POLL_SECONDS)
            self.health.refresh()

    def terminating(self) -> None:
        """SIGTERM: report unhealthy from now on."""
        self.health.set(health_components.SIGTERM, False)

    async def stop(self) -> None:
        """Stop accepting, let in-flight calls finish (up to the grace period), close."""
        for task in self._tasks:
            task.cancel()
        stops = []
        if self.grpc_server is not None:
            stops.append(self.grpc_server.stop(SHUTDOWN_GRACE_SECONDS))
        if self.http_server is not None and self._http_socket is not None:
            stops.append(self.http_server.shutdown(sockets=[self._http_socket]))
        await asyncio.gather(*stops)
        if self.debug_listener is not None:
            await self.debug_listener.stop()
        await self.reporting.stop()  # a last flush, after the in-flight calls
        await self.provider.close()
        await self.store.close()
        if self.tracer_provider is not None:
            await asyncio.to_thread(self.tracer_provider.shutdown)  # flushes the last spans


async def _start_unless_stopped(server: RateLimitServer, stop: asyncio.Event) -> bool:
    """Start ``server``; False when a signal came first (startup can wait long: the xDS
    provider waits for its first configuration, the cache for its first PING)."""
    starting = asyncio.create_task(server.start())
    stopping = asyncio.create_task(stop.wait())
    await asyncio.wait((starting, stopping), return_when=asyncio.FIRST_COMPLETED)
    stopping.cancel()
    if starting.done():
        starting.result()  # a startup failure is raised here
        return True
    starting.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await starting
    return False


async def serve(
    settings: Settings, worker: int = 0, stats_channel: StatsQueue | None = None
) -> None:
    """Run one worker until SIGTERM, SIGINT or SIGHUP."""
    server = RateLimitServer(settings, worker=worker, stats_channel=stats_channel)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()

    def on_signal(signum: int) -> None:
        if signum == signal.SIGTERM:
            server.terminating()
        stop.set()

    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        loop.add_signal_handler(signum, on_signal, signum)
    if not await _start_unless_stopped(server, stop):
        log.info("shutting down before startup finished")
        await server.stop()
        return
    freeze_startup_heap(log)
    try:
        await stop.wait()
    finally:
        log.info("shutting down")
        await server.stop()


def _worker(settings: Settings, worker: int = 0, stats_channel: StatsQueue | None = None) -> None:
    logs.configure(settings.log_level, settings.log_format)
    try:
        with contextlib.suppress(KeyboardInterrupt):
            asyncio.run(serve(settings, worker, stats_channel))
    except SettingsError:
        raise
    except (BackendError, OSError) as error:
        # the cache never answered, or a port is taken: one line, not a traceback
        log.error("cannot start: %s", error)
        sys.exit(1)


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``ratelimit``: settings come from the environment (an invalid one: a
    line naming it on stderr, exit status 2), then logging, then the workers."""
    del argv
    return run_service(Settings, _serve)


def _serve(settings: Settings) -> int:
    try:
        workers = worker_count(settings)
        if workers == 1:
            _worker(settings)
            return 0
        return _run_workers(settings, workers)
    except SettingsError as error:
        log.error("%s", error)
        return 2


def _run_workers(settings: Settings, workers: int) -> int:
    log.info("starting %d worker processes", workers)
    context = multiprocessing.get_context("spawn")
    # the workers' statistics meet in worker 0 (see handlers/ratelimit/sinks/relay.py)
    stats_channel: StatsQueue = context.Queue()
    processes = [
        context.Process(
            target=_worker, args=(settings, n, stats_channel), name=f"ratelimit-worker-{n}"
        )
        for n in range(workers)
    ]
    for process in processes:
        process.start()

    def forward(signum: int, _frame: object) -> None:
        for process in processes:
            if process.pid is not None and process.is_alive():
                os.kill(process.pid, signum)

    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(signum, forward)
    for process in processes:
        process.join()
    return max((p.exitcode or 0) for p in processes)


if __name__ == "__main__":
    sys.exit(main())
