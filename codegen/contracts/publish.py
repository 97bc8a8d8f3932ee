"""Cutting a release: snapshot each contract whose current version has none, and append its
changelog entry.

A release is refused while the gate fails, and when a contract's current version is already
released with other content: a released snapshot never changes, so the version must move.
"""

from __future__ import annotations

import filecmp
import shutil
from pathlib import Path

from codegen.contracts.gate import Verdict, changelog_entry, check, display
from codegen.contracts.releases import (
    PROTO,
    ContractError,
    changelog_path,
    contracts,
    released_versions,
    snapshot,
)


def _same_tree(left: Path, right: Path) -> bool:
    compared = filecmp.dircmp(left, right)
    if compared.left_only or compared.right_only or compared.funny_files:
        return False
    _, mismatch, errors = filecmp.cmpfiles(left, right, compared.common_files, shallow=False)
    if mismatch or errors:
        return False
    return all(_same_tree(left / d, right / d) for d in compared.common_dirs)


def release(specs: Path, releases: Path, date: str) -> list[str]:
    """Record every unreleased contract version; returns one line per contract."""
    verdicts = {v.name: v for v in check(specs, releases)}
    failed = [v for v in verdicts.values() if not v.ok]
    if failed:
        raise ContractError(
            "the gate fails, no release: " + "; ".join(f"{v.name}: {v.problem}" for v in failed)
        )
    done: list[str] = []
    for contract in contracts(specs, releases):
        target = snapshot(releases, contract.name, contract.kind, contract.version)
        if contract.version in released_versions(releases / contract.name):
            same = (
                _same_tree(contract.source, target)
                if contract.kind == PROTO
                else filecmp.cmp(contract.source, target, shallow=False)
            )
            if not same:
                raise ContractError(
                    f"{contract.name} {contract.version} is already released with other "
                    f"content ({target}): bump the version"
                )
            done.append(f"{contract.name} {contract.version}: already released")
            continue
        verdict: Verdict = verdicts[contract.name]
        target.parent.mkdir(parents=True, exist_ok=True)
        if contract.kind == PROTO:
            shutil.copytree(contract.source, target, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copyfile(contract.source, target)
        log = changelog_path(releases, contract.name)
        heading = "" if log.exists() else f"# {contract.name}: released contract versions\n\n"
        with log.open("a", encoding="utf-8") as out:
            out.write(heading + changelog_entry(verdict, date))
        done.append(f"{contract.name} {contract.version}: released to {display(target)}")
    return done
