"""``make lint-specs``: the Spectral ruleset (``tools/contracts/spectral.yaml``) accepts the
real specs and catches a copy that breaks each of ``specs/README.md``'s conventions.

Every broken copy is written to a temporary directory and all of them are linted in one
Spectral run (its JSON report), so each case asserts the rule it expects and, where the edit
has one line, that the finding points at that line. The repository's specs are never edited.
"""

from __future__ import annotations

import copy
import json
import re
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from codegen.contracts import tools

ROOT = Path(__file__).resolve().parents[2]
SPECS = ROOT / "specs"
RULESET = ROOT / "tools" / "contracts" / "spectral.yaml"

Document = dict[str, Any]


@dataclass(frozen=True)
class Case:
    """A spec copy broken one way: the rule that must catch it, and the text on its line."""

    spec: str
    edit: Callable[[Document], object]
    rule: str
    line_text: str | None = None


def op(document: Document, route: str, method: str) -> Document:
    result: Document = document["paths"][route][method]
    return result


def set_key(route: str, method: str, key: str, value: Any) -> Callable[[Document], None]:
    def edit(document: Document) -> None:
        op(document, route, method)[key] = value

    return edit


def drop_key(route: str, method: str, key: str) -> Callable[[Document], None]:
    def edit(document: Document) -> None:
        del op(document, route, method)[key]

    return edit


def error_schema_is_a_model(document: Document) -> None:
    media = op(document, "/generate", "post")["responses"]["422"]["content"]["application/json"]
    media["schema"] = {"$ref": "#/components/schemas/UploadResult"}


def error_without_body(document: Document) -> None:
    del op(document, "/documentSearch", "post")["responses"]["422"]["content"]


def plain_text_error_as_json(document: Document) -> None:
    response = op(document, "/counters", "post")["responses"]["400"]
    response["content"] = {"application/json": {"schema": {"$ref": "#/components/schemas/Code"}}}


def no_request_example(document: Document) -> None:
    del op(document, "/documentSearch", "post")["requestBody"]["content"]["application/json"][
        "example"
    ]
    del document["components"]["schemas"]["DocumentSearch"]["example"]


def no_response_example(document: Document) -> None:
    del op(document, "/documents", "get")["responses"]["200"]["content"]["application/json"][
        "example"
    ]
    del document["components"]["schemas"]["DocumentInfo"]["example"]


def x_codegen(**changes: Any) -> Callable[[Document], None]:
    def edit(document: Document) -> None:
        document["x-codegen"].update(changes)

    return edit


CASES = {
    "operation-id-missing": Case(
        "rag", drop_key("/health", "get", "operationId"), "contract-operation-id"
    ),
    "operation-id-camel-case": Case(
        "rag",
        set_key("/uploadDocument", "post", "operationId", "uploadDocument"),
        "contract-operation-id",
        "operationId: uploadDocument",
    ),
    "operation-id-duplicate": Case(
        "rag", set_key("/health", "get", "operationId", "generate"), "operation-operationId-unique"
    ),
    "client-method-missing": Case(
        "rag", drop_key("/generate", "post", "x-client-method"), "contract-x-client-method"
    ),
    "client-method-not-dotted-snake-case": Case(
        "rag",
        set_key("/health", "get", "x-client-method", "Health.Get"),
        "contract-x-client-method",
        "x-client-method: Health.Get",
    ),
    "client-method-duplicate": Case(
        "rag",
        set_key("/health", "get", "x-client-method", "document_search"),
        "contract-x-client-method-unique",
        "x-client-method: document_search",
    ),
    "summary-missing": Case(
        "rag", drop_key("/health", "get", "summary"), "contract-operation-summary-tags"
    ),
    "tags-empty": Case(
        "rag", set_key("/health", "get", "tags", []), "contract-operation-summary-tags"
    ),
    "error-with-another-schema": Case(
        "rag",
        error_schema_is_a_model,
        "contract-error-responses",
        "$ref: '#/components/schemas/UploadResult'",
    ),
    "error-without-body": Case("rag", error_without_body, "contract-error-responses"),
    "plain-text-error-as-json": Case(
        "ratelimit", plain_text_error_as_json, "contract-error-responses"
    ),
    "request-example-missing": Case("rag", no_request_example, "contract-examples"),
    "response-example-missing": Case("rag", no_response_example, "contract-examples"),
    "x-codegen-missing": Case("rag", lambda d: d.pop("x-codegen"), "contract-x-codegen"),
    "x-codegen-unknown-error-style": Case(
        "rag", x_codegen(**{"error-style": "json"}), "contract-x-codegen", "error-style: json"
    ),
    "x-codegen-error-schema-unknown": Case(
        "agents", x_codegen(**{"error-schema": "Nope"}), "contract-x-codegen", "error-schema: Nope"
    ),
    "openapi-3-1": Case("rag", lambda d: d.update(openapi="3.1.0"), "contract-openapi-version"),
    "server-with-path-prefix": Case(
        "rag",
        lambda d: d.update(servers=[{"url": "http://127.0.0.1:8081/api"}]),
        "contract-servers-without-path",
        "url: http://127.0.0.1:8081/api",
    ),
}
REAL = ("agents", "rag", "ratelimit")


@pytest.fixture(scope="module")
def spectral() -> Path:
    try:
        tools.install()
        return tools.tool_path(".bin/spectral")
    except tools.ToolError as exc:
        pytest.fail(f"the contract tools are needed: {exc}", pytrace=False)


def lint(spectral: Path, files: list[Path], output_format: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            str(spectral),
            "lint",
            "--ruleset",
            str(RULESET),
            "--format",
            output_format,
            "--fail-severity",
            "warn",
            *map(str, files),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


@pytest.fixture(scope="module")
def linted(
    spectral: Path, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, list[dict[str, Any]]]:
    """Spectral's findings for every case's file and every real spec's copy, by file stem."""
    folder = tmp_path_factory.mktemp("lint")
    originals = {
        name: yaml.safe_load((SPECS / f"{name}.openapi.yaml").read_text(encoding="utf-8"))
        for name in REAL
    }
    files = []
    for name in REAL:
        path = folder / f"real-{name}.openapi.yaml"
        path.write_bytes((SPECS / f"{name}.openapi.yaml").read_bytes())
        files.append(path)
    for case_name, case in CASES.items():
        document = copy.deepcopy(originals[case.spec])
        case.edit(document)
        path = folder / f"{case_name}.openapi.yaml"
        path.write_text(yaml.safe_dump(document, sort_keys=False, width=100), encoding="utf-8")
        files.append(path)
    completed = lint(spectral, files, "json")
    try:
        results = json.loads(completed.stdout)
    except json.JSONDecodeError:
        pytest.fail(f"spectral wrote no JSON report: {completed.stderr or completed.stdout}")
    found: dict[str, list[dict[str, Any]]] = {
        path.name.removesuffix(".openapi.yaml"): [] for path in files
    }
    for result in results:
        found[Path(result["source"]).name.removesuffix(".openapi.yaml")].append(result)
    return found


def describe(results: list[dict[str, Any]]) -> str:
    return "\n".join(
        f"{r['range']['start']['line'] + 1}: {r['code']} {r['message']}" for r in results
    )


@pytest.mark.parametrize("name", REAL)
def test_the_real_specs_pass(linted: dict[str, list[dict[str, Any]]], name: str) -> None:
    assert linted[f"real-{name}"] == [], describe(linted[f"real-{name}"])


@pytest.mark.parametrize("case_name", CASES)
def test_a_broken_convention_is_caught(
    linted: dict[str, list[dict[str, Any]]],
    tmp_path_factory: pytest.TempPathFactory,
    case_name: str,
) -> None:
    case = CASES[case_name]
    results = [r for r in linted[case_name] if r["code"] == case.rule]
    assert results, f"{case.rule} did not fire; found:\n{describe(linted[case_name])}"
    assert all(r["severity"] == 0 for r in results)  # errors, which fail make lint-specs
    if case.line_text is not None:
        source = Path(results[0]["source"]).read_text(encoding="utf-8").splitlines()
        lines = {r["range"]["start"]["line"] for r in results}
        assert any(case.line_text in source[line] for line in lines), (
            f"{case.rule} points at {sorted(n + 1 for n in lines)}, not at {case.line_text!r}:\n"
            + describe(results)
        )


def test_the_text_report_names_file_line_and_rule(spectral: Path, tmp_path: Path) -> None:
    """The format ``make lint-specs`` prints: ``file:line:col severity rule message``."""
    document = yaml.safe_load((SPECS / "rag.openapi.yaml").read_text(encoding="utf-8"))
    set_key("/health", "get", "x-client-method", "Health.Get")(document)
    path = tmp_path / "rag.openapi.yaml"
    text = yaml.safe_dump(document, sort_keys=False, width=100)
    path.write_text(text, encoding="utf-8")
    completed = lint(spectral, [path], "text")
    assert completed.returncode == 1, completed.stdout + completed.stderr
    line = next(n for n, t in enumerate(text.splitlines(), 1) if "x-client-method: Health.Get" in t)
    pattern = rf"^{re.escape(str(path))}:{line}:\d+ error contract-x-client-method "
    assert re.search(pattern, completed.stdout, re.MULTILINE), completed.stdout
