"""``python -m codegen.contracts check|release|changelog``.

- ``check`` (``make check-breaking``): the report of every contract against its latest
  release; exit 1 when a breaking change is not allowed by the version, 2 when a tool or a
  file cannot be used.
- ``changelog``: the entries a release would append now, in Markdown (nothing is written).
- ``release`` (``make release-specs``): snapshot and changelog for every unreleased version.
"""

from __future__ import annotations

import argparse
import datetime
import sys
from pathlib import Path

from codegen.contracts.gate import changelog_entry, check, render_report
from codegen.contracts.publish import release
from codegen.contracts.releases import ContractError
from codegen.contracts.tools import ROOT, ToolError


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m codegen.contracts", description=__doc__)
    parser.add_argument("command", choices=("check", "changelog", "release"))
    parser.add_argument("--specs", type=Path, default=ROOT / "specs", help="the contracts")
    parser.add_argument(
        "--releases", type=Path, help="released snapshots (default: <specs>/releases)"
    )
    args = parser.parse_args(argv)
    specs: Path = args.specs
    releases: Path = args.releases or specs / "releases"
    today = datetime.datetime.now(datetime.UTC).date().isoformat()
    try:
        if args.command == "release":
            for line in release(specs, releases, today):
                print(f"release-specs: {line}")
            return 0
        verdicts = check(specs, releases)
        if args.command == "changelog":
            for verdict in verdicts:
                if verdict.current is not None:
                    sys.stdout.write(changelog_entry(verdict, today))
            return 0
        sys.stdout.write(render_report(verdicts))
        return 0 if all(v.ok for v in verdicts) else 1
    except (ContractError, ToolError) as exc:
        print(f"check-breaking: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
