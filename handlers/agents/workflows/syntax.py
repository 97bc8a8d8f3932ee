"""The expression language's syntax: tokenizer, parser and tree (see README.md, "Expressions").

Hand-written on purpose: the grammar holds only what the evaluator implements (JSON values,
the names ``inputs`` and ``steps``, key access, operators and a fixed set of functions), so
nothing of Python (attributes of objects, imports, lambdas, comprehensions) is reachable.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from handlers.agents.workflows.functions import FUNCTIONS
from handlers.agents.workflows.limits import (
    MAX_NESTING,
    LimitError,
    check_number,
)

ROOT_NAMES = ("inputs", "steps")
KEYWORD_CONSTANTS: dict[str, object] = {"true": True, "false": False, "null": None}
WORD_OPERATORS = ("and", "or", "not", "in", "if", "else")
UNSUPPORTED_WORDS = {
    "lambda": "lambdas are not supported",
    "for": "comprehensions and loops are not supported",
    "import": "imports are not supported",
    "def": "definitions are not supported",
    "class": "classes are not supported",
    "yield": "generators are not supported",
    "await": "await is not supported",
    "is": "'is' is not supported: use ==",
    "True": "use true",
    "False": "use false",
    "None": "use null",
}


class ExpressionError(ValueError):
    """An invalid expression; ``offset`` is the 0-based character where the problem is."""

    def __init__(self, message: str, offset: int = 0) -> None:
        super().__init__(message)
        self.message = message
        self.offset = offset


# -- syntax tree ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Const:
    value: object
    offset: int


@dataclass(frozen=True)
class Name:
    name: str
    offset: int


@dataclass(frozen=True)
class Member:
    """``target.key`` or ``target["key"]`` / ``target[index]`` (``key`` is then an expression)."""

    target: Node
    key: Node
    offset: int


@dataclass(frozen=True)
class Unary:
    op: str
    operand: Node
    offset: int


@dataclass(frozen=True)
class Binary:
    op: str
    left: Node
    right: Node
    offset: int


@dataclass(frozen=True)
class Conditional:
    """``then if condition else otherwise``."""

    then: Node
    condition: Node
    otherwise: Node
    offset: int


@dataclass(frozen=True)
class Call:
    function: str
    args: tuple[Node, ...]
    offset: int


@dataclass(frozen=True)
class ListLiteral:
    items: tuple[Node, ...]
    offset: int


@dataclass(frozen=True)
class ObjectLiteral:
    entries: tuple[tuple[Node, Node], ...]
    offset: int


Node = Const | Name | Member | Unary | Binary | Conditional | Call | ListLiteral | ObjectLiteral


# -- tokenizer -----------------------------------------------------------------------------------

_TOKEN = re.compile(
    r"""
    (?P<space>\s+)
    | (?P<number>\d+\.\d*(?:[eE][+-]?\d+)?|\d+[eE][+-]?\d+|\.\d+(?:[eE][+-]?\d+)?|\d+)
    | (?P<string>'(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*")
    | (?P<name>[A-Za-z_][A-Za-z0-9_]*)
    | (?P<op>\*\*|//|==|!=|<=|>=|[-+*/%<>()\[\]{},.:])
    """,
    re.VERBOSE | re.DOTALL,
)
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "\\": "\\", "'": "'", '"': '"', "/": "/", "0": "\0"}


@dataclass(frozen=True)
class Token:
    kind: str  # number, string, name, op, end
    text: str
    offset: int
    value: object = None


def tokenize(source: str) -> list[Token]:
    tokens: list[Token] = []
    position = 0
    while position < len(source):
        match = _TOKEN.match(source, position)
        if match is None:
            char = source[position]
            if char in "'\"":
                raise ExpressionError("unterminated string", position)
            raise ExpressionError(f"unexpected character {char!r}", position)
        kind = match.lastgroup or ""
        text = match.group()
        if kind == "number":
            tokens.append(Token(kind, text, position, _number(text, position)))
        elif kind == "string":
            tokens.append(Token(kind, text, position, _unescape(text, position)))
        elif kind != "space":
            tokens.append(Token(kind, text, position))
        position = match.end()
    tokens.append(Token("end", "", len(source)))
    return tokens


def _number(text: str, offset: int) -> int | float:
    try:
        return check_number(float(text) if any(c in text for c in ".eE") else int(text))
    except (LimitError, ValueError) as exc:
        raise ExpressionError(f"invalid number {text[:20]}: {exc}", offset) from None


def _unescape(text: str, offset: int) -> str:
    body, out, index = text[1:-1], [], 0
    while index < len(body):
        char = body[index]
        if char != "\\":
            out.append(char)
            index += 1
            continue
        escape = body[index + 1]
        if escape == "u" and re.fullmatch(r"[0-9a-fA-F]{4}", body[index + 2 : index + 6]):
            out.append(chr(int(body[index + 2 : index + 6], 16)))
            index += 6
        elif escape in _ESCAPES:
            out.append(_ESCAPES[escape])
            index += 2
        else:
            raise ExpressionError(f"unknown escape \\{escape}", offset + 1 + index)
    return "".join(out)


# -- parser --------------------------------------------------------------------------------------

_COMPARISONS = ("==", "!=", "<", "<=", ">", ">=")


class _Parser:
    """Recursive descent, lowest precedence first: conditional, or, and, not, comparison,
    additive, multiplicative, unary, power, postfix (``.key``, ``[index]``, calls), atoms."""

    def __init__(self, source: str) -> None:
        self.tokens = tokenize(source)
        for token in self.tokens:  # before anything else, for the most telling message
            if token.kind == "name" and token.text in UNSUPPORTED_WORDS:
                raise ExpressionError(UNSUPPORTED_WORDS[token.text], token.offset)
        self.index = 0
        self.depth = 0

    @property
    def token(self) -> Token:
        return self.tokens[self.index]

    def at(self, *texts: str) -> bool:
        return self.token.kind in ("op", "name") and self.token.text in texts

    def advance(self) -> Token:
        token = self.token
        self.index += 1
        return token

    def expect(self, text: str) -> Token:
        if not self.at(text):
            raise ExpressionError(f"expected {text!r}, found {self._describe()}", self.token.offset)
        return self.advance()

    def _describe(self) -> str:
        return "the end of the expression" if self.token.kind == "end" else repr(self.token.text)

    def nested(self, offset: int) -> None:
        self.depth += 1
        if self.depth > MAX_NESTING:
            raise ExpressionError(f"expression nested too deeply (max {MAX_NESTING})", offset)

    def parse(self) -> Node:
        node = self.expression()
        if self.token.kind != "end":
            if self.at("for"):
                raise ExpressionError(UNSUPPORTED_WORDS["for"], self.token.offset)
            raise ExpressionError(f"unexpected {self._describe()}", self.token.offset)
        return node

    def expression(self) -> Node:
        self.nested(self.token.offset)
        node = self.disjunction()
        if self.at("if"):
            offset = self.advance().offset
            condition = self.disjunction()
            self.expect("else")
            node = Conditional(node, condition, self.expression(), offset)
        self.depth -= 1
        return node

    def disjunction(self) -> Node:
        node = self.conjunction()
        while self.at("or"):
            offset = self.advance().offset
            node = Binary("or", node, self.conjunction(), offset)
        return node

    def conjunction(self) -> Node:
        node = self.negation()
        while self.at("and"):
            offset = self.advance().offset
            node = Binary("and", node, self.negation(), offset)
        return node

    def negation(self) -> Node:
        if self.at("not"):
            offset = self.advance().offset
            self.nested(offset)
            node: Node = Unary("not", self.negation(), offset)
            self.depth -= 1
            return node
        return self.comparison()

    def comparison(self) -> Node:
        node = self.additive()
        op = self._comparison_operator()
        if op is None:
            return node
        offset = self.token.offset
        self.advance()
        if op == "not in":
            self.advance()
        node = Binary(op, node, self.additive(), offset)
        if self._comparison_operator() is not None:
            raise ExpressionError("chained comparisons are not supported", self.token.offset)
        return node

    def _comparison_operator(self) -> str | None:
        if self.token.kind == "op" and self.token.text in _COMPARISONS:
            return self.token.text
        if self.at("in"):
            return "in"
        if self.at("not") and self.tokens[self.index + 1].text == "in":
            return "not in"
        return None

    def additive(self) -> Node:
        node = self.multiplicative()
        while self.token.kind == "op" and self.token.text in ("+", "-"):
            token = self.advance()
            node = Binary(token.text, node, self.multiplicative(), token.offset)
        return node

    def multiplicative(self) -> Node:
        node = self.unary()
        while self.token.kind == "op" and self.token.text in ("*", "/", "//", "%"):
            token = self.advance()
            node = Binary(token.text, node, self.unary(), token.offset)
        return node

    def unary(self) -> Node:
        if self.token.kind == "op" and self.token.text in ("-", "+"):
            token = self.advance()
            self.nested(token.offset)
            node: Node = Unary(token.text, self.unary(), token.offset)
            self.depth -= 1
            return node
        return self.power()

    def power(self) -> Node:
        node = self.postfix()
        if self.token.kind == "op" and self.token.text == "**":
            token = self.advance()
            self.nested(token.offset)
            node = Binary("**", node, self.unary(), token.offset)  # right-associative
            self.depth -= 1
        return node

    def postfix(self) -> Node:
        node = self.atom()
        while self.token.kind == "op" and self.token.text in (".", "[", "("):
            token = self.advance()
            if token.text == ".":
                key = self.advance()
                if key.kind != "name":
                    raise ExpressionError("expected a key name after '.'", key.offset)
                _check_name(key)
                node = Member(node, Const(key.text, key.offset), token.offset)
            elif token.text == "[":
                self.nested(token.offset)
                node = Member(node, self.expression(), token.offset)
                self.expect("]")
                self.depth -= 1
            else:
                raise ExpressionError("only the built-in functions can be called", token.offset)
        return node

    def atom(self) -> Node:
        token = self.token
        if token.kind in ("number", "string"):
            self.advance()
            return Const(token.value, token.offset)
        if token.kind == "name":
            return self.name()
        if token.kind == "op" and token.text == "(":
            self.advance()
            if self.at(")"):
                raise ExpressionError("empty parentheses (tuples are not supported)", token.offset)
            node = self.expression()
            self.expect(")")
            return node
        if token.kind == "op" and token.text == "[":
            return self.list_literal()
        if token.kind == "op" and token.text == "{":
            return self.object_literal()
        raise ExpressionError(f"expected a value, found {self._describe()}", token.offset)

    def name(self) -> Node:
        token = self.advance()
        _check_name(token)
        if token.text in KEYWORD_CONSTANTS:
            return Const(KEYWORD_CONSTANTS[token.text], token.offset)
        if self.at("("):
            if token.text not in FUNCTIONS:
                raise ExpressionError(f"unknown function {token.text!r}", token.offset)
            return Call(token.text, self.arguments(), token.offset)
        if token.text in ROOT_NAMES:
            return Name(token.text, token.offset)
        if token.text in FUNCTIONS:
            raise ExpressionError(f"function {token.text!r} must be called", token.offset)
        raise ExpressionError(
            f"unknown name {token.text!r} (expressions see inputs, steps, literals and the "
            "built-in functions)",
            token.offset,
        )

    def arguments(self) -> tuple[Node, ...]:
        open_paren = self.expect("(")
        self.nested(open_paren.offset)
        args = self.sequence(")")
        self.depth -= 1
        return tuple(args)

    def list_literal(self) -> Node:
        token = self.expect("[")
        self.nested(token.offset)
        items = self.sequence("]")
        self.depth -= 1
        return ListLiteral(tuple(items), token.offset)

    def sequence(self, closing: str) -> list[Node]:
        items: list[Node] = []
        while not self.at(closing):
            items.append(self.expression())
            if self.at("for"):
                raise ExpressionError(UNSUPPORTED_WORDS["for"], self.token.offset)
            if not self.at(closing):
                self.expect(",")
        self.advance()
        return items

    def object_literal(self) -> Node:
        token = self.expect("{")
        self.nested(token.offset)
        entries: list[tuple[Node, Node]] = []
        while not self.at("}"):
            key = self.expression()
            self.expect(":")
            entries.append((key, self.expression()))
            if not self.at("}"):
                self.expect(",")
        self.advance()
        self.depth -= 1
        return ObjectLiteral(tuple(entries), token.offset)


def _check_name(token: Token) -> None:
    if token.text.startswith("__"):
        message = f"names starting with '__' are not allowed: {token.text}"
        raise ExpressionError(message, token.offset)
    if token.text in UNSUPPORTED_WORDS:
        raise ExpressionError(UNSUPPORTED_WORDS[token.text], token.offset)
    if token.text in WORD_OPERATORS:
        raise ExpressionError(f"unexpected {token.text!r}", token.offset)


def parse(source: str) -> Node:
    """The tree of ``source``; raise ExpressionError at the first problem."""
    return _Parser(source).parse()


def children(node: Node) -> tuple[Node, ...]:
    """The direct sub-expressions of ``node``."""
    if isinstance(node, Member):
        return (node.target, node.key)
    if isinstance(node, Unary):
        return (node.operand,)
    if isinstance(node, Binary):
        return (node.left, node.right)
    if isinstance(node, Conditional):
        return (node.condition, node.then, node.otherwise)
    if isinstance(node, Call):
        return node.args
    if isinstance(node, ListLiteral):
        return node.items
    if isinstance(node, ObjectLiteral):
        return tuple(part for entry in node.entries for part in entry)
    return ()
