"""API keys scoped to collections (the setting ``RAG_API_KEYS``; off when it is unset).

The setting lists entries separated by blanks or ``;``, each ``KEY:COLLECTIONS``: a key of
16 to 256 characters (letters, digits and ``._~+/=-``), and the collections it may read and
write, separated by commas (``*``: every collection). ``team-a-key-0123456789:default,legal
admin-key-0123456789abcdef:*``. A request names its key as ``Authorization: Bearer <KEY>``.
Keys are looked up by their SHA-256 digest, so the lookup's time does not depend on how much
of a wrong key matches a right one.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass

from handlers.rag.metadata import COLLECTION_PATTERN, is_collection

__all__ = ["ALL_COLLECTIONS", "ApiKeys", "KeyScope"]

ALL_COLLECTIONS = "*"
_KEY = re.compile(r"[A-Za-z0-9._~+/=-]{16,256}")
_SEPARATORS = re.compile(r"[\s;]+")


@dataclass(frozen=True, slots=True)
class KeyScope:
    """What one key may do: read and write ``collections`` (None: every collection)."""

    collections: frozenset[str] | None

    def may_use(self, collection: str) -> bool:
        return self.collections is None or collection in self.collections


class ApiKeys:
    """The configured keys and their scopes."""

    def __init__(self, scopes: Mapping[str, KeyScope]) -> None:
        if not scopes:
            raise ValueError("at least one key is needed")
        self._scopes = {_digest(key): scope for key, scope in scopes.items()}

    @classmethod
    def parse(cls, text: str) -> ApiKeys | None:
        """The keys of a ``RAG_API_KEYS`` value (None when blank: keys are off); ValueError
        saying what is expected otherwise."""
        entries = [entry for entry in _SEPARATORS.split(text.strip()) if entry]
        if not entries:
            return None
        scopes: dict[str, KeyScope] = {}
        for entry in entries:
            key, colon, names = entry.partition(":")
            if not colon or not _KEY.fullmatch(key):
                raise ValueError(
                    "expected KEY:COLLECTIONS entries separated by blanks or ';', each key of "
                    "16 to 256 letters, digits or ._~+/=-"
                )
            if key in scopes:
                raise ValueError("a key is listed twice")
            listed = names.split(",")
            if listed == [ALL_COLLECTIONS]:
                scopes[key] = KeyScope(None)
                continue
            if not all(is_collection(name) for name in listed):
                raise ValueError(
                    f"expected '*' or collection names matching {COLLECTION_PATTERN} "
                    "separated by commas after each key"
                )
            scopes[key] = KeyScope(frozenset(listed))
        return cls(scopes)

    def scope(self, key: str) -> KeyScope | None:
        """The scope of ``key``; None when it is not a configured key."""
        return self._scopes.get(_digest(key))


def _digest(key: str) -> bytes:
    return hashlib.sha256(key.encode("utf-8", "surrogatepass")).digest()
