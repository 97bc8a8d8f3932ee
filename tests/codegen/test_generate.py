"""The contract pipeline end to end: specs → generated code, deterministic and drift-checked."""

from __future__ import annotations

import importlib.util
import shutil
import sys
from pathlib import Path
from types import ModuleType

import pytest
import yaml

from codegen.__main__ import check, generate, main

ROOT = Path(__file__).resolve().parents[2]
SPECS = ROOT / "specs"


def _tree(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and "__pycache__" not in p.parts
    }


@pytest.fixture
def rag_specs(tmp_path: Path) -> Path:
    """A private copy of the rag spec, to edit."""
    specs = tmp_path / "specs"
    specs.mkdir()
    shutil.copy(SPECS / "rag.openapi.yaml", specs)
    return specs


def test_generated_tree_matches_the_specs() -> None:
    """What is committed in generated/ is exactly what the specs generate."""
    assert main(["--check"]) == 0


def test_generation_is_deterministic(rag_specs: Path, tmp_path: Path) -> None:
    generate(rag_specs, tmp_path / "one")
    generate(rag_specs, tmp_path / "two")
    one, two = _tree(tmp_path / "one"), _tree(tmp_path / "two")
    assert one == two
    assert {"rag/models.py", "rag/handlers.py", "rag/routes.py", "rag/client.py"} <= set(one)


def _load(path: Path, name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    finally:
        del sys.modules[name]
    return module


def test_a_spec_change_is_drift_until_regenerated(
    rag_specs: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    generated = tmp_path / "generated"
    generate(rag_specs, generated)
    assert check(rag_specs, generated) == 0

    # Edit the contract: a new body field and a new query parameter on /documentSearch.
    path = rag_specs / "rag.openapi.yaml"
    document = yaml.safe_load(path.read_text())
    search = document["components"]["schemas"]["DocumentSearch"]
    search["properties"]["min_score"] = {"type": "number", "minimum": 0, "maximum": 1}
    document["paths"]["/documentSearch"]["post"].setdefault("parameters", []).append(
        {"name": "lang", "in": "query", "schema": {"type": "string", "maxLength": 8}}
    )
    path.write_text(yaml.safe_dump(document, sort_keys=False))

    capsys.readouterr()
    assert check(rag_specs, generated) == 1
    report = capsys.readouterr().out
    assert "generated/rag/models.py" in report and "min_score" in report
    assert "out of date" in report

    generate(rag_specs, generated)
    assert check(rag_specs, generated) == 0
    models = (generated / "rag/models.py").read_text()
    routes = (generated / "rag/routes.py").read_text()
    client = (generated / "rag/client.py").read_text()
    handlers = (generated / "rag/handlers.py").read_text()
    assert "min_score" in models
    assert 'Param("lang")' in routes and "lang=lang" in routes
    assert "lang: str | None = None" in client and 'request.params["lang"]' in client
    assert "lang: str | None = None" in handlers

    # And the regenerated model validates the new field.
    module = _load(generated / "rag/models.py", "_edited_rag_models")
    parsed = module.DocumentSearch.model_validate({"content": "x", "min_score": 0.5})
    assert parsed.min_score == 0.5
    with pytest.raises(ValueError):
        module.DocumentSearch.model_validate({"content": "x", "min_score": 2})


def test_an_invalid_spec_is_reported_with_its_operation(tmp_path: Path) -> None:
    specs = tmp_path / "specs"
    specs.mkdir()
    document = yaml.safe_load((SPECS / "rag.openapi.yaml").read_text())
    del document["paths"]["/generate"]["post"]["x-client-method"]
    (specs / "rag.openapi.yaml").write_text(yaml.safe_dump(document))
    with pytest.raises(ValueError, match=r"POST /generate: missing x-client-method"):
        generate(specs, tmp_path / "out")
