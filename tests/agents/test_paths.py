"""Safe relative workspace paths."""

from __future__ import annotations

import pytest

from handlers.agents.domain.paths import collision, join_prefix, safe_path
from webrest import BadRequest


@pytest.mark.parametrize(
    "path",
    [
        "main.py",
        "prompts/system.md",
        "a/b/c.txt",
        "with space (1).txt",
        "x" * 255,
        "a/" * 255 + "b",
    ],
)
def test_safe_paths_are_kept(path: str) -> None:
    assert safe_path(path, ("query", "path")) == path


@pytest.mark.parametrize(
    ("path", "reason"),
    [
        ("", "empty"),
        ("../x", "'..'"),
        ("a/..", "'..'"),
        ("./a", "'.'"),
        ("/abs", "absolute"),
        ("a\\b", "backslash"),
        ("a\x00b", "NUL"),
        ("a\nb", "control"),
        ("a//b", "empty segment"),
        ("a/", "empty segment"),
        ("a" * 256, "segment is longer"),
        ("a/" * 256 + "b", "longer than 512"),
        ("é" * 257, "longer than 512"),
    ],
)
def test_unsafe_paths_are_400_naming_field_and_path(path: str, reason: str) -> None:
    with pytest.raises(BadRequest) as caught:
        safe_path(path, ("body", "files", 3, "path"))
    (detail,) = caught.value.details
    assert detail.loc == ("body", "files", 3, "path")
    assert reason in detail.msg and repr(path) in detail.msg


def test_prefix_is_a_folder_joined_with_the_path() -> None:
    assert join_prefix(None, "a.txt") == "a.txt"
    assert join_prefix("prompts/", "system.md") == "prompts/system.md"
    assert join_prefix("prompts", "system.md") == "prompts/system.md"
    with pytest.raises(BadRequest) as caught:
        join_prefix("../up/", "a.txt")
    assert caught.value.details[0].loc == ("query", "prefix")


def test_collisions_between_a_file_and_a_folder() -> None:
    assert collision("a/b", ["a"]) == "a"
    assert collision("a", ["a/b/c"]) == "a/b/c"
    assert collision("a", ["a", "ab", "b/a"]) is None
    assert collision("ab/c", ["a"]) is None
