"""One rate limit decision: validate the request, find each descriptor's limit, count, and
assemble the response (replaces, unlimited, quota and shadow modes, headers, metadata)."""

from __future__ import annotations

import logging
from collections.abc import Mapping, MutableMapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from google.protobuf import struct_pb2, text_format

from generated.proto.envoy.config.core.v3 import base_pb2
from generated.proto.envoy.extensions.common.ratelimit.v3 import ratelimit_pb2
from generated.proto.envoy.service.ratelimit.v3 import rls_pb2
from handlers.ratelimit.backends.base import BackendError, LimitCheck
from handlers.ratelimit.config.model import MAX_UINT32, DomainRules, RuleSet, Unit
from handlers.ratelimit.limiter import (
    OK,
    OVER_LIMIT,
    Code,
    Limiter,
    LimitReading,
    response_message,
)
from handlers.ratelimit.matching import Entries, MatchedLimit, find_limit, override_limit
from handlers.ratelimit.memo import remember
from handlers.ratelimit.settings import Modes
from handlers.ratelimit.stats import Counter, ServiceStats

log = logging.getLogger("ratelimit.service")

RateLimitRequest = rls_pb2.RateLimitRequest
RateLimitResponse = rls_pb2.RateLimitResponse


MAX_DOMAIN_LENGTH = 1024
MAX_DESCRIPTORS = 1024
MAX_ENTRIES = 64
MAX_KEY_LENGTH = 1024
MAX_VALUE_LENGTH = 16384


_OVERRIDE_UNITS = frozenset(range(1, 7))  # envoy.type.v3.RateLimitUnit SECOND..YEAR
_MATCH_CACHE_SIZE = 65536  # distinct (domain, entries) remembered per set of rules
_PLAN_CACHE_SIZE = 16384  # distinct requests remembered per set of rules
_UNSEEN = object()
# makes a Decision without calling its constructor (a NamedTuple's is a Python function)
_new_tuple = tuple.__new__


@dataclass(frozen=True, slots=True)
class _RequestPlan:
    """What a valid request decides to under one set of rules, short of counting."""

    limits: tuple[MatchedLimit | None, ...]
    """Per descriptor: the limit to count, or None (no rule, unknown domain, replaced,
    unlimited)."""
    stems: tuple[str, ...]
    """Per descriptor: its counter key without the window ("" where no limit is counted)."""
    hits: tuple[int, ...]
    unlimited: tuple[int, ...]
    """The descriptors answered as unlimited."""
    quota: tuple[bool, ...] | None
    """Per descriptor: whether it counts in quota mode; None when none does."""
    domain_not_found: Counter | None
    """The unknown domain's counter, counted once per descriptor every time."""
    checks: tuple[LimitCheck, ...] | None
    """What the store decides for issue 23's limits (:meth:`Limiter.checks`); None when the
    request has none."""


class Decision(NamedTuple):
    """A decision: what its response is made of, and the response message where one was
    asked for or where it holds more than an overall code and statuses."""

    overall_code: Code
    codes: list[Code]
    """Per status: its code."""
    remaining: list[int]
    """Per status: its ``limit_remaining``."""
    limits: tuple[MatchedLimit | None, ...]
    """Per status: the limit it was counted under (its ``current_limit`` and the seconds
    until reset), or None (a status without either)."""
    now: int
    """The time counted at, in whole seconds."""
    response: RateLimitResponse | None
    """The response message; None only when it was not asked for and would hold nothing
    but the overall code and the statuses (no headers, no dynamic metadata)."""
    resets: dict[int, int] | None
    """Per status of issue 23's limits, by index: its seconds until reset (the limit's
    window does not say it); None when the request has none."""


class ServiceError(Exception):
    """The request cannot be decided (empty domain, no descriptors, no configuration, a bad
    override). The message is the upstream's; gRPC answers UNKNOWN with it."""


class RateLimitService:
    """Decides requests against the current rules; rules and modes are swapped atomically
    by :meth:`set_rules` when a configuration loads."""

    def __init__(self, limiter: Limiter, stats: ServiceStats, modes: Modes | None = None) -> None:
        self.limiter = limiter
        self.stats = stats
        self.modes = modes if modes is not None else Modes()
        self.rules: RuleSet | None = None
        # a request's bytes -> its plan, (domain, entries) -> the rule that applies; both
        # valid for one set of rules
        self._plans: dict[bytes, _RequestPlan] = {}
        self._matches: dict[tuple[str, Entries], MatchedLimit | None] = {}
        self._headers_enabled = self.modes.response_headers_enabled

    def set_rules(self, rules: RuleSet, modes: Modes | None = None) -> None:
        """Serve ``rules`` from now on (with ``modes`` re-read at load, as upstream)."""
        if modes is not None:
            self.modes = modes
            # as upstream: once enabled at a load, headers stay on
            self._headers_enabled = self._headers_enabled or modes.response_headers_enabled
        self._plans = {}
        self._matches = {}
        self.rules = rules

    async def should_rate_limit(self, request: rls_pb2.RateLimitRequest) -> RateLimitResponse:
        """The decision for ``request``; raises :class:`ServiceError` or
        :class:`~handlers.ratelimit.backends.BackendError` (each counted)."""
        response = (await self.decide(request)).response
        assert response is not None
        return response

    async def decide(
        self,
        request: rls_pb2.RateLimitRequest,
        *,
        message: bool = True,
        serialized: bytes | None = None,
    ) -> Decision:
        """:meth:`should_rate_limit` with what its response was made from; ``message=False``
        leaves the response message unmade where the rest tells all of it. ``serialized`` is
        the request in the protobuf encoding where the caller has it already (the bytes it was
        parsed from, or its serialization kept with it): the request's plan is remembered by
        those bytes, and without them the request is serialized again."""
        # a request's plan depends on its bytes alone (and the rules, which reset the plans);
        # any bytes that parse to the request will do, as no two requests parse from the same
        raw = request.SerializeToString() if serialized is None else serialized
        plans = self._plans
        plan = plans.get(raw)
        if plan is None:
            try:
                plan = remember(plans, raw, self._plan(request, len(raw)), _PLAN_CACHE_SIZE)
            except ServiceError:
                self.stats.service_error.add()
                raise
        if plan.domain_not_found is not None:
            plan.domain_not_found.value += len(plan.limits)

        try:
            codes, remaining, now, reported = await self.limiter.count(
                plan.stems, plan.limits, plan.hits, plan.checks
            )
        except BackendError:
            self.stats.redis_error.add()
            raise
        for i in plan.unlimited:
            remaining[i] = MAX_UINT32
        quota = plan.quota
        if quota is None:
            over = OVER_LIMIT in codes
        else:
            over = False
            quota_count = quota_over = 0
            for in_quota, code in zip(quota, codes, strict=True):
                if in_quota:
                    quota_count += 1
                    quota_over += code == OVER_LIMIT
                elif code == OVER_LIMIT:
                    over = True
            if quota_count and quota_over == quota_count:
                over = True

        modes = self.modes
        overall = OVER_LIMIT if over else OK
        if over and modes.shadow_mode:
            overall = OK
            self.stats.global_shadow_mode.add()
        response = None
        headers, metadata = self._headers_enabled, modes.response_dynamic_metadata
        limits = plan.limits
        resets: dict[int, int] | None = None
        if reported is not None:
            # issue 23's limits: each status reports its deciding limit and its own duration
            shown = list(limits)
            resets = {}
            for i, (limit, seconds) in reported.items():
                shown[i] = limit
                resets[i] = seconds
            limits = tuple(shown)
        if message or headers or metadata:
            response = response_message(overall, codes, remaining, limits, now, resets)
            if headers:
                self._add_headers(response, limits, modes)
            if metadata:
                _add_dynamic_metadata(response, request, limits)
        return _new_tuple(Decision, (overall, codes, remaining, limits, now, response, resets))

    async def read_counters(
        self, request: rls_pb2.RateLimitRequest
    ) -> list[tuple[str, tuple[LimitReading, ...]]]:
        """Per descriptor of ``request``: ``limited``, ``unlimited`` or ``no_limit``, and the
        state of the limits that decide it (the counters API), read without counting; raises
        as :meth:`decide` (a request :meth:`decide` refuses is refused here too)."""
        try:
            plan = self._plan(request, request.ByteSize())
        except ServiceError:
            self.stats.service_error.add()
            raise
        try:
            readings = await self.limiter.read(plan.stems, plan.limits)
        except BackendError:
            self.stats.redis_error.add()
            raise
        unlimited = set(plan.unlimited)
        return [
            ("unlimited" if i in unlimited else "limited" if found else "no_limit", found)
            for i, found in enumerate(readings)
        ]

    def _plan(self, request: rls_pb2.RateLimitRequest, size: int) -> _RequestPlan:
        """Validate ``request`` (raising :class:`ServiceError`, so a bad request is never
        remembered) and work out what it decides to, short of counting."""
        domain = request.domain
        if not domain:
            raise ServiceError("rate limit domain must not be empty")
        descriptors = request.descriptors
        if not descriptors:
            raise ServiceError("rate limit descriptor list must not be empty")
        rules = self.rules
        if rules is None:
            raise ServiceError("no rate limit configuration loaded")
        if len(domain) > MAX_DOMAIN_LENGTH or len(descriptors) > MAX_DESCRIPTORS:
            _check_bounds(request)
        # no string in a message this small can pass a bound (entry counts are checked below)
        check_strings = size > MAX_KEY_LENGTH
        stats = self.stats
        domain_rules = rules.domains.get(domain)
        default_hits = request.hits_addend or 1

        matched: list[MatchedLimit | None] = []
        hits: list[int] = []
        entries_list: list[Entries] = []
        for descriptor in descriptors:
            entries, override, addend = _read_descriptor(descriptor, check_strings)
            entries_list.append(entries)
            hits.append(default_hits if addend is None else addend)
            if domain_rules is None:
                matched.append(None)
            elif override is not None:
                matched.append(
                    override_limit(
                        domain, entries, override.requests_per_unit, Unit(override.unit), stats
                    )
                )
            else:
                matched.append(self._find_limit(domain_rules, entries))

        limits, unlimited = _limits_to_check(matched)
        key_stem = self.limiter.key_stem
        stems = tuple(
            "" if limit is None else key_stem(domain, entries, limit)
            for limit, entries in zip(limits, entries_list, strict=True)
        )
        quota_mode = self.modes.quota_mode
        quota = tuple(
            not unlimited[i] and (quota_mode or (limit is not None and limit.quota_mode))
            for i, limit in enumerate(limits)
        )
        limits_tuple, hits_tuple = tuple(limits), tuple(hits)
        advanced = any(limit is not None and limit.advanced for limit in limits_tuple)
        return _RequestPlan(
            limits=limits_tuple,
            stems=stems,
            hits=hits_tuple,
            unlimited=tuple(i for i, flag in enumerate(unlimited) if flag),
            quota=quota if any(quota) else None,
            domain_not_found=stats.domain_not_found(domain) if domain_rules is None else None,
            checks=Limiter.checks(stems, limits_tuple, hits_tuple) if advanced else None,
        )

    def _find_limit(self, domain_rules: DomainRules, entries: Entries) -> MatchedLimit | None:
        cache = self._matches
        key = (domain_rules.domain, entries)
        found = cache.get(key, _UNSEEN)
        if found is _UNSEEN:
            found = remember(
                cache, key, find_limit(domain_rules, entries, self.stats), _MATCH_CACHE_SIZE
            )
        return found  # type: ignore[return-value]

    def _add_headers(
        self, response: RateLimitResponse, limits: Sequence[MatchedLimit | None], modes: Modes
    ) -> None:
        picked: rls_pb2.RateLimitResponse.DescriptorStatus | None = None
        for status in response.statuses:
            if status.HasField("current_limit") and (
                picked is None or status.limit_remaining < picked.limit_remaining
            ):
                picked = status
        for i, status in enumerate(response.statuses):
            limit = limits[i]
            quota = modes.quota_mode or (limit is not None and limit.quota_mode)
            if status.code == OVER_LIMIT and not quota:
                picked = status
        if picked is None:
            return
        # every status with a current_limit has its duration until reset (limiter.py)
        reset = picked.duration_until_reset.seconds
        response.response_headers_to_add.extend(
            (
                base_pb2.HeaderValue(
                    key=modes.limit_header, value=str(picked.current_limit.requests_per_unit)
                ),
                base_pb2.HeaderValue(
                    key=modes.remaining_header,
                    value="0" if picked.code == OVER_LIMIT else str(picked.limit_remaining),
                ),
                base_pb2.HeaderValue(key=modes.reset_header, value=str(reset)),
            )
        )


def _read_descriptor(
    descriptor: ratelimit_pb2.RateLimitDescriptor, check_strings: bool
) -> tuple[Entries, ratelimit_pb2.RateLimitDescriptor.RateLimitOverride | None, int | None]:
    """A descriptor's entries, limit override and own hits_addend, each validated."""
    entries = tuple([(e.key, e.value) for e in descriptor.entries])
    if len(entries) > MAX_ENTRIES or check_strings:
        _check_entries(entries)
    addend: int | None = None
    if descriptor.HasField("hits_addend"):
        addend = descriptor.hits_addend.value
        if addend > MAX_UINT32:
            raise ServiceError(f"rate limit hits_addend must not exceed {MAX_UINT32}")
    if not descriptor.HasField("limit"):
        return entries, None, addend
    override = descriptor.limit
    if override.unit not in _OVERRIDE_UNITS:
        raise ServiceError("rate limit override must name a unit from SECOND to YEAR")
    return entries, override, addend


def _check_bounds(request: rls_pb2.RateLimitRequest) -> None:
    """Bounds far above real traffic (the upstream has none), so no request is unbounded."""
    if len(request.domain) > MAX_DOMAIN_LENGTH:
        raise ServiceError(f"rate limit domain must not be longer than {MAX_DOMAIN_LENGTH}")
    if len(request.descriptors) > MAX_DESCRIPTORS:
        raise ServiceError(f"rate limit descriptor list must not exceed {MAX_DESCRIPTORS}")


def _check_entries(entries: Entries) -> None:
    if len(entries) > MAX_ENTRIES:
        raise ServiceError(f"rate limit descriptor must not exceed {MAX_ENTRIES} entries")
    for key, value in entries:
        if len(key) > MAX_KEY_LENGTH or len(value) > MAX_VALUE_LENGTH:
            raise ServiceError(
                f"rate limit descriptor entries must have keys of at most "
                f"{MAX_KEY_LENGTH} and values of at most {MAX_VALUE_LENGTH} characters"
            )


def _limits_to_check(
    matched: list[MatchedLimit | None],
) -> tuple[list[MatchedLimit | None], list[bool]]:
    """Drop the limits another matched limit ``replaces``, and the unlimited ones (which are
    answered without the cache)."""
    replaced = {name for limit in matched if limit is not None for name in limit.replaces}
    to_check: list[MatchedLimit | None] = []
    unlimited: list[bool] = []
    for limit in matched:
        if limit is None or (limit.names and not replaced.isdisjoint(limit.names)):
            to_check.append(None)
            unlimited.append(False)
        elif limit.unlimited:
            to_check.append(None)
            unlimited.append(True)
        else:
            to_check.append(limit)
            unlimited.append(False)
    return to_check, unlimited


def _add_dynamic_metadata(
    response: RateLimitResponse,
    request: rls_pb2.RateLimitRequest,
    checked: Sequence[MatchedLimit | None],
) -> None:
    descriptors: list[dict[str, Any]] = []
    for descriptor in request.descriptors:
        item: dict[str, Any] = {"entries": [f"{e.key}={e.value}" for e in descriptor.entries]}
        if descriptor.HasField("limit"):
            item["limit"] = text_format.MessageToString(descriptor.limit, as_one_line=True)
        if descriptor.HasField("hits_addend"):
            item["hitsAddend"] = descriptor.hits_addend.value
        descriptors.append(item)
    document: dict[str, Any] = {"domain": request.domain, "descriptors": descriptors}
    if request.hits_addend:
        document["hitsAddend"] = request.hits_addend
    merged: dict[str, Any] = {}
    for i, status in enumerate(response.statuses):
        limit = checked[i]  # None for unlimited, replaced and unmatched descriptors
        if limit is not None and limit.metadata and status.code != OVER_LIMIT:
            _merge_first_wins(merged, limit.metadata)
    if merged:
        document["metadata"] = merged
    metadata = struct_pb2.Struct()
    metadata.update(document)
    response.dynamic_metadata.CopyFrom(metadata)


def _merge_first_wins(target: MutableMapping[str, Any], source: Mapping[str, Any]) -> None:
    for key, value in source.items():
        if key not in target:
            target[key] = dict(value) if isinstance(value, Mapping) else value
        elif isinstance(target[key], MutableMapping) and isinstance(value, Mapping):
            _merge_first_wins(target[key], value)
