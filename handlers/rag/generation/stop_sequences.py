"""Ends a stream of text deltas before the first stop sequence, without ever sending any part
of it: text that could be the start of a stop sequence is held back until the next delta
shows whether it is."""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["StopSequences"]


class StopSequences:
    """Feed it the deltas in order; it answers what may be sent now. Once a stop sequence is
    found, :attr:`stopped` is True and every later delta is dropped; at the end of a stream
    that did not stop, :meth:`flush` gives the text still held back.

    Cost per delta: a search of the held-back text plus the delta, which is bounded by the
    longest stop sequence plus the delta's length."""

    def __init__(self, stops: Sequence[str]) -> None:
        if any(not stop for stop in stops):
            raise ValueError("a stop sequence must not be empty")
        self._stops = tuple(stops)
        self._held = ""
        self.stopped = False

    def feed(self, delta: str) -> str:
        """The part of ``held text + delta`` that can be sent now."""
        if self.stopped:
            return ""
        text = self._held + delta
        if not self._stops:
            return text
        found = [index for stop in self._stops if (index := text.find(stop)) >= 0]
        if found:
            self.stopped = True
            self._held = ""
            return text[: min(found)]
        keep = self._longest_partial_stop(text)
        self._held = text[len(text) - keep :] if keep else ""
        return text[: len(text) - keep]

    def flush(self) -> str:
        """The held-back text, at the end of a stream that did not stop (no stop follows)."""
        held, self._held = self._held, ""
        return "" if self.stopped else held

    def _longest_partial_stop(self, text: str) -> int:
        """Length of the longest end of ``text`` that a stop sequence starts with."""
        longest = 0
        for stop in self._stops:
            for size in range(min(len(stop) - 1, len(text)), longest, -1):
                if text.endswith(stop[:size]):
                    longest = size
                    break
        return longest
