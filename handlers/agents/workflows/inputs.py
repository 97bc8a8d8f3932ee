"""Checking a run's inputs against the workflow's declared inputs."""

from __future__ import annotations

from collections.abc import Mapping

from handlers.agents.workflows.definition import InputType, WorkflowDefinition
from handlers.agents.workflows.functions import type_name


class InputError(ValueError):
    """The inputs do not fit the workflow: ``problems`` maps an input name to why."""

    def __init__(self, problems: dict[str, str]) -> None:
        self.problems = problems
        super().__init__("; ".join(f"{name}: {problem}" for name, problem in problems.items()))


def check_input_value(input_type: InputType, value: object) -> str | None:
    """Why ``value`` is not of ``input_type``, or None when it is. A file is the object the
    integration makes of an uploaded file (at least ``{"name": ...}``)."""
    is_bool = isinstance(value, bool)
    fits = {
        "string": isinstance(value, str),
        "number": isinstance(value, int | float) and not is_bool,
        "integer": isinstance(value, int) and not is_bool,
        "boolean": is_bool,
        "object": isinstance(value, dict),
        "array": isinstance(value, list),
        "file": isinstance(value, dict) and isinstance(value.get("name"), str),
    }[input_type]
    if fits:
        return None
    if input_type == "file":
        return "expected a file"
    article = "an" if input_type[0] in "aeiou" else "a"
    return f"expected {article} {input_type}, got {type_name(value)}"


def bind_inputs(
    definition: WorkflowDefinition, given: Mapping[str, object] | None
) -> dict[str, object]:
    """The inputs a run sees: ``given`` checked, defaults filled in; raises InputError."""
    given = dict(given or {})
    problems: dict[str, str] = {}
    bound: dict[str, object] = {}
    for declared in definition.inputs:
        if declared.name in given and given[declared.name] is not None:
            problem = check_input_value(declared.type, given[declared.name])
            if problem is not None:
                problems[declared.name] = problem
            bound[declared.name] = given[declared.name]
        elif declared.required:
            problems[declared.name] = "required"
        else:
            bound[declared.name] = declared.default
    declared_names = {declared.name for declared in definition.inputs}
    for name in given:
        if name not in declared_names:
            problems[name] = "unknown input"
    if problems:
        raise InputError(problems)
    return bound
