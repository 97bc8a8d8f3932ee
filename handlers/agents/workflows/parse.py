"""Reading a workflow's YAML into a WorkflowDefinition, with errors that name line and column.

The format is described in README.md. Every problem found is reported at once
(``WorkflowValidationError.issues``), except that YAML syntax errors and aliases stop early.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable
from dataclasses import dataclass

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from handlers.agents.workflows.definition import (
    HTTP_METHODS,
    INPUT_TYPES,
    STEP_TYPES,
    AgentCall,
    BlockCall,
    HttpRequest,
    InputDefinition,
    InputType,
    Position,
    RetryPolicy,
    StepConfig,
    StepDefinition,
    StepType,
    WorkflowDefinition,
    WorkflowKind,
)
from handlers.agents.workflows.durations import (
    MAX_WAIT_SECONDS,
    DurationError,
    parse_duration,
    parse_timestamp,
)
from handlers.agents.workflows.expressions import ExpressionError, Reference
from handlers.agents.workflows.graph import find_cycles
from handlers.agents.workflows.inputs import check_input_value
from handlers.agents.workflows.limits import MAX_JSON_DEPTH, total_deadline
from handlers.agents.workflows.templates import (
    ListTemplate,
    Literal,
    MappingTemplate,
    Template,
    compile_string,
    embedded_in,
)
from handlers.agents.workflows.yaml_nodes import (
    Issue,
    Issues,
    WorkflowValidationError,
    compose,
    entries,
    position_of,
    scalar_value,
    to_json,
)

__all__ = ["WorkflowValidationError", "parse_workflow"]

SLUG = re.compile(r"[A-Za-z0-9_-]{1,64}")
IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,127}")
RESERVED_SLUGS = ("executions",)
MAX_YAML_CHARS = 1_048_576
MAX_STEPS = 1000
MAX_RETRIES = 10
MAX_TIMEOUT_SECONDS = 7 * 24 * 3600.0
STEP_FIELDS = ("output", "status", "error", "attempts")
"""What ``steps.<id>`` offers to expressions."""

WORKFLOW_KEYS = ("name", "kind", "title", "description", "inputs", "steps", "result")
INPUT_KEYS = ("type", "required", "default", "description")
COMMON_STEP_KEYS = ("id", "type", "needs", "timeout", "retries", "allow_failure", "description")
STEP_KEYS: dict[str, tuple[str, ...]] = {
    "agent": ("agent", "input"),
    "block": ("block", "version", "input"),
    "http": ("method", "url", "headers", "query", "json", "expect_status"),
    "transform": ("value",),
    "wait": ("duration", "until"),
}
REQUIRED_STEP_KEYS: dict[str, tuple[str, ...]] = {
    "agent": ("agent",),
    "block": ("block",),
    "http": ("url",),
    "transform": ("value",),
    "wait": (),
}
RETRY_KEYS = ("count", "backoff", "factor", "max_backoff", "jitter", "retry_on")
RETRY_ON = ("failed", "timeout")
JITTERS = ("none", "full")


def parse_workflow(text: str) -> WorkflowDefinition:
    """Parse and validate a workflow definition; raise WorkflowValidationError listing every
    problem with its line and column."""
    if len(text) > MAX_YAML_CHARS:
        raise WorkflowValidationError([Issue(1, 1, f"longer than {MAX_YAML_CHARS} characters")])
    try:
        root = compose(text)
    except RecursionError:  # the composer recurses once per level
        where = _too_deep_event(text)
        raise WorkflowValidationError([Issue(where.line, where.column, _TOO_DEEP)]) from None
    if not isinstance(root, MappingNode):
        where = position_of(root) if root is not None else Position(1, 1)
        raise WorkflowValidationError(
            [Issue(where.line, where.column, "a workflow must be a YAML mapping")]
        )
    deep = _too_deep_node(root)
    if deep is not None:  # before anything recursive walks it
        where = position_of(deep)
        raise WorkflowValidationError([Issue(where.line, where.column, _TOO_DEEP)])
    issues = Issues(text)
    document = to_json(root, issues)
    issues.raise_if_any()  # aliases are never walked below (no exponential expansion)
    assert isinstance(document, dict)
    definition = _WorkflowReader(issues).read(root, document)
    issues.raise_if_any()
    assert definition is not None
    return definition


_TOO_DEEP = f"nested too deeply (more than {MAX_JSON_DEPTH} levels of lists and mappings)"


def _too_deep_node(root: Node) -> Node | None:
    """The first list or mapping nested deeper than MAX_JSON_DEPTH, found without recursion."""
    stack: list[tuple[Node, int]] = [(root, 1)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, SequenceNode):
            children: list[Node] = list(node.value)
        elif isinstance(node, MappingNode):
            children = [part for pair in node.value for part in pair]
        else:
            continue
        if depth > MAX_JSON_DEPTH:
            return node
        stack.extend((child, depth + 1) for child in reversed(children))
    return None


def _too_deep_event(text: str) -> Position:
    """Where the YAML first nests deeper than MAX_JSON_DEPTH, from the parser's events (which
    need no recursion); the start when it cannot be found."""
    depth = 0
    try:
        for event in yaml.parse(text, Loader=yaml.SafeLoader):
            if isinstance(event, yaml.SequenceStartEvent | yaml.MappingStartEvent):
                depth += 1
                mark = event.start_mark
                if depth > MAX_JSON_DEPTH and mark is not None:
                    return Position(mark.line + 1, mark.column + 1)
            elif isinstance(event, yaml.SequenceEndEvent | yaml.MappingEndEvent):
                depth -= 1
    except yaml.YAMLError:
        pass
    return Position(1, 1)


@dataclass
class _StepDraft:
    """A step read from YAML, before its references become dependencies."""

    node: MappingNode
    id: str
    type: StepType
    params: Template
    config: StepConfig
    needs: list[tuple[str, Node]]
    references: list[tuple[Reference, Position]]
    timeout_seconds: float | None
    retry: RetryPolicy
    allow_failure: bool
    description: str | None


class _WorkflowReader:
    def __init__(self, issues: Issues) -> None:
        self.issues = issues
        self.deadline = total_deadline(
            "evaluating the constant parts of the workflow's expressions"
        )
        """Shared by every expression's constant parts (MAX_TOTAL_EVALUATION_SECONDS)."""
        self.folding = True
        """False once the deadline has passed: later expressions are only parsed."""
        self.name = ""
        self.input_names: set[str] = set()
        """Every declared input, also those reported invalid (no "unknown input" for them)."""

    # -- the document --------------------------------------------------------------------------

    def read(self, root: MappingNode, document: dict[str, object]) -> WorkflowDefinition | None:
        fields = self.fields(root, WORKFLOW_KEYS, "the workflow", required=("name", "steps"))
        self.name = self.slug(fields.get("name"), "name") or ""
        kind_node = fields.get("kind")
        kind: WorkflowKind = "workflow"
        if kind_node is not None:
            value = self.string(kind_node, "kind")
            if value == "block":
                kind = "block"
            elif value is not None and value != "workflow":
                self.issues.add(kind_node, f"kind must be workflow or block, not {value!r}")
        title = self.optional_text(fields.get("title"), "title", 200)
        description = self.optional_text(fields.get("description"), "description", 2000)
        inputs = self.inputs(fields.get("inputs"))
        drafts = self.steps(fields.get("steps"))
        result_references: list[tuple[Reference, Position]] = []
        result = None
        if "result" in fields:
            result = self.template(fields["result"], result_references)
        step_ids = {draft.id for draft in drafts}
        input_names = self.input_names
        for reference, position in result_references:
            self.resolve(reference, position, step_ids, input_names)
        needs = {draft.id: self.dependencies(draft, step_ids, input_names) for draft in drafts}
        self.check_cycles(drafts, needs)
        if self.issues.found:
            return None
        return WorkflowDefinition(
            name=self.name,
            kind=kind,
            steps=tuple(self.build(draft, needs[draft.id]) for draft in drafts),
            inputs=tuple(inputs),
            result=result,
            title=title,
            description=description,
            document=document,
        )

    def build(self, draft: _StepDraft, needs: tuple[str, ...]) -> StepDefinition:
        return StepDefinition(
            id=draft.id,
            type=draft.type,
            params=draft.params,
            config=draft.config,
            needs=needs,
            timeout_seconds=draft.timeout_seconds,
            retry=draft.retry,
            allow_failure=draft.allow_failure,
            description=draft.description,
            position=position_of(draft.node),
        )

    # -- inputs --------------------------------------------------------------------------------

    def inputs(self, node: Node | None) -> list[InputDefinition]:
        if node is None:
            return []
        if not isinstance(node, MappingNode):
            self.issues.add(node, "inputs must be a mapping of input names to types")
            return []
        found: list[InputDefinition] = []
        for name, (key_node, value_node) in entries(node).items():
            if not IDENTIFIER.fullmatch(name):
                self.issues.add(key_node, f"invalid input name {name!r} (letters, digits, _)")
                continue
            self.input_names.add(name)
            declared = self.input(name, value_node)
            if declared is not None:
                found.append(declared)
        return found

    def input(self, name: str, node: Node) -> InputDefinition | None:
        if isinstance(node, ScalarNode):  # shorthand: `amount: number`
            input_type = self.input_type(node)
            return InputDefinition(name, input_type, True) if input_type else None
        fields = self.fields(node, INPUT_KEYS, f"input {name!r}", required=("type",))
        input_type = self.input_type(fields["type"]) if "type" in fields else None
        description = self.optional_text(fields.get("description"), "description", 2000)
        default = None
        if "default" in fields:
            default = to_json(fields["default"], self.issues)
            if input_type == "file":
                self.issues.add(fields["default"], "a file input cannot have a default")
            elif input_type is not None and default is not None:
                problem = check_input_value(input_type, default)
                if problem is not None:
                    self.issues.add(fields["default"], f"default of {name!r}: {problem}")
        required = "default" not in fields
        if "required" in fields:
            flag = self.boolean(fields["required"], "required")
            if flag and "default" in fields:
                self.issues.add(fields["required"], "an input with a default is not required")
            required = bool(flag)
        if input_type is None:
            return None
        return InputDefinition(name, input_type, required, default, description)

    def input_type(self, node: Node) -> InputType | None:
        value = self.string(node, "an input type")
        for known in INPUT_TYPES:
            if value == known:
                return known
        if value is not None:
            self.issues.add(
                node, f"unknown input type {value!r} (expected one of {', '.join(INPUT_TYPES)})"
            )
        return None

    # -- steps ---------------------------------------------------------------------------------

    def steps(self, node: Node | None) -> list[_StepDraft]:
        if node is None:
            return []
        if not isinstance(node, SequenceNode) or not node.value:
            self.issues.add(node, "steps must be a non-empty list")
            return []
        if len(node.value) > MAX_STEPS:
            self.issues.add(node, f"more than {MAX_STEPS} steps")
            return []
        drafts: list[_StepDraft] = []
        first_line: dict[str, int] = {}
        for index, step_node in enumerate(node.value):
            draft = self.step(step_node, index)
            if draft is None:
                continue
            if draft.id in first_line:
                where = entries(draft.node)["id"][1]
                self.issues.add(
                    where, f"duplicate step id {draft.id!r} (first at line {first_line[draft.id]})"
                )
                continue
            first_line[draft.id] = position_of(draft.node).line
            drafts.append(draft)
        return drafts

    def step(self, node: Node, index: int) -> _StepDraft | None:
        if not isinstance(node, MappingNode):
            self.issues.add(node, "a step must be a mapping")
            return None
        raw = entries(node)
        label = f"step {index + 1}"
        step_id = self.identifier(raw["id"][1], "step id") if "id" in raw else None
        if step_id is not None:
            label = f"step {step_id!r}"
        step_type = self.step_type(raw, node, label)
        allowed = COMMON_STEP_KEYS + (
            STEP_KEYS[step_type] if step_type else tuple(k for ks in STEP_KEYS.values() for k in ks)
        )
        required = ("id", "type", *(REQUIRED_STEP_KEYS[step_type] if step_type else ()))
        what = f"{label} ({step_type})" if step_type else label
        fields = self.fields(node, allowed, what, required=required)
        if step_id is None or step_type is None:
            return None
        references: list[tuple[Reference, Position]] = []
        params, config = self.step_body(node, step_type, fields, references)
        timeout = None
        if "timeout" in fields:
            timeout = self.duration(fields["timeout"], "timeout", MAX_TIMEOUT_SECONDS)
        return _StepDraft(
            node=node,
            id=step_id,
            type=step_type,
            params=params,
            config=config,
            needs=self.needs(fields.get("needs")),
            references=references,
            timeout_seconds=timeout,
            retry=self.retry(fields.get("retries")),
            allow_failure=bool(self.boolean(fields["allow_failure"], "allow_failure"))
            if "allow_failure" in fields
            else False,
            description=self.optional_text(fields.get("description"), "description", 2000),
        )

    def step_type(
        self, raw: dict[str, tuple[ScalarNode, Node]], node: Node, label: str
    ) -> StepType | None:
        if "type" not in raw:
            return None  # reported as a missing required key
        type_node = raw["type"][1]
        value = self.string(type_node, "type")
        for known in STEP_TYPES:
            if value == known:
                return known
        if value is not None:
            self.issues.add(
                type_node,
                f"unknown step type {value!r} in {label} (expected one of {', '.join(STEP_TYPES)})",
            )
        return None

    def step_body(
        self,
        node: MappingNode,
        step_type: StepType,
        fields: dict[str, Node],
        references: list[tuple[Reference, Position]],
    ) -> tuple[Template, StepConfig]:
        if step_type == "agent":
            agent = self.slug(fields.get("agent"), "agent") or ""
            params = self.template(fields["input"], references) if "input" in fields else None
            return params or Literal(None), AgentCall(agent)
        if step_type == "block":
            block = self.slug(fields.get("block"), "block") or ""
            if block and block == self.name:
                self.issues.add(fields["block"], f"block {block!r} calls itself")
            version = None
            if "version" in fields:
                version = self.string(fields["version"], "version")
            params = self.template(fields["input"], references) if "input" in fields else None
            return params or Literal({}), BlockCall(block, version)
        if step_type == "http":
            return self.http(fields, references)
        if step_type == "transform":
            if "value" not in fields:  # reported as a missing required key
                return Literal(None), None
            return self.template(fields["value"], references), None
        return self.wait(node, fields, references), None

    def http(
        self, fields: dict[str, Node], references: list[tuple[Reference, Position]]
    ) -> tuple[Template, StepConfig]:
        method = "GET"
        if "method" in fields:
            value = self.string(fields["method"], "method")
            if value is not None and value.upper() not in HTTP_METHODS:
                self.issues.add(
                    fields["method"], f"unknown HTTP method {value!r} ({', '.join(HTTP_METHODS)})"
                )
            method = (value or "GET").upper()
        parts: list[tuple[str, Template]] = []
        url = self.template(fields["url"], references) if "url" in fields else None
        if isinstance(url, Literal) and not (
            isinstance(url.value, str) and url.value.startswith(("http://", "https://"))
        ):
            self.issues.add(fields["url"], "url must start with http:// or https://")
        if url is not None:
            parts.append(("url", url))
        for key in ("headers", "query"):
            if key in fields:
                if not isinstance(fields[key], MappingNode):
                    self.issues.add(fields[key], f"{key} must be a mapping of names to values")
                    continue
                parts.append((key, self.template(fields[key], references)))
        if "json" in fields:
            parts.append(("json", self.template(fields["json"], references)))
        return MappingTemplate(tuple(parts)), HttpRequest(
            method, self.statuses(fields.get("expect_status"))
        )

    def statuses(self, node: Node | None) -> tuple[int, ...]:
        if node is None:
            return ()
        items = node.value if isinstance(node, SequenceNode) else [node]
        statuses: list[int] = []
        for item in items:
            value = scalar_value(item) if isinstance(item, ScalarNode) else None
            if isinstance(value, int) and not isinstance(value, bool) and 100 <= value <= 599:
                statuses.append(value)
            else:
                self.issues.add(item, "expect_status takes HTTP statuses (100 to 599)")
        return tuple(statuses)

    def wait(
        self,
        node: MappingNode,
        fields: dict[str, Node],
        references: list[tuple[Reference, Position]],
    ) -> Template:
        given = [key for key in ("duration", "until") if key in fields]
        if len(given) != 1:
            if given:
                self.issues.add(fields[given[1]], "a wait step takes duration or until, not both")
            else:
                self.issues.add(node, "a wait step needs duration or until")
            return Literal({})
        key = given[0]
        template = self.template(fields[key], references)
        if isinstance(template, Literal):
            try:
                if key == "duration":
                    seconds = parse_duration(
                        template.value, maximum=MAX_WAIT_SECONDS, allow_zero=True
                    )
                    template = Literal(seconds)
                else:
                    parse_timestamp(template.value)
            except DurationError as exc:
                self.issues.add(fields[key], f"{key}: {exc}")
        return MappingTemplate(((key, template),))

    def needs(self, node: Node | None) -> list[tuple[str, Node]]:
        if node is None:
            return []
        items = node.value if isinstance(node, SequenceNode) else [node]
        found: list[tuple[str, Node]] = []
        for item in items:
            step_id = self.identifier(item, "needs")
            if step_id is not None:
                found.append((step_id, item))
        return found

    def retry(self, node: Node | None) -> RetryPolicy:
        if node is None:
            return RetryPolicy()
        if isinstance(node, ScalarNode):
            return RetryPolicy(count=self.retry_count(node))
        fields = self.fields(node, RETRY_KEYS, "retries", required=("count",))
        policy = RetryPolicy(count=self.retry_count(fields["count"]) if "count" in fields else 0)
        backoff: float | None = policy.backoff_seconds
        if "backoff" in fields:
            backoff = self.duration(fields["backoff"], "backoff", 3600.0, allow_zero=True)
        factor: float | None = policy.factor
        if "factor" in fields:
            factor = self.number(fields["factor"], "factor")
            if factor is not None and not 1 <= factor <= 10:
                self.issues.add(fields["factor"], "factor must be between 1 and 10")
        max_backoff: float | None = policy.max_backoff_seconds
        if "max_backoff" in fields:
            max_backoff = self.duration(fields["max_backoff"], "max_backoff", 3600.0)
        jitter = "none"
        if "jitter" in fields:
            value = (
                scalar_value(fields["jitter"]) if isinstance(fields["jitter"], ScalarNode) else None
            )
            if value in JITTERS:
                jitter = str(value)
            else:
                self.issues.add(fields["jitter"], "jitter must be 'none' or 'full'")
        on = frozenset(RETRY_ON)
        if "retry_on" in fields:
            on = self.retry_on(fields["retry_on"])
        if backoff is None or factor is None or max_backoff is None:
            return policy  # reported
        return RetryPolicy(policy.count, backoff, factor, max_backoff, jitter, on)

    def retry_on(self, node: Node) -> frozenset[str]:
        """The failure kinds a step's ``retries.retry_on`` lists (a non-empty list of ``failed``,
        ``timeout``)."""
        items = node.value if isinstance(node, SequenceNode) else None
        values = [
            scalar_value(item) if isinstance(item, ScalarNode) else None for item in items or []
        ]
        if not values or any(value not in RETRY_ON for value in values):
            self.issues.add(node, "retry_on must be a non-empty list of 'failed' and 'timeout'")
            return frozenset(RETRY_ON)
        return frozenset(str(value) for value in values)

    def retry_count(self, node: Node) -> int:
        value = scalar_value(node) if isinstance(node, ScalarNode) else None
        if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MAX_RETRIES:
            return value
        self.issues.add(node, f"retries: expected a count from 0 to {MAX_RETRIES}")
        return 0

    # -- references and dependencies -----------------------------------------------------------

    def dependencies(
        self, draft: _StepDraft, step_ids: set[str], input_names: set[str]
    ) -> tuple[str, ...]:
        needs: list[str] = []
        for step_id, node in draft.needs:
            if step_id not in step_ids:
                self.issues.add(
                    node, f"unknown step {step_id!r} in needs{_hint(step_id, step_ids)}"
                )
            elif step_id not in needs:
                needs.append(step_id)
        for reference, position in draft.references:
            used = self.resolve(reference, position, step_ids, input_names)
            if used is not None and used not in needs:
                needs.append(used)
        return tuple(needs)

    def resolve(
        self, reference: Reference, position: Position, step_ids: set[str], input_names: set[str]
    ) -> str | None:
        """Report a reference to something that does not exist; return the step it uses."""
        path = reference.path
        if reference.root == "inputs":
            name = path[0] if path else None
            if name is not None and name not in input_names:
                self.issues.add(position, f"unknown input {name!r}{_hint(name, input_names)}")
            return None
        step_id = path[0] if path else None
        if step_id is None:
            self.issues.add(position, "name the step: steps.<id>")
            return None
        if step_id not in step_ids:
            self.issues.add(position, f"unknown step {step_id!r}{_hint(step_id, step_ids)}")
            return None
        if len(path) > 1 and path[1] is not None and path[1] not in STEP_FIELDS:
            self.issues.add(
                position,
                f"steps.{step_id} has {', '.join(STEP_FIELDS)}; not {path[1]!r}"
                f"{_hint(path[1], STEP_FIELDS)}",
            )
        return step_id

    def check_cycles(self, drafts: list[_StepDraft], needs: dict[str, tuple[str, ...]]) -> None:
        nodes = {draft.id: draft.node for draft in drafts}
        for cycle in find_cycles(needs):
            self.issues.add(nodes[cycle[0]], f"dependency cycle: {' -> '.join(cycle)}")

    # -- templates -----------------------------------------------------------------------------

    def template(self, node: Node, references: list[tuple[Reference, Position]]) -> Template:
        """The node as a template; expressions are checked and their references collected."""
        if isinstance(node, ScalarNode):
            value = scalar_value(node)
            if not isinstance(value, str):
                return Literal(value)
            try:
                template = compile_string(value, deadline=self.deadline, fold=self.folding)
            except ExpressionError as exc:
                where = self.issues.in_scalar(node, exc.offset)
                self.issues.add(where, f"invalid expression: {exc.message}")
                if self.deadline.expired():  # reported once, not again for every expression
                    self.folding = False
                return Literal(None)
            for embedded in embedded_in(template):
                for reference in embedded.expression.references:
                    offset = embedded.offset + reference.offset
                    references.append((reference, self.issues.in_scalar(node, offset)))
            return template
        if isinstance(node, SequenceNode):
            items = tuple(self.template(item, references) for item in node.value)
            if all(isinstance(item, Literal) for item in items):
                return Literal([item.value for item in items if isinstance(item, Literal)])
            return ListTemplate(items)
        assert isinstance(node, MappingNode)
        pairs = tuple(
            (key, self.template(value_node, references))
            for key, (_, value_node) in entries(node).items()
        )
        if all(isinstance(value, Literal) for _, value in pairs):
            return Literal({key: value.value for key, value in pairs if isinstance(value, Literal)})
        return MappingTemplate(pairs)

    # -- typed fields --------------------------------------------------------------------------

    def fields(
        self, node: Node, allowed: Iterable[str], what: str, *, required: Iterable[str] = ()
    ) -> dict[str, Node]:
        """The mapping's values by key; unknown and missing keys are reported."""
        if not isinstance(node, MappingNode):
            self.issues.add(node, f"{what} must be a mapping")
            return {}
        allowed = tuple(allowed)
        found: dict[str, Node] = {}
        for key, (key_node, value_node) in entries(node).items():
            if key in allowed:
                found[key] = value_node
            else:
                self.issues.add(
                    key_node,
                    f"unknown key {key!r} in {what}{_hint(key, allowed)}"
                    f" (allowed: {', '.join(allowed)})",
                )
        for key in required:
            if key not in found and key not in entries(node):
                self.issues.add(node, f"{what} needs {key!r}")
        return found

    def string(self, node: Node, what: str) -> str | None:
        value = scalar_value(node) if isinstance(node, ScalarNode) else None
        if isinstance(value, str):
            return value
        self.issues.add(node, f"{what} must be a string")
        return None

    def optional_text(self, node: Node | None, what: str, max_length: int) -> str | None:
        if node is None:
            return None
        value = self.string(node, what)
        if value is not None and len(value) > max_length:
            self.issues.add(node, f"{what} is longer than {max_length} characters")
        return value

    def slug(self, node: Node | None, what: str) -> str | None:
        if node is None:
            return None
        value = self.string(node, what)
        if value is None:
            return None
        if not SLUG.fullmatch(value):
            self.issues.add(node, f"{what} {value!r} must be 1 to 64 letters, digits, - or _")
        elif what == "name" and value in RESERVED_SLUGS:
            self.issues.add(node, f"name {value!r} is reserved")
        return value

    def identifier(self, node: Node, what: str) -> str | None:
        value = self.string(node, what)
        if value is not None and not IDENTIFIER.fullmatch(value):
            self.issues.add(
                node, f"{what} {value!r} must start with a letter or _ and hold letters, digits, _"
            )
            return None
        return value

    def boolean(self, node: Node, what: str) -> bool | None:
        value = scalar_value(node) if isinstance(node, ScalarNode) else None
        if isinstance(value, bool):
            return value
        self.issues.add(node, f"{what} must be true or false")
        return None

    def number(self, node: Node, what: str) -> float | None:
        value = scalar_value(node) if isinstance(node, ScalarNode) else None
        if isinstance(value, int | float) and not isinstance(value, bool):
            return float(value)
        self.issues.add(node, f"{what} must be a number")
        return None

    def duration(
        self, node: Node, what: str, maximum: float, *, allow_zero: bool = False
    ) -> float | None:
        value = scalar_value(node) if isinstance(node, ScalarNode) else None
        try:
            return parse_duration(value, maximum=maximum, allow_zero=allow_zero)
        except DurationError as exc:
            self.issues.add(node, f"{what}: {exc}")
            return None


def _hint(word: str, choices: Iterable[str]) -> str:
    close = difflib.get_close_matches(word, list(choices), n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""
