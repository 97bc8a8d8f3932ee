"""``make check-breaking`` (``python -m codegen.contracts``) classifies spec edits correctly.

Each test copies a real contract into a temporary ``specs/`` (never touching the repository's),
releases that copy as the baseline, edits the working copy the way a reviewer would, and runs
the gate's command line: a breaking edit fails (exit 1) and names the change, a non-breaking
one passes and is listed as such, and a major version bump turns a breaking report into a pass.
The real tools run: api-smart-diff for OpenAPI, ``buf breaking`` for proto.
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from codegen.contracts import tools
from codegen.contracts.__main__ import main
from codegen.contracts.publish import release
from codegen.contracts.releases import ContractError

SPECS = Path(__file__).resolve().parents[2] / "specs"
SUPERSET = "contractplatform/ratelimit/config/v1/rls_conf_superset.proto"

Document = dict[str, Any]


@pytest.fixture(scope="module", autouse=True)
def contract_tools() -> None:
    """The pinned node tools (``make contract-tools``); CI has node and npm."""
    try:
        tools.install()
    except tools.ToolError as exc:
        pytest.fail(f"the contract tools are needed: {exc}", pytrace=False)


@dataclass
class Workspace:
    """A temporary ``specs/`` with one released contract and its working copy."""

    specs: Path

    @property
    def releases(self) -> Path:
        return self.specs / "releases"

    def openapi(self, name: str) -> Path:
        return self.specs / f"{name}.openapi.yaml"

    def edit_openapi(self, name: str, edit: Callable[[Document], object]) -> None:
        path = self.openapi(name)
        document = yaml.safe_load(path.read_text(encoding="utf-8"))
        edit(document)
        path.write_text(yaml.safe_dump(document, sort_keys=False), encoding="utf-8")

    def edit_proto(self, relative: str, old: str, new: str) -> None:
        path = self.specs / "proto" / relative
        text = path.read_text(encoding="utf-8")
        assert text.count(old) == 1, f"{old!r} is not once in {relative}"
        path.write_text(text.replace(old, new), encoding="utf-8")

    def set_proto_version(self, version: str) -> None:
        (self.releases / "proto.version").write_text(f"{version}\n", encoding="utf-8")

    def release(self) -> list[str]:
        return release(self.specs, self.releases, "2026-01-01")

    def check(self, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
        """The gate's exit status and report."""
        capsys.readouterr()
        status = main(["check", "--specs", str(self.specs)])
        captured = capsys.readouterr()
        return status, captured.out + captured.err


def workspace(
    tmp_path: Path, *names: str, baseline: Callable[[Workspace], object] | None = None
) -> Workspace:
    """Copy the named contracts (``rag``, ``ratelimit``, ``agents``, ``proto``), apply
    ``baseline`` to them, and release the result as the last released contract."""
    space = Workspace(tmp_path / "specs")
    space.releases.mkdir(parents=True)
    for name in names:
        if name == "proto":
            shutil.copytree(SPECS / "proto", space.specs / "proto")
            space.set_proto_version("1.0.0")
        else:
            shutil.copyfile(SPECS / f"{name}.openapi.yaml", space.openapi(name))
    if baseline is not None:
        baseline(space)
    space.release()
    return space


def schemas(document: Document) -> Document:
    result: Document = document["components"]["schemas"]
    return result


def together(*edits: Callable[[Document], object]) -> Callable[[Document], None]:
    """One edit made of several, applied in order."""

    def edit(document: Document) -> None:
        for each in edits:
            each(document)

    return edit


def set_version(version: str) -> Callable[[Document], None]:
    def edit(document: Document) -> None:
        document["info"]["version"] = version

    return edit


def breaking_lines(report: str) -> list[str]:
    """The report's lines under ``breaking (N):``."""
    lines, inside = [], False
    for line in report.splitlines():
        if re.match(r"^  breaking \(\d+\):", line):
            inside = True
        elif re.match(r"^  \S", line) or not line.startswith("  "):
            inside = False
        elif inside:
            lines.append(line.strip())
    return lines


def assert_breaking(report: str, status: int, *fragments: str) -> None:
    assert status == 1, report
    found = breaking_lines(report)
    for fragment in fragments:
        assert any(fragment in line for line in found), (
            f"no breaking change {fragment!r}:\n{report}"
        )


def assert_not_breaking(report: str, status: int, *fragments: str) -> None:
    assert status == 0, report
    assert not breaking_lines(report), report
    for fragment in fragments:
        assert fragment in report, f"{fragment!r} is not listed:\n{report}"


# -- OpenAPI: breaking -----------------------------------------------------------------------


def test_the_released_copy_passes_unchanged(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    space = workspace(tmp_path, "rag", "ratelimit", "proto")
    status, report = space.check(capsys)
    assert status == 0, report
    assert "no unallowed breaking change" in report


def test_removing_a_response_property_breaks(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    space = workspace(tmp_path, "rag")
    space.edit_openapi("rag", lambda d: schemas(d)["UploadResult"]["properties"].pop("chunks"))
    status, report = space.check(capsys)
    assert_breaking(report, status, "POST /uploadDocument responses.200", "property `chunks`")


def test_removing_a_request_property_breaks_closed_bodies(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    space = workspace(tmp_path, "rag")
    space.edit_openapi("rag", lambda d: schemas(d)["Prompt"]["properties"].pop("num_tokens"))
    status, report = space.check(capsys)
    assert_breaking(report, status, "[request-property-removed] POST /generate")


def test_making_an_optional_request_field_required_breaks(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    space = workspace(tmp_path, "rag")
    space.edit_openapi("rag", lambda d: schemas(d)["Prompt"]["required"].append("num_tokens"))
    status, report = space.check(capsys)
    assert_breaking(report, status, "[request-property-now-required] POST /generate")


def add_mode_enum(document: Document) -> None:
    schemas(document)["Prompt"]["properties"]["mode"] = {
        "type": "string",
        "enum": ["fast", "balanced", "thorough"],
    }


def test_narrowing_a_request_enum_breaks(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    space = workspace(tmp_path, "rag", baseline=lambda s: s.edit_openapi("rag", add_mode_enum))
    space.edit_openapi("rag", lambda d: schemas(d)["Prompt"]["properties"]["mode"]["enum"].pop())
    status, report = space.check(capsys)
    assert_breaking(report, status, "properties.mode.enum")


def test_widening_a_request_enum_does_not_break(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    space = workspace(tmp_path, "rag", baseline=lambda s: s.edit_openapi("rag", add_mode_enum))
    space.edit_openapi(
        "rag", lambda d: schemas(d)["Prompt"]["properties"]["mode"]["enum"].append("exhaustive")
    )
    status, report = space.check(capsys)
    assert_not_breaking(report, status, "non-breaking (", "properties.mode.enum")


def test_removing_a_response_status_breaks(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    space = workspace(tmp_path, "rag")
    space.edit_openapi(
        "rag", lambda d: d["paths"]["/uploadDocument"]["post"]["responses"].pop("413")
    )
    status, report = space.check(capsys)
    assert_breaking(report, status, "POST /uploadDocument responses.413")


def test_changing_a_success_status_code_breaks(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    def to_201(document: Document) -> None:
        answers = document["paths"]["/uploadDocument"]["post"]["responses"]
        answers["201"] = answers.pop("200")

    space = workspace(tmp_path, "rag")
    space.edit_openapi("rag", to_201)
    status, report = space.check(capsys)
    assert_breaking(report, status, "POST /uploadDocument responses.200")


def test_removing_an_operation_breaks(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    space = workspace(tmp_path, "rag")
    space.edit_openapi("rag", lambda d: d["paths"].pop("/health"))
    status, report = space.check(capsys)
    assert_breaking(report, status, "GET /health", "operation GET /health")


def test_renaming_an_operation_id_breaks_generated_code(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    space = workspace(tmp_path, "rag")
    space.edit_openapi(
        "rag", lambda d: d["paths"]["/health"]["get"].update(operationId="readiness")
    )
    status, report = space.check(capsys)
    assert_breaking(report, status, "[renamed-operation] GET /health operationId")


def test_renaming_a_client_method_breaks_generated_code(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    space = workspace(tmp_path, "rag")
    space.edit_openapi(
        "rag", lambda d: d["paths"]["/health"]["get"].update({"x-client-method": "ready"})
    )
    status, report = space.check(capsys)
    assert_breaking(report, status, "[renamed-operation] GET /health x-client-method")


def test_adding_a_required_query_parameter_breaks(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    parameter = {
        "name": "probe",
        "in": "query",
        "required": True,
        "schema": {"type": "string", "maxLength": 8},
    }
    space = workspace(tmp_path, "rag")
    space.edit_openapi("rag", lambda d: d["paths"]["/health"]["get"].update(parameters=[parameter]))
    status, report = space.check(capsys)
    assert_breaking(report, status, "[required-parameter-added] GET /health", "probe")


def test_changing_a_request_field_type_breaks(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    space = workspace(tmp_path, "rag")
    space.edit_openapi(
        "rag",
        lambda d: schemas(d)["Prompt"]["properties"]["num_tokens"].update(
            type="string", maxLength=4
        ),
    )
    status, report = space.check(capsys)
    assert_breaking(report, status, "properties.num_tokens.type")


def test_removing_a_schema_breaks_the_generated_models(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    def add_unused(document: Document) -> None:
        schemas(document)["Unused"] = {"type": "object", "properties": {}}

    space = workspace(tmp_path, "rag", baseline=lambda s: s.edit_openapi("rag", add_unused))
    space.edit_openapi("rag", lambda d: schemas(d).pop("Unused"))
    status, report = space.check(capsys)
    assert_breaking(report, status, "[model-removed] components.schemas.Unused")


# -- OpenAPI: not breaking -------------------------------------------------------------------


def test_adding_an_optional_request_field_does_not_break(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    space = workspace(tmp_path, "rag")
    space.edit_openapi(
        "rag",
        lambda d: schemas(d)["Prompt"]["properties"].update(
            language={"type": "string", "maxLength": 8, "default": "en"}
        ),
    )
    status, report = space.check(capsys)
    assert_not_breaking(report, status, "non-breaking (", "property `language`")
    assert "note: changed since 0.2.0 at the same version" in report


def test_adding_an_endpoint_does_not_break(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    def add_endpoint(document: Document) -> None:
        operation = dict(document["paths"]["/health"]["get"], operationId="live")
        operation["x-client-method"] = "live"
        document["paths"]["/live"] = {"get": operation}

    space = workspace(tmp_path, "rag")
    space.edit_openapi("rag", add_endpoint)
    status, report = space.check(capsys)
    assert_not_breaking(report, status, "operation GET /live")


def test_a_description_edit_is_documentation(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    space = workspace(tmp_path, "rag")
    space.edit_openapi("rag", lambda d: d["paths"]["/health"]["get"].update(description="Ready?"))
    status, report = space.check(capsys)
    assert_not_breaking(report, status, "documentation/examples (1)")


# -- versions ----------------------------------------------------------------------------------


def remove_health(document: Document) -> None:
    document["paths"].pop("/health")


@pytest.mark.parametrize(
    ("name", "version", "passes"),
    [
        ("rag", "0.2.1", False),  # a patch bump allows nothing breaking
        ("rag", "0.3.0", True),  # below 1.0.0 a minor bump is the major one (semver 0.y)
        ("ratelimit", "1.1.0", False),
        ("ratelimit", "2.0.0", True),
    ],
)
def test_a_major_bump_allows_breaking_changes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str, version: str, passes: bool
) -> None:
    space = workspace(tmp_path, name)
    route = "/health" if name == "rag" else "/healthcheck"
    space.edit_openapi(name, together(lambda d: d["paths"].pop(route), set_version(version)))
    status, report = space.check(capsys)
    assert breaking_lines(report), report
    if passes:
        assert status == 0, report
    else:
        assert status == 1, report
        assert "bump info.version to" in report


def test_a_version_below_the_release_fails(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    space = workspace(tmp_path, "rag")
    space.edit_openapi("rag", set_version("0.1.9"))
    status, report = space.check(capsys)
    assert status == 1 and "below the released 0.2.0" in report, report


def test_a_removed_released_contract_fails(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    space = workspace(tmp_path, "rag")
    space.openapi("rag").unlink()
    status, report = space.check(capsys)
    assert status == 1 and "contract rag 0.2.0 was released and is gone" in report, report


# -- proto -------------------------------------------------------------------------------------


def test_removing_a_proto_field_breaks(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    space = workspace(tmp_path, "proto")
    space.edit_proto(SUPERSET, "  bool quota_mode = 7;\n", "")
    status, report = space.check(capsys)
    assert_breaking(report, status, "[FIELD_NO_DELETE]", '"quota_mode"')
    # buf's location: the message's line in the working tree's file
    assert re.search(rf"specs/proto/{re.escape(SUPERSET)}:\d+:\d+: ", report), report


def test_reusing_a_proto_field_number_breaks(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    space = workspace(tmp_path, "proto")
    space.edit_proto(SUPERSET, "  bool quota_mode = 7;\n", "  string quota_name = 7;\n")
    status, report = space.check(capsys)
    assert_breaking(report, status, "[FIELD_SAME_TYPE]", "[FIELD_SAME_NAME]")


def test_renumbering_a_proto_field_breaks(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    space = workspace(tmp_path, "proto")
    space.edit_proto(SUPERSET, "  bool quota_mode = 7;\n", "  bool quota_mode = 9;\n")
    status, report = space.check(capsys)
    assert_breaking(report, status, "[FIELD_NO_DELETE]", 'field "7" with name "quota_mode"')


def test_changing_a_proto_field_type_breaks(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    space = workspace(tmp_path, "proto")
    space.edit_proto(SUPERSET, "  bool shadow_mode = 5;\n", "  int32 shadow_mode = 5;\n")
    status, report = space.check(capsys)
    assert_breaking(report, status, "[FIELD_SAME_TYPE]", 'from "bool" to "int32"')


def test_adding_a_proto_field_or_message_does_not_break(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    space = workspace(tmp_path, "proto")
    space.edit_proto(
        SUPERSET,
        "  bool quota_mode = 7;\n",
        "  bool quota_mode = 7;\n\n  // A new field.\n  string owner = 1002;\n",
    )
    path = space.specs / "proto" / SUPERSET
    path.write_text(path.read_text(encoding="utf-8") + "\nmessage Audit {\n  string who = 1;\n}\n")
    status, report = space.check(capsys)
    assert_not_breaking(
        report,
        status,
        "[field-added]",
        "RateLimitDescriptor.owner = 1002",
        "[message-added]",
        "message contractplatform.ratelimit.config.v1.Audit",
    )
    assert "Audit.who" not in report  # the new message's fields come with it


def test_a_proto_major_bump_allows_breaking_changes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    space = workspace(tmp_path, "proto")
    space.edit_proto(SUPERSET, "  bool quota_mode = 7;\n", "")
    status, report = space.check(capsys)
    assert status == 1 and "bump specs/releases/proto.version to 2.0.0" in report, report
    space.set_proto_version("2.0.0")
    status, report = space.check(capsys)
    assert status == 0 and breaking_lines(report), report


# -- releases and changelogs ------------------------------------------------------------------


def test_a_release_snapshots_and_appends_the_changelog(tmp_path: Path) -> None:
    space = workspace(tmp_path, "rag", "proto")
    changelog = space.releases / "rag" / "CHANGELOG.md"
    assert "## rag 0.2.0 — 2026-01-01 (first release)" in changelog.read_text(encoding="utf-8")
    language = {"type": "string", "maxLength": 8}
    space.edit_openapi(
        "rag",
        together(
            lambda d: schemas(d)["Prompt"]["properties"].update(language=language),
            set_version("0.2.1"),
        ),
    )
    lines = space.release()
    assert "rag 0.2.1: released to" in " ".join(lines)
    assert "proto 1.0.0: already released" in lines
    assert (space.releases / "rag" / "0.2.1" / "rag.openapi.yaml").is_file()
    text = changelog.read_text(encoding="utf-8")
    entry = text.split("## rag 0.2.1 — 2026-01-01 (since 0.2.0)", 1)[1]
    assert "### Non-breaking" in entry and "property `language`" in entry
    assert "### Breaking" not in entry


def test_a_release_refuses_changed_content_at_a_released_version(tmp_path: Path) -> None:
    space = workspace(tmp_path, "rag")
    space.edit_openapi("rag", lambda d: d["paths"]["/health"]["get"].update(summary="Ready"))
    with pytest.raises(ContractError, match="already released with other content"):
        space.release()


def test_a_release_refuses_a_failing_gate(tmp_path: Path) -> None:
    space = workspace(tmp_path, "rag")
    space.edit_openapi("rag", remove_health)
    with pytest.raises(ContractError, match="the gate fails, no release"):
        space.release()


def test_the_changelog_command_prints_the_pending_entries(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    space = workspace(tmp_path, "rag")
    space.edit_openapi("rag", together(remove_health, set_version("0.3.0")))
    capsys.readouterr()
    assert main(["changelog", "--specs", str(space.specs)]) == 0
    entry = capsys.readouterr().out
    assert entry.startswith("## rag 0.3.0 — ") and "(since 0.2.0)" in entry
    assert "### Breaking\n- GET /health: [Removed] operation GET /health" in entry
