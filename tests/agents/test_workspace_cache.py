"""The workers' workspace cache: content-addressed entries, bounded by bytes, LRU."""

from __future__ import annotations

import pytest

from handlers.agents.execution.workspace_cache import WorkspaceCache


def test_kept_workspaces_are_read_only_and_the_least_recently_used_go_first() -> None:
    cache = WorkspaceCache(max_bytes=100)
    a = cache.put("a", {"main.py": b"x" * 30})
    assert cache.get("a") == {"main.py": b"x" * 30}
    with pytest.raises(TypeError):
        a["other.py"] = b""  # type: ignore[index]
    cache.put("b", {"main.py": b"y" * 30})
    assert cache.get("a") is not None  # a is now the most recently used
    cache.put("c", {"main.py": b"z" * 30})  # over 100 bytes: b goes
    assert cache.get("b") is None
    assert cache.get("a") is not None and cache.get("c") is not None
    assert cache.size_bytes <= 100


def test_a_workspace_larger_than_the_cache_is_not_kept() -> None:
    cache = WorkspaceCache(max_bytes=10)
    kept = cache.put("big", {"data.bin": b"0" * 11})
    assert kept == {"data.bin": b"0" * 11}
    assert cache.get("big") is None and cache.size_bytes == 0
