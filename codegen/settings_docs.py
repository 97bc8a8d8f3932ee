"""``docs/settings.md``: every setting of every service, generated from the settings classes.

Each service declares its settings as one ``handlers.common.settings.ServiceSettings``
subclass: a field per environment variable, with the variable (and its aliases) as the
field's validation alias, its default, and its meaning as the field's description. This module
renders them as one table per service, so the documentation cannot drift from the code;
``make generate`` writes it and ``make check-generated`` fails when it is out of date.

The classes are named by import path (like entry points), so the generator needs no import of
the services at module level.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

__all__ = ["SERVICES", "render_settings_table"]

SERVICES: tuple[tuple[str, str, str], ...] = (
    ("ratelimit", "handlers.ratelimit.settings:Settings", "`ratelimit`, `ratelimit-config-check`"),
    ("rag", "handlers.rag.settings:Settings", "`rag-server`"),
    (
        "agents",
        "handlers.agents.settings:Settings",
        "`agents-server`, `agents-worker`, `agents-admin`",
    ),
)
"""(service, settings class, programs that read it)."""

HEADER = """\
<!-- Generated from the services' settings classes by `make generate` (codegen/settings_docs.py);
     never edited by hand. `make check-generated` fails when it is out of date. -->

# Settings of every service

Every service reads its settings from the environment, on one model
(`handlers/common/settings.py`, pydantic-settings): a variable that is unset or empty takes its
default; an invalid value stops the program before it starts, with one line naming the variable
and what it accepts (exit status 2). `LOG_LEVEL` and `LOG_FORMAT` mean the same everywhere.
Aliases are older or upstream names of the same variable (the first name wins when both are
set).
"""


def _load(path: str) -> Any:
    module, _, name = path.partition(":")
    return getattr(importlib.import_module(module), name)


def _default(info: Any) -> str:
    extra = info.json_schema_extra if isinstance(info.json_schema_extra, dict) else {}
    if "default_text" in extra:
        return str(extra["default_text"])
    if info.default_factory is not None and info.default_factory_takes_data:
        raise ValueError(f"{info.validation_alias}: a computed default needs a default_text")
    value = info.default_factory() if info.default_factory is not None else info.default
    if value is None:
        return "unset"
    if isinstance(value, bool):
        return "`true`" if value else "`false`"
    if isinstance(value, str):
        return f"`{value}`" if value else "empty"
    if isinstance(value, Path):
        return f"`{value}`"
    if isinstance(value, tuple | list | frozenset | set):
        return ", ".join(f"`{item}`" for item in value) if value else "empty"
    return f"`{value}`"


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def render_settings_table() -> str:
    """The whole ``docs/settings.md``."""
    parts = [HEADER]
    for service, path, programs in SERVICES:
        settings = _load(path)
        parts.append(f"\n## {service}\n\nRead by {programs}.\n\n")
        parts.append("| variable | default | meaning |\n|---|---|---|\n")
        fields = list(settings.model_fields)  # as declared; the shared LOG_* ones last
        for field in sorted(fields, key=lambda name: (name.startswith("log_"), fields.index(name))):
            info = settings.model_fields[field]
            names = settings.variable_names(field)
            variable = f"`{names[0]}`" + (
                " (" + ", ".join(f"`{alias}`" for alias in names[1:]) + ")" if names[1:] else ""
            )
            meaning = _cell(info.description or "")
            parts.append(f"| {variable} | {_cell(_default(info))} | {meaning} |\n")
    return "".join(parts)
