"""Templates: YAML values whose strings may embed ``${{ expression }}``.

A string that is exactly one ``${{ ... }}`` yields the expression's value with its own type (an
object, a number...); expressions inside longer strings are converted to text (null as '',
strings as they are, anything else as JSON). ``$${{`` writes a literal ``${{``.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass

from handlers.agents.workflows.expressions import (
    EvaluationError,
    Expression,
    ExpressionError,
    compile_expression,
    evaluate,
)
from handlers.agents.workflows.functions import FunctionError, to_text
from handlers.agents.workflows.limits import (
    Budget,
    Deadline,
    LimitError,
    Sizer,
    check_string,
    total_deadline,
)

OPEN = "${{"
CLOSE = "}}"
ESCAPED_OPEN = "$${{"


@dataclass(frozen=True)
class Embedded:
    """An expression inside a string; ``offset`` is where its source starts in the string."""

    expression: Expression
    offset: int


@dataclass(frozen=True)
class Literal:
    value: object


@dataclass(frozen=True)
class Whole:
    """A string that is one expression: the value keeps its type."""

    embedded: Embedded


@dataclass(frozen=True)
class Interpolation:
    parts: tuple[str | Embedded, ...]


@dataclass(frozen=True)
class MappingTemplate:
    entries: tuple[tuple[str, Template], ...]


@dataclass(frozen=True)
class ListTemplate:
    items: tuple[Template, ...]


Template = Literal | Whole | Interpolation | MappingTemplate | ListTemplate


class RenderError(ValueError):
    """An embedded expression failed; the message names the expression."""


def compile_string(text: str, *, deadline: Deadline | None = None, fold: bool = True) -> Template:
    """The template of one string; raises ExpressionError with the offset in ``text``.
    ``deadline`` and ``fold``: see ``compile_expression``."""
    parts: list[str | Embedded] = []
    literal: list[str] = []
    index = 0
    while index < len(text):
        if text.startswith(ESCAPED_OPEN, index):
            literal.append(OPEN)
            index += len(ESCAPED_OPEN)
        elif text.startswith(OPEN, index):
            start = index + len(OPEN)
            end = _closing(text, start)
            if end is None:
                raise ExpressionError("'${{' without its closing '}}'", index)
            source = text[start:end]
            lead = len(source) - len(source.lstrip())
            try:
                expression = compile_expression(source.strip(), deadline=deadline, fold=fold)
            except ExpressionError as exc:
                raise ExpressionError(exc.message, start + lead + exc.offset) from None
            if literal:
                parts.append("".join(literal))
                literal = []
            parts.append(Embedded(expression, start + lead))
            index = end + len(CLOSE)
        else:
            literal.append(text[index])
            index += 1
    if literal:
        parts.append("".join(literal))
    if len(parts) == 1 and isinstance(parts[0], Embedded):
        return Whole(parts[0])
    if all(isinstance(part, str) for part in parts):
        return Literal("".join(part for part in parts if isinstance(part, str)))
    return Interpolation(tuple(parts))


def _closing(text: str, start: int) -> int | None:
    """Index of the ``}}`` ending an expression that starts at ``start``: braces of object
    literals and quoted strings inside the expression are skipped."""
    depth, index, quote = 0, start, ""
    while index < len(text):
        char = text[index]
        if quote:
            if char == "\\":
                index += 1
            elif char == quote:
                quote = ""
        elif char in "'\"":
            quote = char
        elif char == "{":
            depth += 1
        elif char == "}":
            if depth == 0 and text.startswith(CLOSE, index):
                return index
            depth = max(depth - 1, 0)
        index += 1
    return None


def render(
    template: Template, scope: Mapping[str, object], *, sizer: Sizer | None = None
) -> object:
    """The template's value with ``scope``; raises RenderError naming the failing expression.

    Each expression has MAX_EVALUATION_SECONDS, and all of them together
    MAX_TOTAL_EVALUATION_SECONDS. ``sizer`` measures the values (a fresh one when None): pass
    one to measure the result afterwards with what it remembers. It is CPU-bound work: call it
    from a worker thread, not on an event loop.
    """
    state = _RenderState(total_deadline("the template's expressions"), sizer or Sizer())
    return _render(template, scope, state)


@dataclass(frozen=True)
class _RenderState:
    deadline: Deadline
    sizer: Sizer


def _render(template: Template, scope: Mapping[str, object], state: _RenderState) -> object:
    if isinstance(template, Literal):
        return template.value
    if isinstance(template, Whole):
        return _value(template.embedded, scope, state)
    if isinstance(template, Interpolation):
        texts = [
            part if isinstance(part, str) else _text(part, scope, state) for part in template.parts
        ]
        try:
            check_string(sum(map(len, texts)))
        except LimitError as exc:
            raise RenderError(str(exc)) from None
        return "".join(texts)
    if isinstance(template, MappingTemplate):
        return {key: _render(value, scope, state) for key, value in template.entries}
    return [_render(item, scope, state) for item in template.items]


def _value(embedded: Embedded, scope: Mapping[str, object], state: _RenderState) -> object:
    with _naming(embedded):
        return evaluate(embedded.expression, scope, Budget(outer=state.deadline, sizer=state.sizer))


def _text(embedded: Embedded, scope: Mapping[str, object], state: _RenderState) -> str:
    """The expression's value as text (strings as they are, null as '', others as JSON)."""
    budget = Budget(outer=state.deadline, sizer=state.sizer)
    with _naming(embedded):
        return to_text(evaluate(embedded.expression, scope, budget), budget)


@contextmanager
def _naming(embedded: Embedded) -> Iterator[None]:
    """Errors inside as RenderError naming the expression."""
    try:
        yield
    except EvaluationError as exc:
        raise RenderError(_named(embedded, exc.message)) from None
    except (LimitError, FunctionError) as exc:
        raise RenderError(_named(embedded, str(exc))) from None


def _named(embedded: Embedded, message: str) -> str:
    source = embedded.expression.source
    shown = source if len(source) <= 80 else source[:77] + "..."
    return f"${{{{ {shown} }}}}: {message}"


def embedded_in(template: Template) -> Iterator[Embedded]:
    """Every expression of the template."""
    if isinstance(template, Whole):
        yield template.embedded
    elif isinstance(template, Interpolation):
        yield from (part for part in template.parts if isinstance(part, Embedded))
    elif isinstance(template, MappingTemplate):
        for _, value in template.entries:
            yield from embedded_in(value)
    elif isinstance(template, ListTemplate):
        for item in template.items:
            yield from embedded_in(item)
