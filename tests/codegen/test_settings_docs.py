"""docs/settings.md: generated from the settings classes, and checked for drift."""

from __future__ import annotations

from pathlib import Path

import pytest

from codegen.__main__ import check_settings_docs
from codegen.settings_docs import SERVICES, _load, render_settings_table

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(("service", "path"), [(service, path) for service, path, _ in SERVICES])
def test_every_variable_and_alias_has_a_row(service: str, path: str) -> None:
    table = render_settings_table()
    section = table.split(f"\n## {service}\n", 1)[1].split("\n## ", 1)[0]
    settings = _load(path)

    for field, info in settings.model_fields.items():
        names = settings.variable_names(field)
        row = next(line for line in section.splitlines() if line.startswith(f"| `{names[0]}`"))
        assert all(f"`{alias}`" in row for alias in names[1:]), row
        assert info.description and info.description.split()[0] in row, field


def test_the_committed_table_is_up_to_date_and_drift_is_caught(tmp_path: Path) -> None:
    assert check_settings_docs(ROOT / "docs" / "settings.md") == 0

    drifted = tmp_path / "settings.md"
    drifted.write_text(render_settings_table().replace("`8090`", "`9999`"))
    assert check_settings_docs(drifted) == 1
