"""The decision math of the rate limit algorithms: pure functions over explicit state and clock.

Nothing here does I/O, reads a clock or keeps state between calls: each decision takes the
stored state of one counter key (``None`` when the key is missing or expired), the time, the
limit and the hits of one request, and returns what to store, for how long, and the status to
answer. The same steps are meant to be written once more as a Redis Lua script (one key, one
atomic ``EVALSHA``) and to run as they are in the memory backend; the module documentation of
each function says how.

Time is an integer count of **milliseconds** (Unix epoch in production, any origin in tests):

* Redis takes key lifetimes in milliseconds (``SET ... PX``, ``PEXPIRE``), and its ``TIME``
  (seconds, microseconds) turns into milliseconds without rounding surprises;
* Lua in Redis computes with doubles, exact for integers below 2**53: an epoch in
  milliseconds is about 2**41 and leaves room for the products the decisions compare, where
  microseconds (about 2**51) would leave almost none;
* nothing needs a finer tick: windows are at least :data:`MIN_WINDOW_MS` long and the token
  bucket's emission interval is kept as an exact fraction of a millisecond (below), so a rate
  of a million per second is still exact.

Every decision returns a :class:`Decision`; three meanings are shared by all algorithms:

``limit_remaining``
    the most hits a request could carry *right now*, after this decision's hits are counted,
    and be admitted (0 when even one hit would be over). Upstream's fixed window answers
    ``limit - counter`` (0 once over), which is the same thing.
``duration_until_reset_ms``
    when the request was over the limit (and could ever fit: its hits are at most the limit,
    or the burst), how long until *the same request* would be admitted if nothing else is
    counted meanwhile: a retry-after. Otherwise how long until the allowance is whole again
    (``limit_remaining`` back to the limit, or the burst) if nothing else is counted. For the
    fixed window both are the time to the window's end: upstream's ``D - now % D``.
``ttl_ms``
    how long the backend must keep ``state``; after that the state decides exactly like a
    missing key, so the key may expire. A backend may keep it longer (upstream's ``EXPIRE D +
    jitter`` does); ``0`` (with ``state`` ``None``) means there is nothing to keep.

Limits are upstream's ``requests_per_unit`` (uint32; 0 refuses every request with hits);
hits are a descriptor's ``hits_addend`` (uint64; 0 checks without counting).

The bounds checked by :func:`check_fixed_window`, :func:`check_sliding_window` and
:func:`check_token_bucket` keep every integer a decision computes below 2**53, so a Lua script
doing the same steps in doubles gets the same answers; the decision functions check them too.
In Lua, ``a // b`` (and ``%``, ``ceil``) of such integers is ``math.floor(a / b)`` corrected by
one where the rounded division crossed an integer (``q * b > a``: ``q - 1``; ``(q + 1) * b <=
a``: ``q + 1``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from math import gcd
from typing import Generic, NamedTuple, Protocol, TypeVar

MAX_UINT32 = 4294967295
"""Largest ``requests_per_unit``, burst and ``limit_remaining`` (uint32 on the wire)."""

MAX_EXACT = 1 << 53
"""Integers below this are exact in a double (Lua numbers in Redis)."""

MIN_WINDOW_MS = 100
"""Shortest window: below this the service's own latency and the clocks of its replicas are
coarser than the window. Finer rates are a longer window with a larger limit, or a token
bucket, whose emission interval may be any fraction of a millisecond."""

UNIT_MS: dict[str, int] = {
    "second": 1_000,
    "minute": 60_000,
    "hour": 3_600_000,
    "day": 86_400_000,
    "week": 604_800_000,
    "month": 2_592_000_000,  # 30 days, as upstream
    "year": 31_536_000_000,  # 365 days, as upstream
}
"""Upstream's units in milliseconds (``config.model.Unit.divider`` * 1000)."""

MAX_WINDOW_MS = UNIT_MS["year"]
"""Longest window: upstream's longest unit, ``year`` (365 days)."""

S = TypeVar("S")


class Decision(NamedTuple, Generic[S]):
    """What one decision gives (see the module documentation for the meanings)."""

    state: S | None
    """What to store under the key (``None``: nothing, delete or let it expire)."""
    over_limit: bool
    limit_remaining: int
    duration_until_reset_ms: int
    ttl_ms: int


def _ceil_div(numerator: int, denominator: int) -> int:
    return -(-numerator // denominator)


_CHECKED_RULES = 4096
"""How many (limit, window[, burst]) a check remembers as valid. The decision functions check
their arguments on every call (they are public), but the arguments are a rule's, of which a
service has a bounded few: a remembered check costs a lookup, not the arithmetic."""


@lru_cache(maxsize=_CHECKED_RULES)
def _check_limit_window(limit: int, window_ms: int) -> None:
    if not 0 <= limit <= MAX_UINT32:
        raise ValueError(f"rate limit {limit} is out of range: 0 to {MAX_UINT32}")
    if not MIN_WINDOW_MS <= window_ms <= MAX_WINDOW_MS:
        raise ValueError(
            f"rate limit window {window_ms} ms is out of range: "
            f"{MIN_WINDOW_MS} ms to {MAX_WINDOW_MS} ms (365 days)"
        )


def window_start(now_ms: int, window_ms: int) -> int:
    """Start of the window holding ``now_ms``: windows start at epoch multiples of their
    length, as upstream's (a 7-day window starts on Thursdays 00:00 UTC). For a whole number
    of seconds, ``window_start(...) // 1000`` is upstream's cache key suffix."""
    return now_ms - now_ms % window_ms


# --- fixed window ------------------------------------------------------------------------------


class FixedWindowState(NamedTuple):
    """The counter of one window: hits counted since ``window_start_ms``."""

    window_start_ms: int
    counted: int


def check_fixed_window(limit: int, window_ms: int) -> None:
    """Raises ``ValueError`` unless ``limit`` per ``window_ms`` is a valid fixed window."""
    _check_limit_window(limit, window_ms)


def fixed_window(
    state: FixedWindowState | None, now_ms: int, limit: int, window_ms: int, hits: int
) -> Decision[FixedWindowState]:
    """Upstream's fixed window, for any window length: one counter per window, windows at
    epoch multiples of ``window_ms``.

    The hits are counted whatever the outcome, as upstream (``INCRBY``): the request is over
    the limit when the counter *after* it passes ``limit``, so a request that does not fit
    still uses up the window, and a 0-hit request on an exhausted window is over.

    ``limit_remaining``: ``limit - count`` after counting, 0 once over.
    ``duration_until_reset_ms``: the time to the window's end, 1 to ``window_ms`` (when the
    counter starts again from 0); ``ceil(ms / 1000)`` is upstream's whole seconds.
    ``ttl_ms``: the time to the window's end.

    A ``state`` of a later window than ``now_ms`` (a clock behind another replica's) is counted
    as if ``now_ms`` were that window's start.

    Redis: what the service does today: the key is ``stem + str(window_start // 1000)`` (a
    whole-second window: byte-identical to upstream) or ``stem + str(window_start)`` in
    milliseconds otherwise, and the step is ``INCRBY key hits`` + ``EXPIRE``; no script.
    Over ``MAX_WINDOW_MS`` the window's start stays far below 2**53.
    """
    _check_limit_window(limit, window_ms)
    start = now_ms - now_ms % window_ms
    count = 0
    if state is not None and state.window_start_ms >= start:
        if state.window_start_ms > start:
            start = now_ms = state.window_start_ms
        count = state.counted
    count += hits
    left = start + window_ms - now_ms
    return Decision(
        FixedWindowState(start, count),
        count > limit,
        limit - count if count <= limit else 0,
        left,
        left,
    )


# --- sliding window ----------------------------------------------------------------------------


class SlidingWindowState(NamedTuple):
    """The hits admitted in the window starting at ``window_start_ms`` and in the one before."""

    window_start_ms: int
    current: int
    previous: int


@lru_cache(maxsize=_CHECKED_RULES)
def check_sliding_window(limit: int, window_ms: int) -> None:
    """Raises ``ValueError`` unless ``limit`` per ``window_ms`` is a valid sliding window:
    besides the common bounds, ``limit * window_ms`` must stay below 2**53 (the products the
    decision compares)."""
    _check_limit_window(limit, window_ms)
    if limit * window_ms >= MAX_EXACT:
        raise ValueError(
            f"sliding window: {limit} per {window_ms} ms is too large "
            f"(limit * window in ms must be below 2^53); use a shorter window or a fixed window"
        )


def _roll(
    state: SlidingWindowState | None, now_ms: int, window_ms: int
) -> tuple[int, int, int, int]:
    """``(now_ms, window_start, current, previous)`` at ``now_ms`` (``now_ms`` moved up to the
    state's window start when the state is of a later window)."""
    start = now_ms - now_ms % window_ms
    if state is None:
        return now_ms, start, 0, 0
    stored = state.window_start_ms
    if stored >= start:
        if stored > start:
            now_ms = start = stored
        return now_ms, start, state.current, state.previous
    if stored == start - window_ms:
        return now_ms, start, 0, state.current
    return now_ms, start, 0, 0


def sliding_window(
    state: SlidingWindowState | None, now_ms: int, limit: int, window_ms: int, hits: int
) -> Decision[SlidingWindowState]:
    """The two-window weighted counter (Cloudflare's sliding window).

    Windows are the fixed ones (epoch multiples of ``W = window_ms``). At elapsed time ``e``
    into window ``k`` (``0 <= e < W``), with ``c`` hits admitted so far in window ``k`` and
    ``p`` in window ``k-1``, the hits of the last ``W`` ms are estimated as if window
    ``k-1``'s had been spread evenly over it::

        E = p * (W - e) / W + c

    and a request of ``n`` hits is admitted when ``E + n <= L``, compared exactly in integers
    as ``p * (W - e) <= (L - c - n) * W`` (after checking ``c + n <= L``). Only admitted hits
    are counted (all or nothing): a request that does not fit changes nothing. Counting refused
    hits as upstream's fixed window does would carry them into the next window's estimate and
    keep a client that keeps retrying locked out for up to a window after it stops.

    Accuracy, against an exact sliding log fed the same admitted hits (``A(t)``: hits admitted
    in the ``W`` ms ending at ``t``, ``(t - W, t]``; ``tail``: those of window ``k-1`` among
    them):

    * the estimate is off by what the even-spread assumption misplaces, never more than
      window ``k-1``'s hits: ``E - A(t) = p * (W - e) / W - tail``, so
      ``-p * e / W <= E - A(t) <= p * (W - e) / W`` (``|E - A(t)| <= p <= L``);
    * over-admission: any interval of at most ``W`` ms that ends ``e`` ms into a window
      (it reaches ``e + 1`` ms into it) holds at most ``L + floor(p * e / W)`` admitted hits,
      and at most ``L`` when it lies within one window; so a ``W``-long interval holds at most
      ``L + floor(L * (W - 2) / W)`` (``< 2L``), reached only when window ``k-1``'s hits all
      came in its last millisecond, where an exact log admits ``L``. The bound is tight.
      Around a boundary the excess grows with the time spent in the new window: ``floor(p * e
      / W)``; the fixed window's ``2L`` within two milliseconds of a boundary cannot happen
      (``e = 0``: at most ``L``);
    * under-admission: a request an exact log would admit (``A(t) + n <= L``) is refused only
      when the estimate over-counts, ``E - A(t) > L - A(t) - n``; the over-count is at most
      ``p * (W - e) / W``, window ``k-1``'s hits it still counts though they were in its
      first part. The error comes only from how unevenly window ``k-1``'s hits were spread.

    ``limit_remaining``: ``L - c - ceil(p * (W - e) / W)`` after counting, at least 0.
    ``duration_until_reset_ms``: refused (and ``n <= L``): the time until ``E + n <= L`` with
    nothing else counted, within this window or the next ones; otherwise the time until
    ``E = 0``: the end of the next window when ``c > 0``, of this window when only ``p > 0``,
    else 0.
    ``ttl_ms``: the same time until ``E = 0`` (0: nothing to store).
    A ``state`` of a later window than ``now_ms`` is counted as if ``now_ms`` were that
    window's start.

    Cost: one key read and, when admitted, written (the state is one value); no write when
    refused, since moving the state to the current window (a pure function of the stored state
    and the time) is done again by the next decision. Redis: ``GET key``; the rolled values
    and the comparison above; when admitted ``SET key "start:current:previous" PX ttl`` (or
    ``DEL`` at ttl 0). Counts entering a product are capped at ``L`` (they exceed it only after
    the limit was lowered), which with :func:`check_sliding_window` keeps every product below
    2**53.
    """
    check_sliding_window(limit, window_ms)
    now_ms, start, current, previous = _roll(state, now_ms, window_ms)
    elapsed = now_ms - start
    weight = window_ms - elapsed  # 1..W
    weighed = min(previous, limit)
    room = limit - current - hits
    admitted = room >= 0 and weighed * weight <= room * window_ms
    if admitted:
        current += hits
    remaining = limit - current - _ceil_div(weighed * weight, window_ms)

    if current > 0:
        full = weight + window_ms
    elif previous > 0:
        full = weight
    else:
        full = 0
    duration = full
    if not admitted and hits <= limit:
        duration = _sliding_retry(weighed, current, elapsed, limit, window_ms, hits)
    new_state = SlidingWindowState(start, current, previous) if full else None
    return Decision(new_state, not admitted, max(remaining, 0), duration, full)


def _sliding_retry(
    previous: int, current: int, elapsed: int, limit: int, window_ms: int, hits: int
) -> int:
    """The time until ``hits`` (at most ``limit``) fit with nothing else counted; ``previous``
    is already capped at ``limit``."""
    weight = window_ms - elapsed
    room = limit - current - hits
    if room >= 0 and previous > 0:
        # this window: previous * (W - at) <= room * W
        at = window_ms - room * window_ms // previous
        if at < window_ms:
            return at - elapsed
    # the next window: current * (W - at) <= (limit - hits) * W
    current = min(current, limit)
    if current == 0:
        return weight
    at = max(0, window_ms - (limit - hits) * window_ms // current)
    return weight + at  # at == W: the start of the window after next, where nothing weighs


# --- token bucket (GCRA) -----------------------------------------------------------------------


class GcraState(NamedTuple):
    """The theoretical arrival time ``TAT = tat_ms + tat_frac / den`` of the token bucket, with
    ``den = limit / gcd(limit, window_ms)`` (see :func:`emission_interval`)."""

    tat_ms: int
    tat_frac: int


@lru_cache(maxsize=_CHECKED_RULES)
def emission_interval(limit: int, window_ms: int) -> tuple[int, int]:
    """The emission interval ``T = window_ms / limit`` as ``(num, den)`` in lowest terms:
    ``T = num / den`` ms. ``limit`` must be positive."""
    divisor = gcd(window_ms, limit)
    return window_ms // divisor, limit // divisor


@lru_cache(maxsize=_CHECKED_RULES)
def check_token_bucket(limit: int, window_ms: int, burst: int) -> None:
    """Raises ``ValueError`` unless ``limit`` per ``window_ms`` with ``burst`` is a valid token
    bucket: besides the common bounds, ``1 <= burst <= 2**32 - 1`` and ``burst * num``
    (``num / den`` the emission interval in lowest terms) at most 2**52, the largest value the
    decision compares, in units of ``1 / den`` ms."""
    _check_limit_window(limit, window_ms)
    if not 1 <= burst <= MAX_UINT32:
        raise ValueError(f"token bucket: burst {burst} is out of range: 1 to {MAX_UINT32}")
    if limit and burst * emission_interval(limit, window_ms)[0] > MAX_EXACT >> 1:
        raise ValueError(
            f"token bucket: burst {burst} at {limit} per {window_ms} ms is too large "
            f"(burst * window / gcd(window, limit), in ms, must be at most 2^52)"
        )


def token_bucket(
    state: GcraState | None,
    now_ms: int,
    limit: int,
    window_ms: int,
    hits: int,
    burst: int,
) -> Decision[GcraState]:
    """A token bucket of ``burst`` tokens refilled at ``limit`` per ``window_ms``, as GCRA.

    The bucket is stored as one value, the theoretical arrival time ``TAT``: the bucket is
    full when ``TAT <= now``, and each hit moves ``TAT`` by the emission interval
    ``T = window_ms / limit``; tokens at ``now`` are ``burst - max(TAT - now, 0) / T``. A
    request of ``n`` hits is admitted when all ``n`` tokens are there (all or nothing)::

        max(TAT, now) + n * T - now <= burst * T     (then TAT = max(TAT, now) + n * T)

    and a refused request leaves ``TAT`` as it was (standard GCRA: refused requests cost
    nothing, so a client retrying too early is not pushed further back). A request of more
    than ``burst`` hits never fits. This is exactly a continuous token bucket that starts full.

    ``T`` is kept exact: ``T = num / den`` ms in lowest terms (:func:`emission_interval`) and
    ``TAT = tat_ms + tat_frac / den`` with ``0 <= tat_frac < den``, so every rate is exact and
    nothing drifts however many hits are counted. The comparison is done in units of
    ``1 / den`` ms: ``debt + n * num <= burst * num`` with ``debt = (max(TAT, now) - now) *
    den``. A ``tat_frac`` that does not fit ``den`` (the rule's limit or window changed) rounds
    ``TAT`` up to the next millisecond.

    ``limit`` 0 refuses every request with hits (upstream's meaning of 0), stores nothing and
    answers ``duration_until_reset_ms = window_ms``.

    ``limit_remaining``: whole tokens left after this decision, ``floor(burst - debt / T)``.
    ``duration_until_reset_ms``: refused (and ``n <= burst``): the time until the ``n`` tokens
    are there, ``ceil(max(TAT, now) + n * T - burst * T - now)`` (at least 1); otherwise the
    time until the bucket is full, ``ceil(TAT - now)`` (0 when it is full).
    ``ttl_ms``: the time until the bucket is full, ``ceil(TAT - now)``; a full bucket is a
    missing key, so 0 means nothing to store.

    Cost: one key read and, when admitted, written; no write when refused. Redis: ``GET key``
    (``"tat_ms:tat_frac"``), the comparison above with ``num``, ``den``, ``burst`` as script
    arguments and the time from the service or Redis ``TIME``, then when admitted
    ``SET key value PX ttl``. :func:`check_token_bucket` keeps every integer below 2**53:
    ``n > burst`` is refused before ``n * num`` is computed.
    """
    check_token_bucket(limit, window_ms, burst)
    if limit == 0:
        return Decision(None, hits > 0, 0, window_ms, 0)
    num, den = emission_interval(limit, window_ms)
    if state is None:
        base_ms, base_frac = now_ms, 0
    else:
        base_ms, base_frac = state
        if base_frac >= den:
            base_ms, base_frac = base_ms + 1, 0
        if base_ms < now_ms:
            base_ms, base_frac = now_ms, 0
    debt = (base_ms - now_ms) * den + base_frac  # TAT - now in 1/den ms, at least 0
    capacity = burst * num
    cost = hits * num if hits <= burst else 0
    admitted = hits <= burst and debt + cost <= capacity
    new_state = state
    if admitted:
        debt += cost
        carry, frac = divmod(base_frac + cost, den)
        new_state = GcraState(base_ms + carry, frac)
    full = _ceil_div(debt, den)
    duration = full
    if not admitted and hits <= burst:
        duration = _ceil_div(debt + cost - capacity, den)
    remaining = burst - _ceil_div(debt, num)
    return Decision(new_state if full else None, not admitted, max(remaining, 0), duration, full)


# --- several limits on one descriptor ----------------------------------------------------------


class Outcome(Protocol):
    """One limit's decision, as :func:`combine` reads it (a :class:`Decision` is one)."""

    @property
    def over_limit(self) -> bool: ...

    @property
    def limit_remaining(self) -> int: ...

    @property
    def duration_until_reset_ms(self) -> int: ...


class Combined(NamedTuple):
    """The status of a descriptor with several limits (see :func:`combine`)."""

    reported: int
    """The index of the limit whose status is reported: its ``current_limit`` and duration."""
    over_limit: bool
    """Some limit not in shadow mode is over."""
    shadow_over: bool
    """Some limit in shadow mode is over (it answers OK; its statistics say so)."""
    limit_remaining: int
    """The least ``limit_remaining`` of all limits: the most hits admitted right now."""
    duration_until_reset_ms: int
    """The reported limit's duration."""


def combine(outcomes: Sequence[Outcome], shadow: Sequence[bool] = ()) -> Combined:
    """One status for a descriptor whose limits (e.g. 10 per second and 10,000 per day) were
    each decided on the same request. Every limit counts the request by its own rule (a fixed
    window always; a sliding window or token bucket when it admits it) whether or not another
    limit refuses it, as upstream counts every descriptor of a request; the most restrictive
    decides:

    * the descriptor is over when any limit not in shadow mode is over (``shadow[i]`` true:
      counted, reported, never refuses; a missing entry is false);
    * reported (``reported``): when over, the over limit (shadow ones aside) with the longest
      ``duration_until_reset_ms``, the one a retry must wait for; otherwise the limit with the
      least ``limit_remaining``, then the longest duration (the slowest to recover). Remaining
      ties go to the first limit in configuration order;
    * ``limit_remaining`` is the least of all limits' (a request of more hits would be refused
      by one of them), ``duration_until_reset_ms`` the reported limit's.
    """
    if not outcomes:
        raise ValueError("combine needs at least one limit's outcome")
    # one pass (this runs for every request of such a descriptor): the longest-waiting
    # enforced over limit, and the least-remaining-then-longest one, first index on ties
    over_index = -1
    over_duration = -1
    least_index = 0
    least = outcomes[0]
    remaining = least.limit_remaining
    shadow_over = False
    shadows = len(shadow)
    for i, outcome in enumerate(outcomes):
        duration = outcome.duration_until_reset_ms
        if outcome.over_limit:
            if i < shadows and shadow[i]:
                shadow_over = True
            elif duration > over_duration:
                over_index, over_duration = i, duration
        left = outcome.limit_remaining
        if left < remaining:
            remaining = left
        if i and (
            left < least.limit_remaining
            or (left == least.limit_remaining and duration > least.duration_until_reset_ms)
        ):
            least_index, least = i, outcome
    if over_index >= 0:
        return Combined(over_index, True, shadow_over, remaining, over_duration)
    return Combined(least_index, False, shadow_over, remaining, least.duration_until_reset_ms)


# --- window lengths in rule files --------------------------------------------------------------


class WindowError(ValueError):
    """A rule's window is misspelt or out of range; the message says which and why."""


@dataclass(frozen=True, slots=True)
class Window:
    """A rule's window length."""

    ms: int
    unit: str
    """The upstream unit it is a whole number of, the longest that fits (``second`` ...
    ``year``), or ``""`` when it is not a whole number of seconds."""
    multiplier: int
    """How many ``unit`` it is (``ms`` when ``unit`` is empty). 1: upstream's plain unit, which
    a response's ``current_limit`` states exactly."""


_DURATION = re.compile(
    r"(?:(?P<d>\d+)d)?(?:(?P<h>\d+)h)?(?:(?P<m>\d+)m(?!s))?(?:(?P<s>\d+)s)?(?:(?P<ms>\d+)ms)?"
)
_DURATION_MS = {"d": 86_400_000, "h": 3_600_000, "m": 60_000, "s": 1_000, "ms": 1}
_LONGEST_SPELLING = 40


def _human(ms: int) -> str:
    parts = []
    for name in ("d", "h", "m", "s", "ms"):
        amount, ms = divmod(ms, _DURATION_MS[name])
        if amount:
            parts.append(f"{amount}{name}")
    return "".join(parts) or "0ms"


def _bounded(ms: int, spelled: str) -> int:
    if not MIN_WINDOW_MS <= ms <= MAX_WINDOW_MS:
        raise WindowError(
            f"rate limit window {spelled} is out of range: "
            f"from {_human(MIN_WINDOW_MS)} to {_human(MAX_WINDOW_MS)}"
        )
    return ms


def parse_duration(text: str) -> int:
    """``window:`` spelling to milliseconds: whole numbers with units ``d``, ``h``, ``m``,
    ``s``, ``ms``, each at most once and in that order (``500ms``, ``30s``, ``5m``, ``1h``,
    ``1d``, ``1h30m``); between :data:`MIN_WINDOW_MS` and :data:`MAX_WINDOW_MS`."""
    match = _DURATION.fullmatch(text) if 0 < len(text) <= _LONGEST_SPELLING else None
    if match is None or not any(match.groupdict().values()):
        raise WindowError(
            f"invalid rate limit window '{text}': expected a duration such as "
            f"500ms, 30s, 5m, 1h, 1d or 1h30m"
        )
    ms = sum(
        int(amount) * _DURATION_MS[name] for name, amount in match.groupdict().items() if amount
    )
    return _bounded(ms, f"'{text}'")


def window_of(ms: int) -> Window:
    """The :class:`Window` of a length in milliseconds (its longest whole unit)."""
    for unit in reversed(UNIT_MS):
        if ms % UNIT_MS[unit] == 0:
            return Window(ms, unit, ms // UNIT_MS[unit])
    return Window(ms, "", ms)


def parse_window(
    unit: object = None, unit_multiplier: object = None, window: object = None
) -> Window:
    """The window of a ``rate_limit:`` block, from its (already loaded) YAML values, ``None``
    where absent. Two spellings:

    * ``unit`` (upstream's, case-insensitive: second, minute, hour, day, week, month, year)
      with an optional ``unit_multiplier``, a whole number at least 1 (default 1):
      ``unit: second`` + ``unit_multiplier: 30`` is 30 seconds;
    * ``window``, a duration (:func:`parse_duration`): ``window: 30s``.

    Exactly one spelling; the length must be within :data:`MIN_WINDOW_MS` and
    :data:`MAX_WINDOW_MS`. Raises :class:`WindowError` naming the field and what it accepts.
    """
    if window is not None:
        if unit is not None or unit_multiplier is not None:
            raise WindowError(
                "rate limit window: give either unit (with unit_multiplier) or window, not both"
            )
        if not isinstance(window, str):
            raise WindowError(
                f"invalid rate limit window {window!r}: expected a duration with its unit, "
                f"such as 30s"
            )
        return window_of(parse_duration(window))
    if unit is None:
        if unit_multiplier is not None:
            raise WindowError("rate limit unit_multiplier needs a unit")
        raise WindowError("rate limit has no window: give a unit or a window")
    if not isinstance(unit, str) or unit.lower() not in UNIT_MS:
        raise WindowError(f"invalid rate limit unit '{unit}'")
    name = unit.lower()
    multiplier = 1 if unit_multiplier is None else unit_multiplier
    if isinstance(multiplier, bool) or not isinstance(multiplier, int) or multiplier < 1:
        raise WindowError(
            f"invalid rate limit unit_multiplier {multiplier!r}: expected a whole number, "
            f"at least 1"
        )
    ms = _bounded(UNIT_MS[name] * multiplier, f"of {multiplier} {name}")
    return Window(ms, name, multiplier) if multiplier == 1 else window_of(ms)
