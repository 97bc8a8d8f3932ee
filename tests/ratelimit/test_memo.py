"""``remember``: a bounded memo is emptied when full, then holds the new entry."""

from __future__ import annotations

from handlers.ratelimit.memo import remember


def test_a_full_memo_starts_over_with_the_new_entry() -> None:
    memo: dict[str, int] = {}
    assert remember(memo, "a", 1, 2) == 1
    assert remember(memo, "b", 2, 2) == 2
    assert memo == {"a": 1, "b": 2}
    assert remember(memo, "c", 3, 2) == 3
    assert memo == {"c": 3}
