"""Conversions applied to a parameter's raw value before it is converted to its type."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable

__all__ = ["Conversion", "SeparatedBy"]


@runtime_checkable
class Conversion(Protocol):
    """A user-defined conversion, used as ``Annotated[T, MyConversion(...)]``.

    ``convert`` receives the raw value (a string, or a list for repeated parameters) and
    returns the converted one. Raising ``ValueError`` rejects the request with a 400 whose
    message is the exception's text.
    """

    def convert(self, value: object) -> object: ...


@dataclass(frozen=True, slots=True)
class SeparatedBy:
    """Split one request parameter at ``separator`` into a list.

    ``?ids=1,2,3`` gives ``["1", "2", "3"]``; a parameter repeated in the request
    (``?ids=1&ids=2``) already is a list and passes through unchanged.
    """

    separator: str

    def convert(self, value: object) -> object:
        if isinstance(value, str):
            return value.split(self.separator) if value else []
        if isinstance(value, list) and len(value) == 1 and isinstance(value[0], str):
            return value[0].split(self.separator) if value[0] else []
        return value
