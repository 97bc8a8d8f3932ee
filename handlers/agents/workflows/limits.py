"""Bounds that keep every expression cheap: no expression can exhaust memory or CPU.

Sizes are counted as the value would be written as compact JSON (``json.dumps`` with
``separators=(",", ":")`` and ``ensure_ascii=False``, in UTF-8 bytes), with every repetition of
a shared reference counted: ``[[0] * 100000] * 100000`` is 10^10 cells, however few objects
it holds. Where a size can be predicted (repetition: the item's size times the count), it is
checked before building. Otherwise the value is walked once, remembering the size of every
container (and long string) by identity, so a walk never visits a shared object twice, and it
stops as soon as the limit is passed.

The public helpers for JSON received from elsewhere (an http step's response body, an agent's
output) are :func:`check_json_text_depth` (before ``json.loads``) and :func:`json_size` (after).
"""

from __future__ import annotations

import itertools
import math
import re
import time
from collections.abc import Callable
from json.encoder import encode_basestring

MAX_EXPRESSION_CHARS = 2000
"""Characters of one expression (between ``${{`` and ``}}``)."""
MAX_NESTING = 32
"""Depth of nested sub-expressions (parentheses, calls, literals, operators)."""
MAX_STRING_CHARS = 1_000_000
"""Length of any string an expression builds (concatenation, repetition, join, replace...)."""
MAX_COLLECTION_ITEMS = 100_000
"""Items of any list or object an expression builds (literals, ``+``, ``*``, merge, split)."""
MAX_INT_BITS = 1024
"""Size of any integer an expression builds (about 308 decimal digits)."""
MAX_VALUE_BYTES = 10_000_000
"""Size as compact JSON (UTF-8 bytes, every shared reference counted) of any list or object an
expression builds, and of any value it turns into text (``json``, ``string``, ``join``,
interpolation)."""
MAX_JSON_DEPTH = 100
"""Nesting of lists and objects in any value an expression builds or reads (``from_json``
checks the text before parsing it), in a step's recorded input and output, and in a
workflow's result. ``[]`` is 1 deep, ``[[]]`` 2."""
MAX_STEP_DATA_BYTES = 16_000_000
"""Size as compact JSON of a step's recorded input and output and of a workflow's result.
Above the http step's 10 MB response limit, so that a response that fits is recorded (its
parsed and re-written form can be somewhat larger)."""
MAX_EVALUATION_SECONDS = 2.0
"""Time one evaluation of one expression may take."""
MAX_TOTAL_EVALUATION_SECONDS = 5.0
"""Time all the expressions evaluated together may take: every constant part of one workflow
definition while it is parsed, or every expression of one template (a step's parameters, the
workflow's result) while it is rendered."""

_TICK_EVERY = 1024
"""Containers walked between two looks at the clock."""


class LimitError(ValueError):
    """An operation would build a value beyond the limits."""


class ValueTooLarge(LimitError):
    """A value is larger than ``limit`` bytes as JSON: ``size`` bytes when ``exact``, else at
    least ``size`` (counting stopped there)."""

    def __init__(self, size: int, limit: int, *, exact: bool, what: str = "value") -> None:
        self.size = size
        self.limit = limit
        self.exact = exact
        self.what = what
        amount = f"{size} bytes" if exact else f"at least {size} bytes"
        super().__init__(f"{what} too large ({amount} as JSON, max {limit})")

    def naming(self, what: str) -> ValueTooLarge:
        """The same error about ``what`` (``output``, ``result``...)."""
        return ValueTooLarge(self.size, self.limit, exact=self.exact, what=what)


class ValueTooDeep(LimitError):
    """A value or JSON text nests lists and objects deeper than ``limit``."""

    def __init__(self, limit: int, what: str = "value") -> None:
        self.limit = limit
        self.what = what
        super().__init__(f"{what} nested too deeply (more than {limit} levels)")

    def naming(self, what: str) -> ValueTooDeep:
        return ValueTooDeep(self.limit, what)


class TimeLimitExceeded(LimitError):
    """An evaluation ran past its deadline."""


def check_string(length: int) -> None:
    if length > MAX_STRING_CHARS:
        raise LimitError(f"string result too long ({length} characters, max {MAX_STRING_CHARS})")


def check_items(count: int) -> None:
    if count > MAX_COLLECTION_ITEMS:
        raise LimitError(f"result has too many items ({count}, max {MAX_COLLECTION_ITEMS})")


def check_number(value: int | float) -> int | float:
    """Return ``value`` if it is a finite float or an int within MAX_INT_BITS."""
    if isinstance(value, float) and not math.isfinite(value):
        raise LimitError("number result is not finite")
    if isinstance(value, int) and value.bit_length() > MAX_INT_BITS:
        raise LimitError(f"number result too large (more than {MAX_INT_BITS} bits)")
    return value


def check_power(base: int | float, exponent: int | float) -> None:
    """Refuse ``base ** exponent`` before computing it when the result would be too large."""
    if (
        isinstance(base, int)
        and isinstance(exponent, int)
        and exponent > 0
        and abs(base) > 1
        and exponent * math.log2(abs(base)) > MAX_INT_BITS
    ):
        raise LimitError(f"number result too large (more than {MAX_INT_BITS} bits)")


# -- JSON text -----------------------------------------------------------------------------------

_JSON_STRING = re.compile(r'"[^"\\]*(?:\\(?:.|\Z)[^"\\]*)*(?:"|\Z)', re.DOTALL)
"""A string, or an unterminated one up to the end: every match attempt succeeds at once, so
the scan is linear (a pattern that can fail would rescan the rest of the text from every
escaped quote)."""
_JSON_STRING_BYTES = re.compile(rb'"[^"\\]*(?:\\(?:.|\Z)[^"\\]*)*(?:"|\Z)', re.DOTALL)
_NOT_BRACKETS = re.compile(r"[^\[\]{}]+")
_NOT_BRACKETS_BYTES = re.compile(rb"[^\[\]{}]+")
_BRACKET_STEPS = {"[": 1, "{": 1, "]": -1, "}": -1}
_BRACKET_BYTE_STEPS = {ord("["): 1, ord("{"): 1, ord("]"): -1, ord("}"): -1}


def check_json_text_depth(text: str | bytes, max_depth: int = MAX_JSON_DEPTH) -> None:
    """Raise :class:`ValueTooDeep` when the JSON ``text`` nests arrays and objects deeper than
    ``max_depth``; call it before ``json.loads``, which recurses once per level and raises
    RecursionError (not a ValueError) on deep input such as ``'[' * 100000``.

    Brackets inside strings are skipped. The text is not otherwise validated: ``json.loads``
    does that, and any bracket it could reach is counted here. Runs at C speed (no Python loop
    per character): a 10 MB text takes milliseconds.
    """
    if isinstance(text, bytes):
        if text.count(b"[") + text.count(b"{") <= max_depth:
            return
        brackets_bytes = _NOT_BRACKETS_BYTES.sub(b"", _JSON_STRING_BYTES.sub(b"", text))
        steps = map(_BRACKET_BYTE_STEPS.__getitem__, brackets_bytes)
    else:
        if text.count("[") + text.count("{") <= max_depth:
            return
        brackets = _NOT_BRACKETS.sub("", _JSON_STRING.sub("", text))
        steps = map(_BRACKET_STEPS.__getitem__, brackets)
    if max(itertools.accumulate(steps), default=0) > max_depth:
        raise ValueTooDeep(max_depth, "JSON")


# -- deadlines -----------------------------------------------------------------------------------


class Deadline:
    """A point in time (``time.monotonic``) after which ``check`` raises TimeLimitExceeded."""

    __slots__ = ("at", "message")

    def __init__(self, seconds: float, message: str) -> None:
        self.at = time.monotonic() + seconds
        self.message = message

    def expired(self) -> bool:
        return time.monotonic() > self.at

    def check(self) -> None:
        if time.monotonic() > self.at:
            raise TimeLimitExceeded(self.message)


def expression_deadline() -> Deadline:
    """The deadline of one evaluation of one expression (MAX_EVALUATION_SECONDS from now)."""
    return Deadline(
        MAX_EVALUATION_SECONDS, f"expression took longer than {MAX_EVALUATION_SECONDS:g} s"
    )


def total_deadline(what: str) -> Deadline:
    """The deadline of all the expressions of ``what`` (MAX_TOTAL_EVALUATION_SECONDS)."""
    seconds = MAX_TOTAL_EVALUATION_SECONDS
    return Deadline(seconds, f"{what} took longer than {seconds:g} s")


# -- sizes ---------------------------------------------------------------------------------------


def _string_size(text: str) -> int:
    """Bytes of ``text`` as a JSON string: quotes, escapes, UTF-8."""
    if text.isprintable():  # no control characters: only " and \\ are escaped (no copy)
        size = len(text) + 2 + text.count('"') + text.count("\\")
    else:
        size = len(encode_basestring(text))
    if not text.isascii():
        size += len(text.encode("utf-8", "surrogatepass")) - len(text)
    return size


def _int_size(number: int) -> int:
    bits = number.bit_length()
    if bits <= 64:
        return len(str(number))
    return int(bits * 0.30103) + 1 + (number < 0)  # str() of a huge int costs quadratic time


def _scalar_size(value: object) -> int:
    """Size of anything that is not a list, tuple, object or string."""
    if value is None or value is True:
        return 4
    if value is False:
        return 5
    if isinstance(value, int):
        return _int_size(value)
    if isinstance(value, float):
        return len(repr(value)) if math.isfinite(value) else 9
    return len(str(value)) + 2  # not JSON: json.dumps refuses it later; count something


_PLAIN_SCALARS = frozenset({int, float, bool, type(None)})
"""Types whose ``str()`` is as long as their JSON (True/true, None/null, repr of floats)."""
_Container = list[object] | dict[object, object] | tuple[object, ...]
_BULK_ITEMS = 32
"""Lists (and objects' keys) longer than this are first tried as all numbers or all strings."""
_SMALL_INT = 2**63
_MEMO_MIN_BYTES = 256
"""Containers (and strings) at least this large are remembered by identity. Smaller ones are
walked again where they are repeated, which costs no more than the bytes they add: the memo
stays small (at most limit / 256 entries per walk)."""


class Sizer:
    """Measures values as compact JSON, remembering large containers and strings by identity.

    One Sizer serves one evaluation (or one template render): the values it remembers must not
    change meanwhile, and it keeps a reference to each, so that their ids are not reused.
    Lists of numbers, booleans and nulls, and lists of strings, are measured at C speed.
    """

    def __init__(self) -> None:
        self._memo: dict[int, tuple[int, int]] = {}
        """id -> (size, height): height 0 for a string, 1 for ``[]``, 2 for ``[[]]``..."""
        self._kept: list[object] = []
        self._spent = 0
        self._limit = 0
        self._max_depth = MAX_JSON_DEPTH
        self._tick: Callable[[], None] | None = None
        self._walked = 0

    def measure(
        self,
        value: object,
        limit: int = MAX_VALUE_BYTES,
        *,
        max_depth: int = MAX_JSON_DEPTH,
        tick: Callable[[], None] | None = None,
    ) -> tuple[int, int]:
        """``(size, height)`` of ``value``; raises ValueTooLarge as soon as the size passes
        ``limit``, ValueTooDeep beyond ``max_depth``, and whatever ``tick`` (called now and
        then, such as ``Deadline.check``) raises."""
        self._spent, self._limit, self._max_depth, self._tick = 0, limit, max_depth, tick
        height = self._walk(value, 0)
        return self._spent, height

    def remember(self, value: object, size: int, height: int) -> None:
        """Record the size of a container built from measured parts (``+``, ``*``)."""
        self._memo[id(value)] = (size, height)
        self._kept.append(value)

    def _add(self, size: int) -> None:
        self._spent += size
        if self._spent > self._limit:
            raise ValueTooLarge(self._spent, self._limit, exact=False)

    def _walk(self, value: object, depth: int) -> int:
        """Add ``value``'s size to ``_spent`` and return its height; ``depth`` is the number
        of containers around it."""
        if isinstance(value, list | dict | tuple) or (
            isinstance(value, str) and len(value) >= _MEMO_MIN_BYTES
        ):
            return self._remembered(value, depth)
        self._add(_string_size(value) if isinstance(value, str) else _scalar_size(value))
        return 0

    def _remembered(self, value: _Container | str, depth: int) -> int:
        """``_walk`` of a container or a long string: from the memo when it is there."""
        known = self._memo.get(id(value))
        if known is not None:
            size, height = known
            if depth + height > self._max_depth:
                raise ValueTooDeep(self._max_depth)
            self._add(size)
            return height
        start = self._spent
        if isinstance(value, str):
            self._add(_string_size(value))
            self.remember(value, self._spent - start, 0)
            return 0
        if depth >= self._max_depth:
            raise ValueTooDeep(self._max_depth)
        self._walked += 1
        if self._tick is not None and self._walked % _TICK_EVERY == 0:
            self._tick()
        count = len(value)
        if isinstance(value, dict):
            self._spent += 2 * count + 1 if count else 2  # braces, colons and commas
            self._keys(value)
            height = self._items(list(value.values()), depth + 1) + 1
        else:
            self._spent += count + 1 if count else 2  # brackets and commas
            height = self._items(value, depth + 1) + 1
        self._add(0)
        size = self._spent - start
        if size >= _MEMO_MIN_BYTES:
            self.remember(value, size, height)
        return height

    def _keys(self, mapping: dict[object, object]) -> None:
        if len(mapping) > _BULK_ITEMS and set(map(type, mapping)) == {str}:
            self._strings(list(mapping))  # type: ignore[arg-type]  # all strings
            return
        spent = 0
        for key in mapping:
            if type(key) is str and key.isascii() and key.isidentifier():  # nothing to escape
                spent += len(key) + 2
            else:
                spent += _string_size(key) if isinstance(key, str) else len(str(key)) + 2
        self._add(spent)

    def _items(self, items: list[object] | tuple[object, ...], depth: int) -> int:
        """Add the sizes of ``items`` (without brackets and commas); return their greatest
        height. Scalars are counted inline, and long runs of them at C speed."""
        if len(items) > _BULK_ITEMS:
            kinds = set(map(type, items))
            if kinds <= _PLAIN_SCALARS:
                try:
                    self._add(sum(map(len, map(str, items))))
                    return 0
                except ValueError:  # an int too long for str(): measured one by one below
                    pass
            elif kinds == {str}:
                self._strings(items)  # type: ignore[arg-type]  # all strings: checked above
                return 0
        height = 0
        spent = 0  # scalars' bytes, added to _spent before each container and at the end
        for item in items:
            if isinstance(item, str):
                if len(item) < _MEMO_MIN_BYTES:
                    spent += _string_size(item)
                    continue
            elif isinstance(item, int):  # booleans too: str(True) is as long as true
                spent += len(str(item)) if -_SMALL_INT < item < _SMALL_INT else _int_size(item)
                continue
            elif not isinstance(item, list | dict | tuple):
                spent += _scalar_size(item)
                continue
            self._add(spent)
            spent = 0
            found = self._remembered(item, depth)
            if found > height:
                height = found
        self._add(spent)
        return height

    def _strings(self, items: list[str] | tuple[str, ...]) -> None:
        """Add the sizes of strings, without a Python call per string."""
        count = len(items)
        lower = sum(map(len, items)) + 2 * count
        if self._spent + lower > self._limit:
            self._add(lower)  # too large already: raise before joining them
        joined = _string_size(",".join(items))  # quotes, the strings' bytes and the commas
        self._add(joined - 2 - max(count - 1, 0) + 2 * count)


def json_size(
    value: object,
    limit: int = MAX_VALUE_BYTES,
    *,
    max_depth: int = MAX_JSON_DEPTH,
    tick: Callable[[], None] | None = None,
) -> int:
    """The size of ``value`` written as compact JSON (UTF-8 bytes, ``separators=(",", ":")``,
    ``ensure_ascii=False``), counting every repetition of a shared list or object but visiting
    each only once.

    Raises :class:`ValueTooLarge` as soon as the size passes ``limit`` (so a huge value costs
    no more than ``limit`` to refuse), and :class:`ValueTooDeep` when lists and objects nest
    deeper than ``max_depth`` (so ``json.dumps`` of a value that passes never raises
    RecursionError). Both are ValueErrors. ``tick`` is called now and then (a deadline check).
    """
    return Sizer().measure(value, limit, max_depth=max_depth, tick=tick)[0]


class Budget:
    """What one evaluation of one expression may spend: time until its own deadline (and an
    ``outer`` one shared by several expressions, if given), and values measured by ``sizer``
    (shared by the expressions of one template, so each value is walked once)."""

    def __init__(self, *, outer: Deadline | None = None, sizer: Sizer | None = None) -> None:
        self.deadline = expression_deadline()
        self.outer = outer
        self.sizer = sizer if sizer is not None else Sizer()

    def check_time(self) -> None:
        """Raise TimeLimitExceeded once a deadline has passed."""
        self.deadline.check()
        if self.outer is not None:
            self.outer.check()

    def measure(self, value: object, limit: int = MAX_VALUE_BYTES) -> tuple[int, int]:
        """``(size, height)`` of ``value`` within ``limit`` bytes and MAX_JSON_DEPTH."""
        return self.sizer.measure(value, limit, tick=self.check_time)

    def check_value(self, value: object) -> None:
        """Refuse a built value larger than MAX_VALUE_BYTES or deeper than MAX_JSON_DEPTH."""
        self.measure(value)
