"""Rule files to a :class:`RuleSet`, with the upstream service's validation and messages.

A file goes through the same stages as upstream (``src/config/config_impl.go``, which uses
yaml.v2):

1. the first YAML document is parsed (scalars resolved the way yaml.v2 resolves them, so
   ``08`` is a float and ``y`` a boolean; an integer or boolean used where text is expected is
   taken as its source text);
2. the keys are checked everywhere except under ``metadata`` (``config error, unknown key
   'x'``, ``config error, key is not of type string: 0.25``, ...). Unlike upstream, which
   accepts a known key anywhere, a key must also belong to the level it is on (the JSON Schema
   in ``specs/ratelimit-config.schema.json`` checks the same);
3. the document is decoded into the rule file's shape, type mismatches giving yaml.v2's
   ``yaml: unmarshal errors:`` text;
4. once every file has passed 1-3, the rule tree is built with the semantic checks, in
   upstream's order.

Every failure is a :class:`ConfigError` whose text is upstream's ``<config name>: <message>``.
:func:`load_documents` runs stages 2-4 on documents that are already parsed (the xDS path).
"""

from __future__ import annotations

import base64
import binascii
import datetime
import math
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, Final

import yaml

from handlers.ratelimit import algorithms
from handlers.ratelimit.config.model import (
    ALGORITHMS,
    FIXED_WINDOW,
    SLIDING_WINDOW,
    TOKEN_BUCKET,
    DescriptorNode,
    DomainRules,
    RuleLimit,
    RuleSet,
    Unit,
)

__all__ = ["ConfigError", "dump", "load_documents", "load_rule_set"]


class ConfigError(Exception):
    """A configuration that cannot be loaded; ``str()`` is ``<config name>: <message>``."""

    def __init__(self, config_name: str, message: str) -> None:
        super().__init__(config_name, message)
        self.config_name = config_name
        self.message = message

    def __str__(self) -> str:
        return f"{self.config_name}: {self.message}"


# ---------------------------------------------------------------------------------------------
# Values: one tree shape for parsed YAML and for already-parsed documents

_MAP: Final = "map"
_SEQ: Final = "seq"
_STR: Final = "str"
_INT: Final = "int"  # fits in int64: yaml.v2 gives a Go int
_UINT: Final = "uint"  # above int64, within uint64: yaml.v2 gives a uint64
_BOOL: Final = "bool"
_NULL: Final = "null"
_FLOAT: Final = "float"
_OTHER: Final = "other"  # a Python value of no YAML type (load_documents only)

_INT64_MIN = -(2**63)
_INT64_MAX = 2**63 - 1
_UINT64_MAX = 2**64 - 1
_UINT32_MAX = 2**32 - 1
_MAX_EXPANDED_VALUES = 1_000_000
_MAX_DEPTH = 100  # nesting of maps and lists; keeps every recursive walk far from Python's limit


@dataclass(eq=False, slots=True)
class _Value:
    """One YAML value: ``kind`` says what yaml.v2 would decode it to, ``tag`` is for messages."""

    kind: str
    data: Any
    """str/int/bool/float/None for scalars, ``list[_Value]`` or ``list[tuple[_Value, _Value]]``."""
    tag: str
    """yaml.v2's short tag (``!!str``, ``!!int``, ``!!map``, ...) as its messages show it."""
    text: str = ""
    """A scalar's source text."""
    line: int | None = None
    """1-based line of the value's start, when it comes from a file."""
    size: int = 1
    """Number of values once aliases are expanded."""

    @property
    def string(self) -> str:
        """What a Go ``string`` field receives: a scalar's text (binary data decoded)."""
        return str(self.data) if self.kind == _STR else self.text

    def pairs(self) -> list[tuple[_Value, _Value]]:
        pairs: list[tuple[_Value, _Value]] = self.data
        return pairs

    def items(self) -> list[_Value]:
        items: list[_Value] = self.data
        return items


def _identity(value: _Value) -> tuple[str, str]:
    """Map-key identity: yaml.v2 keeps ``1`` and ``"1"`` apart, and so does this."""
    if value.kind in (_MAP, _SEQ, _OTHER):
        return (value.kind, str(id(value)))
    return (value.kind, repr(value.data))


def _map_value(pairs: list[tuple[_Value, _Value]], tag: str, line: int | None) -> _Value:
    """A mapping with later duplicate keys replacing earlier ones, like a decoded Go map."""
    merged: dict[tuple[str, str], tuple[_Value, _Value]] = {}
    for key, value in pairs:
        merged[_identity(key)] = (key, value)
    unique = list(merged.values())
    size = 1 + sum(key.size + value.size for key, value in unique)
    return _Value(_MAP, unique, tag, line=line, size=size)


# ---------------------------------------------------------------------------------------------
# Go formatting, for the messages that print values with %v


def _go_float(number: float) -> str:
    """``fmt.Sprintf("%v", float64)``: shortest digits, exponent form below 1e-4 or from 1e6."""
    if math.isnan(number):
        return "NaN"
    if math.isinf(number):
        return "+Inf" if number > 0 else "-Inf"
    if number == 0:
        return "-0" if math.copysign(1.0, number) < 0 else "0"
    sign = "-" if number < 0 else ""
    _, digit_tuple, exponent = Decimal(repr(abs(number))).normalize().as_tuple()
    assert isinstance(exponent, int)
    digits = "".join(str(digit) for digit in digit_tuple)
    point = len(digits) + exponent
    power = point - 1
    if power < -4 or power >= 6:
        mantissa = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
        return f"{sign}{mantissa}e{'-' if power < 0 else '+'}{abs(power):02d}"
    if point <= 0:
        return f"{sign}0.{'0' * -point}{digits}"
    if point >= len(digits):
        return sign + digits + "0" * (point - len(digits))
    return f"{sign}{digits[:point]}.{digits[point:]}"


def _go_repr(value: _Value) -> str:
    """``fmt.Sprintf("%v", v)`` of what yaml.v2 decodes into an ``interface{}``."""
    if value.kind == _NULL:
        return "<nil>"
    if value.kind == _BOOL:
        return "true" if value.data else "false"
    if value.kind == _FLOAT:
        return _go_float(value.data)
    if value.kind in (_INT, _UINT, _STR):
        return str(value.data)
    if value.kind == _SEQ:
        return "[" + " ".join(_go_repr(item) for item in value.items()) + "]"
    if value.kind == _MAP:
        entries = sorted(
            ((key.kind, _go_repr(key)), f"{_go_repr(key)}:{_go_repr(item)}")
            for key, item in value.pairs()
        )
        return "map[" + " ".join(entry for _, entry in entries) + "]"
    return str(value.data)


# ---------------------------------------------------------------------------------------------
# YAML: the first document, resolved the yaml.v2 way

_YAML_PREFIX = "tag:yaml.org,2002:"
_TRUE_WORDS = frozenset(["y", "Y", "yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON"])
_FALSE_WORDS = frozenset(
    ["n", "N", "no", "No", "NO", "false", "False", "FALSE", "off", "Off", "OFF"]
)
_NULL_WORDS = frozenset(["", "~", "null", "Null", "NULL"])
_SPECIAL_FLOATS = {
    **dict.fromkeys([".nan", ".NaN", ".NAN"], math.nan),
    **dict.fromkeys([".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF"], math.inf),
    **dict.fromkeys(["-.inf", "-.Inf", "-.INF"], -math.inf),
}
_GO_INT = re.compile(r"([+-]?)(0[xX][0-9a-fA-F]+|0[oO][0-7]+|0[bB][01]+|0[0-7]*|[1-9][0-9]*)")
_GO_UINT = re.compile(r"(0[xX][0-9a-fA-F]+|0[oO][0-7]+|0[bB][01]+|0[0-7]*|[1-9][0-9]*)")
_YAML_FLOAT = re.compile(r"[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?")
_TIMESTAMP = re.compile(
    r"(\d{4})-(\d{1,2})-(\d{1,2})"
    r"(?:(?:[Tt]| )(\d{1,2}):(\d{1,2}):(\d{1,2})(?:\.\d{1,9})?(?:Z|[+-]\d{2}:\d{2})?)?"
)
_RESOLVABLE = frozenset(["", "!!str", "!!bool", "!!int", "!!float", "!!null", "!!timestamp"])


def _short_tag(tag: str) -> str:
    return "!!" + tag[len(_YAML_PREFIX) :] if tag.startswith(_YAML_PREFIX) else tag


def _go_int(text: str) -> int | None:
    """``strconv.ParseInt(text, 0, 64)``."""
    match = _GO_INT.fullmatch(text)
    if match is None:
        return None
    number = _digits(match.group(2))
    return -number if match.group(1) == "-" else number


def _go_uint(text: str) -> int | None:
    """``strconv.ParseUint(text, 0, 64)``."""
    match = _GO_UINT.fullmatch(text)
    if match is None:
        return None
    number = _digits(match.group(1))
    return number if number <= _UINT64_MAX else None


def _digits(body: str) -> int:
    prefix = body[:2].lower()
    if prefix == "0x":
        return int(body[2:], 16)
    if prefix == "0o":
        return int(body[2:], 8)
    if prefix == "0b":
        return int(body[2:], 2)
    if body.startswith("0") and len(body) > 1:
        return int(body[1:], 8)
    return int(body, 10)


def _is_timestamp(text: str) -> bool:
    match = _TIMESTAMP.fullmatch(text)
    if match is None:
        return False
    year, month, day = (int(part) for part in match.group(1, 2, 3))
    try:
        datetime.date(year, month, day)
    except ValueError:
        return False
    if match.group(4) is not None:
        hour, minute, second = (int(part) for part in match.group(4, 5, 6))
        return hour < 24 and minute < 60 and second < 60
    return True


def _resolve(text: str, timestamps: bool) -> tuple[str, Any, str]:
    """yaml.v2's ``resolve`` of an untagged plain scalar: (kind, value, short tag)."""
    if text in _NULL_WORDS:
        return _NULL, None, "!!null"
    if text in _TRUE_WORDS:
        return _BOOL, True, "!!bool"
    if text in _FALSE_WORDS:
        return _BOOL, False, "!!bool"
    if text in _SPECIAL_FLOATS:
        return _FLOAT, _SPECIAL_FLOATS[text], "!!float"
    first = text[0]
    if first == ".":
        if _YAML_FLOAT.fullmatch(text):
            number = float(text)
            if not math.isinf(number):
                return _FLOAT, number, "!!float"
    elif first in "+-0123456789":
        if timestamps and _is_timestamp(text):
            # yaml.v2 hands timestamps to an interface{} as their text
            return _STR, text, "!!timestamp"
        plain = text.replace("_", "")
        signed = _go_int(plain)
        if signed is not None and _INT64_MIN <= signed <= _INT64_MAX:
            return _INT, signed, "!!int"
        unsigned = _go_uint(plain)
        if unsigned is not None:
            return _UINT, unsigned, "!!int"
        if _YAML_FLOAT.fullmatch(plain):
            number = float(plain)
            if not math.isinf(number):
                return _FLOAT, number, "!!float"
    return _STR, text, "!!str"


class _DocumentBuilder:
    """Builds the first document's :class:`_Value` tree from PyYAML's parser events."""

    def __init__(self, loader: yaml.SafeLoader) -> None:
        self._loader = loader
        self._anchors: dict[str, _Value | None] = {}
        self._depth = 0
        self.aliased = False

    def _next(self) -> yaml.Event:
        event: yaml.Event = self._loader.get_event()  # type: ignore[no-untyped-call]
        return event

    def document(self) -> _Value | None:
        self._next()  # StreamStartEvent
        if self._loader.check_event(yaml.StreamEndEvent):
            return None
        self._next()  # DocumentStartEvent
        # The rest of the stream is never read: like yaml.v2, only the first document counts.
        return self._node()

    def _node(self) -> _Value:
        event = self._next()
        if isinstance(event, yaml.AliasEvent):
            alias = str(event.anchor)
            if alias not in self._anchors:
                raise _YamlFailure(f"unknown anchor '{alias}' referenced")
            target = self._anchors[alias]
            if target is None:
                raise _YamlFailure(f"anchor '{alias}' value contains itself")
            self.aliased = True
            return target
        anchor: str | None = getattr(event, "anchor", None)
        if anchor is not None:
            self._anchors[anchor] = None  # being built: an alias to it now is a cycle
        line = event.start_mark.line + 1 if event.start_mark is not None else None
        if isinstance(event, yaml.ScalarEvent):
            value = self._scalar(event, line)
        elif isinstance(event, yaml.SequenceStartEvent | yaml.MappingStartEvent):
            self._depth += 1
            if self._depth > _MAX_DEPTH:
                raise _YamlFailure(f"exceeded max depth of {_MAX_DEPTH}")
            if isinstance(event, yaml.SequenceStartEvent):
                value = self._sequence(event, line)
            else:
                value = self._mapping(event, line)
            self._depth -= 1
        else:  # pragma: no cover - the parser emits nothing else here
            raise _YamlFailure(f"unexpected {type(event).__name__}")
        if anchor is not None:
            self._anchors[anchor] = value
        return value

    def _sequence(self, event: yaml.SequenceStartEvent, line: int | None) -> _Value:
        items: list[_Value] = []
        while not self._loader.check_event(yaml.SequenceEndEvent):
            items.append(self._node())
        self._next()
        tag = _short_tag(event.tag) if event.tag not in (None, "!") else "!!seq"
        return _Value(_SEQ, items, tag, line=line, size=1 + sum(item.size for item in items))

    def _mapping(self, event: yaml.MappingStartEvent, line: int | None) -> _Value:
        pairs: list[tuple[_Value, _Value]] = []
        while not self._loader.check_event(yaml.MappingEndEvent):
            key = self._node()
            value = self._node()
            if key.kind in (_MAP, _SEQ):
                raise _YamlFailure(f"invalid map key: {_go_repr(key)}")
            if key.tag == "!!merge":
                pairs.extend(_merged_pairs(value))
            else:
                pairs.append((key, value))
        self._next()
        tag = _short_tag(event.tag) if event.tag not in (None, "!") else "!!map"
        return _map_value(pairs, tag, line)

    def _scalar(self, event: yaml.ScalarEvent, line: int | None) -> _Value:
        text: str = event.value
        plain = event.implicit[0] and event.tag is None
        tag = "" if event.tag is None else _short_tag(event.tag)
        if plain:
            if text == "<<":
                return _Value(_STR, text, "!!merge", text=text, line=line)
            kind, data, resolved = _resolve(text, timestamps=True)
            return _Value(kind, data, resolved, text=text, line=line)
        if not tag or tag == "!!str":
            return _Value(_STR, text, "!!str", text=text, line=line)
        if tag == "!!binary":
            try:
                decoded = base64.b64decode("".join(text.split()), validate=True)
            except (binascii.Error, ValueError):
                raise _YamlFailure("!!binary value contains invalid base64 data") from None
            return _Value(_STR, decoded.decode("utf-8", "surrogateescape"), tag, text, line)
        if tag == "!!merge" and text == "<<":
            return _Value(_STR, text, tag, text=text, line=line)
        if tag not in _RESOLVABLE:
            return _Value(_STR, text, tag, text=text, line=line)
        kind, data, resolved = _resolve(text, timestamps=tag == "!!timestamp")
        if resolved != tag:
            if tag == "!!float" and kind == _INT:
                return _Value(_FLOAT, float(data), tag, text=text, line=line)
            raise _YamlFailure(f"cannot decode {resolved} `{text}` as a {tag}")
        return _Value(kind, data, resolved, text=text, line=line)


def _merged_pairs(value: _Value) -> list[tuple[_Value, _Value]]:
    """The pairs a ``<<`` merge key brings in; the first of several maps wins, as in yaml.v2."""
    if value.kind == _MAP:
        return value.pairs()
    if value.kind == _SEQ and all(item.kind == _MAP for item in value.items()):
        pairs: list[tuple[_Value, _Value]] = []
        for item in reversed(value.items()):
            pairs.extend(item.pairs())
        return pairs
    raise _YamlFailure("map merge requires map or sequence of maps as the value")


class _YamlFailure(Exception):
    """A yaml.v2 ``failf`` error (printed without a line)."""


_LIBYAML_WORDING = (
    (
        re.compile(r"mapping values are not allowed here"),
        "mapping values are not allowed in this context",
    ),
    (
        re.compile(r"found character .* that cannot start any token"),
        "found character that cannot start any token",
    ),
    (
        re.compile(r"sequence entries are not allowed here"),
        "block sequence entries are not allowed in this context",
    ),
    (re.compile(r"found unknown escape character.*"), "found unknown escape character"),
    (re.compile(r"expected ',' or '\]'.*"), "did not find expected ',' or ']'"),
    (re.compile(r"expected ',' or '}'.*"), "did not find expected ',' or '}'"),
)


def _syntax_message(error: yaml.MarkedYAMLError) -> str:
    """yaml.v2's ``yaml: line N: <problem>``, with libyaml's wording where PyYAML differs."""
    problem = error.problem or "unknown problem parsing YAML content"
    context = error.context or ""
    if isinstance(error, yaml.parser.ParserError) and problem.startswith("expected <block end>"):
        problem = (
            "did not find expected key"
            if "mapping" in context
            else "did not find expected '-' indicator"
        )
    for pattern, wording in _LIBYAML_WORDING:
        if pattern.fullmatch(problem):
            problem = wording
            break
    # yaml.v2 prints a scanner error's 0-based mark line plus one, a parser error's mark line
    # unchanged, and the context line when the problem is on the first line.
    line = 0
    if error.problem_mark is not None and error.problem_mark.line != 0:
        line = error.problem_mark.line
        if isinstance(error, yaml.scanner.ScannerError):
            line += 1
    elif error.context_mark is not None and error.context_mark.line != 0:
        line = error.context_mark.line
    where = f"line {line}: " if line else ""
    return f"yaml: {where}{problem}"


def _parse_first_document(name: str, text: str | bytes) -> _Value | None:
    def fail(message: str) -> ConfigError:
        return ConfigError(name, f"error loading config file: {message}")

    try:
        loader = yaml.SafeLoader(text)
    except yaml.reader.ReaderError as error:
        raise fail(_reader_message(error)) from None
    try:
        builder = _DocumentBuilder(loader)
        root = builder.document()
    except yaml.MarkedYAMLError as error:
        raise fail(_syntax_message(error)) from None
    except yaml.reader.ReaderError as error:
        raise fail(_reader_message(error)) from None
    except _YamlFailure as error:
        raise fail(f"yaml: {error}") from None
    finally:
        loader.dispose()
    if root is not None and builder.aliased and root.size > _MAX_EXPANDED_VALUES:
        raise fail("yaml: document contains excessive aliasing")
    return root


def _reader_message(error: yaml.reader.ReaderError) -> str:
    if isinstance(error.character, bytes):
        return "yaml: invalid leading UTF-8 octet"
    return "yaml: control characters are not allowed"


# ---------------------------------------------------------------------------------------------
# Already-parsed documents (xDS)


def _from_python(value: object, depth: int = 0) -> _Value:
    if depth > _MAX_DEPTH:
        raise _YamlFailure(f"exceeded max depth of {_MAX_DEPTH}")
    if value is None:
        return _Value(_NULL, None, "!!null", "null")
    if isinstance(value, bool):
        text = "true" if value else "false"
        return _Value(_BOOL, value, "!!bool", text)
    if isinstance(value, int):
        if _INT64_MIN <= value <= _INT64_MAX:
            return _Value(_INT, value, "!!int", str(value))
        if 0 <= value <= _UINT64_MAX:
            return _Value(_UINT, value, "!!int", str(value))
        return _Value(_FLOAT, float(value), "!!float", str(value))
    if isinstance(value, float):
        return _Value(_FLOAT, value, "!!float", _go_float(value))
    if isinstance(value, str):
        return _Value(_STR, value, "!!str", value)
    if isinstance(value, bytes):
        decoded = value.decode("utf-8", "surrogateescape")
        return _Value(_STR, decoded, "!!binary", decoded)
    if isinstance(value, Mapping):
        pairs = [
            (_from_python(key, depth + 1), _from_python(item, depth + 1))
            for key, item in value.items()
        ]
        return _map_value(pairs, "!!map", None)
    if isinstance(value, list | tuple):
        items = [_from_python(item, depth + 1) for item in value]
        return _Value(_SEQ, items, "!!seq", size=1 + sum(item.size for item in items))
    return _Value(_OTHER, value, type(value).__name__, repr(value))


# ---------------------------------------------------------------------------------------------
# Stage 2: keys

_ALL_KEYS = frozenset(
    [
        "domain",
        "key",
        "value",
        "descriptors",
        "rate_limit",
        "unit",
        "requests_per_unit",
        "unlimited",
        "shadow_mode",
        "quota_mode",
        "name",
        "replaces",
        "detailed_metric",
        "value_to_metric",
        "share_threshold",
        "metadata",
        # issue 23: windows of any length, more algorithms, several limits per descriptor
        "unit_multiplier",
        "window",
        "algorithm",
        "burst",
        "rate_limits",
    ]
)
_ROOT_KEYS = frozenset(["domain", "descriptors"])
_DESCRIPTOR_KEYS = frozenset(
    [
        "key",
        "value",
        "rate_limit",
        "rate_limits",
        "descriptors",
        "shadow_mode",
        "quota_mode",
        "detailed_metric",
        "value_to_metric",
        "share_threshold",
        "metadata",
    ]
)
_NEW_RATE_LIMIT_KEYS = frozenset(["unit_multiplier", "window", "algorithm", "burst"])
_RATE_LIMIT_KEYS = (
    frozenset(["unit", "requests_per_unit", "unlimited", "name", "replaces"]) | _NEW_RATE_LIMIT_KEYS
)
_REPLACE_KEYS = frozenset(["name"])
# (level, key) -> level of the value; a map anywhere else is checked against _ALL_KEYS only
_CHILD_LEVEL: dict[tuple[frozenset[str], str], frozenset[str]] = {
    (_ROOT_KEYS, "descriptors"): _DESCRIPTOR_KEYS,
    (_DESCRIPTOR_KEYS, "descriptors"): _DESCRIPTOR_KEYS,
    (_DESCRIPTOR_KEYS, "rate_limit"): _RATE_LIMIT_KEYS,
    (_DESCRIPTOR_KEYS, "rate_limits"): _RATE_LIMIT_KEYS,
    (_RATE_LIMIT_KEYS, "replaces"): _REPLACE_KEYS,
}


def _check_keys(name: str, mapping: _Value, level: frozenset[str]) -> None:
    """Upstream's ``validateYamlKeys``, plus the check that a key belongs to its level."""
    checked: set[tuple[int, frozenset[str]]] = set()

    def walk(node: _Value, allowed: frozenset[str]) -> None:
        if (id(node), allowed) in checked:  # an alias met again
            return
        checked.add((id(node), allowed))
        for key, value in node.pairs():
            if key.kind != _STR:
                raise ConfigError(name, f"config error, key is not of type string: {_go_repr(key)}")
            text = str(key.data)
            if text not in _ALL_KEYS or text not in allowed:
                raise ConfigError(name, f"config error, unknown key '{text}'")
            if text == "metadata":
                continue
            child = _CHILD_LEVEL.get((allowed, text), _ALL_KEYS)
            if value.kind == _SEQ:
                for item in value.items():
                    if item.kind != _MAP:
                        raise ConfigError(
                            name,
                            "config error, yaml file contains list of type other than map: "
                            + _go_repr(item),
                        )
                    walk(item, child)
            elif value.kind == _MAP:
                walk(value, child)
            elif value.kind not in (_STR, _INT, _BOOL, _NULL):
                raise ConfigError(name, "error checking config")

    walk(mapping, level)


# ---------------------------------------------------------------------------------------------
# Stage 3: the rule file's shape (yaml.v2 decoding into upstream's structs)


@dataclass(slots=True)
class _RateLimitSpec:
    requests_per_unit: int | None = None
    unit: str | None = None
    unlimited: bool = False
    name: str = ""
    replaces: list[str] = field(default_factory=list)
    # issue 23's fields, kept as values (with their lines) and checked when the tree is built
    unit_multiplier: _Value | None = None
    window: _Value | None = None
    algorithm: _Value | None = None
    burst: _Value | None = None
    line: int | None = None

    @property
    def uses_new_fields(self) -> bool:
        return any(
            item is not None
            for item in (self.unit_multiplier, self.window, self.algorithm, self.burst)
        )


@dataclass(slots=True)
class _DescriptorSpec:
    key: str = ""
    value: str = ""
    rate_limit: _RateLimitSpec | None = None
    rate_limits: list[_RateLimitSpec] | None = None
    rate_limits_line: int | None = None
    descriptors: list[_DescriptorSpec] = field(default_factory=list)
    shadow_mode: bool = False
    quota_mode: bool = False
    detailed_metric: bool = False
    value_to_metric: bool = False
    share_threshold: bool = False
    metadata: _Value | None = None


@dataclass(slots=True)
class _RootSpec:
    domain: str = ""
    descriptors: list[_DescriptorSpec] | None = None


class _Decoder:
    """Decodes like yaml.v2 into upstream's structs, collecting every type mismatch."""

    def __init__(self) -> None:
        self.errors: list[str] = []

    def mismatch(self, value: _Value, go_type: str) -> None:
        shown = ""
        if value.kind not in (_MAP, _SEQ):
            raw = value.text.encode("utf-8", "surrogateescape")
            if len(raw) > 10:
                raw = raw[:7] + b"..."
            shown = " `" + raw.decode("utf-8", "replace") + "`"
        where = f"line {value.line}: " if value.line is not None else ""
        self.errors.append(f"{where}cannot unmarshal {value.tag}{shown} into {go_type}")

    def string(self, value: _Value) -> str:
        if value.kind in (_MAP, _SEQ):
            self.mismatch(value, "string")
            return ""
        return "" if value.kind == _NULL else value.string

    def boolean(self, value: _Value) -> bool:
        if value.kind == _BOOL:
            return bool(value.data)
        if value.kind != _NULL:
            self.mismatch(value, "bool")
        return False

    def uint32(self, value: _Value) -> int | None:
        if value.kind in (_INT, _UINT) and 0 <= value.data <= _UINT32_MAX:
            return int(value.data)
        if value.kind == _FLOAT and 0 <= value.data <= _UINT32_MAX:
            return int(value.data)
        if value.kind != _NULL:
            self.mismatch(value, "uint32")
        return None

    def fields(self, value: _Value, go_type: str) -> Iterator[tuple[str, _Value]]:
        if value.kind == _MAP:
            for key, item in value.pairs():
                yield key.string, item
        elif value.kind != _NULL:
            self.mismatch(value, go_type)

    def elements(self, value: _Value, go_type: str) -> list[_Value]:
        if value.kind == _SEQ:
            return value.items()
        if value.kind != _NULL:
            self.mismatch(value, go_type)
        return []

    def root(self, value: _Value | None) -> _RootSpec:
        spec = _RootSpec()
        if value is None:
            return spec
        for key, item in self.fields(value, "config.YamlRoot"):
            if key == "domain":
                spec.domain = self.string(item)
            elif key == "descriptors" and item.kind != _NULL:
                spec.descriptors = self.descriptors(item)
        return spec

    def descriptors(self, value: _Value) -> list[_DescriptorSpec]:
        return [self.descriptor(item) for item in self.elements(value, "[]config.YamlDescriptor")]

    def descriptor(self, value: _Value) -> _DescriptorSpec:
        spec = _DescriptorSpec()
        for key, item in self.fields(value, "config.YamlDescriptor"):
            if key in ("key", "value"):
                setattr(spec, key, self.string(item))
            elif key == "rate_limit":
                spec.rate_limit = None if item.kind == _NULL else self.rate_limit(item)
            elif key == "rate_limits" and item.kind != _NULL:
                spec.rate_limits = [
                    self.rate_limit(entry)
                    for entry in self.elements(item, "[]config.YamlRateLimit")
                ]
                spec.rate_limits_line = item.line
            elif key == "descriptors":
                spec.descriptors = self.descriptors(item)
            elif key in ("shadow_mode", "quota_mode", "detailed_metric", "value_to_metric"):
                setattr(spec, key, self.boolean(item))
            elif key == "share_threshold":
                spec.share_threshold = self.boolean(item)
            elif key == "metadata":
                if item.kind == _MAP:
                    spec.metadata = item
                elif item.kind != _NULL:
                    self.mismatch(item, "map[string]interface {}")
        return spec

    def rate_limit(self, value: _Value) -> _RateLimitSpec:
        spec = _RateLimitSpec(line=value.line)
        for key, item in self.fields(value, "config.YamlRateLimit"):
            if key in _NEW_RATE_LIMIT_KEYS:
                setattr(spec, key, None if item.kind == _NULL else item)
            elif key == "requests_per_unit":
                spec.requests_per_unit = self.uint32(item)
            elif key == "unit":
                spec.unit = None if item.kind == _NULL else self.string(item)
            elif key == "unlimited":
                spec.unlimited = self.boolean(item)
            elif key == "name":
                spec.name = self.string(item)
            elif key == "replaces":
                spec.replaces = [
                    self.replace(entry) for entry in self.elements(item, "[]config.yamlReplaces")
                ]
        return spec

    def replace(self, value: _Value) -> str:
        name = ""
        for key, item in self.fields(value, "config.yamlReplaces"):
            if key == "name":
                name = self.string(item)
        return name


def _decode(name: str, root: _Value | None) -> _RootSpec:
    """Stages 2 and 3 for one document."""
    if root is not None and root.kind not in (_MAP, _NULL):
        decoder = _Decoder()
        decoder.mismatch(root, "map[interface {}]interface {}")
        raise ConfigError(name, _unmarshal_message(decoder.errors))
    if root is not None and root.kind == _MAP:
        _check_keys(name, root, _ROOT_KEYS)
    decoder = _Decoder()
    spec = decoder.root(root)
    if decoder.errors:
        raise ConfigError(name, _unmarshal_message(decoder.errors))
    return spec


def _unmarshal_message(errors: list[str]) -> str:
    return "error loading config file: yaml: unmarshal errors:\n  " + "\n  ".join(errors)


# ---------------------------------------------------------------------------------------------
# Stage 4: the rule tree

_UNITS = {unit.name: unit for unit in Unit if unit is not Unit.UNKNOWN}


class _MetadataError(Exception):
    pass


def _struct_value(value: _Value) -> Any:
    """A plain value that a ``google.protobuf.Value`` can hold."""
    if value.kind == _MAP:
        converted: dict[str, Any] = {}
        for key, item in value.pairs():
            if key.kind != _STR:
                raise _MetadataError(f"key is not of type string: {_go_repr(key)}")
            converted[_utf8(str(key.data))] = _struct_value(item)
        return converted
    if value.kind == _SEQ:
        return [_struct_value(item) for item in value.items()]
    if value.kind == _STR:
        return _utf8(str(value.data))
    if value.kind in (_INT, _UINT, _BOOL, _FLOAT, _NULL):
        return value.data
    raise _MetadataError(f"proto: invalid type: {value.tag}")


def _utf8(text: str) -> str:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        shown = text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
        raise _MetadataError(f'proto: invalid UTF-8 in string: "{shown}"') from None
    return text


class _TreeBuilder:
    """Loads decoded files into domains, with upstream's checks in upstream's order."""

    def __init__(self, merge_domains: bool) -> None:
        self._merge = merge_domains
        self._domains: dict[str, DomainRules] = {}

    def add(self, name: str, root: _RootSpec) -> None:
        if root.domain == "":
            raise ConfigError(name, "config file cannot have empty domain")
        if root.descriptors is None:  # stricter than upstream, as the JSON Schema
            raise ConfigError(name, "config error, missing key 'descriptors'")
        rules = self._domains.get(root.domain)
        if rules is not None and not self._merge:
            raise ConfigError(name, f"duplicate domain '{root.domain}' in config file")
        if rules is None:
            rules = DomainRules(root.domain, DescriptorNode("", "", root.domain))
            self._domains[root.domain] = rules
        self._descriptors(name, rules.root, root.domain + ".", root.descriptors)

    def result(self) -> RuleSet:
        return RuleSet(domains=self._domains)

    def _descriptors(
        self, name: str, parent: DescriptorNode, prefix: str, specs: list[_DescriptorSpec]
    ) -> None:
        for spec in specs:
            if spec.key == "":
                raise ConfigError(name, "descriptor has empty key")
            composite = f"{spec.key}_{spec.value}" if spec.value else spec.key
            full_key = prefix + composite
            if composite in parent.children:
                raise ConfigError(name, f"duplicate descriptor composite key '{full_key}'")
            limit, more_limits = self._limits(name, full_key, spec)
            if spec.share_threshold and "*" not in composite:
                raise ConfigError(
                    name,
                    "share_threshold can only be used with wildcard values (containing '*'), "
                    f"but found key '{composite}'",
                )
            metadata: dict[str, Any] | None = None
            if spec.metadata is not None:
                try:
                    metadata = _struct_value(spec.metadata)
                except _MetadataError as error:
                    raise ConfigError(name, f"error parsing metadata: {error}") from None
            node = DescriptorNode(
                key=spec.key,
                value=spec.value,
                full_key=full_key,
                limit=limit,
                more_limits=more_limits,
                shadow_mode=spec.shadow_mode,
                quota_mode=spec.quota_mode,
                detailed_metric=spec.detailed_metric,
                value_to_metric=spec.value_to_metric,
                share_threshold=spec.share_threshold,
                metadata=metadata,
            )
            self._descriptors(name, node, full_key + ".", spec.descriptors)
            parent.add_child(node)

    def _limits(
        self, name: str, full_key: str, spec: _DescriptorSpec
    ) -> tuple[RuleLimit | None, tuple[RuleLimit, ...]]:
        """A descriptor's limits: the first (``None`` without one) and those after it."""
        if spec.rate_limits is not None:
            line = spec.rate_limits_line
            if spec.rate_limit is not None:
                raise _rule_error(
                    name, full_key, line, "give either rate_limit or rate_limits, not both"
                )
            if not spec.rate_limits:
                raise _rule_error(name, full_key, line, "rate_limits needs at least one limit")
            built = [
                self._new_limit(name, full_key, entry, index, several=True)
                for index, entry in enumerate(spec.rate_limits)
            ]
            return built[0], tuple(built[1:])
        if spec.rate_limit is None:
            return None, ()
        if spec.rate_limit.uses_new_fields:
            return self._new_limit(name, full_key, spec.rate_limit, 0, several=False), ()
        return self._limit(name, full_key, spec.rate_limit), ()

    def _new_limit(
        self, name: str, full_key: str, spec: _RateLimitSpec, index: int, *, several: bool
    ) -> RuleLimit:
        """A ``rate_limit`` using issue 23's fields, or an entry of ``rate_limits``."""

        def fail(reason: str, value: _Value | None = None) -> ConfigError:
            line = value.line if value is not None and value.line is not None else spec.line
            return _rule_error(name, full_key, line, reason)

        if spec.unlimited:
            raise fail(
                "a rate_limits entry cannot be unlimited (use rate_limit: {unlimited: true})"
                if several
                else "an unlimited rate limit takes no unit_multiplier, window, algorithm or burst"
            )
        if several and spec.replaces:
            raise fail("replaces belongs on rate_limit: a rate_limits entry cannot replace rules")
        if spec.requests_per_unit is None:
            raise fail("missing 'requests_per_unit'")
        for replaced in spec.replaces:
            if replaced == "":
                raise ConfigError(name, "should not have an empty replaces entry")
            if replaced == spec.name:
                raise ConfigError(name, "replaces should not contain name of same descriptor")
        algorithm = FIXED_WINDOW
        if spec.algorithm is not None:
            algorithm = spec.algorithm.string if spec.algorithm.kind == _STR else ""
            if algorithm not in ALGORITHMS:
                raise fail(
                    f"unknown algorithm '{spec.algorithm.text}': expected "
                    + ", ".join(ALGORITHMS[:-1])
                    + f" or {ALGORITHMS[-1]}",
                    spec.algorithm,
                )
        try:
            window = algorithms.parse_window(
                spec.unit, _plain(spec.unit_multiplier), _plain(spec.window)
            )
        except algorithms.WindowError as error:
            raise fail(str(error), spec.window or spec.unit_multiplier) from None
        limit = spec.requests_per_unit
        burst = 0
        if spec.burst is not None:
            if algorithm != TOKEN_BUCKET:
                raise fail(f"burst is for token_bucket only, not {algorithm}", spec.burst)
            if spec.burst.kind not in (_INT, _UINT) or spec.burst.data < 1:
                raise fail(
                    f"invalid burst '{spec.burst.text}': expected a whole number, at least 1",
                    spec.burst,
                )
            burst = int(spec.burst.data)
        elif algorithm == TOKEN_BUCKET:
            burst = max(limit, 1)
        try:
            if algorithm == TOKEN_BUCKET:
                algorithms.check_token_bucket(limit, window.ms, burst)
            elif algorithm == SLIDING_WINDOW:
                algorithms.check_sliding_window(limit, window.ms)
            else:
                algorithms.check_fixed_window(limit, window.ms)
        except ValueError as error:
            raise fail(str(error), spec.burst) from None
        plain_unit = window.multiplier == 1 and window.unit != ""
        unit = _UNITS[window.unit.upper()] if plain_unit else Unit.UNKNOWN
        if algorithm == FIXED_WINDOW and plain_unit and not several:
            # an upstream limit spelt with the new fields: upstream's keys and answers
            return RuleLimit(limit, unit, False, spec.name, tuple(spec.replaces))
        # every backend decides every limit (memory and Redis with algorithms.py's steps,
        # memcached with them in a gets/cas loop): none is refused for BACKEND_TYPE
        tag = f"{_TAGS[algorithm]}{window.ms}" + (f".{index}" if index else "")
        return RuleLimit(
            limit, unit, False, spec.name, tuple(spec.replaces), algorithm, window.ms, burst, tag
        )

    @staticmethod
    def _limit(name: str, full_key: str, spec: _RateLimitSpec) -> RuleLimit:
        unit_text = spec.unit or ""
        unit = _UNITS.get(unit_text.upper())
        if spec.unlimited:
            # upstream only refuses a valid unit; the schema also refuses any other text
            if spec.unit is not None and unit_text.upper() != "UNKNOWN":
                raise ConfigError(name, "should not specify rate limit unit when unlimited")
        elif unit is None:
            raise ConfigError(name, f"invalid rate limit unit '{unit_text}'")
        elif spec.requests_per_unit is None:  # upstream defaults it to 0 (block everything)
            raise ConfigError(
                name,
                f"config error, rate limit '{full_key}' is missing 'requests_per_unit' "
                "(required unless unlimited)",
            )
        for replaced in spec.replaces:
            if replaced == "":
                raise ConfigError(name, "should not have an empty replaces entry")
            if replaced == spec.name:
                raise ConfigError(name, "replaces should not contain name of same descriptor")
        if spec.unlimited:
            return RuleLimit(0, Unit.UNKNOWN, True, spec.name, tuple(spec.replaces))
        assert unit is not None and spec.requests_per_unit is not None
        return RuleLimit(spec.requests_per_unit, unit, False, spec.name, tuple(spec.replaces))


_TAGS = {FIXED_WINDOW: "fw", SLIDING_WINDOW: "sw", TOKEN_BUCKET: "tb"}


def _plain(value: _Value | None) -> object:
    """A YAML value as :func:`algorithms.parse_window` reads it."""
    if value is None:
        return None
    return value.data if value.kind in (_STR, _INT, _UINT, _BOOL, _FLOAT) else value.text


def _rule_error(name: str, full_key: str, line: int | None, reason: str) -> ConfigError:
    where = f" at line {line}" if line is not None else ""
    return ConfigError(name, f"config error, rate limit '{full_key}'{where}: {reason}")


# ---------------------------------------------------------------------------------------------
# Public API


def load_rule_set(files: Sequence[tuple[str, str | bytes]], *, merge_domains: bool) -> RuleSet:
    """Load rule files, each ``(config name, YAML text)``; raises :class:`ConfigError`.
    Every backend (memory, Redis, memcached) decides every rule they may hold.

    Every file is parsed and checked before any is loaded, so a YAML or key error in any file
    is reported before a semantic one. Domains repeated across files are merged when
    ``merge_domains``, an error otherwise.
    """
    decoded = [(name, _decode(name, _parse_first_document(name, text))) for name, text in files]
    return _build(decoded, merge_domains)


def load_documents(
    documents: Sequence[tuple[str, Mapping[str, Any]]], *, merge_domains: bool
) -> RuleSet:
    """Like :func:`load_rule_set` for documents already parsed into mappings (xDS)."""
    decoded: list[tuple[str, _RootSpec]] = []
    for name, document in documents:
        try:
            value = _from_python(document)
        except _YamlFailure as error:
            raise ConfigError(name, f"error loading config file: yaml: {error}") from None
        decoded.append((name, _decode(name, value)))
    return _build(decoded, merge_domains)


def _build(decoded: list[tuple[str, _RootSpec]], merge_domains: bool) -> RuleSet:
    builder = _TreeBuilder(merge_domains)
    for name, spec in decoded:
        builder.add(name, spec)
    return builder.result()


def dump(rule_set: RuleSet) -> list[str]:
    """Upstream's ``/rlconfig`` lines, one per rule that has a ``rate_limit``."""
    lines: list[str] = []
    for node in rule_set.rules():
        assert node.limit is not None
        for limit in (node.limit, *node.more_limits):
            line = (
                f"{node.full_key}: unit={limit.unit.name} "
                f"requests_per_unit={limit.requests_per_unit}, "
                f"shadow_mode: {str(node.shadow_mode).lower()}, "
                f"quota_mode: {str(node.quota_mode).lower()}"
            )
            if not limit.upstream:  # issue 23's limits say what they are
                line += f", algorithm: {limit.algorithm}, window: {limit.window_ms}ms"
                if limit.burst:
                    line += f", burst: {limit.burst}"
            lines.append(line)
    return lines
