"""One classified change between a released contract and the working tree."""

from __future__ import annotations

import enum
from dataclasses import dataclass


class Severity(enum.Enum):
    """How a change affects clients built against the released contract."""

    BREAKING = "breaking"
    NON_BREAKING = "non-breaking"
    # Documentation and examples: listed in the changelog, never a reason to bump a version.
    ANNOTATION = "annotation"


@dataclass(frozen=True)
class Change:
    """A change, where it is (``paths./x.post.responses.413`` or ``file.proto:12:3``) and why."""

    severity: Severity
    location: str
    message: str
    rule: str

    def line(self) -> str:
        """The change as one report line."""
        return f"[{self.rule}] {self.location}: {self.message}"
