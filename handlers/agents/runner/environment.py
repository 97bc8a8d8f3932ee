"""The program's environment, built from nothing so no server secret is inherited."""

from __future__ import annotations

from collections.abc import Mapping

from handlers.agents.runner.run_directory import RunDirectory

DEFAULT_PATH = "/usr/local/bin:/usr/bin:/bin"
RESERVED_PREFIX = "AGENT_"


class InvalidEnvironmentError(ValueError):
    """An environment variable name or value the OS cannot carry, or a reserved name."""


def build_environment(
    execution_id: str, directory: RunDirectory, extra: Mapping[str, str]
) -> dict[str, str]:
    """Defaults, then the spec's variables (they may replace PATH, HOME, TMPDIR or LANG), then
    the AGENT_* variables, which the spec may not set."""
    environment = {
        "PATH": DEFAULT_PATH,
        "HOME": str(directory.workspace),
        "TMPDIR": str(directory.tmp),
        "LANG": "C.UTF-8",
    }
    for name, value in extra.items():
        if not name or "=" in name or "\x00" in name or "\x00" in value:
            raise InvalidEnvironmentError(f"invalid environment variable {name!r}")
        if name.startswith(RESERVED_PREFIX):
            raise InvalidEnvironmentError(f"environment variable {name!r} is reserved")
        environment[name] = value
    environment.update(
        {
            "AGENT_EXECUTION_ID": execution_id,
            "AGENT_WORKSPACE_DIR": str(directory.workspace),
            "AGENT_INPUT_DIR": str(directory.input),
            "AGENT_OUTPUT_DIR": str(directory.output),
        }
    )
    return environment
