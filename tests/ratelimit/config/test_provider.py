"""The file provider: both layouts read from real files, and hot reload on real changes."""

from __future__ import annotations

import asyncio
import logging
import os
from pathlib import Path

import pytest

from handlers.ratelimit.config.provider import (
    ConfigUpdate,
    FileConfigProvider,
    load_configuration,
    read_config_files,
)
from handlers.ratelimit.settings import Settings

TIMEOUT = 10.0


def rules_file(domain: str, requests: int = 1) -> str:
    return (
        f"domain: {domain}\n"
        "descriptors:\n"
        "  - key: k\n"
        f"    rate_limit: {{unit: minute, requests_per_unit: {requests}}}\n"
    )


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def swap_symlink(link: Path, target: str) -> None:
    """Atomically point ``link`` at ``target``, as a deployment publishes a runtime tree."""
    temporary = link.with_name(link.name + ".tmp")
    os.symlink(target, temporary)
    os.replace(temporary, link)


def configmap(directory: Path, version: str, files: dict[str, str]) -> None:
    """Kubernetes' ConfigMap volume layout: ``..<version>/`` data, ``..data`` link, file links."""
    data = directory / f"..{version}"
    data.mkdir(parents=True)
    for name, text in files.items():
        (data / name).write_text(text)
    swap_symlink(directory / "..data", data.name)
    for name in files:
        if not (directory / name).is_symlink():
            os.symlink(f"..data/{name}", directory / name)


class Updates:
    """Collects the provider's updates; ``next()`` waits for one with a deadline."""

    def __init__(self) -> None:
        self.queue: asyncio.Queue[ConfigUpdate] = asyncio.Queue()

    def __call__(self, update: ConfigUpdate) -> None:
        self.queue.put_nowait(update)

    async def next(self) -> ConfigUpdate:
        return await asyncio.wait_for(self.queue.get(), TIMEOUT)

    async def next_domains(self) -> list[str]:
        update = await self.next()
        assert update.error is None, str(update.error)
        assert update.rules is not None
        return sorted(update.rules.domains)


async def start(settings: Settings) -> tuple[FileConfigProvider, Updates]:
    updates = Updates()
    provider = FileConfigProvider(settings, updates, step_ms=30, poll_interval=0.2)
    await provider.start()
    return provider, updates


# --- reading the files -----------------------------------------------------------------------


def watch_root_settings(root: Path, **changes: object) -> Settings:
    settings = Settings(
        runtime_root=str(root),
        runtime_subdirectory="ratelimit",
        runtime_appdirectory="config",
        runtime_watch_root=True,
    )
    return settings.changed(**changes)


def directory_settings(base: Path, **changes: object) -> Settings:
    settings = Settings(
        runtime_root=str(base),
        runtime_subdirectory="ratelimit",
        runtime_appdirectory="config",
        runtime_watch_root=False,
    )
    return settings.changed(**changes)


def test_watch_root_keys_are_relative_paths_with_dots(tmp_path: Path) -> None:
    tree = tmp_path / "v1" / "ratelimit"
    write(tree / "config" / "basic.yaml", "a")
    write(tree / "config" / "sub" / "nested.yml", "b")
    write(tree / "config" / "no_extension", "c")
    write(tree / "other" / "x.yaml", "not loaded")
    write(tree / "configuration.yaml", "not loaded either")
    os.symlink("v1", tmp_path / "current")
    files = read_config_files(watch_root_settings(tmp_path / "current"))
    assert files == [
        ("config.basic.yaml", b"a"),
        ("config.no_extension", b"c"),
        ("config.sub.nested.yml", b"b"),
    ]


def test_watch_root_without_subdirectory_reads_nothing(tmp_path: Path) -> None:
    write(tmp_path / "config" / "basic.yaml", rules_file("d"))
    settings = watch_root_settings(tmp_path, runtime_subdirectory="")
    assert read_config_files(settings) == []
    update = load_configuration(settings)
    assert update.error is None and update.rules is not None and update.rules.domains == {}


def test_directory_mode_reads_direct_files_by_name(tmp_path: Path) -> None:
    config = tmp_path / "ratelimit" / "config"
    write(config / "b.yaml", "b")
    write(config / "a.yaml", "a")
    write(config / ".hidden.yaml", "h")
    write(config / "sub" / "deeper.yaml", "not loaded")
    os.symlink("a.yaml", config / "link.yaml")
    os.symlink("missing.yaml", config / "broken.yaml")
    settings = directory_settings(tmp_path)
    assert read_config_files(settings) == [
        (".hidden.yaml", b"h"),
        ("a.yaml", b"a"),
        ("b.yaml", b"b"),
        ("link.yaml", b"a"),
    ]
    ignoring = settings.changed(runtime_ignoredotfiles=True)
    assert [name for name, _ in read_config_files(ignoring)] == ["a.yaml", "b.yaml", "link.yaml"]


def test_directory_mode_without_appdirectory_reads_nothing(tmp_path: Path) -> None:
    write(tmp_path / "ratelimit" / "x.yaml", rules_file("d"))
    assert read_config_files(directory_settings(tmp_path, runtime_appdirectory="")) == []


def test_missing_directory_reads_nothing(tmp_path: Path) -> None:
    assert read_config_files(directory_settings(tmp_path / "nowhere")) == []
    assert read_config_files(watch_root_settings(tmp_path / "nowhere")) == []


def test_configmap_tree_in_watch_root_mode_needs_ignoredotfiles(tmp_path: Path) -> None:
    configmap(tmp_path / "ratelimit" / "config", "2024_01_01", {"basic.yaml": rules_file("d")})
    settings = watch_root_settings(tmp_path)
    assert [name for name, _ in read_config_files(settings)] == [
        "config...2024_01_01.basic.yaml",
        "config.basic.yaml",
    ]
    update = load_configuration(settings)
    assert str(update.error) == "config.basic.yaml: duplicate domain 'd' in config file"
    ignoring = settings.changed(runtime_ignoredotfiles=True)
    assert [name for name, _ in read_config_files(ignoring)] == ["config.basic.yaml"]
    assert load_configuration(ignoring).error is None


def test_merge_domain_config_setting(tmp_path: Path) -> None:
    config = tmp_path / "ratelimit" / "config"
    write(config / "a.yaml", rules_file("shared"))
    write(config / "b.yaml", rules_file("shared").replace("key: k", "key: other"))
    assert str(load_configuration(directory_settings(tmp_path)).error) == (
        "b.yaml: duplicate domain 'shared' in config file"
    )
    merged = load_configuration(directory_settings(tmp_path, merge_domain_config=True))
    assert merged.rules is not None and list(merged.rules.domains) == ["shared"]


# --- hot reload ------------------------------------------------------------------------------


async def test_watch_root_reloads_on_symlink_swap_only(tmp_path: Path) -> None:
    write(tmp_path / "data" / "v1" / "ratelimit" / "config" / "a.yaml", rules_file("v1"))
    write(tmp_path / "data" / "v2" / "ratelimit" / "config" / "a.yaml", rules_file("v2"))
    write(tmp_path / "data" / "v3" / "ratelimit" / "config" / "a.yaml", rules_file("v3"))
    os.symlink("data/v1", tmp_path / "current")
    provider, updates = await start(watch_root_settings(tmp_path / "current"))
    try:
        assert await updates.next_domains() == ["v1"]  # the initial load, before start returns
        swap_symlink(tmp_path / "current", "data/v2")
        assert await updates.next_domains() == ["v2"]
        # an edit inside the live tree is not a publication: no reload
        write(tmp_path / "data" / "v2" / "ratelimit" / "config" / "a.yaml", rules_file("edited"))
        swap_symlink(tmp_path / "current", "data/v3")
        assert await updates.next_domains() == ["v3"]
    finally:
        await provider.close()


async def test_initial_load_is_delivered_before_start_returns(tmp_path: Path) -> None:
    write(tmp_path / "ratelimit" / "config" / "a.yaml", rules_file("first"))
    provider, updates = await start(directory_settings(tmp_path))
    try:
        assert updates.queue.qsize() == 1
        assert await updates.next_domains() == ["first"]
    finally:
        await provider.close()


async def test_initial_error_is_delivered_too(tmp_path: Path) -> None:
    write(tmp_path / "ratelimit" / "config" / "bad.yaml", "'''\n")
    provider, updates = await start(directory_settings(tmp_path))
    try:
        update = updates.queue.get_nowait()
        assert update.rules is None
        assert str(update.error) == (
            "bad.yaml: error loading config file: yaml: line 2: found unexpected end of stream"
        )
    finally:
        await provider.close()


async def test_directory_mode_reloads_on_add_modify_chmod_and_remove(tmp_path: Path) -> None:
    config = tmp_path / "ratelimit" / "config"
    write(config / "a.yaml", rules_file("a"))
    provider, updates = await start(directory_settings(tmp_path))
    try:
        assert await updates.next_domains() == ["a"]
        write(config / "reload.yaml", rules_file("reload"))
        assert await updates.next_domains() == ["a", "reload"]
        write(config / "reload.yaml", rules_file("renamed"))
        assert await updates.next_domains() == ["a", "renamed"]
        os.chmod(config / "a.yaml", 0o600)
        assert await updates.next_domains() == ["a", "renamed"]
        (config / "reload.yaml").unlink()
        assert await updates.next_domains() == ["a"]
    finally:
        await provider.close()


async def test_failed_reload_then_good_reload(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    config = tmp_path / "ratelimit" / "config"
    write(config / "a.yaml", rules_file("a"))
    provider, updates = await start(directory_settings(tmp_path))
    try:
        assert await updates.next_domains() == ["a"]
        with caplog.at_level(logging.INFO, logger="ratelimit.config"):
            write(config / "b.yaml", rules_file("b").replace("minute", "fortnight"))
            failed = await updates.next()
            assert failed.rules is None
            assert str(failed.error) == "b.yaml: invalid rate limit unit 'fortnight'"
            write(config / "b.yaml", rules_file("b"))
            assert await updates.next_domains() == ["a", "b"]
        messages = [r.getMessage() for r in caplog.records if r.name == "ratelimit.config"]
        assert "Error loading new configuration: b.yaml: invalid rate limit unit 'fortnight'" in (
            messages
        )
        errors = [r for r in caplog.records if r.levelno == logging.ERROR]
        assert len(errors) == 1
    finally:
        await provider.close()


async def test_configmap_update_is_one_reload(tmp_path: Path) -> None:
    config = tmp_path / "ratelimit" / "config"
    configmap(config, "2024_01_01", {"basic.yaml": rules_file("v1")})
    settings = directory_settings(tmp_path, runtime_ignoredotfiles=True)
    provider, updates = await start(settings)
    try:
        assert await updates.next_domains() == ["v1"]
        configmap(config, "2024_01_02", {"basic.yaml": rules_file("v2")})
        assert await updates.next_domains() == ["v2"]
        # The next update is the next publication: the swap above gave no second reload.
        configmap(config, "2024_01_03", {"basic.yaml": rules_file("v3")})
        assert await updates.next_domains() == ["v3"]
    finally:
        await provider.close()


async def test_directory_that_appears_later(tmp_path: Path) -> None:
    provider, updates = await start(directory_settings(tmp_path / "later"))
    try:
        assert await updates.next_domains() == []
        staging = tmp_path / "staging"
        write(staging / "config" / "a.yaml", rules_file("late"))
        (tmp_path / "later").mkdir()
        os.rename(staging, tmp_path / "later" / "ratelimit")
        assert await updates.next_domains() == ["late"]
        write(tmp_path / "later" / "ratelimit" / "config" / "b.yaml", rules_file("later"))
        assert await updates.next_domains() == ["late", "later"]
    finally:
        await provider.close()


async def test_directory_that_is_removed_and_comes_back(tmp_path: Path) -> None:
    config = tmp_path / "ratelimit" / "config"
    write(config / "a.yaml", rules_file("a"))
    provider, updates = await start(directory_settings(tmp_path))
    try:
        assert await updates.next_domains() == ["a"]
        (config / "a.yaml").unlink()
        config.rmdir()
        assert await updates.next_domains() == []
        staging = tmp_path / "staging"
        write(staging / "b.yaml", rules_file("b"))
        os.rename(staging, config)
        assert await updates.next_domains() == ["b"]
    finally:
        await provider.close()


async def test_watch_root_parent_that_appears_later(tmp_path: Path) -> None:
    runtime = tmp_path / "srv" / "runtime_data"
    provider, updates = await start(watch_root_settings(runtime / "current"))
    try:
        assert await updates.next_domains() == []
        staging = tmp_path / "staging"
        write(staging / "v1" / "ratelimit" / "config" / "a.yaml", rules_file("v1"))
        os.symlink("v1", staging / "current")
        (tmp_path / "srv").mkdir()
        os.rename(staging, runtime)
        assert await updates.next_domains() == ["v1"]
    finally:
        await provider.close()


async def test_listener_errors_do_not_stop_the_watcher(tmp_path: Path) -> None:
    config = tmp_path / "ratelimit" / "config"
    write(config / "a.yaml", rules_file("a"))
    seen: asyncio.Queue[ConfigUpdate] = asyncio.Queue()

    def listener(update: ConfigUpdate) -> None:
        seen.put_nowait(update)
        raise RuntimeError("consumer bug")

    provider = FileConfigProvider(directory_settings(tmp_path), listener, step_ms=30)
    await provider.start()
    try:
        await asyncio.wait_for(seen.get(), TIMEOUT)
        write(config / "b.yaml", rules_file("b"))
        update = await asyncio.wait_for(seen.get(), TIMEOUT)
        assert update.rules is not None and sorted(update.rules.domains) == ["a", "b"]
    finally:
        await provider.close()


async def test_close_is_prompt_and_idempotent(tmp_path: Path) -> None:
    provider, _ = await start(directory_settings(tmp_path))
    await asyncio.wait_for(provider.close(), TIMEOUT)
    await provider.close()
