"""Collections and document metadata: their grammar, bounds, and the typed index terms a store
keeps for filtering.

A **collection** is a name (:data:`COLLECTION_PATTERN`: lower-case letters, digits, ``_`` and
``-``, 1 to 64 characters, starting with a letter or digit); a document lives in exactly one,
:data:`DEFAULT_COLLECTION` unless the upload names another.

**Metadata** is a flat JSON object given at upload: at most :data:`MAX_KEYS` keys matching
:data:`KEY_PATTERN`, each value a string (at most :data:`MAX_STRING_CHARS` characters), a
finite number, a boolean, or a list of at most :data:`MAX_LIST_ITEMS` strings; the JSON text is
at most :data:`MAX_METADATA_BYTES` bytes. Nothing nests deeper than that list, and ``null`` is
refused (leave the key out).

What a store indexes of a document's metadata (on each of its chunks):

- :func:`metadata_terms`: one opaque term per (key, scalar value) pair -- a list's items count
  one by one -- the BLAKE2b digest of the canonical JSON ``[key, value]``, so that equality and
  ``in`` filters are membership tests on one indexed list column, typed (``"1"``, ``1`` and
  ``true`` differ; ``1`` and ``1.0`` do not), and no client text ever reaches a query
  expression: the terms are hex digits.
- :func:`metadata_numbers`: the numeric values by key, for range filters.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Iterator, Mapping
from typing import TypeAlias

__all__ = [
    "COLLECTION_PATTERN",
    "DEFAULT_COLLECTION",
    "KEY_PATTERN",
    "MAX_KEYS",
    "MAX_LIST_ITEMS",
    "MAX_METADATA_BYTES",
    "MAX_STRING_CHARS",
    "Metadata",
    "MetadataError",
    "MetadataValue",
    "Scalar",
    "canonical_number",
    "check_collection",
    "is_collection",
    "metadata_json",
    "metadata_numbers",
    "metadata_terms",
    "parse_metadata",
    "term",
]

DEFAULT_COLLECTION = "default"
COLLECTION_PATTERN = r"^[a-z0-9][a-z0-9_-]{0,63}$"
KEY_PATTERN = r"^[A-Za-z_][A-Za-z0-9_.-]{0,63}$"
MAX_METADATA_BYTES = 8192
MAX_KEYS = 32
MAX_STRING_CHARS = 1024
MAX_LIST_ITEMS = 64

Scalar: TypeAlias = str | int | float | bool
MetadataValue: TypeAlias = str | int | float | bool | list[str]
Metadata: TypeAlias = Mapping[str, MetadataValue]

_COLLECTION = re.compile(COLLECTION_PATTERN)
_KEY = re.compile(KEY_PATTERN)
_TERM_BYTES = 16


class MetadataError(ValueError):
    """Metadata (or a collection name) outside the grammar; the message says why."""


def is_collection(name: object) -> bool:
    """Whether ``name`` is a valid collection name."""
    return isinstance(name, str) and _COLLECTION.fullmatch(name) is not None


def check_collection(name: str) -> str:
    """``name`` when valid; MetadataError otherwise."""
    if not is_collection(name):
        raise MetadataError(f"a collection name matches {COLLECTION_PATTERN}")
    return name


def is_key(key: object) -> bool:
    """Whether ``key`` is a valid metadata key."""
    return isinstance(key, str) and _KEY.fullmatch(key) is not None


def parse_metadata(text: str | None) -> dict[str, MetadataValue]:
    """The metadata of an upload's ``metadata`` field (JSON object text; None or blank: {}).
    MetadataError, saying why, when it is not valid metadata."""
    if text is None or not text.strip():
        return {}
    if len(text.encode("utf-8", "surrogatepass")) > MAX_METADATA_BYTES:
        raise MetadataError(f"metadata is at most {MAX_METADATA_BYTES} bytes of JSON")
    try:
        value = json.loads(text, parse_constant=_no_constant)
    except (ValueError, RecursionError):
        raise MetadataError("metadata must be a JSON object") from None
    return check_metadata(value)


def check_metadata(value: object) -> dict[str, MetadataValue]:
    """``value`` as metadata (see the module docstring); MetadataError otherwise."""
    if not isinstance(value, dict):
        raise MetadataError("metadata must be a JSON object")
    if len(value) > MAX_KEYS:
        raise MetadataError(f"metadata has at most {MAX_KEYS} keys")
    checked: dict[str, MetadataValue] = {}
    for key, item in value.items():
        if not is_key(key):
            raise MetadataError(f"metadata key {str(key)[:80]!r} does not match {KEY_PATTERN}")
        checked[key] = _checked_value(key, item)
    return checked


def _checked_value(key: str, item: object) -> MetadataValue:
    if isinstance(item, bool):
        return item
    if isinstance(item, int | float):
        if not math.isfinite(item) or abs(item) > 1e300:
            raise MetadataError(f"metadata {key!r}: numbers must be finite")
        return canonical_number(item)
    if isinstance(item, str):
        if len(item) > MAX_STRING_CHARS:
            raise MetadataError(f"metadata {key!r}: strings are at most {MAX_STRING_CHARS} chars")
        return item
    if isinstance(item, list):
        if len(item) > MAX_LIST_ITEMS:
            raise MetadataError(f"metadata {key!r}: lists have at most {MAX_LIST_ITEMS} items")
        if not all(isinstance(entry, str) and len(entry) <= MAX_STRING_CHARS for entry in item):
            raise MetadataError(
                f"metadata {key!r}: a list holds only strings of at most "
                f"{MAX_STRING_CHARS} characters"
            )
        return list(item)
    raise MetadataError(
        f"metadata {key!r}: a value is a string, a number, a boolean or a list of strings"
    )


def _no_constant(name: str) -> object:
    raise ValueError(f"{name} is not JSON")


def canonical_number(value: int | float) -> int | float:
    """The number as stored and compared: an integral float within 2^53 is an int."""
    if isinstance(value, float) and value.is_integer() and abs(value) <= 2**53:
        return int(value)
    if isinstance(value, int) and abs(value) > 2**53:
        return float(value)
    return value


def term(key: str, value: Scalar) -> str:
    """The index term of one (key, scalar value) pair: 32 hex digits."""
    if not isinstance(value, bool) and isinstance(value, int | float):
        value = canonical_number(value)
    canonical = json.dumps([key, value], ensure_ascii=False, separators=(",", ":"))
    return hashlib.blake2b(canonical.encode("utf-8"), digest_size=_TERM_BYTES).hexdigest()


def _scalars(metadata: Metadata) -> Iterator[tuple[str, Scalar]]:
    for key, value in metadata.items():
        if isinstance(value, list):
            for item in value:
                yield key, item
        else:
            yield key, value


def metadata_terms(metadata: Metadata) -> list[str]:
    """The index terms of ``metadata``, sorted, without repeats."""
    return sorted({term(key, value) for key, value in _scalars(metadata)})


def metadata_numbers(metadata: Metadata) -> dict[str, float]:
    """The numeric values of ``metadata`` by key (booleans are not numbers)."""
    return {
        key: float(value)
        for key, value in metadata.items()
        if isinstance(value, int | float) and not isinstance(value, bool)
    }


def metadata_json(metadata: Metadata) -> str:
    """``metadata`` as the JSON text a store keeps."""
    return json.dumps(dict(metadata), ensure_ascii=False, separators=(",", ":"), sort_keys=True)
