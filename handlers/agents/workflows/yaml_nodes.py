"""YAML composed into nodes that keep their positions, and the errors that point at them."""

from __future__ import annotations

import math
from dataclasses import dataclass

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from handlers.agents.workflows.definition import Position

_TAG = "tag:yaml.org,2002:"
_SCALAR_TAGS = {f"{_TAG}{name}" for name in ("null", "bool", "int", "float", "str")}
_TIMESTAMP_TAG = f"{_TAG}timestamp"
_CONSTRUCTOR = yaml.constructor.SafeConstructor()
"""Used only for its stateless scalar constructors (never ``construct_object``)."""


@dataclass(frozen=True, order=True)
class Issue:
    """One problem of a workflow definition, at a 1-based line and column."""

    line: int
    column: int
    message: str

    def __str__(self) -> str:
        return f"line {self.line}, column {self.column}: {self.message}"


class WorkflowValidationError(ValueError):
    """The definition is invalid; ``issues`` lists every problem found, in source order."""

    def __init__(self, issues: list[Issue]) -> None:
        self.issues = tuple(sorted(issues))
        super().__init__("\n".join(str(issue) for issue in self.issues))


class Issues:
    """Collects the problems found while reading a document."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.found: list[Issue] = []

    def add(self, where: Node | Position, message: str) -> None:
        position = where if isinstance(where, Position) else position_of(where)
        self.found.append(Issue(position.line, position.column, message))

    def raise_if_any(self) -> None:
        if self.found:
            raise WorkflowValidationError(self.found)

    def in_scalar(self, node: ScalarNode, offset: int) -> Position:
        """Where character ``offset`` of the scalar's value is in the source: found by looking
        for the text from there to its line's end in the scalar's raw source (quotes, block
        indentation), else the scalar's start."""
        start = node.start_mark
        raw = self.text[start.index : node.end_mark.index]
        snippet = str(node.value)[offset:].split("\n", 1)[0] or str(node.value)[offset:][:1]
        found = raw.find(snippet) if snippet else -1
        if found < 0:
            return position_of(node)
        before = raw[:found]
        lines = before.count("\n")
        column = len(before) - before.rfind("\n") - 1 if lines else start.column + len(before)
        return Position(start.line + lines + 1, column + 1)


def position_of(node: Node) -> Position:
    return Position(node.start_mark.line + 1, node.start_mark.column + 1)


class _Loader(yaml.SafeLoader):
    """Refuses aliases where they appear: an alias repeats a node, and repeated nodes could
    expand exponentially ("billion laughs")."""

    def compose_node(self, parent: Node | None, index: int) -> Node | None:
        if self.check_event(yaml.AliasEvent):
            event = self.peek_event()  # type: ignore[no-untyped-call]
            raise yaml.composer.ComposerError(
                None, None, "YAML aliases (*name) are not supported", event.start_mark
            )
        return super().compose_node(parent, index)


def compose(text: str) -> Node | None:
    """The node tree of a single YAML document (None when empty); syntax errors become a
    WorkflowValidationError at their position."""
    try:
        return yaml.compose(text, Loader=_Loader)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line, column = (mark.line + 1, mark.column + 1) if mark else (1, 1)
        problem = " ".join(part for part in (exc.context, exc.problem) if part)
        raise WorkflowValidationError([Issue(line, column, f"invalid YAML: {problem}")]) from None
    except yaml.YAMLError as exc:
        raise WorkflowValidationError([Issue(1, 1, f"invalid YAML: {exc}")]) from None


def scalar_value(node: ScalarNode) -> object:
    """The JSON value of a scalar: null, boolean, number or string (timestamps stay text)."""
    if node.tag == _TIMESTAMP_TAG or node.tag not in _SCALAR_TAGS:
        return str(node.value)
    construct = _CONSTRUCTOR.yaml_constructors[node.tag]
    return construct(_CONSTRUCTOR, node)


def to_json(node: Node, issues: Issues) -> object:
    """The document as JSON, reporting aliases, unsupported tags, non-string and duplicate
    keys and non-finite numbers (each alias is reported, never expanded)."""
    return _JsonReader(issues).read(node)


class _JsonReader:
    def __init__(self, issues: Issues) -> None:
        self.issues = issues
        self.seen: set[int] = set()

    def read(self, node: Node) -> object:
        if id(node) in self.seen:
            self.issues.add(node, "YAML aliases (*name) are not supported")
            return None
        self.seen.add(id(node))
        if isinstance(node, ScalarNode):
            return self.scalar(node)
        if isinstance(node, SequenceNode):
            return [self.read(item) for item in node.value]
        if isinstance(node, MappingNode):
            return self.mapping(node)
        self.issues.add(node, "unsupported YAML node")
        return None

    def scalar(self, node: ScalarNode) -> object:
        if node.tag.startswith("!") or node.tag.startswith(_TAG + "binary"):
            self.issues.add(node, f"unsupported YAML tag {node.tag}")
            return None
        value = scalar_value(node)
        if isinstance(value, float) and not math.isfinite(value):
            self.issues.add(node, f"{node.value} is not a finite number")
        return value

    def mapping(self, node: MappingNode) -> dict[str, object]:
        result: dict[str, object] = {}
        first: dict[str, Node] = {}
        for key_node, value_node in node.value:
            if key_node.tag == _TAG + "merge":
                self.issues.add(key_node, "YAML merge keys (<<) are not supported")
                continue
            if not isinstance(key_node, ScalarNode) or not isinstance(
                key := scalar_value(key_node), str
            ):
                self.issues.add(key_node, "keys must be strings")
                continue
            if key in first:
                line = position_of(first[key]).line
                self.issues.add(key_node, f"duplicate key {key!r} (first at line {line})")
                continue
            first[key] = key_node
            result[key] = self.read(value_node)
        return result


def entries(node: MappingNode) -> dict[str, tuple[ScalarNode, Node]]:
    """A mapping's string keys (first occurrence) with their key and value nodes."""
    found: dict[str, tuple[ScalarNode, Node]] = {}
    for key_node, value_node in node.value:
        if isinstance(key_node, ScalarNode) and isinstance(key_node.value, str):
            found.setdefault(key_node.value, (key_node, value_node))
    return found
