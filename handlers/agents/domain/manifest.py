"""An agent's manifest (``AgentConfig``) and the files a new workspace starts with.

The manifest is stored on the agent and mirrored in the workspace file ``agent.json``: updating
the agent's config rewrites that file, and writing that file through the files API updates the
config (an invalid ``agent.json`` is refused with 400). See README.md for the format.
"""

from __future__ import annotations

import copy
import json
from typing import Any

from jsonschema import Draft202012Validator  # type: ignore[import-untyped]
from jsonschema.exceptions import SchemaError  # type: ignore[import-untyped]
from pydantic import TypeAdapter, ValidationError

from generated.agents import models
from handlers.agents.domain.run_policy import normalize_concurrency, normalize_retries
from webrest import BadRequest, ErrorDetail
from webrest.errors import validation_details

__all__ = [
    "DEFAULT_CONFIG",
    "MANIFEST_PATH",
    "STARTER_FILES",
    "api_trigger_enabled",
    "config_model",
    "entrypoint_source",
    "manifest_bytes",
    "normalize_config",
    "parse_manifest",
]

MANIFEST_PATH = "agent.json"

DEFAULT_CONFIG: dict[str, Any] = {
    "entrypoint": ["python", "main.py"],
    "timeoutSeconds": 300,
    "inputSchema": None,
    "outputSchema": None,
    "network": "none",
    "triggers": {"api": {"enabled": True}},
    "retries": None,
    "concurrency": None,
}

INTERPRETERS = frozenset({"python", "bash", "sh", "node", "perl", "ruby"})
"""Programs (any version suffix: ``python3.11``) whose first non-option argument is the script
they run (``entrypoint_source``)."""

STARTER_MAIN = '''"""Starter agent: answers with its input.

The execution input (a JSON object) is $AGENT_INPUT_DIR/input.json and its input files are in
$AGENT_INPUT_DIR/files/. The JSON result goes to $AGENT_OUTPUT_DIR/output.json; any other file
written to $AGENT_OUTPUT_DIR becomes an output file (issues.md and trace.jsonl are special).
"""

import json
import os
from pathlib import Path


def main() -> None:
    data = json.loads(Path(os.environ["AGENT_INPUT_DIR"], "input.json").read_text("utf-8"))
    output = Path(os.environ["AGENT_OUTPUT_DIR"], "output.json")
    output.write_text(json.dumps({"echo": data}), encoding="utf-8")


if __name__ == "__main__":
    main()
'''

STARTER_FILES: dict[str, tuple[bytes, str]] = {"main.py": (STARTER_MAIN.encode(), "text/x-python")}
"""Files besides ``agent.json`` a new agent's workspace gets: path -> (content, media type)."""

_CONFIG = TypeAdapter(models.AgentConfig)


def _schema(value: object, field: tuple[str | int, ...]) -> dict[str, Any] | None:
    if not isinstance(value, dict):
        return None
    try:
        Draft202012Validator.check_schema(value)
    except SchemaError as error:
        where = "/".join(str(part) for part in error.absolute_path) or "(root)"
        message = f"Not a valid JSON Schema (draft 2020-12) at {where}: {error.message}"
        raise BadRequest(message, [ErrorDetail(field, message, "value_error")]) from None
    return value


def normalize_config(
    config: models.AgentConfig | None, field: tuple[str | int, ...] = ("body", "config")
) -> dict[str, Any]:
    """The full manifest ``config`` describes (``None``: the default), its JSON Schemas
    checked; a bad schema is a 400 naming ``<field>.inputSchema`` or ``.outputSchema``."""
    if config is None:
        return copy.deepcopy(DEFAULT_CONFIG)
    entrypoint = config.entrypoint
    triggers = config.triggers
    api = triggers.api if isinstance(triggers, models.AgentTriggers) else None
    return {
        "entrypoint": (
            [item.root for item in entrypoint]
            if isinstance(entrypoint, list)
            else list(DEFAULT_CONFIG["entrypoint"])
        ),
        "timeoutSeconds": config.timeout_seconds,
        "inputSchema": _schema(config.input_schema, (*field, "inputSchema")),
        "outputSchema": _schema(config.output_schema, (*field, "outputSchema")),
        "network": models.Network(config.network).value,
        "triggers": {
            "api": {"enabled": api.enabled if isinstance(api, models.AgentApiTrigger) else True}
        },
        "retries": normalize_retries(config.retries, field),
        "concurrency": normalize_concurrency(config.concurrency, field),
    }


def _completed(config: dict[str, Any]) -> dict[str, Any]:
    """A stored manifest with the fields added since it was stored at their defaults."""
    return {**DEFAULT_CONFIG, **config}


def config_model(config: dict[str, Any]) -> models.AgentManifest:
    """A stored manifest as the API shows it (every field present)."""
    return models.AgentManifest.model_validate(_completed(config))


def api_trigger_enabled(config: dict[str, Any]) -> bool:
    """Whether the manifest lets the API start runs (``triggers.api.enabled``, default yes)."""
    triggers = _completed(config)["triggers"]
    api = triggers.get("api") if isinstance(triggers, dict) else None
    return not (isinstance(api, dict) and api.get("enabled") is False)


def entrypoint_source(config: dict[str, Any]) -> str | None:
    """The workspace path of the file the manifest's entrypoint runs, or ``None`` when it
    names none: the script of an interpreter (``[python, main.py]``: ``main.py``; options
    such as ``-u`` are skipped, ``-c``/``-m`` mean no file), otherwise the program itself
    when it is a relative path (``./run.sh``, ``bin/tool``)."""
    entrypoint = [str(part) for part in _completed(config)["entrypoint"]]
    program, arguments = entrypoint[0], entrypoint[1:]
    if program.rsplit("/", 1)[-1].rstrip("0123456789.") in INTERPRETERS:
        for argument in arguments:
            if argument in ("-c", "-m", "-e", "-"):
                return None
            if not argument.startswith("-"):
                return _relative(argument)
        return None
    return _relative(program) if "/" in program else None


def _relative(path: str) -> str | None:
    """``path`` as a workspace path (``./`` dropped), or ``None`` when it is absolute."""
    if path.startswith("/"):
        return None
    while path.startswith("./"):
        path = path[2:]
    return path or None


def manifest_bytes(config: dict[str, Any]) -> bytes:
    """The content of ``agent.json`` for ``config``."""
    return (json.dumps(config, indent=2, ensure_ascii=False) + "\n").encode()


def parse_manifest(data: bytes, field: tuple[str | int, ...]) -> dict[str, Any]:
    """The manifest in an ``agent.json`` being written; 400 naming ``field`` when invalid."""
    try:
        raw = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        message = f"{MANIFEST_PATH} is not valid JSON: {error}"
        raise BadRequest(message, [ErrorDetail(field, message, "value_error")]) from None
    try:
        config = _CONFIG.validate_python(raw)
    except ValidationError as error:
        details = validation_details(error, field)
        shown = [ErrorDetail(d.loc, f"{MANIFEST_PATH}: {d.msg}", d.type, d.input) for d in details]
        raise BadRequest(f"{MANIFEST_PATH} is not a valid manifest", shown) from None
    return normalize_config(config, field)
