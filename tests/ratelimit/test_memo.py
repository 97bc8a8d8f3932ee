"""``remember``: a bounded memo is emptied when full, then holds the new entry; ``ParsedBodies``
parses a body once, keeps neither failures nor large bodies, and is bounded the same way."""

from __future__ import annotations

import pytest

from handlers.ratelimit.memo import ParsedBodies, remember


def test_a_full_memo_starts_over_with_the_new_entry() -> None:
    memo: dict[str, int] = {}
    assert remember(memo, "a", 1, 2) == 1
    assert remember(memo, "b", 2, 2) == 2
    assert memo == {"a": 1, "b": 2}
    assert remember(memo, "c", 3, 2) == 3
    assert memo == {"c": 3}


def test_a_body_is_parsed_once_unless_it_fails_or_is_large() -> None:
    calls: list[bytes] = []

    def parse(body: bytes) -> str:
        calls.append(body)
        if body == b"bad":
            raise ValueError("bad body")
        return body.decode().upper()

    bodies = ParsedBodies(parse, max_body_bytes=4, size=2)
    assert bodies.get(b"ab") == "AB"
    assert bodies.get(b"ab") == "AB"
    assert calls == [b"ab"]
    for _ in range(2):
        with pytest.raises(ValueError, match="bad body"):
            bodies.get(b"bad")
        assert bodies.get(b"large") == "LARGE"
    assert calls == [b"ab", b"bad", b"large", b"bad", b"large"]
    assert b"ab" in bodies and b"bad" not in bodies and b"large" not in bodies
    bodies.get(b"cd")
    bodies.get(b"ef")  # a third body: the memo starts over
    assert len(bodies) == 1 and b"ef" in bodies
