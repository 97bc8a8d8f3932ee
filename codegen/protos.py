"""Python modules, gRPC stubs and mypy stubs from ``specs/proto`` (grpcio-tools + mypy-protobuf)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

__all__ = ["generate_protos"]

PACKAGE = "generated.proto"


def _roots(source: Path) -> list[str]:
    """The top-level proto packages under ``source`` (``google.rpc``, not ``google``)."""
    roots = []
    for top in sorted(p for p in source.iterdir() if p.is_dir()):
        if top.name == "google":
            roots += [f"google.{sub.name}" for sub in sorted(top.iterdir()) if sub.is_dir()]
        else:
            roots.append(top.name)
    return roots


def _rewrite_imports(output: Path, roots: list[str]) -> None:
    """Make protoc's absolute imports (``from envoy.x import y_pb2``) point into
    ``generated.proto``, so the modules import as regular packages, no ``sys.path`` entry."""
    alternatives = "|".join(re.escape(root) for root in roots)
    pattern = re.compile(rf"^(from|import) ((?:{alternatives})(?:\.\w+)*)(?= |$)", re.MULTILINE)
    for path in sorted(output.rglob("*.py*")):
        if path.suffix not in (".py", ".pyi"):
            continue
        text = path.read_text(encoding="utf-8")
        rewritten = pattern.sub(lambda m: f"{m.group(1)} {PACKAGE}.{m.group(2)}", text)
        if rewritten != text:
            path.write_text(rewritten, encoding="utf-8")


def generate_protos(source: Path, output: Path) -> list[Path]:
    """Compile every ``.proto`` under ``source`` into ``output``, mirroring proto packages, and
    add ``__init__.py`` files so the output imports as regular packages."""
    import grpc_tools

    output.mkdir(parents=True, exist_ok=True)
    protos = sorted(str(p.relative_to(source)) for p in source.rglob("*.proto"))
    bundled = Path(grpc_tools.__file__).with_name("_proto")
    bin_dir = Path(sys.executable).parent
    arguments = [
        sys.executable,
        "-m",
        "grpc_tools.protoc",
        f"-I{source}",
        f"-I{bundled}",
        f"--python_out={output}",
        f"--grpc_python_out={output}",
        f"--mypy_out={output}",
        f"--mypy_grpc_out={output}",
        f"--plugin=protoc-gen-mypy={bin_dir / 'protoc-gen-mypy'}",
        f"--plugin=protoc-gen-mypy_grpc={bin_dir / 'protoc-gen-mypy_grpc'}",
        *protos,
    ]
    result = subprocess.run(arguments, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise RuntimeError(f"protoc failed on {source}:\n{result.stdout}{result.stderr}")
    _rewrite_imports(output, _roots(source))
    for directory in [output, *sorted(p for p in output.rglob("*") if p.is_dir())]:
        init = directory / "__init__.py"
        if not init.exists():
            init.write_text("", encoding="utf-8")
    return sorted(p for p in output.rglob("*") if p.is_file())
