"""What the parts of the benchmark hand back: figures, verdicts against targets, the table."""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from bench.percentiles import percentile
from bench.ratelimit.servers import BenchError

__all__ = ["Part", "Report", "Verdict", "percentile", "print_table", "run_parts", "say"]


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


Part = Callable[[argparse.Namespace, Path], Report]
"""A part of a benchmark: its options and a temporary folder of its own → its report."""


def run_parts(
    name: str,
    args: argparse.Namespace,
    parts: Mapping[str, Part],
    precondition: Callable[[], str | None] = lambda: None,
) -> int:
    """Run ``args.part_list`` of ``parts``, print the table and write ``args.json`` when given;
    1 when ``precondition`` names a reason not to run or a part could not run."""
    say(
        f"{name}: {', '.join(args.part_list)}; {'quick' if args.quick else 'full'} run; "
        f"{os.cpu_count()} CPUs; Python {platform.python_version()}"
    )
    if (reason := precondition()) is not None:
        print(f"FAILED: {reason}", file=sys.stderr)
        return 1
    reports: dict[str, Report] = {}
    try:
        with tempfile.TemporaryDirectory(prefix=f"{name.replace('.', '-')}-") as tmp:
            for part in args.part_list:
                folder = Path(tmp) / part
                folder.mkdir()
                reports[part] = parts[part](args, folder)
    except BenchError as error:
        print(f"FAILED: {error}", file=sys.stderr)
        return 1
    say("")
    print_table([v for report in reports.values() for v in report.verdicts])
    if args.json is not None:
        doc = {
            part: {"figures": r.figures, "table": [asdict(v) for v in r.verdicts]}
            for part, r in reports.items()
        }
        args.json.write_text(json.dumps(doc, indent=2) + "\n")
        say(f"results written to {args.json}")
    return 0
