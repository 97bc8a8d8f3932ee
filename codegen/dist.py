"""``python -m codegen.dist [--out DIR]``: one installable wheel per API's generated client.

``make dist-clients`` runs it. For each ``specs/<api>.openapi.yaml`` it packs the client that
``make generate`` wrote under ``generated/<api>/`` (``client.py``, ``models.py`` and, where the
spec names one, ``client_extensions.py``) into the package ``<api>_client`` of the
distribution ``<api>-client``, versioned as the spec's ``info.version``, so that another team
installs it with pip instead of copying files::

    pip install dist/clients/ratelimit_client-1.0.0-py3-none-any.whl
    from ratelimit_client import RatelimitClient

The wheel holds no server code (no ``handlers``, ``routes`` or ``generated`` modules) and
depends only on httpx and pydantic: the generated modules' ``generated.<api>`` imports are
rewritten to the package, and the result is checked to import nothing else of this
project. The wheel is written directly with ``zipfile`` per the binary distribution format
(``METADATA``, ``WHEEL``, ``RECORD`` with sha256 digests), so building needs no build
backend, and it is reproducible: the same inputs give the same bytes.
"""

from __future__ import annotations

import argparse
import ast
import base64
import hashlib
import re
import sys
import zipfile
from dataclasses import dataclass
from pathlib import Path

from codegen.spec import load_api

__all__ = ["DEPENDENCIES", "REQUIRES_PYTHON", "ClientWheel", "build_wheel", "build_wheels"]

ROOT = Path(__file__).resolve().parent.parent

# What the generated code needs: ``enum.StrEnum`` (Python 3.11), ``pydantic.MISSING``
# (pydantic 2.12); httpx 0.28 is the series the clients are tested with.
REQUIRES_PYTHON = ">=3.11"
DEPENDENCIES = ("httpx>=0.28,<1", "pydantic>=2.12,<3")

# The generated modules a client needs, in the order they are packed; the optional ones
# exist only for APIs whose spec names them.
CLIENT_MODULES = ("client.py", "models.py")
OPTIONAL_MODULES = ("client_extensions.py",)

# This repository's packages: a packed module importing one of them would fail where installed.
PROJECT_PACKAGES = frozenset({"generated", "handlers", "codegen", "webrest", "tests"})

# A fixed timestamp for every archive member: the wheel's bytes depend only on its contents.
ZIP_TIMESTAMP = (2000, 1, 1, 0, 0, 0)

# PEP 440 public versions, the subset a spec's info.version may use.
VERSION = re.compile(r"^\d+(\.\d+)*((a|b|rc)\d+)?(\.post\d+)?(\.dev\d+)?$")


class DistError(Exception):
    """A client that cannot be packaged: the message says which and why."""


@dataclass(frozen=True)
class ClientWheel:
    """One built wheel: the distribution, its version and the file."""

    api: str
    distribution: str
    version: str
    path: Path


def _rewrite_imports(source: str, api: str, package: str, filename: str) -> str:
    """``source`` with its ``generated.<api>`` imports pointing at ``package``; fails when
    the module would still import anything of this project."""
    pattern = re.compile(rf"^(\s*from\s+)generated\.{re.escape(api)}(?=[\s.])", re.MULTILINE)
    rewritten = pattern.sub(rf"\g<1>{package}", source)
    for node in ast.walk(ast.parse(rewritten, filename)):
        if isinstance(node, ast.ImportFrom):
            names = [node.module or ""] if node.level == 0 else []
        elif isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        else:
            continue
        for name in names:
            if name.split(".")[0] in PROJECT_PACKAGES:
                raise DistError(
                    f"{filename}:{node.lineno}: imports {name!r}, which the {package} wheel "
                    "does not hold"
                )
    return rewritten


def _public_names(client_source: str) -> list[str]:
    """The client module's ``__all__``: what the package re-exports."""
    for node in ast.parse(client_source).body:
        if isinstance(node, ast.Assign) and any(
            isinstance(target, ast.Name) and target.id == "__all__" for target in node.targets
        ):
            value = ast.literal_eval(node.value)
            if isinstance(value, list) and all(isinstance(name, str) for name in value):
                return list(value)
    raise DistError("client.py has no literal __all__ to re-export")


def _init_module(package: str, title: str, version: str, names: list[str]) -> str:
    imports = "".join(f"    {name},\n" for name in names)
    exported = "".join(f"    {name!r},\n" for name in [*names, "models"])
    return (
        f'"""{title}: the generated client, as the ``{package}`` package (version {version}).\n\n'
        'Built from the service\'s OpenAPI contract by `make dist-clients`; do not edit."""\n\n'
        f"from {package} import models\n"
        f"from {package}.client import (\n{imports})\n\n"
        f'__version__ = "{version}"\n\n'
        f"__all__ = [\n{exported}]\n"
    )


def _readme(distribution: str, package: str, title: str, version: str, names: list[str]) -> str:
    sync_client = next((n for n in names if n.endswith("Client") and "Async" not in n), "")
    return (
        f"# {distribution} {version}\n\n"
        f"The Python client of {title}, generated from its OpenAPI contract (version "
        f"{version}). It needs only httpx and pydantic.\n\n"
        "```python\n"
        f"from {package} import {sync_client}, models\n\n"
        f'with {sync_client}(base_url="http://127.0.0.1:8000") as client:\n'
        "    ...\n"
        "```\n\n"
        f"Public names: {', '.join(f'`{n}`' for n in names)}; the request and response "
        f"models are in `{package}.models`.\n"
    )


def _metadata(distribution: str, version: str, title: str, readme: str) -> str:
    lines = [
        "Metadata-Version: 2.1",
        f"Name: {distribution}",
        f"Version: {version}",
        f"Summary: Python client of {title} (generated from its OpenAPI contract)",
        f"Requires-Python: {REQUIRES_PYTHON}",
        *(f"Requires-Dist: {requirement}" for requirement in DEPENDENCIES),
        "Description-Content-Type: text/markdown",
    ]
    return "\n".join(lines) + "\n\n" + readme


def _record_line(name: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}"


def _write_zip(path: Path, members: list[tuple[str, bytes]]) -> None:
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name, data in members:
            info = zipfile.ZipInfo(name, date_time=ZIP_TIMESTAMP)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            archive.writestr(info, data)


def build_wheel(spec: Path, generated: Path, out: Path) -> ClientWheel:
    """The wheel of ``spec``'s client, from its modules under ``generated``, written to
    ``out``."""
    api = load_api(spec)
    source_dir = generated / api.package
    if not (source_dir / "client.py").is_file():
        raise DistError(f"{source_dir}/client.py is missing: run `make generate` first")
    version = api.version
    if not VERSION.match(version):
        raise DistError(
            f"{spec.name}: info.version {version!r} is not a PEP 440 version (like 1.2.0)"
        )
    package = f"{api.package}_client"
    distribution = f"{api.package.replace('_', '-')}-client"
    title = api.title

    modules: list[tuple[str, str]] = []
    for filename in CLIENT_MODULES + OPTIONAL_MODULES:
        file = source_dir / filename
        if not file.is_file():
            if filename in OPTIONAL_MODULES:
                continue
            raise DistError(f"{file} is missing: run `make generate` first")
        source = file.read_text(encoding="utf-8")
        modules.append((filename, _rewrite_imports(source, api.package, package, filename)))
    names = _public_names(dict(modules)["client.py"])
    readme = _readme(distribution, package, title, version, names)

    dist_info = f"{package}-{version}.dist-info"
    members: list[tuple[str, bytes]] = [
        (f"{package}/__init__.py", _init_module(package, title, version, names).encode()),
        *((f"{package}/{name}", text.encode()) for name, text in modules),
        (f"{package}/py.typed", b""),
        (f"{dist_info}/METADATA", _metadata(distribution, version, title, readme).encode()),
        (
            f"{dist_info}/WHEEL",
            b"Wheel-Version: 1.0\nGenerator: codegen.dist\nRoot-Is-Purelib: true\n"
            b"Tag: py3-none-any\n",
        ),
        (f"{dist_info}/top_level.txt", f"{package}\n".encode()),
    ]
    record = "".join(_record_line(name, data) + "\n" for name, data in members)
    members.append((f"{dist_info}/RECORD", (record + f"{dist_info}/RECORD,,\n").encode()))

    out.mkdir(parents=True, exist_ok=True)
    path = out / f"{package}-{version}-py3-none-any.whl"
    _write_zip(path, members)
    return ClientWheel(api.package, distribution, version, path)


def build_wheels(specs: Path, generated: Path, out: Path) -> list[ClientWheel]:
    """A wheel for every ``*.openapi.yaml`` under ``specs``, written to ``out``."""
    wheels = [build_wheel(spec, generated, out) for spec in sorted(specs.glob("*.openapi.yaml"))]
    if not wheels:
        raise DistError(f"no *.openapi.yaml under {specs}")
    return wheels


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m codegen.dist", description=__doc__)
    parser.add_argument("--specs", type=Path, default=ROOT / "specs")
    parser.add_argument("--generated", type=Path, default=ROOT / "generated")
    parser.add_argument("--out", type=Path, default=ROOT / "dist" / "clients")
    args = parser.parse_args(argv)
    try:
        wheels = build_wheels(args.specs, args.generated, args.out)
    except DistError as error:
        print(f"codegen.dist: {error}", file=sys.stderr)
        return 1
    for wheel in wheels:
        print(f"codegen.dist: {wheel.distribution} {wheel.version} -> {wheel.path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
