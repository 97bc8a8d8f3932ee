"""The rule tree a loaded configuration is made of.

A domain holds a tree of :class:`DescriptorNode` keyed by their composite key (``key`` or
``key_value``); wildcard values are also listed, in configuration order, on the level that
holds them. A node's :class:`RuleLimit` is what ``rate_limit:`` declares.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import IntEnum
from typing import Any


class Unit(IntEnum):
    """``RateLimitResponse.RateLimit.Unit`` (the numbers are the wire's)."""

    UNKNOWN = 0
    SECOND = 1
    MINUTE = 2
    HOUR = 3
    DAY = 4
    MONTH = 5
    YEAR = 6
    WEEK = 7

    @property
    def divider(self) -> int:
        """Seconds in one window; windows start at Unix-epoch multiples of it."""
        return _DIVIDERS[self]


_DIVIDERS = {
    Unit.UNKNOWN: 0,
    Unit.SECOND: 1,
    Unit.MINUTE: 60,
    Unit.HOUR: 3600,
    Unit.DAY: 86400,
    Unit.WEEK: 604800,
    Unit.MONTH: 2592000,
    Unit.YEAR: 31536000,
}

MAX_UINT32 = 4294967295


FIXED_WINDOW = "fixed_window"
SLIDING_WINDOW = "sliding_window"
TOKEN_BUCKET = "token_bucket"
ALGORITHMS = (FIXED_WINDOW, SLIDING_WINDOW, TOKEN_BUCKET)


@dataclass(frozen=True, slots=True)
class RuleLimit:
    """A ``rate_limit:`` block, or one entry of ``rate_limits:``."""

    requests_per_unit: int
    unit: Unit
    """The unit a response's ``current_limit`` states: the rule's plain unit, or ``UNKNOWN``
    for a window that is not exactly one upstream unit (``unit_multiplier``, ``window``)."""
    unlimited: bool = False
    name: str = ""
    replaces: tuple[str, ...] = ()
    algorithm: str = FIXED_WINDOW
    window_ms: int = 0
    """The window in milliseconds; 0 for an upstream limit (one ``unit``, its divider)."""
    burst: int = 0
    """The token bucket's size (``token_bucket`` only)."""
    tag: str = ""
    """What the counter key carries after the descriptor's entries so that it never meets
    an upstream fixed-window key (empty for an upstream limit); see ``limiter.key_stem``."""

    @property
    def upstream(self) -> bool:
        """A plain upstream limit: fixed window of one unit, keys and answers as upstream."""
        return self.window_ms == 0


@dataclass(eq=False, slots=True)
class DescriptorNode:
    """One configured descriptor rule and the rules nested under it."""

    key: str
    value: str
    full_key: str
    """``domain.parent_path.key[_value]``: the rule's default statistics key."""
    limit: RuleLimit | None = None
    more_limits: tuple[RuleLimit, ...] = ()
    """The limits after the first of a ``rate_limits:`` list (``limit`` is the first)."""
    shadow_mode: bool = False
    quota_mode: bool = False
    detailed_metric: bool = False
    value_to_metric: bool = False
    share_threshold: bool = False
    metadata: Mapping[str, Any] | None = None
    children: dict[str, DescriptorNode] = field(default_factory=dict)
    """Nested rules by composite key (``key`` or ``key_value``)."""
    wildcards: list[str] = field(default_factory=list)
    """Composite keys of the nested rules whose value contains ``*``, in configuration order."""

    @property
    def composite_key(self) -> str:
        return f"{self.key}_{self.value}" if self.value else self.key

    def add_child(self, child: DescriptorNode) -> None:
        composite = child.composite_key
        self.children[composite] = child
        if "*" in child.value:
            self.wildcards.append(composite)


@dataclass(eq=False, slots=True)
class DomainRules:
    """A domain's rule tree; ``root`` is a placeholder node holding the top level."""

    domain: str
    root: DescriptorNode


@dataclass(eq=False, slots=True)
class RuleSet:
    """A whole loaded configuration: every domain's rules. Immutable once built."""

    domains: dict[str, DomainRules] = field(default_factory=dict)

    def rules(self) -> list[DescriptorNode]:
        """Every node that declares a ``rate_limit``, depth first in configuration order."""
        found: list[DescriptorNode] = []

        def walk(node: DescriptorNode) -> None:
            for child in node.children.values():
                if child.limit is not None:
                    found.append(child)
                walk(child)

        for domain in self.domains.values():
            walk(domain.root)
        return found
