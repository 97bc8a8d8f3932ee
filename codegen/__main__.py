"""``python -m codegen [--check]``: regenerate ``generated/`` from ``specs/``, and
``docs/settings.md`` from the services' settings classes.

With ``--check``, generate into a scratch directory and fail (exit 1, with a diff) when
``generated/`` or ``docs/settings.md`` differs: what ``make check-generated`` runs in CI.
"""

from __future__ import annotations

import argparse
import difflib
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from codegen.protos import generate_protos
from codegen.render import render_api
from codegen.settings_docs import render_settings_table
from codegen.spec import load_api

ROOT = Path(__file__).resolve().parent.parent


def generate(specs: Path, output: Path) -> list[Path]:
    """Everything ``generated/`` holds, written under ``output``; returns the files."""
    written: list[Path] = []
    output.mkdir(parents=True, exist_ok=True)
    (output / "__init__.py").write_text(
        '"""Code generated from specs/ by `make generate`; never edited by hand."""\n',
        encoding="utf-8",
    )
    written.append(output / "__init__.py")
    for spec in sorted(specs.glob("*.openapi.yaml")):
        api = load_api(spec)
        print(f"codegen: {spec.relative_to(specs.parent)} -> generated/{api.package}/", flush=True)
        written += render_api(api, output / api.package)
    if (specs / "proto").is_dir():
        print("codegen: specs/proto -> generated/proto/", flush=True)
        written += generate_protos(specs / "proto", output / "proto")
    _format([p for p in written if p.suffix == ".py"])
    return written


def _format(files: list[Path]) -> None:
    ruff = Path(sys.executable).with_name("ruff")
    if not files:
        return
    subprocess.run(
        [str(ruff), "format", "--quiet", "--line-length", "100", *map(str, files)], check=True
    )


def _tree(root: Path) -> dict[str, bytes]:
    return {
        str(path.relative_to(root)): path.read_bytes()
        for path in sorted(root.rglob("*"))
        if path.is_file() and "__pycache__" not in path.parts
    }


def check(specs: Path, generated: Path) -> int:
    """0 when ``generated`` is exactly what ``specs`` generate; 1 with a diff otherwise."""
    with tempfile.TemporaryDirectory() as scratch:
        fresh = Path(scratch) / "generated"
        generate(specs, fresh)
        expected, actual = _tree(fresh), _tree(generated) if generated.exists() else {}
    drift = sorted(
        set(expected) ^ set(actual)
        | {k for k in expected if actual.get(k, expected[k]) != expected[k]}
    )
    if not drift:
        print("codegen: generated/ is up to date")
        return 0
    for name in drift:
        before = actual.get(name, b"").decode("utf-8", "replace").splitlines(keepends=True)
        after = expected.get(name, b"").decode("utf-8", "replace").splitlines(keepends=True)
        sys.stdout.writelines(
            difflib.unified_diff(
                before, after, f"generated/{name}", f"generated/{name} (from specs)"
            )
        )
    print(f"codegen: generated/ is out of date in {len(drift)} file(s); run `make generate`")
    return 1


def check_settings_docs(docs: Path) -> int:
    """0 when ``docs`` is exactly the settings table the settings classes give; 1 with a diff."""
    expected = render_settings_table()
    actual = docs.read_text(encoding="utf-8") if docs.exists() else ""
    if actual == expected:
        print(f"codegen: {docs.name} is up to date")
        return 0
    sys.stdout.writelines(
        difflib.unified_diff(
            actual.splitlines(keepends=True),
            expected.splitlines(keepends=True),
            str(docs),
            f"{docs} (from the settings classes)",
        )
    )
    print(f"codegen: {docs} is out of date; run `make generate`")
    return 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m codegen", description=__doc__)
    parser.add_argument("--specs", type=Path, default=ROOT / "specs")
    parser.add_argument("--output", type=Path, default=ROOT / "generated")
    parser.add_argument("--settings-docs", type=Path, default=ROOT / "docs" / "settings.md")
    parser.add_argument("--check", action="store_true", help="fail when --output has drifted")
    arguments = parser.parse_args(argv)
    if arguments.check:
        generated = check(arguments.specs, arguments.output)
        return generated or check_settings_docs(arguments.settings_docs)
    with tempfile.TemporaryDirectory() as scratch:
        fresh = Path(scratch) / "generated"
        generate(arguments.specs, fresh)
        if arguments.output.exists():
            shutil.rmtree(arguments.output)
        shutil.copytree(fresh, arguments.output)
    print(f"codegen: settings classes -> {arguments.settings_docs.relative_to(ROOT)}", flush=True)
    arguments.settings_docs.parent.mkdir(parents=True, exist_ok=True)
    arguments.settings_docs.write_text(render_settings_table(), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
