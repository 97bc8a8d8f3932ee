"""Path templates and the route table.

A template such as ``/users/{id:[0-9]+}/avatars/{name}`` compiles to a regex; ``{name}``
matches one segment. Routes are tried most specific first: segment by segment, a literal
beats a constrained parameter, which beats a plain one, and a longer template beats its
prefix; ties go to the longer literal text, then the template text, so the order never
depends on registration order. Fully literal templates are found by dictionary lookup.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Generic, TypeVar

__all__ = ["DuplicateRoute", "Match", "PathTemplate", "RouteTable", "compile_template"]

T = TypeVar("T")

_LITERAL, _CONSTRAINED, _PLAIN, _END = 0, 1, 2, 3
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_GROUP_NAME = re.compile(r"\(\?P<[A-Za-z_][A-Za-z0-9_]*>")


@dataclass(frozen=True, slots=True)
class PathTemplate:
    """A compiled path template."""

    template: str
    pattern: re.Pattern[str] | None
    names: tuple[str, ...]
    constraints: dict[str, str]
    rank: tuple[object, ...]
    plain: str = ""
    """The template without constraints (``/users/{id}``), as OpenAPI writes paths."""

    @property
    def is_static(self) -> bool:
        return self.pattern is None


def _split(segment: str, template: str) -> list[tuple[str, str | None, str | None]]:
    """A segment's pieces: ``(literal, None, None)`` or ``("", name, regex or None)``."""
    pieces: list[tuple[str, str | None, str | None]] = []
    i, literal = 0, []
    while i < len(segment):
        char = segment[i]
        if char != "{":
            if char == "}":
                raise ValueError(f"Unbalanced '}}' in path template {template!r}")
            literal.append(char)
            i += 1
            continue
        depth, j = 1, i + 1
        while j < len(segment) and depth:
            depth += {"{": 1, "}": -1}.get(segment[j], 0)
            j += 1
        if depth:
            raise ValueError(f"Unbalanced '{{' in path template {template!r}")
        if literal:
            pieces.append(("".join(literal), None, None))
            literal = []
        name, sep, regex = segment[i + 1 : j - 1].partition(":")
        if not _NAME.match(name):
            raise ValueError(f"Invalid parameter name {name!r} in path template {template!r}")
        if sep and not regex:
            raise ValueError(f"Empty regex for {name!r} in path template {template!r}")
        pieces.append(("", name, regex if sep else None))
        i = j
    if literal:
        pieces.append(("".join(literal), None, None))
    return pieces


def _segments(template: str) -> list[str]:
    """The segments of ``/a/{p:[^/]+/raw}/b``: split at ``/`` outside braces only, so a
    parameter's regex may contain ``/`` (a parameter spanning segments)."""
    segments: list[str] = []
    depth, current = 0, list[str]()
    for char in template[1:]:
        if char == "/" and depth == 0:
            segments.append("".join(current))
            current = []
            continue
        depth += {"{": 1, "}": -1}.get(char, 0)
        current.append(char)
    segments.append("".join(current))
    return segments


def compile_template(template: str) -> PathTemplate:
    """Compile ``template`` (leading ``/``; a trailing ``/`` is ignored)."""
    if not template.startswith("/"):
        template = "/" + template
    if len(template) > 1:
        template = template.rstrip("/") or "/"
    regex_parts: list[str] = []
    plain_parts: list[str] = []
    names: list[str] = []
    constraints: dict[str, str] = {}
    kinds: list[int] = []
    literal_length = 0
    segments = _segments(template) if template != "/" else []
    for segment in segments:
        pieces = _split(segment, template)
        kind = _LITERAL
        part = []
        plain = []
        for text, name, regex in pieces:
            if name is None:
                part.append(re.escape(text))
                plain.append(text)
                literal_length += len(text)
                continue
            plain.append("{" + name + "}")
            if name in names:
                raise ValueError(f"Parameter {name!r} appears twice in path template {template!r}")
            names.append(name)
            if regex is None:
                part.append(f"(?P<{name}>[^/]+)")
                kind = max(kind, _PLAIN)
            else:
                try:
                    re.compile(regex)
                except re.error as exc:
                    raise ValueError(
                        f"Invalid regex {regex!r} for {name!r} in path template {template!r}: {exc}"
                    ) from None
                constraints[name] = regex
                part.append(f"(?P<{name}>{regex})")
                kind = max(kind, _CONSTRAINED)
        regex_parts.append("/" + "".join(part))
        plain_parts.append("/" + "".join(plain))
        kinds.append(kind)
    rank = ((*kinds, _END), -literal_length, template)
    try:  # each regex compiled alone; together they may still clash (group names, flags)
        pattern = re.compile("".join(regex_parts) + r"/?\Z") if names else None
    except re.error as exc:
        raise ValueError(f"Invalid regex in path template {template!r}: {exc}") from None
    plain_template = "".join(plain_parts) or "/"
    return PathTemplate(template, pattern, tuple(names), constraints, rank, plain_template)


class DuplicateRoute(ValueError):
    """A method and template already routed (``/users/{id}`` and ``/users/{name}`` are the
    same route); ``existing`` is the endpoint registered first."""

    def __init__(self, message: str, existing: object) -> None:
        super().__init__(message)
        self.existing = existing


@dataclass(slots=True)
class _Group(Generic[T]):
    template: PathTemplate
    methods: dict[str, T] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Match(Generic[T]):
    """The outcome of a lookup.

    ``endpoint`` is set when a route answers the method (``HEAD`` falls back to ``GET``);
    otherwise ``allowed`` holds the methods of every route matching the path (empty: 404).
    """

    endpoint: T | None
    params: dict[str, str]
    allowed: frozenset[str]
    template: PathTemplate | None = None


class RouteTable(Generic[T]):
    """Routes by path template and HTTP method."""

    def __init__(self) -> None:
        self._static: dict[str, _Group[T]] = {}
        self._dynamic: list[_Group[T]] = []
        self._groups: dict[str, _Group[T]] = {}
        # (pattern sans names, method): (template, endpoint)
        self._shapes: dict[tuple[str, str], tuple[str, T]] = {}

    def add(self, template: str, method: str, endpoint: T) -> PathTemplate:
        """Register ``endpoint`` for ``method`` on ``template``; a duplicate is a
        :class:`DuplicateRoute`."""
        compiled = compile_template(template)
        key = compiled.pattern.pattern if compiled.pattern is not None else compiled.template
        # ``/users/{id}`` and ``/users/{name}`` match the same paths: the second is unreachable
        shape = (_GROUP_NAME.sub("(?:", key), method)
        found = self._shapes.get(shape)
        if found is not None:
            other, existing = found
            also = "" if other == compiled.template else f" (as {method} {other})"
            raise DuplicateRoute(
                f"Route {method} {compiled.template} is declared twice{also}", existing
            )
        group = self._groups.get(key)
        if group is None:
            group = self._groups[key] = _Group(compiled)
            if compiled.is_static:
                self._static[compiled.template] = group
            else:
                self._dynamic.append(group)
                self._dynamic.sort(key=lambda g: g.template.rank)
        self._shapes[shape] = (compiled.template, endpoint)
        group.methods[method] = endpoint
        return group.template

    def routes(self) -> list[tuple[PathTemplate, dict[str, T]]]:
        """Every template with its endpoints by method, most specific first."""
        groups = sorted(self._groups.values(), key=lambda g: g.template.rank)
        return [(g.template, dict(g.methods)) for g in groups]

    def match(self, path: str, method: str) -> Match[T]:
        """Find the route for ``method`` on ``path`` (already URL-decoded)."""
        allowed: set[str] = set()
        lookup = path.rstrip("/") or "/" if len(path) > 1 else path
        group = self._static.get(lookup)
        if group is not None:
            endpoint = _pick(group.methods, method)
            if endpoint is not None:
                return Match(endpoint, {}, frozenset(), group.template)
            allowed.update(group.methods)
        for group in self._dynamic:
            pattern = group.template.pattern
            assert pattern is not None
            found = pattern.match(path)
            if found is None:
                continue
            endpoint = _pick(group.methods, method)
            if endpoint is not None:
                return Match(endpoint, found.groupdict(), frozenset(), group.template)
            allowed.update(group.methods)
        return Match(None, {}, frozenset(allowed))


def _pick(methods: dict[str, T], method: str) -> T | None:
    endpoint = methods.get(method)
    if endpoint is None and method == "HEAD":
        endpoint = methods.get("GET")
    return endpoint
