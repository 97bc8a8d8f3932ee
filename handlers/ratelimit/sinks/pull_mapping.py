"""Stat names to pull (Prometheus) metrics, in the statsd_exporter mapping format the upstream
uses: the embedded default mapping, or the file PULLMETRICS_MAPPER_YAML names.

The supported subset of the format::

    defaults:                      # all optional
      match_type: glob             # glob (default) or regex
      observer_type: summary       # histogram or summary, for timers (alias timer_type)
      histogram_options: {buckets: [0.005, 0.01, ...]}   # (alias buckets)
    mappings:
      - match: "ratelimit_server.*.response_time"   # glob: * is one dot-free segment
        match_type: glob
        match_metric_type: observer                 # counter, gauge or observer (alias timer)
        name: "ratelimit_service_response_time_seconds"
        labels: {grpc_method: "$1"}
        observer_type: histogram
        histogram_options: {buckets: [...]}
        scale: 0.001                                # observed values are multiplied by it
        help: "..."
        action: map                                 # map, or drop (the stat is not exported)

The first mapping that matches the whole name (and the stat's type) applies; ``$1``... in the
name and labels are its groups. A stat no mapping matches is exported under its name with
every character other than letters, digits and ``_`` replaced by ``_``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

DEFAULT_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
"""statsd_exporter's default histogram buckets (Prometheus' DefBuckets)."""

_RATE_LIMIT_STATS = ("near_limit", "over_limit", "total_hits", "within_limit", "shadow_mode")


def _default_mapper_yaml(response_time_scale: bool = True) -> str:
    lines = ["mappings:"]
    for stat in _RATE_LIMIT_STATS:
        lines += [
            f'  - match: "ratelimit.service.rate_limit.*.*.{stat}"',
            f'    name: "ratelimit_service_rate_limit_{stat}"',
            '    timer_type: "histogram"',
            '    labels: {domain: "$1", key1: "$2"}',
        ]
    for stat in _RATE_LIMIT_STATS:
        pattern = (
            r"ratelimit\\.service\\.rate_limit\\.([^\\.]*)\\.([^\\.]*)\\.([^\\.]*)(\\..*)?\\."
            + stat
        )
        lines += [
            f'  - match: "{pattern}"',
            "    match_type: regex",
            f'    name: "ratelimit_service_rate_limit_{stat}"',
            '    timer_type: "histogram"',
            '    labels: {domain: "$1", key1: "$2", key2: "$3"}',
        ]
    lines += [
        '  - match: "ratelimit.service.call.should_rate_limit.*"',
        '    name: "ratelimit_service_should_rate_limit_error"',
        "    match_metric_type: counter",
        '    labels: {err_type: "$1"}',
        '  - match: "ratelimit_server.*.total_requests"',
        '    name: "ratelimit_service_total_requests"',
        "    match_metric_type: counter",
        '    labels: {grpc_method: "$1"}',
        '  - match: "ratelimit_server.*.response_time"',
        '    name: "ratelimit_service_response_time_seconds"',
        "    timer_type: histogram",
        *(["    scale: 0.001"] if response_time_scale else []),
        '    labels: {grpc_method: "$1"}',
        '  - match: "ratelimit.service.config_load_success"',
        '    name: "ratelimit_service_config_load_success"',
        "    match_metric_type: counter",
        '  - match: "ratelimit.service.config_load_error"',
        '    name: "ratelimit_service_config_load_error"',
        "    match_metric_type: counter",
    ]
    return "\n".join(lines) + "\n"


DEFAULT_MAPPER_YAML = _default_mapper_yaml()
"""The upstream's embedded mapping (``src/stats/prom/default_mapper.yaml``)."""

_KINDS = {"counter": "counter", "gauge": "gauge", "observer": "observer", "timer": "observer"}
_OBSERVER_TYPES = ("histogram", "summary")
_LABEL_NAME = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*")
_INVALID_NAME_CHARS = re.compile(r"[^a-zA-Z0-9_]")
_GROUP = re.compile(r"\$(?:(\d+)|\{(\d+)\})")
_MAPPING_KEYS = {
    "match",
    "match_type",
    "match_metric_type",
    "name",
    "labels",
    "observer_type",
    "timer_type",
    "histogram_options",
    "buckets",
    "scale",
    "help",
    "action",
}
_DEFAULTS_KEYS = {"match_type", "observer_type", "timer_type", "histogram_options", "buckets"}


class MappingError(ValueError):
    """A mapping file that cannot be used."""


def escape_metric_name(name: str) -> str:
    """statsd_exporter's fallback name: invalid characters become ``_``."""
    escaped = _INVALID_NAME_CHARS.sub("_", name)
    return "_" + escaped if escaped[:1].isdigit() else escaped


@dataclass(frozen=True, slots=True)
class MappedMetric:
    """What one stat becomes: a metric name, its labels, and for timers how to observe."""

    name: str
    labels: tuple[tuple[str, str], ...]
    observer_type: str
    buckets: tuple[float, ...]
    scale: float
    help: str


@dataclass(frozen=True, slots=True)
class _Rule:
    pattern: re.Pattern[str]
    kind: str | None
    drop: bool
    name: str
    labels: tuple[tuple[str, str], ...]
    observer_type: str
    buckets: tuple[float, ...]
    scale: float
    help: str


def _glob(pattern: str) -> re.Pattern[str]:
    return re.compile("".join("([^.]*)" if c == "*" else re.escape(c) for c in pattern))


def _expand(template: str, match: re.Match[str]) -> str:
    def group(ref: re.Match[str]) -> str:
        index = int(ref.group(1) or ref.group(2))
        return (match.group(index) or "") if index <= (match.re.groups or 0) else ""

    return _GROUP.sub(group, template)


def _buckets(where: str, entry: Mapping[str, Any], default: tuple[float, ...]) -> tuple[float, ...]:
    options = entry.get("histogram_options")
    raw = options.get("buckets") if isinstance(options, Mapping) else entry.get("buckets")
    if raw is None:
        return default
    if (
        not isinstance(raw, list)
        or not raw
        or not all(isinstance(b, (int, float)) and not isinstance(b, bool) for b in raw)
    ):
        raise MappingError(f"{where}: buckets must be a non-empty list of numbers")
    return tuple(sorted(float(b) for b in raw))


def _choice(
    where: str, entry: Mapping[str, Any], keys: Sequence[str], allowed: Sequence[str], default: str
) -> str:
    for key in keys:
        if key in entry:
            value = entry[key]
            if value not in allowed:
                raise MappingError(
                    f"{where}: {key} must be one of {', '.join(allowed)}, got {value!r}"
                )
            return str(value)
    return default


class Mapper:
    """Stat names to :class:`MappedMetric` by a list of mappings."""

    def __init__(
        self,
        rules: Sequence[_Rule],
        observer_type: str = "summary",
        buckets: tuple[float, ...] = DEFAULT_BUCKETS,
    ) -> None:
        self._rules = tuple(rules)
        self._observer_type = observer_type
        self._buckets = buckets
        self._cache: dict[tuple[str, str], MappedMetric | None] = {}

    @classmethod
    def from_yaml(cls, text: str, source: str = "mapping") -> Mapper:
        """Parse a mapping document; :class:`MappingError` names what is wrong."""
        try:
            document = yaml.safe_load(text)
        except yaml.YAMLError as error:
            raise MappingError(f"{source}: not valid YAML: {error}") from None
        if not isinstance(document, Mapping) or not isinstance(document.get("mappings", []), list):
            raise MappingError(f"{source}: expected a mapping with a 'mappings' list")
        unknown = set(document) - {"defaults", "mappings"}
        if unknown:
            raise MappingError(f"{source}: unknown key(s) {', '.join(sorted(map(str, unknown)))}")
        defaults = document.get("defaults") or {}
        if not isinstance(defaults, Mapping) or set(defaults) - _DEFAULTS_KEYS:
            raise MappingError(
                f"{source}: defaults must be a mapping of {', '.join(sorted(_DEFAULTS_KEYS))}"
            )
        where = f"{source}: defaults"
        default_match = _choice(where, defaults, ["match_type"], ("glob", "regex"), "glob")
        default_observer = _choice(
            where, defaults, ["observer_type", "timer_type"], _OBSERVER_TYPES, "summary"
        )
        default_buckets = _buckets(where, defaults, DEFAULT_BUCKETS)
        rules = [
            cls._rule(
                f"{source}: mapping {index + 1}",
                entry,
                default_match,
                default_observer,
                default_buckets,
            )
            for index, entry in enumerate(document.get("mappings") or [])
        ]
        return cls(rules, default_observer, default_buckets)

    @staticmethod
    def _rule(
        where: str,
        entry: object,
        default_match: str,
        default_observer: str,
        default_buckets: tuple[float, ...],
    ) -> _Rule:
        if not isinstance(entry, Mapping):
            raise MappingError(f"{where}: expected a mapping")
        unknown = set(entry) - _MAPPING_KEYS
        if unknown:
            raise MappingError(
                f"{where}: unknown key(s) {', '.join(sorted(map(str, unknown)))}; "
                f"supported: {', '.join(sorted(_MAPPING_KEYS))}"
            )
        match = entry.get("match")
        if not isinstance(match, str) or not match:
            raise MappingError(f"{where}: 'match' must be a non-empty string")
        match_type = _choice(where, entry, ["match_type"], ("glob", "regex"), default_match)
        try:
            pattern = _glob(match) if match_type == "glob" else re.compile(match)
        except re.error as error:
            raise MappingError(f"{where}: invalid regex {match!r}: {error}") from None
        action = _choice(where, entry, ["action"], ("map", "drop"), "map")
        name = entry.get("name", "")
        if action == "map" and (not isinstance(name, str) or not name):
            raise MappingError(f"{where}: 'name' must be a non-empty string")
        labels = entry.get("labels") or {}
        if not isinstance(labels, Mapping):
            raise MappingError(f"{where}: 'labels' must be a mapping of label names to values")
        for label in labels:
            if not isinstance(label, str) or not _LABEL_NAME.fullmatch(label):
                raise MappingError(f"{where}: {label!r} is not a valid label name")
        kind = entry.get("match_metric_type")
        if kind is not None and kind not in _KINDS:
            raise MappingError(f"{where}: match_metric_type must be counter, gauge or observer")
        scale = entry.get("scale", 1.0)
        if isinstance(scale, bool) or not isinstance(scale, (int, float)):
            raise MappingError(f"{where}: scale must be a number")
        help_text = entry.get("help", "Metric autogenerated by statsd_exporter.")
        return _Rule(
            pattern=pattern,
            kind=_KINDS[kind] if kind is not None else None,
            drop=action == "drop",
            name=str(name),
            labels=tuple((str(k), str(v)) for k, v in labels.items()),
            observer_type=_choice(
                where, entry, ["observer_type", "timer_type"], _OBSERVER_TYPES, default_observer
            ),
            buckets=_buckets(where, entry, default_buckets),
            scale=float(scale),
            help=str(help_text),
        )

    @classmethod
    def from_file(cls, path: str) -> Mapper:
        try:
            text = Path(path).read_text(encoding="utf-8")
        except OSError as error:
            raise MappingError(
                f"PULLMETRICS_MAPPER_YAML={path!r} cannot be read: {error}"
            ) from None
        return cls.from_yaml(text, f"PULLMETRICS_MAPPER_YAML={path!r}")

    @classmethod
    def default(cls, response_time_as_milliseconds: bool = False) -> Mapper:
        """The upstream's mapping; response times are observed in seconds unless
        ``response_time_as_milliseconds`` (PULLMETRICS_RESPONSE_TIME_AS_MILLISECONDS)."""
        text = _default_mapper_yaml(response_time_scale=not response_time_as_milliseconds)
        return cls.from_yaml(text, "default mapping")

    def map(self, name: str, kind: str) -> MappedMetric | None:
        """The metric stat ``name`` of ``kind`` (counter, gauge, observer) becomes; None if a
        drop mapping matches."""
        key = (name, kind)
        if key in self._cache:
            return self._cache[key]
        result = self._map(name, kind)
        self._cache[key] = result
        return result

    def _map(self, name: str, kind: str) -> MappedMetric | None:
        for rule in self._rules:
            if rule.kind is not None and rule.kind != kind:
                continue
            match = rule.pattern.fullmatch(name)
            if match is None:
                continue
            if rule.drop:
                return None
            labels = tuple((label, _expand(value, match)) for label, value in rule.labels)
            return MappedMetric(
                name=escape_metric_name(_expand(rule.name, match)),
                labels=labels,
                observer_type=rule.observer_type,
                buckets=rule.buckets,
                scale=rule.scale,
                help=rule.help,
            )
        return MappedMetric(
            name=escape_metric_name(name),
            labels=(),
            observer_type=self._observer_type,
            buckets=self._buckets,
            scale=1.0,
            help="Metric autogenerated by statsd_exporter.",
        )
