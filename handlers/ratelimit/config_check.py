"""``ratelimit-config-check``: load a directory of rule files offline and report the outcome.

Flags follow Go's ``flag`` package, as upstream's checker: ``-config_dir DIR`` (or
``-config_dir=DIR``, ``--config_dir``) and ``-merge_domain_configs`` (a boolean: also
``-merge_domain_configs=false``). Every backend decides every rule (issue 23's algorithms,
windows and several limits included), so a file that loads here loads in any service.
Exit status 0 when the files load, 1 when they do not, 2 for bad usage.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence

from handlers.ratelimit.config.model import DescriptorNode
from handlers.ratelimit.config.parse import ConfigError, load_rule_set
from handlers.ratelimit.settings import parse_bool

USAGE = """\
Usage of ratelimit-config-check:
  -config_dir string
    \tpath to directory containing rate limit configs
  -merge_domain_configs
    \twhether to merge configurations, referencing the same domain
"""


class _UsageError(Exception):
    pass


def _parse_flags(argv: Sequence[str]) -> tuple[str, bool] | None:
    """``(config_dir, merge)``; None when help was asked for. Raises :class:`_UsageError`."""
    config_dir = ""
    merge = False
    arguments = list(argv)
    while arguments:
        argument = arguments.pop(0)
        if argument == "--" or not argument.startswith("-") or argument == "-":
            break  # Go's flag package stops at the first non-flag argument
        name, has_value, value = argument.lstrip("-").partition("=")
        if name in ("h", "help"):
            return None
        if name == "config_dir":
            if not has_value:
                if not arguments:
                    raise _UsageError("flag needs an argument: -config_dir")
                value = arguments.pop(0)
            config_dir = value
        elif name == "merge_domain_configs":
            try:
                merge = parse_bool(value) if has_value else True
            except ValueError:
                raise _UsageError(
                    f'invalid boolean value "{value}" for -merge_domain_configs: parse error'
                ) from None
        else:
            raise _UsageError(f"flag provided but not defined: -{name}")
    return config_dir, merge


def _read_directory(directory: str) -> list[tuple[str, bytes]]:
    """Every regular file directly in ``directory`` (symlinks followed), named by its path."""
    files: list[tuple[str, bytes]] = []
    with os.scandir(directory) as entries:
        for entry in sorted(entries, key=lambda entry: entry.name):
            if not entry.is_file():
                continue
            path = os.path.join(directory, entry.name)
            with open(path, "rb") as handle:
                files.append((path, handle.read()))
    return files


def main(argv: list[str] | None = None) -> int:
    """Run the checker; returns the process exit status."""
    try:
        flags = _parse_flags(sys.argv[1:] if argv is None else argv)
    except _UsageError as error:
        print(error, file=sys.stderr)
        print(USAGE, end="", file=sys.stderr)
        return 2
    if flags is None:
        print(USAGE, end="", file=sys.stderr)
        return 0
    config_dir, merge = flags
    try:
        files = _read_directory(config_dir)
    except OSError as error:
        reason = (error.strerror or str(error)).lower()
        print(
            f"error opening directory {config_dir}: open {config_dir}: {reason}",
            file=sys.stderr,
        )
        return 1
    try:
        rule_set = load_rule_set(files, merge_domains=merge)
    except ConfigError as error:
        print(f"error loading rate limit configs: {error}", file=sys.stderr)
        return 1
    for domain, rules in rule_set.domains.items():
        print(f"loaded domain: {domain} ({_count_limits(rules.root)} rate limits)")
    return 0


def _count_limits(node: DescriptorNode) -> int:
    return sum(
        (child.limit is not None) + len(child.more_limits) + _count_limits(child)
        for child in node.children.values()
    )


if __name__ == "__main__":
    sys.exit(main())
