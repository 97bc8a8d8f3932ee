"""Which rule applies to a request descriptor, and under which statistics key.

A descriptor's entries are matched level by level: entry *i* against the rules nested *i*
deep. At each level an exact ``key_value`` rule wins, then the level's wildcard rules in
configuration order, then the bare ``key`` rule. Only a rule reached by the *last* entry
applies, and only if it has a ``rate_limit``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from generated.proto.envoy.service.ratelimit.v3 import rls_pb2
from handlers.ratelimit.config.model import (
    FIXED_WINDOW,
    DescriptorNode,
    DomainRules,
    RuleLimit,
    Unit,
)
from handlers.ratelimit.proto_json import current_limit_json
from handlers.ratelimit.proto_wire import current_limit_wire
from handlers.ratelimit.stats import RateLimitStats, ServiceStats

Entries = tuple[tuple[str, str], ...]
"""A request descriptor's entries as ``(key, value)`` pairs."""


@dataclass(frozen=True, slots=True)
class MatchedLimit:
    """The limit that applies to one request descriptor."""

    requests_per_unit: int
    unit: Unit
    stats: RateLimitStats
    name: str = ""
    unlimited: bool = False
    shadow_mode: bool = False
    quota_mode: bool = False
    replaces: tuple[str, ...] = ()
    share_patterns: Mapping[int, str] | None = None
    """Entry index -> the wildcard value counted in its place (``share_threshold`` rules)."""
    metadata: Mapping[str, Any] | None = None
    algorithm: str = FIXED_WINDOW
    window_ms: int = 0
    """0: upstream's window of one ``unit``."""
    burst: int = 0
    tag: str = ""
    """The key tag of an issue 23 limit (``RuleLimit.tag``)."""
    others: tuple[MatchedLimit, ...] = ()
    """The descriptor's limits after this one (a ``rate_limits:`` list): each is decided,
    and the most restrictive answers (``algorithms.combine``)."""
    advanced: bool = field(init=False)
    """Decided by ``algorithms.py`` in the store (another algorithm, a window that is not
    whole seconds, or several limits); otherwise counted as upstream's fixed window, whose
    length is ``divider``."""
    names: tuple[str, ...] = field(init=False)
    """The names ``replaces`` drops this descriptor by: every limit's that has one."""
    divider: int = field(init=False)
    per_second: bool = field(init=False)
    current: rls_pb2.RateLimitResponse.RateLimit = field(init=False)
    """The ``current_limit`` of this limit's statuses, built once."""
    current_json: str = field(init=False)
    """``current`` as the ``"currentLimit":{...}`` member of a status in proto3 JSON."""
    current_wire: bytes = field(init=False)
    """``current`` as the ``current_limit`` field of a status in the protobuf encoding."""

    def __post_init__(self) -> None:
        set_field = object.__setattr__
        window_ms = self.window_ms
        divider = window_ms // 1000 if window_ms else self.unit.divider
        set_field(self, "divider", divider)
        set_field(self, "per_second", divider == 1)
        set_field(
            self,
            "advanced",
            self.algorithm != FIXED_WINDOW or window_ms % 1000 != 0 or bool(self.others),
        )
        set_field(
            self,
            "names",
            tuple(limit.name for limit in (self, *self.others) if limit.name),
        )
        set_field(
            self,
            "current",
            rls_pb2.RateLimitResponse.RateLimit(
                requests_per_unit=self.requests_per_unit,
                unit=int(self.unit),  # type: ignore[arg-type]
                name=self.name,
            ),
        )
        set_field(self, "current_json", current_limit_json(self.current))
        set_field(self, "current_wire", current_limit_wire(self.current))

    def seconds_until_reset(self, now: int) -> int:
        """Whole seconds from ``now`` (whole seconds) to the end of this limit's window."""
        divider = self.divider
        return divider - now % divider


def wildcard_match(pattern: str, value: str) -> bool:
    """Whether ``value`` matches ``pattern``, each ``*`` standing for any characters."""
    parts = pattern.split("*")
    if len(parts) == 1:
        return pattern == value
    first, last = parts[0], parts[-1]
    if len(value) < sum(len(p) for p in parts):
        return False
    if not value.startswith(first) or not value.endswith(last):
        return False
    position, end = len(first), len(value) - len(last)
    for middle in parts[1:-1]:
        found = value.find(middle, position, end)
        if found < 0:
            return False
        position = found + len(middle)
    return True


def override_limit(
    domain: str, entries: Entries, requests_per_unit: int, unit: Unit, stats: ServiceStats
) -> MatchedLimit:
    """A per-request limit (``descriptor.limit``): its statistics key is the domain and the
    request's entries (``key`` or ``key_value`` each)."""
    path = ".".join(f"{key}_{value}" if value else key for key, value in entries)
    return MatchedLimit(
        requests_per_unit=requests_per_unit,
        unit=unit,
        stats=stats.rate_limit(f"{domain}.{path}"),
    )


def find_limit(
    domain_rules: DomainRules, entries: Entries, stats: ServiceStats
) -> MatchedLimit | None:
    """The limit of ``domain_rules`` that applies to a descriptor with ``entries``, or None (no
    rule, whitelisted, depth mismatch). Depends only on its arguments, so callers may cache it
    per entries for one set of rules."""
    domain = domain_rules.domain
    level: DescriptorNode = domain_rules.root
    last = len(entries) - 1
    found: DescriptorNode | None = None
    share_patterns: dict[int, str] | None = None
    detailed: list[str] = [domain]
    by_value: list[str] = [domain]
    uses_value_metric = False
    for index, (key, value) in enumerate(entries):
        composite = f"{key}_{value}"
        node = level.children.get(composite)
        via_wildcard = False
        if node is None and level.wildcards:
            for pattern in level.wildcards:
                if wildcard_match(pattern, composite):
                    node = level.children[pattern]
                    via_wildcard = True
                    break
        by_default_key = False
        if node is None:
            node = level.children.get(key)
            by_default_key = True
        if node is None:
            break

        shared = via_wildcard and node.share_threshold
        if shared:
            if share_patterns is None:
                share_patterns = {}
            share_patterns[index] = node.value
        detailed.append(node.composite_key if shared else composite)
        if node.value_to_metric and (by_default_key or (via_wildcard and not shared)):
            uses_value_metric = True
            by_value.append(composite if value else key)
        else:
            by_value.append(node.composite_key)

        if index == last and node.limit is not None:
            found = node
        if not node.children:
            break
        level = node

    if found is None or found.limit is None:
        return None
    if found.detailed_metric:
        stats_key = ".".join(detailed)
    elif uses_value_metric:
        stats_key = ".".join(by_value)
    else:
        stats_key = found.full_key
    rule_stats = stats.rate_limit(stats_key)

    def matched(limit: RuleLimit, others: tuple[MatchedLimit, ...] = ()) -> MatchedLimit:
        return MatchedLimit(
            requests_per_unit=limit.requests_per_unit,
            unit=limit.unit,
            stats=rule_stats,
            name=limit.name,
            unlimited=limit.unlimited,
            shadow_mode=found.shadow_mode,
            quota_mode=found.quota_mode,
            replaces=limit.replaces,
            share_patterns=share_patterns,
            metadata=found.metadata,
            algorithm=limit.algorithm,
            window_ms=limit.window_ms,
            burst=limit.burst,
            tag=limit.tag,
            others=others,
        )

    return matched(found.limit, tuple(matched(limit) for limit in found.more_limits))
