"""The breaking-change gate: each contract against its latest release, a verdict, a report and
a changelog entry.

A contract passes when it has no breaking change since its latest release, or when its version
allows them (a major bump, or a minor bump below 1.0.0). A contract that is new (no release
yet) passes; a released contract that is gone, or whose version went backwards, fails.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from codegen.contracts.changes import Change, Severity
from codegen.contracts.openapi_changes import openapi_changes
from codegen.contracts.proto_changes import proto_changes
from codegen.contracts.releases import (
    Contract,
    Version,
    contracts,
    load_openapi,
    released_names,
    released_versions,
    snapshot,
)


@dataclass
class Verdict:
    """What the gate says about one contract."""

    name: str
    label: str
    current: Version | None
    released: Version | None
    changes: list[Change] = field(default_factory=list)
    problem: str | None = None

    @property
    def ok(self) -> bool:
        return self.problem is None

    def of(self, severity: Severity) -> list[Change]:
        return [c for c in self.changes if c.severity is severity]


def display(path: Path) -> str:
    """A path as the reviewer typed it: relative to the working directory when inside it."""
    absolute = path.absolute()
    cwd = Path.cwd()
    return str(absolute.relative_to(cwd)) if absolute.is_relative_to(cwd) else str(absolute)


def check(specs: Path, releases: Path) -> list[Verdict]:
    """The verdict of every contract of ``specs`` and of every released one."""
    # The comparisons wait on node and buf subprocesses: run them side by side.
    with ThreadPoolExecutor(max_workers=4) as pool:
        verdicts = list(pool.map(lambda c: compare(c, releases), contracts(specs, releases)))
    present = {v.name for v in verdicts}
    for name in released_names(releases):
        if name not in present:
            last = released_versions(releases / name)[-1]
            verdicts.append(
                Verdict(
                    name,
                    display(releases / name),
                    None,
                    last,
                    problem=(
                        f"contract {name} {last} was released and is gone from {display(specs)}: "
                        "its clients break (to retire it on purpose, delete its releases too)"
                    ),
                )
            )
    return verdicts


def compare(contract: Contract, releases: Path) -> Verdict:
    """One contract against its latest release."""
    label = display(contract.source)
    history = released_versions(releases / contract.name)
    if not history:
        return Verdict(contract.name, label, contract.version, None)
    released = history[-1]
    before = snapshot(releases, contract.name, contract.kind, released)
    if contract.kind == "proto":
        changes = proto_changes(before, contract.source, label)
    else:
        changes = openapi_changes(load_openapi(before), load_openapi(contract.source))
    verdict = Verdict(contract.name, label, contract.version, released, changes)
    breaking = verdict.of(Severity.BREAKING)
    if contract.version < released:
        verdict.problem = f"version {contract.version} is below the released {released}"
    elif breaking and not contract.version.allows_breaking_since(released):
        where = "info.version" if contract.kind == "openapi" else "specs/releases/proto.version"
        verdict.problem = (
            f"{len(breaking)} breaking change(s) since release {released}, but the version is "
            f"{contract.version}: revert them, or bump {where} to {released.next_major()} "
            "(a major release)"
        )
    return verdict


def render_report(verdicts: list[Verdict]) -> str:
    """The reviewer's report: per contract its verdict, then each change, breaking first."""
    lines: list[str] = []
    for verdict in verdicts:
        since = f"since {verdict.released}" if verdict.released else "(no release yet)"
        status = "FAIL" if not verdict.ok else "ok"
        lines.append(f"{status}: {verdict.label} {verdict.current or '(removed)'} {since}")
        if verdict.problem:
            lines.append(f"  {verdict.problem}")
        for title, severity in (
            ("breaking", Severity.BREAKING),
            ("non-breaking", Severity.NON_BREAKING),
            ("documentation/examples", Severity.ANNOTATION),
        ):
            found = verdict.of(severity)
            if found:
                lines.append(f"  {title} ({len(found)}):")
                lines += [f"    {change.line()}" for change in found]
        if verdict.ok and verdict.changes and verdict.current == verdict.released:
            lines.append(
                f"  note: changed since {verdict.released} at the same version; bump it "
                "before the next release (make release-specs)"
            )
    failed = [v.name for v in verdicts if not v.ok]
    lines.append(
        f"check-breaking: {len(verdicts)} contract(s), "
        + (f"FAILED: {', '.join(failed)}" if failed else "no unallowed breaking change")
    )
    return "\n".join(lines) + "\n"


def changelog_entry(verdict: Verdict, date: str) -> str:
    """The Markdown section ``make release-specs`` appends to the contract's CHANGELOG.md."""
    since = f" (since {verdict.released})" if verdict.released else " (first release)"
    lines = [f"## {verdict.name} {verdict.current} — {date}{since}", ""]
    sections = (
        ("Breaking", Severity.BREAKING),
        ("Non-breaking", Severity.NON_BREAKING),
        ("Documentation and examples", Severity.ANNOTATION),
    )
    for title, severity in sections:
        found = verdict.of(severity)
        if found:
            lines.append(f"### {title}")
            lines += [f"- {change.location}: {change.message}" for change in found]
            lines.append("")
    if not verdict.changes:
        lines += ["No changes." if verdict.released else "Initial release.", ""]
    return "\n".join(lines) + "\n"
