"""Compiled expressions: parse once, know their references, evaluate against a scope.

See README.md ("Expressions") for the language; ``syntax`` parses it, ``evaluation`` runs it.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from handlers.agents.workflows.evaluation import EvaluationError, evaluate_node
from handlers.agents.workflows.limits import MAX_EXPRESSION_CHARS, Budget, Deadline
from handlers.agents.workflows.syntax import (
    Const,
    ExpressionError,
    Member,
    Name,
    Node,
    children,
    parse,
)

__all__ = [
    "EvaluationError",
    "Expression",
    "ExpressionError",
    "Reference",
    "compile_expression",
    "evaluate",
]


@dataclass(frozen=True)
class Reference:
    """A use of ``inputs`` or ``steps``: ``path`` holds the literal keys that follow it, ending
    with None where a key is computed (``inputs[name]``)."""

    root: str
    path: tuple[str | None, ...]
    offset: int


@dataclass(frozen=True)
class Expression:
    """A compiled expression: its source, tree and the references it makes."""

    source: str
    tree: Node
    references: tuple[Reference, ...]


def compile_expression(
    source: str, *, deadline: Deadline | None = None, fold: bool = True
) -> Expression:
    """Parse ``source``; raise ExpressionError with the offset of the first problem.

    Sub-expressions that use no names are evaluated now (unless ``fold`` is false), so
    ``'a' * 10**9`` fails here, within MAX_EVALUATION_SECONDS for the whole expression and
    before ``deadline``, which the caller shares between expressions (a workflow definition's).
    """
    if len(source) > MAX_EXPRESSION_CHARS:
        raise ExpressionError(
            f"expression too long ({len(source)} characters, max {MAX_EXPRESSION_CHARS})", 0
        )
    if not source.strip():
        raise ExpressionError("empty expression", 0)
    tree = parse(source)
    if fold:
        _fold_constants(tree, Budget(outer=deadline))
    return Expression(source, tree, tuple(_references(tree)))


def evaluate(
    expression: Expression, scope: Mapping[str, object], budget: Budget | None = None
) -> object:
    """The value of ``expression`` with ``scope`` binding ``inputs`` and ``steps``, within
    ``budget`` (a fresh one when None); raises EvaluationError (with the offset of the
    failing part)."""
    return evaluate_node(expression.tree, scope, budget)


def _references(node: Node) -> Iterator[Reference]:
    path = _static_path(node)
    if path is None:
        for child in children(node):
            yield from _references(child)
        return
    root, keys = path
    yield Reference(root.name, keys, root.offset)
    while isinstance(node, Member):
        if _literal_key(node.key) is None:
            yield from _references(node.key)
        node = node.target


def _static_path(node: Node) -> tuple[Name, tuple[str | None, ...]] | None:
    """For a chain ``root.a["b"][expr]...``: the root and its keys, in source order, cut after
    the first computed key (None)."""
    keys: list[str | None] = []  # innermost last while walking from the outside in
    while isinstance(node, Member):
        keys.append(_literal_key(node.key))
        node = node.target
    if not isinstance(node, Name):
        return None
    keys.reverse()
    if None in keys:
        keys = keys[: keys.index(None) + 1]
    return node, tuple(keys)


def _literal_key(key: Node) -> str | None:
    return key.value if isinstance(key, Const) and isinstance(key.value, str) else None


def _fold_constants(node: Node, budget: Budget) -> None:
    """Evaluate (to check them) the largest parts of ``node`` that use no names."""
    if isinstance(node, Const | Name):
        return
    if not _uses_names(node):
        try:
            evaluate_node(node, {}, budget)
        except EvaluationError as exc:
            raise ExpressionError(exc.message, exc.offset) from None
        return
    for child in children(node):
        _fold_constants(child, budget)


def _uses_names(node: Node) -> bool:
    return isinstance(node, Name) or any(_uses_names(child) for child in children(node))
