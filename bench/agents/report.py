"""What the parts of the benchmark hand back: figures, verdicts against targets, the table."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Report", "Verdict", "percentile", "print_table", "say"]


@dataclass(frozen=True)
class Verdict:
    """One figure of the table: its value, its target (``None``: reported only) and whether the
    target is met."""

    name: str
    value: float
    unit: str
    target: str | None = None
    passed: bool | None = None

    @property
    def outcome(self) -> str:
        if self.passed is None:
            return "-"
        return "PASS" if self.passed else "FAIL"


@dataclass
class Report:
    """A part's figures (for ``--json``) and the rows it adds to the table."""

    figures: dict[str, Any] = field(default_factory=dict)
    verdicts: list[Verdict] = field(default_factory=list)


def percentile(values: Sequence[float], fraction: float) -> float:
    """The nearest-rank percentile of ``values`` (``fraction`` 0.5: the median)."""
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(fraction * (len(ordered) - 1))))
    return ordered[index]


def say(text: str) -> None:
    """Print a progress line at once."""
    print(text, flush=True)


def print_table(verdicts: Sequence[Verdict]) -> None:
    """The figures with their targets and PASS/FAIL, one row each."""
    width = max([len(v.name) for v in verdicts] + [6])
    say(f"{'figure':<{width}}  {'value':>10}  {'unit':<7}  {'target':<10}  result")
    for v in verdicts:
        target = v.target or "(none)"
        say(f"{v.name:<{width}}  {v.value:10.2f}  {v.unit:<7}  {target:<10}  {v.outcome}")
    judged = [v for v in verdicts if v.passed is not None]
    passed = sum(bool(v.passed) for v in judged)
    say(f"\ntargets: {passed} PASS, {len(judged) - passed} FAIL")
