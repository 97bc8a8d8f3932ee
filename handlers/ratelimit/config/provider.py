"""The file configuration provider (``CONFIG_TYPE=FILE``): reads the rule files, reloads on change.

Two layouts, chosen by ``RUNTIME_WATCH_ROOT``:

* ``true`` (default), symlink mode: every regular file under ``RUNTIME_ROOT/RUNTIME_SUBDIRECTORY``
  is read, recursively, keyed by its relative path with ``/`` turned into ``.`` (``config.a.yaml``);
  the keys starting with ``RUNTIME_APPDIRECTORY + "."`` are loaded. A reload happens when the
  ``RUNTIME_ROOT`` entry of its parent directory is created or written: the deployment swaps a
  ``current`` symlink atomically to publish a new tree.
* ``false``, directory mode: the files directly in ``ROOT/SUBDIRECTORY/APPDIRECTORY`` are loaded,
  keyed by their name; any change to an entry of that directory reloads (this is the layout for
  Kubernetes ConfigMaps, with ``RUNTIME_IGNOREDOTFILES=true`` to skip their ``..data`` entries).

Every reload reads every file again and builds a new :class:`RuleSet`. The listener receives
each outcome; after a failure it should keep the rules it has.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import stat
from collections.abc import AsyncGenerator, Callable
from dataclasses import dataclass

import watchfiles

from handlers.ratelimit.config.model import RuleSet
from handlers.ratelimit.config.parse import ConfigError, load_rule_set
from handlers.ratelimit.settings import Settings

__all__ = ["ConfigUpdate", "FileConfigProvider", "load_configuration", "read_config_files"]

logger = logging.getLogger("ratelimit.config")


@dataclass(frozen=True, slots=True)
class ConfigUpdate:
    """One load's outcome: the new rules, or the error that kept them from loading."""

    rules: RuleSet | None
    error: ConfigError | None


def read_config_files(settings: Settings) -> list[tuple[str, bytes]]:
    """The rule files the settings point at, as ``(config name, content)`` sorted by name.

    A missing directory or an unreadable file is logged and skipped, as upstream's runtime
    loader does; an empty ``RUNTIME_SUBDIRECTORY`` (symlink mode) or ``RUNTIME_APPDIRECTORY``
    (directory mode) means no files at all.
    """
    ignore_dots = settings.runtime_ignoredotfiles
    if settings.runtime_watch_root:
        if not settings.runtime_subdirectory:
            return []
        base = os.path.join(settings.runtime_root, settings.runtime_subdirectory)
        prefix = settings.runtime_appdirectory + "."
        found: list[tuple[str, bytes]] = []
        _walk(base, (), ignore_dots, found)
        return sorted((key, data) for key, data in found if key.startswith(prefix))
    if not settings.runtime_appdirectory:
        return []
    directory = os.path.join(
        settings.runtime_root, settings.runtime_subdirectory, settings.runtime_appdirectory
    )
    files: list[tuple[str, bytes]] = []
    for entry in _entries(directory):
        if ignore_dots and entry.name.startswith("."):
            continue
        data = _read_regular(entry.path)
        if data is not None:
            files.append((entry.name, data))
    return sorted(files)


def _entries(directory: str) -> list[os.DirEntry[str]]:
    try:
        with os.scandir(directory) as entries:
            return sorted(entries, key=lambda entry: entry.name)
    except OSError as error:
        logger.warning("runtime: error processing %s: %s", directory, error)
        return []


def _walk(
    directory: str, parts: tuple[str, ...], ignore_dots: bool, found: list[tuple[str, bytes]]
) -> None:
    for entry in _entries(directory):
        if ignore_dots and entry.name.startswith("."):
            continue
        try:
            is_directory = entry.is_dir(follow_symlinks=False)
        except OSError:
            continue
        if is_directory:
            _walk(entry.path, (*parts, entry.name), ignore_dots, found)
            continue
        # A symlinked file is read through its link; a symlinked directory is not descended
        # into (upstream's walk does not follow it either).
        data = _read_regular(entry.path)
        if data is not None:
            found.append((".".join((*parts, entry.name)), data))


def _read_regular(path: str) -> bytes | None:
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            return None
        with open(path, "rb") as handle:
            return handle.read()
    except OSError as error:
        logger.warning("runtime: error reading %s: %s", path, error)
        return None


def _is_directory(path: str) -> bool:
    return os.path.isdir(path)


def _nearest_existing_ancestor(path: str) -> str:
    ancestor = os.path.dirname(path)
    while not os.path.isdir(ancestor) and os.path.dirname(ancestor) != ancestor:
        ancestor = os.path.dirname(ancestor)
    return ancestor


def load_configuration(settings: Settings) -> ConfigUpdate:
    """Read and load every rule file once."""
    return _load(read_config_files(settings), settings)


def _load(files: list[tuple[str, bytes]], settings: Settings) -> ConfigUpdate:
    try:
        rules = load_rule_set(files, merge_domains=settings.merge_domain_config)
    except ConfigError as error:
        return ConfigUpdate(None, error)
    return ConfigUpdate(rules, None)


class FileConfigProvider:
    """Loads the rule files at start and again whenever the layout's trigger fires.

    ``debounce_ms`` and ``step_ms`` are watchfiles' grouping of a burst of changes (a
    ConfigMap update is one reload); ``poll_interval`` bounds how long a directory that
    appears late goes unnoticed.
    """

    def __init__(
        self,
        settings: Settings,
        listener: Callable[[ConfigUpdate], None],
        *,
        debounce_ms: int = 1600,
        step_ms: int = 50,
        poll_interval: float = 1.0,
    ) -> None:
        self._settings = settings
        self._listener = listener
        self._debounce_ms = debounce_ms
        self._step_ms = step_ms
        self._poll_ms = max(int(poll_interval * 1000), 1)
        self._stop = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._loaded_files: list[tuple[str, bytes]] | None = None

    async def start(self) -> None:
        """Load once and tell the listener (success or error), then watch in the background.

        A provider is started once; :meth:`close` ends it.
        """
        if self._task is not None:
            raise RuntimeError("the provider is already started")
        await self.reload()
        target = self._watched_directory()
        if target is None:
            logger.warning(
                "%s is empty: no rate limit configuration files are loaded or watched",
                "RUNTIME_SUBDIRECTORY"
                if self._settings.runtime_watch_root
                else "RUNTIME_APPDIRECTORY",
            )
            target = ""
        self._task = asyncio.create_task(self._watch(target), name="ratelimit-config-watch")

    async def close(self) -> None:
        """Stop watching; waits for the watcher to finish."""
        self._stop.set()
        task, self._task = self._task, None
        if task is None:
            return
        try:
            await asyncio.wait_for(asyncio.shield(task), timeout=5)
        except TimeoutError:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def reload(self) -> ConfigUpdate:
        """Read and load every file now, log the outcome and tell the listener."""
        files = await asyncio.to_thread(read_config_files, self._settings)
        return await self._apply(files)

    async def _reload_if_changed(self) -> None:
        files = await asyncio.to_thread(read_config_files, self._settings)
        if files != self._loaded_files:
            await self._apply(files)

    async def _apply(self, files: list[tuple[str, bytes]]) -> ConfigUpdate:
        self._loaded_files = files
        update = await asyncio.to_thread(_load, files, self._settings)
        if update.error is not None:
            logger.error("Error loading new configuration: %s", update.error)
        else:
            assert update.rules is not None
            logger.info(
                "Successfully loaded new configuration: %d domain(s)",
                len(update.rules.domains),
            )
        try:
            self._listener(update)
        except Exception:
            logger.exception("rate limit configuration listener failed")
        return update

    def _watched_directory(self) -> str | None:
        settings = self._settings
        if settings.runtime_watch_root:
            if not settings.runtime_subdirectory:
                return None
            return os.path.dirname(self._root_path())
        if not settings.runtime_appdirectory:
            return None
        return os.path.abspath(
            os.path.join(
                settings.runtime_root,
                settings.runtime_subdirectory,
                settings.runtime_appdirectory,
            )
        )

    def _root_path(self) -> str:
        return os.path.abspath(os.path.normpath(self._settings.runtime_root))

    def _triggers(self, changes: set[tuple[watchfiles.Change, str]]) -> bool:
        if not self._settings.runtime_watch_root:
            return bool(changes)  # any entry of the config directory
        root = self._root_path()
        return any(
            path == root and change in (watchfiles.Change.added, watchfiles.Change.modified)
            for change, path in changes
        )

    async def _watch(self, target: str) -> None:
        if not target:
            await self._stop.wait()
            return
        while not self._stop.is_set():
            if not _is_directory(target):
                logger.warning("runtime: %s does not exist; waiting for it", target)
                await self._wait_for_directory(target)
                continue
            try:
                await self._watch_directory(target)
            except OSError as error:  # e.g. removed between the check and the watch
                logger.warning("runtime: cannot watch %s: %s", target, error)
                await self._pause()
            except Exception:  # keep watching whatever went wrong
                logger.exception("runtime: error while watching %s", target)
                await self._pause()

    async def _watch_directory(self, target: str) -> None:
        """Watch until stopped or until ``target`` disappears."""
        first = True
        async with contextlib.aclosing(self._changes(target)) as batches:
            async for changes in batches:
                if self._triggers(changes):
                    await self.reload()
                elif first:
                    # The first batch (or timeout) comes once the watch is in place: files
                    # changed between the last load and now would otherwise go unnoticed.
                    await self._reload_if_changed()
                first = False
                if not _is_directory(target):
                    return

    async def _wait_for_directory(self, target: str) -> None:
        """Wait until ``target`` exists, watching its nearest existing ancestor."""
        while not self._stop.is_set() and not _is_directory(target):
            ancestor = _nearest_existing_ancestor(target)
            try:
                async with contextlib.aclosing(self._changes(ancestor)) as changes:
                    async for _ in changes:
                        break
            except OSError:
                await self._pause()

    def _changes(self, directory: str) -> AsyncGenerator[set[tuple[watchfiles.Change, str]], None]:
        return watchfiles.awatch(
            directory,
            watch_filter=None,
            recursive=False,
            debounce=self._debounce_ms,
            step=self._step_ms,
            stop_event=self._stop,
            rust_timeout=self._poll_ms,
            yield_on_timeout=True,
            ignore_permission_denied=True,
        )

    async def _pause(self) -> None:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._stop.wait(), timeout=self._poll_ms / 1000)
