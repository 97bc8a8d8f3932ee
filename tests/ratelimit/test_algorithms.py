"""The decision math of handlers.ratelimit.algorithms against exact reference models.

State machines drive each algorithm with random hits and a controlled clock that only moves
forward (small steps, jumps onto window boundaries, jumps of up to a million windows) and check
every decision against a model: the fixed window and the token bucket must agree exactly (an
upstream counter per window; a continuous token bucket computed with fractions), the sliding
window must be the weighted counter of its admitted hits and stay within its documented bound
of an exact sliding log. Each machine also replays the decisions with a store that expires
keys after their ``ttl_ms`` and skips the write of refused decisions, and must decide the
same. Derandomized: the same examples every run.
"""

from __future__ import annotations

from collections.abc import Callable
from fractions import Fraction
from math import ceil, floor
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from handlers.ratelimit.algorithms import (
    MAX_UINT32,
    MAX_WINDOW_MS,
    MIN_WINDOW_MS,
    Combined,
    Decision,
    FixedWindowState,
    GcraState,
    SlidingWindowState,
    Window,
    WindowError,
    check_sliding_window,
    check_token_bucket,
    combine,
    emission_interval,
    fixed_window,
    parse_duration,
    parse_window,
    sliding_window,
    token_bucket,
    window_of,
    window_start,
)

MACHINE_SETTINGS = settings(
    derandomize=True,
    database=None,
    deadline=None,
    max_examples=60,
    stateful_step_count=40,
    suppress_health_check=[HealthCheck.too_slow],
)
GIVEN_SETTINGS = settings(derandomize=True, database=None, deadline=None, max_examples=200)

WINDOWS = st.sampled_from([100, 101, 250, 1_000, 1_001, 30_000, 60_000, 86_400_000])
STARTS = st.integers(0, 1 << 41)  # an epoch in milliseconds is about 2**40.7
HITS = st.one_of(st.integers(0, 3), st.integers(0, 25))


class _Clock(RuleBasedStateMachine):
    """A clock that moves forward only; subclasses set ``window`` and ``now`` at start."""

    window: int
    now: int

    @rule(step=st.integers(0, 3))
    def tick(self, step: int) -> None:
        self.now += step

    @rule(offset=st.integers(-2, 2))
    def to_boundary(self, offset: int) -> None:
        target = window_start(self.now, self.window) + self.window + offset
        self.now = max(self.now, target)

    @rule(windows=st.integers(1, 1_000_000), extra=st.integers(0, 1 << 36))
    def jump(self, windows: int, extra: int) -> None:
        self.now += windows * self.window + extra % self.window


class _Stored:
    """A key of a store: expires ``ttl_ms`` after its last write; ``lazy`` skips the write of a
    refused decision (what the Lua scripts may do)."""

    def __init__(self, lazy: bool) -> None:
        self.lazy = lazy
        self.state: object = None
        self.expires = 0

    def read(self, now: int) -> object:
        if self.state is not None and now >= self.expires:
            self.state = None
        return self.state

    def write(self, now: int, decision: Decision[Any]) -> None:
        if self.lazy and decision.over_limit:
            return
        self.state = decision.state
        self.expires = now + decision.ttl_ms


# --- fixed window ------------------------------------------------------------------------------


class FixedWindowMachine(_Clock):
    @initialize(limit=st.integers(0, 20), window=WINDOWS, start=STARTS)
    def start(self, limit: int, window: int, start: int) -> None:
        self.limit, self.window, self.now = limit, window, start
        self.state: FixedWindowState | None = None
        self.counts: dict[int, int] = {}  # the upstream model: one counter per window
        self.expiring = _Stored(lazy=False)

    @rule(hits=HITS)
    def hit(self, hits: int) -> None:
        decision = fixed_window(self.state, self.now, self.limit, self.window, hits)
        index = self.now // self.window
        count = self.counts[index] = self.counts.get(index, 0) + hits
        left = self.window - self.now % self.window
        assert decision == Decision(
            FixedWindowState(index * self.window, count),
            count > self.limit,
            self.limit - count if count <= self.limit else 0,
            left,
            left,
        )
        stored = self.expiring.read(self.now)
        assert isinstance(stored, FixedWindowState | None)
        assert fixed_window(stored, self.now, self.limit, self.window, hits) == decision
        self.expiring.write(self.now, decision)
        self.state = decision.state


TestFixedWindow = FixedWindowMachine.TestCase
TestFixedWindow.settings = MACHINE_SETTINGS


# --- sliding window ----------------------------------------------------------------------------


class SlidingWindowMachine(_Clock):
    @initialize(limit=st.integers(0, 20), window=WINDOWS, start=STARTS)
    def start(self, limit: int, window: int, start: int) -> None:
        self.limit, self.window, self.now = limit, window, start
        self.state: SlidingWindowState | None = None
        self.log: list[tuple[int, int]] = []  # admitted (time, hits), the last two windows
        self.stores = [_Stored(lazy=False), _Stored(lazy=True)]

    def _in_window(self, index: int) -> int:
        return sum(n for t, n in self.log if t // self.window == index)

    def _estimate(self) -> Fraction:
        index, elapsed = divmod(self.now, self.window)
        previous = self._in_window(index - 1)
        return Fraction(previous * (self.window - elapsed), self.window) + self._in_window(index)

    @rule(hits=HITS)
    def hit(self, hits: int) -> None:
        limit, window, now = self.limit, self.window, self.now
        decision = sliding_window(self.state, now, limit, window, hits)

        # the weighted counter of the admitted hits decides
        admitted = self._estimate() + hits <= limit
        assert decision.over_limit is not admitted
        if admitted and hits:
            self.log.append((now, hits))
        estimate = self._estimate()
        assert decision.limit_remaining == max(0, floor(limit - estimate))

        # the documented bounds against an exact sliding log
        index, elapsed = divmod(now, window)
        previous = self._in_window(index - 1)
        exact = sum(n for t, n in self.log if t > now - window)  # hits in (now - W, now]
        assert -Fraction(previous * elapsed, window) <= estimate - exact
        assert estimate - exact <= Fraction(previous * (window - elapsed), window)
        if elapsed == window - 1:
            assert exact <= limit  # (now - W, now] is window ``index`` itself
        else:
            assert exact <= limit + previous * elapsed // window
            assert exact <= limit + limit * (window - 2) // window
        assert previous <= limit

        # what the durations promise, probed with the state after the decision
        state, duration = decision.state, decision.duration_until_reset_ms
        if decision.over_limit and hits <= limit:
            assert duration >= 1
            assert not sliding_window(state, now + duration, limit, window, hits).over_limit
            if duration > 1:
                assert sliding_window(state, now + duration - 1, limit, window, hits).over_limit
        else:
            assert duration == decision.ttl_ms
            later = sliding_window(state, now + duration, limit, window, 0)
            assert later.limit_remaining == limit and later.state is None
            if duration:
                earlier = sliding_window(state, now + duration - 1, limit, window, 0)
                assert earlier.limit_remaining < limit
        assert (decision.state is None) == (decision.ttl_ms == 0)

        # a store that expires keys and skips refused writes decides the same
        for store in self.stores:
            stored = store.read(now)
            assert isinstance(stored, SlidingWindowState | None)
            assert sliding_window(stored, now, limit, window, hits) == decision
            store.write(now, decision)
        self.state = decision.state
        self.log = [(t, n) for t, n in self.log if t >= (index - 1) * window]


TestSlidingWindow = SlidingWindowMachine.TestCase
TestSlidingWindow.settings = MACHINE_SETTINGS


def test_fixed_window_boundary_burst_does_not_happen_with_the_sliding_window() -> None:
    """100 per second: the fixed window admits 200 hits within 2 ms around a boundary; the
    sliding window admits none right after the boundary, then what the window's elapsed part
    frees, and reaches its bound, L + floor(L * (W - 2) / W), only over the whole interval."""
    limit, window = 100, 1_000

    def admitted(decide: Callable[..., Decision[Any]], times: list[int]) -> list[int]:
        state = None
        when = []
        for now in times:
            result = decide(state, now, limit, window, 1)
            state = result.state
            if not result.over_limit:
                when.append(now)
        return when

    burst = [999] * limit + [1_000] * limit
    assert len(admitted(fixed_window, burst)) == 2 * limit
    assert admitted(sliding_window, burst) == [999] * limit

    # then one request every millisecond up to the end of the next window
    times = [999] * limit + list(range(1_000, 2_000))
    hits = admitted(sliding_window, times)
    for end in range(1_000, 1_999):  # intervals [999, end], shorter than a window
        inside = sum(1 for t in hits if 999 <= t <= end)
        assert inside <= limit + limit * (end - 1_000) // window
    assert sum(1 for t in hits if t <= 1_998) == limit + limit * (window - 2) // window == 199


@GIVEN_SETTINGS
@given(
    limit=st.integers(1, 50),
    window=WINDOWS,
    boundary=st.integers(1, 1 << 30),
    before=st.integers(0, 50),
    after=st.integers(0, 50),
)
def test_sliding_window_holds_at_most_the_limit_across_a_boundary(
    limit: int, window: int, boundary: int, before: int, after: int
) -> None:
    """Any burst in the last millisecond of a window and the first of the next: at most
    ``limit`` admitted, where the fixed window admits up to twice as many."""
    state = None
    admitted = 0
    start = boundary * window
    for now, count in ((start - 1, before), (start, after)):
        for _ in range(count):
            decision = sliding_window(state, now, limit, window, 1)
            state = decision.state
            admitted += not decision.over_limit
    assert admitted <= limit


# --- token bucket ------------------------------------------------------------------------------


class TokenBucketMachine(_Clock):
    @initialize(
        limit=st.one_of(st.integers(1, 12), st.integers(1, 1_000_000)),
        window=WINDOWS,
        burst=st.integers(1, 30),
        burst_is_limit=st.booleans(),
        start=STARTS,
    )
    def start(self, limit: int, window: int, burst: int, burst_is_limit: bool, start: int) -> None:
        self.limit, self.window, self.now = limit, window, start
        self.burst = limit if burst_is_limit else burst
        self.state: GcraState | None = None
        # the model: a continuous bucket of ``burst`` tokens, refilled at limit / window per ms
        self.tokens = Fraction(self.burst)
        self.refilled_at = start
        self.stores = [_Stored(lazy=False), _Stored(lazy=True)]

    @rule(hits=HITS)
    def hit(self, hits: int) -> None:
        limit, window, burst, now = self.limit, self.window, self.burst, self.now
        decision = token_bucket(self.state, now, limit, window, hits, burst)

        rate = Fraction(limit, window)
        self.tokens = min(Fraction(burst), self.tokens + (now - self.refilled_at) * rate)
        self.refilled_at = now
        admitted = hits <= self.tokens
        if admitted:
            self.tokens -= hits
        until_full = ceil((burst - self.tokens) / rate)
        if not admitted and hits <= burst:
            duration = ceil((hits - self.tokens) / rate)
        else:
            duration = until_full
        assert decision.over_limit is not admitted
        assert decision.limit_remaining == floor(self.tokens)
        assert decision.duration_until_reset_ms == duration
        assert decision.ttl_ms == until_full
        assert (decision.state is None) == (until_full == 0)
        if decision.state is not None:
            assert 0 <= decision.state.tat_frac < emission_interval(limit, window)[1]
        if not admitted:
            assert decision.state == self.state or decision.state is None

        for store in self.stores:
            stored = store.read(now)
            assert isinstance(stored, GcraState | None)
            assert token_bucket(stored, now, limit, window, hits, burst) == decision
            store.write(now, decision)
        self.state = decision.state

    @invariant()
    def tokens_stay_in_the_bucket(self) -> None:
        assert 0 <= self.tokens <= self.burst


TestTokenBucket = TokenBucketMachine.TestCase
TestTokenBucket.settings = MACHINE_SETTINGS


def test_token_bucket_keeps_an_exact_rate() -> None:
    """3 per second with a burst of 3, asked every millisecond: the burst, then one hit every
    333 1/3 ms (334, 667, 1000, ...), with no drift after ten seconds."""
    state = None
    admitted = []
    for now in range(0, 10_000):
        decision = token_bucket(state, now, 3, 1_000, 1, 3)
        state = decision.state
        if not decision.over_limit:
            admitted.append(now)
    assert admitted[:6] == [0, 1, 2, 334, 667, 1_000]
    assert admitted[-3:] == [9_000, 9_334, 9_667]
    assert len(admitted) == 3 + 29


def test_token_bucket_refuses_all_or_nothing() -> None:
    first = token_bucket(None, 0, 10, 1_000, 4, 5)  # 5 tokens, 4 taken
    assert (first.over_limit, first.limit_remaining, first.duration_until_reset_ms) == (
        False,
        1,
        400,
    )
    second = token_bucket(first.state, 0, 10, 1_000, 3, 5)  # 1 token: refused, nothing taken
    assert second.over_limit and second.state == first.state
    assert (second.limit_remaining, second.duration_until_reset_ms) == (1, 200)
    too_many = token_bucket(first.state, 0, 10, 1_000, 6, 5)  # never fits: time until full
    assert too_many.over_limit and too_many.duration_until_reset_ms == 400


def test_token_bucket_with_limit_zero_refuses_every_hit() -> None:
    assert token_bucket(None, 5, 0, 1_000, 1, 3) == Decision(None, True, 0, 1_000, 0)
    assert token_bucket(None, 5, 0, 1_000, 0, 3) == Decision(None, False, 0, 1_000, 0)


def test_token_bucket_rounds_up_a_fraction_of_another_rate() -> None:
    """After the rule changed (den is now 1), a stored fraction rounds TAT up to the next ms."""
    decision = token_bucket(GcraState(1_000, 2), 990, 10, 1_000, 0, 2)
    assert decision.state == GcraState(1_001, 0)
    assert decision.ttl_ms == 11


def test_token_bucket_large_rate_is_exact() -> None:
    """A million per second is 1/1000 ms per hit: 1000 hits in one millisecond."""
    state = None
    for _ in range(1_000):
        decision = token_bucket(state, 7, 1_000_000, 1_000, 1, 1_000)
        assert not decision.over_limit
        state = decision.state
    assert token_bucket(state, 7, 1_000_000, 1_000, 1, 1_000).over_limit
    assert not token_bucket(state, 8, 1_000_000, 1_000, 1_000, 1_000).over_limit


# --- clocks behind the state -------------------------------------------------------------------


def test_a_clock_behind_the_state_counts_at_the_states_window_start() -> None:
    later = fixed_window(None, 5_500, 10, 1_000, 3)
    behind = fixed_window(later.state, 4_200, 10, 1_000, 2)
    assert behind == Decision(FixedWindowState(5_000, 5), False, 5, 1_000, 1_000)

    later_sliding = sliding_window(None, 5_500, 10, 1_000, 3)
    behind_sliding = sliding_window(later_sliding.state, 4_200, 10, 1_000, 2)
    assert behind_sliding.state == SlidingWindowState(5_000, 5, 0)
    assert behind_sliding.duration_until_reset_ms == 2_000


# --- upstream agreement ------------------------------------------------------------------------


@GIVEN_SETTINGS
@given(now_s=st.integers(0, 1 << 33), frac=st.integers(0, 999), unit=st.sampled_from([1, 60]))
def test_fixed_window_matches_upstream_keys_and_whole_second_durations(
    now_s: int, frac: int, unit: int
) -> None:
    """With whole-second windows, the window start in seconds is upstream's cache key suffix
    and the duration rounded up to seconds is upstream's ``D - now % D``."""
    now_ms = now_s * 1_000 + frac
    decision = fixed_window(None, now_ms, 10, unit * 1_000, 1)
    assert decision.state is not None
    assert decision.state.window_start_ms // 1_000 == now_s // unit * unit
    assert ceil(decision.duration_until_reset_ms / 1_000) == unit - now_s % unit


def test_fixed_window_counts_refused_hits_like_upstream() -> None:
    """Upstream's worked example: 15 per hour, counters 11, 13, 16 -> OK 4, OK 2, OVER."""
    state = FixedWindowState(0, 10)
    results = []
    for hits in (1, 2, 3):
        decision = fixed_window(state, 1_000, 15, 3_600_000, hits)
        assert decision.state is not None
        state = decision.state
        results.append((decision.over_limit, decision.limit_remaining, state.counted))
    assert results == [(False, 4, 11), (False, 2, 13), (True, 0, 16)]
    zero = fixed_window(state, 1_000, 15, 3_600_000, 0)  # a check on an exhausted window
    assert zero.over_limit


# --- several limits on one descriptor ----------------------------------------------------------


def _outcome(over: bool, remaining: int, duration: int) -> Decision[None]:
    return Decision(None, over, remaining, duration, 0)


def test_combine_reports_the_over_limit_that_waits_longest() -> None:
    per_second = _outcome(True, 0, 400)
    per_day = _outcome(True, 0, 3_600_000)
    per_minute = _outcome(False, 7, 20_000)
    assert combine([per_second, per_minute, per_day]) == Combined(2, True, False, 0, 3_600_000)


def test_combine_without_over_reports_the_least_remaining() -> None:
    outcomes = [_outcome(False, 5, 900), _outcome(False, 2, 100), _outcome(False, 2, 50_000)]
    assert combine(outcomes) == Combined(2, False, False, 2, 50_000)
    ties = [_outcome(False, 3, 100), _outcome(False, 3, 100)]
    assert combine(ties).reported == 0


def test_combine_remaining_is_the_least_of_all() -> None:
    """A token bucket refused 5 hits with 3 tokens left; a fixed window has 0 left but is OK."""
    outcomes = [_outcome(True, 3, 250), _outcome(False, 0, 40_000)]
    assert combine(outcomes) == Combined(0, True, False, 0, 250)


def test_combine_shadow_limits_count_but_never_refuse() -> None:
    outcomes = [_outcome(False, 4, 1_000), _outcome(True, 0, 60_000)]
    assert combine(outcomes, shadow=[False, True]) == Combined(1, False, True, 0, 60_000)
    assert combine(outcomes, shadow=[True]) == Combined(1, True, False, 0, 60_000)


def test_combine_needs_an_outcome() -> None:
    with pytest.raises(ValueError, match="at least one"):
        combine([])


def test_combine_real_decisions() -> None:
    """10 per second and 15 per minute: the 11th hit in a second is refused by the first; the
    16th in a minute by the second, reported with the minute's reset."""
    second_state: FixedWindowState | None = None
    minute_state: FixedWindowState | None = None
    statuses = []
    for i in range(16):
        now = 1_000 * (i // 11) + 5
        per_second = fixed_window(second_state, now, 10, 1_000, 1)
        per_minute = fixed_window(minute_state, now, 15, 60_000, 1)
        second_state, minute_state = per_second.state, per_minute.state
        statuses.append(combine([per_second, per_minute]))
    assert statuses[9] == Combined(0, False, False, 0, 995)
    assert statuses[10] == Combined(0, True, False, 0, 995)
    assert statuses[15] == Combined(1, True, False, 0, 58_995)


# --- bounds ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: fixed_window(None, 0, -1, 1_000, 1), "rate limit -1 is out of range"),
        (lambda: fixed_window(None, 0, MAX_UINT32 + 1, 1_000, 1), "out of range"),
        (lambda: fixed_window(None, 0, 1, MIN_WINDOW_MS - 1, 1), "window 99 ms is out of range"),
        (lambda: sliding_window(None, 0, 1, MAX_WINDOW_MS + 1, 1), "out of range"),
        (lambda: check_sliding_window(MAX_UINT32, MAX_WINDOW_MS), "must be below 2\\^53"),
        (lambda: token_bucket(None, 0, 1, 1_000, 1, 0), "burst 0 is out of range"),
        (lambda: check_token_bucket(1, MAX_WINDOW_MS, 1_000_000), "at most 2\\^52"),
    ],
)
def test_out_of_range_parameters_are_refused(call: Callable[[], object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        call()


def test_bounds_that_fit() -> None:
    check_sliding_window(100_000_000, 86_400_000)  # 10^8 per day
    check_token_bucket(MAX_UINT32, 1_000, MAX_UINT32)  # num 1000: 4.3e12
    check_token_bucket(1, MAX_WINDOW_MS, 100_000)  # 1 per year, burst 100,000


# --- window spellings --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "ms"),
    [
        ("500ms", 500),
        ("100ms", 100),
        ("30s", 30_000),
        ("5m", 300_000),
        ("1h", 3_600_000),
        ("1d", 86_400_000),
        ("1h30m", 5_400_000),
        ("1m500ms", 60_500),
        ("365d", MAX_WINDOW_MS),
        ("90s", 90_000),
    ],
)
def test_durations(text: str, ms: int) -> None:
    assert parse_duration(text) == ms


@pytest.mark.parametrize(
    "text",
    ["", "30", "s", "1.5s", "-1s", "1 s", "30S", "1s1h", "1m1m", "1w", "ms", "1hh", "x" * 50],
)
def test_misspelt_durations(text: str) -> None:
    with pytest.raises(WindowError, match="expected a duration such as 500ms"):
        parse_duration(text)


@pytest.mark.parametrize("text", ["0s", "99ms", "0ms", "366d", "365d1ms", "99999999999d"])
def test_durations_out_of_range(text: str) -> None:
    with pytest.raises(WindowError, match="out of range: from 100ms to 365d"):
        parse_duration(text)


@pytest.mark.parametrize(
    ("fields", "window"),
    [
        ({"unit": "second"}, Window(1_000, "second", 1)),
        ({"unit": "MINUTE"}, Window(60_000, "minute", 1)),
        ({"unit": "second", "unit_multiplier": 30}, Window(30_000, "second", 30)),
        ({"unit": "second", "unit_multiplier": 120}, Window(120_000, "minute", 2)),
        ({"unit": "day", "unit_multiplier": 7}, Window(604_800_000, "week", 1)),
        ({"unit": "month", "unit_multiplier": 12}, Window(31_104_000_000, "month", 12)),
        ({"unit": "year"}, Window(MAX_WINDOW_MS, "year", 1)),
        ({"window": "30s"}, Window(30_000, "second", 30)),
        ({"window": "1h"}, Window(3_600_000, "hour", 1)),
        ({"window": "500ms"}, Window(500, "", 500)),
        ({"window": "1m500ms"}, Window(60_500, "", 60_500)),
    ],
)
def test_window_spellings(fields: dict[str, object], window: Window) -> None:
    assert parse_window(**fields) == window


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({}, "has no window: give a unit or a window"),
        ({"unit_multiplier": 3}, "unit_multiplier needs a unit"),
        ({"unit": "second", "window": "30s"}, "either unit \\(with unit_multiplier\\) or window"),
        ({"unit_multiplier": 2, "window": "30s"}, "not both"),
        ({"unit": "fortnight"}, "invalid rate limit unit 'fortnight'"),
        ({"unit": 5}, "invalid rate limit unit '5'"),
        ({"unit": "second", "unit_multiplier": 0}, "unit_multiplier 0: expected a whole number"),
        ({"unit": "second", "unit_multiplier": -2}, "expected a whole number, at least 1"),
        ({"unit": "second", "unit_multiplier": True}, "unit_multiplier True"),
        ({"unit": "second", "unit_multiplier": 1.5}, "unit_multiplier 1.5"),
        ({"unit": "second", "unit_multiplier": "30"}, "unit_multiplier '30'"),
        ({"unit": "year", "unit_multiplier": 2}, "window of 2 year is out of range"),
        ({"unit": "second", "unit_multiplier": 10**30}, "out of range"),
        ({"window": 30}, "window 30: expected a duration with its unit"),
        ({"window": "30"}, "invalid rate limit window '30'"),
    ],
)
def test_window_spelling_errors(fields: dict[str, object], message: str) -> None:
    with pytest.raises(WindowError, match=message):
        parse_window(**fields)


def test_window_of_names_the_longest_whole_unit() -> None:
    assert window_of(2_592_000_000) == Window(2_592_000_000, "month", 1)
    assert window_of(1_500) == Window(1_500, "", 1_500)
    assert window_of(7_200_000) == Window(7_200_000, "hour", 2)


def _reference_combine(outcomes: list[Decision[Any]], shadow: list[bool]) -> Combined:
    """:func:`combine`'s rules written as plainly as they read (the function is a one-pass
    loop: it runs for every request of a descriptor with several limits)."""
    enforced = [i for i, o in enumerate(outcomes) if o.over_limit and not shadow[i]]
    if enforced:
        index = min(enforced, key=lambda i: (-outcomes[i].duration_until_reset_ms, i))
    else:
        index = min(
            range(len(outcomes)),
            key=lambda i: (outcomes[i].limit_remaining, -outcomes[i].duration_until_reset_ms, i),
        )
    return Combined(
        index,
        bool(enforced),
        any(o.over_limit and shadow[i] for i, o in enumerate(outcomes)),
        min(o.limit_remaining for o in outcomes),
        outcomes[index].duration_until_reset_ms,
    )


@given(
    st.lists(
        st.tuples(st.booleans(), st.integers(0, 4), st.integers(0, 4), st.booleans()),
        min_size=1,
        max_size=5,
    )
)
def test_combine_is_its_rules(limits: list[tuple[bool, int, int, bool]]) -> None:
    """Small values so that ties (which the first limit wins) come up often."""
    outcomes = [Decision(None, over, left, duration, 0) for over, left, duration, _ in limits]
    shadow = [flag for *_, flag in limits]
    assert combine(outcomes, shadow) == _reference_combine(outcomes, shadow)
    assert combine(outcomes) == _reference_combine(outcomes, [False] * len(outcomes))
