"""Where released contracts are recorded, and their versions.

A release is a snapshot committed to the repository, not a git tag: the gate then works on any
checkout (CI's clones may be shallow or carry no tags), a reviewer sees a release's exact text
in a plain diff, and cutting one is an ordinary reviewed commit. Layout::

    specs/releases/<name>/<version>/<file>   the released text (agents.openapi.yaml, or proto/)
    specs/releases/<name>/CHANGELOG.md        one section per release, newest last
    specs/releases/proto.version              the working tree's proto contract version

``<name>`` is ``agents`` for ``specs/agents.openapi.yaml`` and ``proto`` for ``specs/proto/``.
An OpenAPI contract's version is its ``info.version``; the proto tree has no such field (its
package suffixes, ``v3`` from upstream Envoy and our ``v1``, are API generations that a release
of this project does not move), so its version is the one line of ``proto.version``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import yaml

OPENAPI_SUFFIX = ".openapi.yaml"
PROTO = "proto"
PROTO_VERSION_FILE = "proto.version"
# Bigger than any contract here by far; a larger file is a mistake, not a spec.
MAX_SPEC_BYTES = 8 * 1024 * 1024
# libyaml's loader when PyYAML has it: the agents spec loads five times faster.
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
VERSION = re.compile(r"(0|[1-9]\d{0,5})\.(0|[1-9]\d{0,5})\.(0|[1-9]\d{0,5})")


class ContractError(ValueError):
    """A contract or a release that cannot be read: says which file and why."""


@dataclass(frozen=True, order=True)
class Version:
    major: int
    minor: int
    patch: int

    @classmethod
    def parse(cls, text: str, where: str) -> Version:
        match = VERSION.fullmatch(text.strip())
        if match is None:
            raise ContractError(f"{where}: version {text.strip()[:40]!r} is not MAJOR.MINOR.PATCH")
        return cls(int(match[1]), int(match[2]), int(match[3]))

    def __str__(self) -> str:
        return f"{self.major}.{self.minor}.{self.patch}"

    def allows_breaking_since(self, released: Version) -> bool:
        """A major bump; below 1.0.0 a minor bump counts as one (semver's 0.y rule)."""
        if released.major == 0 and self.major == 0:
            return self.minor > released.minor
        return self.major > released.major

    def next_major(self) -> Version:
        if self.major == 0:
            return Version(0, self.minor + 1, 0)
        return Version(self.major + 1, 0, 0)


@dataclass(frozen=True)
class Contract:
    """One contract of the working tree: ``source`` is the spec file or the proto directory."""

    name: str
    kind: Literal["openapi", "proto"]
    source: Path
    version: Version


def read_text(path: Path) -> str:
    try:
        size = path.stat().st_size
        if size > MAX_SPEC_BYTES:
            raise ContractError(f"{path}: {size} bytes, more than {MAX_SPEC_BYTES}")
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ContractError(f"{path}: {exc}") from exc


def load_openapi(path: Path) -> dict[str, Any]:
    """An OpenAPI document as data (YAML anchors expanded)."""
    try:
        document = yaml.load(read_text(path), Loader=_LOADER)
    except yaml.YAMLError as exc:
        raise ContractError(f"{path}: not YAML: {exc}") from exc
    if not isinstance(document, dict):
        raise ContractError(f"{path}: not an OpenAPI document (no mapping at the top)")
    return document


def openapi_version(document: dict[str, Any], where: str) -> Version:
    info = document.get("info")
    version = info.get("version") if isinstance(info, dict) else None
    if not isinstance(version, str):
        raise ContractError(f"{where}: info.version is missing or not a string")
    return Version.parse(version, f"{where} info.version")


def contracts(specs: Path, releases: Path) -> list[Contract]:
    """The working tree's contracts, each with its current version."""
    found: list[Contract] = []
    for spec in sorted(specs.glob(f"*{OPENAPI_SUFFIX}")):
        name = spec.name.removesuffix(OPENAPI_SUFFIX)
        version = openapi_version(load_openapi(spec), str(spec))
        found.append(Contract(name, "openapi", spec, version))
    if (specs / PROTO).is_dir():
        version_file = releases / PROTO_VERSION_FILE
        if not version_file.is_file():
            raise ContractError(f"{version_file} is missing: it holds the proto contract's version")
        version = Version.parse(read_text(version_file), str(version_file))
        found.append(Contract(PROTO, "proto", specs / PROTO, version))
    return found


def released_names(releases: Path) -> list[str]:
    """Every contract name that has at least one release."""
    if not releases.is_dir():
        return []
    return sorted(p.name for p in releases.iterdir() if p.is_dir() and released_versions(p))


def released_versions(history: Path) -> list[Version]:
    """The versions released under ``specs/releases/<name>/``, oldest first."""
    if not history.is_dir():
        return []
    folders = [p for p in history.iterdir() if p.is_dir() and VERSION.fullmatch(p.name)]
    return sorted(Version.parse(p.name, str(p)) for p in folders)


def snapshot(releases: Path, name: str, kind: str, version: Version) -> Path:
    """The released file (or proto directory) of ``name`` at ``version``."""
    folder = releases / name / str(version)
    return folder / PROTO if kind == "proto" else folder / f"{name}{OPENAPI_SUFFIX}"


def changelog_path(releases: Path, name: str) -> Path:
    return releases / name / "CHANGELOG.md"
