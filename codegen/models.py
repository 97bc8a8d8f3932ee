"""Pydantic models from a spec's ``components/schemas`` with datamodel-code-generator."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

__all__ = ["generate_models", "model_names"]

OPTIONS = (
    "--input-file-type", "openapi",
    "--output-model-type", "pydantic_v2.BaseModel",
    "--target-python-version", "3.11",
    "--use-annotated",
    "--field-constraints",
    "--use-standard-collections",
    "--use-union-operator",
    "--use-double-quotes",
    "--disable-timestamp",
    "--strict-nullable",
    "--collapse-root-models",
    "--strict-types", "int", "float", "bool",
    "--snake-case-field",
    "--allow-population-by-field-name",
    "--use-schema-description",
    "--use-missing-sentinel",
    "--set-default-enum-member",
    "--target-pydantic-version", "2.14",
    "--formatters", "builtin",
)  # fmt: skip


def generate_models(spec: Path, output: Path) -> None:
    """Write the models of ``spec`` to ``output`` (a ``models.py``)."""
    executable = Path(sys.executable).with_name("datamodel-codegen")
    command = [str(executable), "--input", str(spec), "--output", str(output), *OPTIONS]
    result = subprocess.run(command, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise RuntimeError(f"datamodel-codegen failed on {spec}:\n{result.stderr}")


def _key(name: str) -> str:
    return re.sub(r"[^a-z0-9]", "", name.lower())


def model_names(models_source: str, schema_names: list[str]) -> dict[str, str]:
    """Which generated class each ``components/schemas`` name became."""
    classes = [
        node.name for node in ast.parse(models_source).body if isinstance(node, ast.ClassDef)
    ]
    by_key = {_key(name): name for name in classes}
    names: dict[str, str] = {}
    for schema in schema_names:
        found = by_key.get(_key(schema))
        if found is not None:
            names[schema] = found
    return names
