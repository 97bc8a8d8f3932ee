"""Issue 23, step 2: the rule YAML's new fields (windows of any length, sliding windows, token
buckets, several limits per descriptor), their errors, and the memory backend's decisions
through the service, compared with ``algorithms.py`` under a controlled clock."""

from __future__ import annotations

import random
import textwrap
from pathlib import Path
from typing import Any

import pytest

from generated.proto.envoy.service.ratelimit.v3 import rls_pb2
from handlers.ratelimit import algorithms
from handlers.ratelimit.backends.memory import MemoryStore
from handlers.ratelimit.config.model import RuleLimit, Unit
from handlers.ratelimit.config.parse import ConfigError, dump, load_rule_set
from handlers.ratelimit.config.provider import FileConfigProvider
from handlers.ratelimit.config_check import main as config_check
from handlers.ratelimit.limiter import response_message
from handlers.ratelimit.proto_json import decision_json, response_json
from handlers.ratelimit.proto_wire import decision_wire
from handlers.ratelimit.server import RateLimitServer
from handlers.ratelimit.service import RateLimitResponse
from handlers.ratelimit.settings import Modes, Settings
from tests.ratelimit.conftest import Harness, descriptor, harness, request, rules

OK = RateLimitResponse.OK
OVER = RateLimitResponse.OVER_LIMIT
T0 = 1_699_920_000.0  # a whole day, so a whole 30 s, minute and hour too


def rule(body: str, domain: str = "d") -> str:
    """A rule file with one descriptor ``k`` whose body (indented under ``- key: k``) is
    given; the body's first line is line 4."""
    return f"domain: {domain}\ndescriptors:\n  - key: k\n" + textwrap.indent(
        textwrap.dedent(body), "    "
    )


def limit_of(text: str) -> RuleLimit:
    node = rules(text).domains["d"].root.children["k"]
    assert node.limit is not None
    return node.limit


# --- the YAML ----------------------------------------------------------------------------------


def test_new_fields_make_tagged_limits() -> None:
    assert limit_of(
        rule("rate_limit: {unit: second, unit_multiplier: 30, requests_per_unit: 5}\n")
    ) == RuleLimit(5, Unit.UNKNOWN, algorithm="fixed_window", window_ms=30000, tag="fw30000")
    assert limit_of(
        rule("rate_limit: {window: 500ms, requests_per_unit: 5, algorithm: sliding_window}\n")
    ) == RuleLimit(5, Unit.UNKNOWN, algorithm="sliding_window", window_ms=500, tag="sw500")
    assert limit_of(
        rule("rate_limit: {unit: minute, requests_per_unit: 10, algorithm: token_bucket}\n")
    ) == RuleLimit(
        10, Unit.MINUTE, algorithm="token_bucket", window_ms=60000, burst=10, tag="tb60000"
    )
    bucket = limit_of(
        rule("rate_limit: {window: 1m, requests_per_unit: 10, algorithm: token_bucket, burst: 3}\n")
    )
    assert (bucket.unit, bucket.burst) == (Unit.MINUTE, 3)


@pytest.mark.parametrize(
    "body",
    [
        "rate_limit: {window: 1m, requests_per_unit: 10}\n",
        "rate_limit: {unit: minute, unit_multiplier: 1, requests_per_unit: 10}\n",
        "rate_limit: {unit: second, unit_multiplier: 60, requests_per_unit: 10}\n",
        "rate_limit: {unit: MINUTE, requests_per_unit: 10, algorithm: fixed_window}\n",
    ],
)
def test_one_whole_unit_is_upstreams_limit(body: str) -> None:
    assert limit_of(rule(body)) == limit_of(
        rule("rate_limit: {unit: minute, requests_per_unit: 10}\n")
    )
    assert limit_of(rule(body)).upstream


def test_rate_limits_is_a_list_of_limits() -> None:
    text = rule(
        """\
        rate_limits:
          - {unit: second, requests_per_unit: 3, algorithm: token_bucket, name: fast}
          - {unit: minute, requests_per_unit: 100, name: slow}
        """
    )
    node = rules(text).domains["d"].root.children["k"]
    assert node.limit is not None
    assert (node.limit.name, node.limit.tag) == ("fast", "tb1000")
    # every limit of a list has a tag (the first plain fixed window too), so none meets an
    # upstream key and two limits of one descriptor never share one
    assert [(x.name, x.tag, x.unit) for x in node.more_limits] == [
        ("slow", "fw60000.1", Unit.MINUTE)
    ]
    assert dump(rules(text)) == [
        "d.k: unit=SECOND requests_per_unit=3, shadow_mode: false, quota_mode: false, "
        "algorithm: token_bucket, window: 1000ms, burst: 3",
        "d.k: unit=MINUTE requests_per_unit=100, shadow_mode: false, quota_mode: false, "
        "algorithm: fixed_window, window: 60000ms",
    ]


ERRORS = [
    (
        "rate_limit:\n  unit: second\n  unit_multiplier: 0\n  requests_per_unit: 5\n",
        "config error, rate limit 'd.k' at line 6: invalid rate limit unit_multiplier 0: "
        "expected a whole number, at least 1",
    ),
    (
        "rate_limit:\n  requests_per_unit: 5\n  window: 30\n",
        "config error, rate limit 'd.k' at line 6: invalid rate limit window 30: expected a "
        "duration with its unit, such as 30s",
    ),
    (
        "rate_limit:\n  requests_per_unit: 5\n  window: 50ms\n",
        "config error, rate limit 'd.k' at line 6: rate limit window '50ms' is out of range: "
        "from 100ms to 365d",
    ),
    (
        "rate_limit:\n  requests_per_unit: 5\n  unit: second\n  window: 1s\n",
        "config error, rate limit 'd.k' at line 7: rate limit window: give either unit "
        "(with unit_multiplier) or window, not both",
    ),
    (
        "rate_limit:\n  unit: fortnight\n  unit_multiplier: 2\n  requests_per_unit: 5\n",
        "config error, rate limit 'd.k' at line 6: invalid rate limit unit 'fortnight'",
    ),
    (
        "rate_limit:\n  unit: second\n  requests_per_unit: 5\n  algorithm: leaky\n",
        "config error, rate limit 'd.k' at line 7: unknown algorithm 'leaky': expected "
        "fixed_window, sliding_window or token_bucket",
    ),
    (
        "rate_limit:\n  unit: second\n  requests_per_unit: 5\n  burst: 9\n",
        "config error, rate limit 'd.k' at line 7: burst is for token_bucket only, "
        "not fixed_window",
    ),
    (
        "rate_limit:\n  unit: second\n  requests_per_unit: 5\n  algorithm: token_bucket\n"
        "  burst: 0\n",
        "config error, rate limit 'd.k' at line 8: invalid burst '0': expected a whole number, "
        "at least 1",
    ),
    (
        "rate_limit:\n  unit: year\n  requests_per_unit: 1\n  algorithm: token_bucket\n"
        "  burst: 1000000\n",
        "config error, rate limit 'd.k' at line 8: token bucket: burst 1000000 at 1 per "
        "31536000000 ms is too large",
    ),
    (
        "rate_limit:\n  unit: second\n  algorithm: sliding_window\n",
        "config error, rate limit 'd.k' at line 5: missing 'requests_per_unit'",
    ),
    (
        "rate_limit: {unlimited: true, algorithm: sliding_window}\n",
        "config error, rate limit 'd.k' at line 4: an unlimited rate limit takes no "
        "unit_multiplier, window, algorithm or burst",
    ),
    (
        "rate_limit: {unit: second, requests_per_unit: 1}\nrate_limits:\n"
        "  - {unit: second, requests_per_unit: 1}\n",
        "config error, rate limit 'd.k' at line 6: give either rate_limit or rate_limits, not both",
    ),
    (
        "rate_limits: []\n",
        "config error, rate limit 'd.k' at line 4: rate_limits needs at least one limit",
    ),
    (
        "rate_limits:\n  - {unit: second, requests_per_unit: 1}\n  - {unlimited: true}\n",
        "config error, rate limit 'd.k' at line 6: a rate_limits entry cannot be unlimited",
    ),
    (
        "rate_limits:\n  - {unit: second, requests_per_unit: 1, replaces: [{name: x}]}\n",
        "config error, rate limit 'd.k' at line 5: replaces belongs on rate_limit",
    ),
    (
        "rate_limits:\n  - {unit: second, requests_per_unit: 1, burstt: 2}\n",
        "config error, unknown key 'burstt'",
    ),
    (
        "rate_limit: {unit: second, requests_per_unit: 1, rate_limits: []}\n",
        "config error, unknown key 'rate_limits'",
    ),
]


@pytest.mark.parametrize(("body", "message"), ERRORS)
def test_errors_name_the_rule_and_the_line(body: str, message: str) -> None:
    with pytest.raises(ConfigError) as raised:
        load_rule_set([("f.yaml", rule(body))], merge_domains=False)
    assert str(raised.value).startswith("f.yaml: " + message)


def test_documents_without_lines_say_no_line() -> None:
    with pytest.raises(ConfigError) as raised:
        rules_from = {
            "domain": "d",
            "descriptors": [{"key": "k", "rate_limit": {"burst": 1, "requests_per_unit": 1}}],
        }
        from handlers.ratelimit.config.parse import load_documents

        load_documents([("x", rules_from)], merge_domains=False)
    assert str(raised.value) == (
        "x: config error, rate limit 'd.k': rate limit has no window: give a unit or a window"
    )


# --- every backend decides every limit ------------------------------------------------------------

NEW_LIMITS = [
    "rate_limit: {unit: second, requests_per_unit: 5, algorithm: sliding_window}\n",
    "rate_limit: {unit: second, requests_per_unit: 5, algorithm: token_bucket}\n",
    "rate_limit: {window: 1500ms, requests_per_unit: 5}\n",
    "rate_limits:\n  - {unit: second, requests_per_unit: 5}\n",
]
"""Limits that only algorithms.py decides (memcached refused them at load until issue 23's
step 4: tests/ratelimit/test_algorithm_rules_memcache.py decides them on memcached)."""


@pytest.mark.parametrize("body", NEW_LIMITS)
def test_the_new_limits_load_tagged(body: str) -> None:
    loaded = load_rule_set([("f.yaml", rule(body))], merge_domains=False)
    limit = loaded.domains["d"].root.children["k"].limit
    assert limit is not None and limit.tag


def test_upstream_limits_in_new_spellings_are_upstreams() -> None:
    loaded = load_rule_set(
        [("f.yaml", rule("rate_limit: {window: 1h, requests_per_unit: 5}\n"))],
        merge_domains=False,
    )
    limit = loaded.domains["d"].root.children["k"].limit
    assert limit is not None and (limit.unit, limit.tag) == (Unit.HOUR, "")


def test_fixed_windows_of_whole_seconds_are_tagged() -> None:
    files = [
        ("f.yaml", rule("rate_limit: {unit: second, unit_multiplier: 30, requests_per_unit: 5}\n"))
    ]
    loaded = load_rule_set(files, merge_domains=False)
    limit = loaded.domains["d"].root.children["k"].limit
    assert limit is not None
    assert (limit.algorithm, limit.window_ms, limit.tag) == ("fixed_window", 30000, "fw30000")


def _runtime(tmp_path: Path, text: str) -> dict[str, str]:
    """Settings' environment for the rule file ``text`` (written, or written over)."""
    config = tmp_path / "runtime" / "config"
    config.mkdir(parents=True, exist_ok=True)
    (config / "rules.yaml").write_text(text)
    return {
        "RUNTIME_ROOT": str(tmp_path / "runtime"),
        "RUNTIME_WATCH_ROOT": "false",
        "DISABLE_STATS": "true",
    }


@pytest.mark.parametrize("backend", ["memcache", "memory"])
async def test_a_refused_reload_keeps_the_rules_loaded(tmp_path: Path, backend: str) -> None:
    env = _runtime(tmp_path, rule("rate_limit: {unit: minute, requests_per_unit: 5}\n"))
    server = RateLimitServer(
        Settings.from_env({**env, "BACKEND_TYPE": backend}), store=MemoryStore()
    )
    update = await _file_provider(server).reload()
    assert update.error is None
    loaded = server.service.rules
    assert loaded is not None
    sliding = rule("rate_limit: {unit: minute, requests_per_unit: 5, algorithm: sliding_window}\n")
    bad = rule("rate_limit: {unit: minute, requests_per_unit: 5, burst: 2}\n")
    _runtime(tmp_path, bad)
    update = await _file_provider(server).reload()
    assert update.rules is None
    assert server.service.rules is loaded
    assert server.stats.store.value("ratelimit.service.config_load_error") == 1
    assert (await _reload(server, tmp_path, sliding)).error is None  # every backend takes it
    assert server.service.rules is not loaded


async def _reload(server: RateLimitServer, tmp_path: Path, text: str) -> Any:
    _runtime(tmp_path, text)
    return await _file_provider(server).reload()


def test_config_check_reports_the_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "d.yaml"
    path.write_text(rule("rate_limit:\n  unit: second\n  requests_per_unit: 5\n  burst: 2\n"))
    assert config_check(["-config_dir", str(tmp_path)]) == 1
    assert capsys.readouterr().err == (
        f"error loading rate limit configs: {path}: config error, rate limit 'd.k' at line 7: "
        "burst is for token_bucket only, not fixed_window\n"
    )
    path.write_text(
        rule(
            "rate_limits:\n  - {unit: second, requests_per_unit: 5, algorithm: sliding_window}\n"
            "  - {unit: hour, requests_per_unit: 500}\n"
        )
    )
    assert config_check(["-config_dir", str(tmp_path)]) == 0
    assert capsys.readouterr().out == "loaded domain: d (2 rate limits)\n"


# --- decisions: the memory backend against algorithms.py -----------------------------------------


class Model:
    """The reference: ``algorithms.py`` with its states kept in a dict, as a store would."""

    def __init__(self, limits: list[tuple[str, int, int, int]]) -> None:
        self.limits = limits  # (algorithm, limit, window_ms, burst)
        self.states: list[Any] = [None] * len(limits)

    def decide(self, now_ms: int, hits: int) -> tuple[bool, int, int, int]:
        """over, remaining, duration in whole seconds (rounded up), reported index."""
        decisions: list[algorithms.Decision[Any]] = []
        for i, (algorithm, limit, window, burst) in enumerate(self.limits):
            decision: algorithms.Decision[Any]
            if algorithm == "sliding_window":
                decision = algorithms.sliding_window(self.states[i], now_ms, limit, window, hits)
            elif algorithm == "token_bucket":
                decision = algorithms.token_bucket(
                    self.states[i], now_ms, limit, window, hits, burst
                )
            else:
                decision = algorithms.fixed_window(self.states[i], now_ms, limit, window, hits)
            self.states[i] = decision.state
            decisions.append(decision)
        combined = algorithms.combine(decisions)
        return (
            combined.over_limit,
            combined.limit_remaining,
            -(-combined.duration_until_reset_ms // 1000),
            combined.reported,
        )


MODELLED = {
    "sliding 5/s": (
        "rate_limit: {unit: second, requests_per_unit: 5, algorithm: sliding_window}\n",
        [("sliding_window", 5, 1000, 0)],
    ),
    "sliding 7 per 2500ms": (
        "rate_limit: {window: 2500ms, requests_per_unit: 7, algorithm: sliding_window}\n",
        [("sliding_window", 7, 2500, 0)],
    ),
    "token bucket 4/s": (
        "rate_limit: {unit: second, requests_per_unit: 4, algorithm: token_bucket}\n",
        [("token_bucket", 4, 1000, 4)],
    ),
    "token bucket 10/min burst 3": (
        "rate_limit: {unit: minute, requests_per_unit: 10, algorithm: token_bucket, burst: 3}\n",
        [("token_bucket", 10, 60000, 3)],
    ),
    "fixed 6 per 30s (upstream counting)": (
        "rate_limit: {unit: second, unit_multiplier: 30, requests_per_unit: 6}\n",
        [("fixed_window", 6, 30000, 0)],
    ),
    "fixed 3 per 500ms": (
        "rate_limit: {window: 500ms, requests_per_unit: 3}\n",
        [("fixed_window", 3, 500, 0)],
    ),
    "two limits": (
        "rate_limits:\n"
        "  - {unit: second, requests_per_unit: 3, algorithm: token_bucket, name: fast}\n"
        "  - {unit: second, unit_multiplier: 10, requests_per_unit: 10, name: slow}\n",
        [("token_bucket", 3, 1000, 3), ("fixed_window", 10, 10000, 0)],
    ),
    "three limits": (
        "rate_limits:\n"
        "  - {window: 1s, requests_per_unit: 4, algorithm: sliding_window, name: a}\n"
        "  - {window: 1s, requests_per_unit: 2, algorithm: token_bucket, burst: 5, name: b}\n"
        "  - {window: 1m, requests_per_unit: 20, name: c}\n",
        [
            ("sliding_window", 4, 1000, 0),
            ("token_bucket", 2, 1000, 5),
            ("fixed_window", 20, 60000, 0),
        ],
    ),
}


@pytest.mark.parametrize("name", list(MODELLED))
async def test_memory_backend_decides_as_the_algorithms(name: str) -> None:
    await decides_as_the_algorithms(harness(rule(MODELLED[name][0]), now=T0), name)


async def decides_as_the_algorithms(h: Harness, name: str, steps: int = 400) -> None:
    """``MODELLED[name]`` through ``h``'s service (whatever its store), ``steps`` requests
    under a controlled clock, each status compared with :class:`Model`'s."""
    body, limits = MODELLED[name]
    text = rule(body)
    loaded = rules(text).domains["d"].root.children["k"]
    assert loaded.limit is not None
    shown = [loaded.limit, *loaded.more_limits]
    model = Model(limits)
    generator = random.Random(name)
    now_ms = int(T0 * 1000)
    outcomes = set()
    for _ in range(steps):
        roll = generator.random()
        if roll < 0.05:
            now_ms += generator.randrange(1, 200_000)
        elif roll < 0.15:  # onto a boundary of the first window, give or take 2 ms
            window = limits[0][2]
            now_ms = (now_ms // window + 1) * window + generator.randrange(-2, 3)
        else:
            now_ms += generator.randrange(0, 400)
        h.clock.now = now_ms / 1000
        hits = generator.choice([0, 1, 1, 1, 2, 3, 5])
        decision = await h.service.decide(
            request("d", descriptor(("k", "v"), hits=hits)), message=False
        )
        # no message is made: the answer is what the gRPC and /json encoders write, each
        # equal to the message of the same values
        assert decision.response is None
        values = (*decision[:5], decision.resets)
        message = response_message(*values)
        assert decision_wire(*values) == message.SerializeToString()
        assert decision_json(*values) == response_json(message)
        decision = decision._replace(response=message)
        status = decision.response.statuses[0]
        over, remaining, seconds, reported = model.decide(int(h.clock.now * 1000), hits)
        assert (status.code, status.limit_remaining, status.duration_until_reset.seconds) == (
            OVER if over else OK,
            remaining,
            seconds,
        ), (name, now_ms, hits)
        assert status.current_limit.requests_per_unit == shown[reported].requests_per_unit
        assert status.current_limit.name == shown[reported].name
        assert status.current_limit.unit == int(shown[reported].unit)
        assert decision.limits[0] is not None
        outcomes.add((over, reported))
    assert {over for over, _ in outcomes} == {False, True}
    if len(limits) > 1:
        assert len({reported for _, reported in outcomes}) > 1


async def test_keys_never_meet_upstreams() -> None:
    h = harness(
        "domain: d\ndescriptors:\n"
        "  - key: plain\n    rate_limit: {window: 1m, requests_per_unit: 5}\n"
        "  - key: thirty\n"
        "    rate_limit: {unit: second, unit_multiplier: 30, requests_per_unit: 5}\n"
        "  - key: sliding\n"
        "    rate_limit: {unit: minute, requests_per_unit: 5, algorithm: sliding_window}\n",
        now=T0 + 7,
    )
    for key in ("plain", "thirty", "sliding"):
        await h.service.decide(request("d", descriptor((key, "v"))))
    increments = [inc.key for call in h.store.increments for inc in call]
    assert increments == [f"d_plain_v_{int(T0)}", f"d_thirty_v_fw30000_{int(T0)}"]
    assert list(h.store.inner._states) == ["d_sliding_v_sw60000"]


async def test_multiplied_window_reports_unknown_unit_and_its_reset() -> None:
    h = harness(rule("rate_limit: {unit: second, unit_multiplier: 30, requests_per_unit: 5}\n"))
    h.clock.now = T0 + 7.5
    status = (await h.service.should_rate_limit(request("d", descriptor(("k", "v"))))).statuses[0]
    assert (status.current_limit.unit, status.current_limit.requests_per_unit) == (0, 5)
    assert (status.limit_remaining, status.duration_until_reset.seconds) == (4, 23)


async def boundary_burst(h: Harness) -> int:
    admitted = 0
    for at in (T0 + 0.999, T0 + 1.0):
        h.clock.now = at
        for _ in range(10):
            response = await h.service.should_rate_limit(
                request("d", descriptor(("k", "v"), hits=10))
            )
            admitted += 10 * (response.overall_code == OK)
    return admitted


async def test_boundary_burst_fixed_admits_twice_the_limit_sliding_does_not() -> None:
    fixed = harness(rule("rate_limit: {unit: second, requests_per_unit: 100}\n"))
    sliding = harness(
        rule("rate_limit: {unit: second, requests_per_unit: 100, algorithm: sliding_window}\n")
    )
    assert await boundary_burst(fixed) == 200
    assert await boundary_burst(sliding) == 100


async def test_shadow_mode_answers_ok_and_counts() -> None:
    for algorithm in ("sliding_window", "token_bucket"):
        h = harness(
            rule(
                "shadow_mode: true\n"
                f"rate_limit: {{unit: second, requests_per_unit: 2, algorithm: {algorithm}}}\n"
            ),
            now=T0,
        )
        codes = []
        for _ in range(3):
            response = await h.service.should_rate_limit(request("d", descriptor(("k", "v"))))
            codes.append((response.overall_code, response.statuses[0].code))
        assert codes == [(OK, OK)] * 3
        assert h.rule("d.k") == {
            "total_hits": 3,
            "over_limit": 1,
            "near_limit": 1,
            "within_limit": 2,
            "over_limit_with_local_cache": 0,
            "shadow_mode": 1,
        }


async def test_global_shadow_mode_with_a_token_bucket() -> None:
    h = harness(
        rule("rate_limit: {unit: second, requests_per_unit: 1, algorithm: token_bucket}\n"),
        modes=Modes(shadow_mode=True),
        now=T0,
    )
    await h.service.should_rate_limit(request("d", descriptor(("k", "v"))))
    response = await h.service.should_rate_limit(request("d", descriptor(("k", "v"))))
    assert (response.overall_code, response.statuses[0].code) == (OK, OVER)
    assert h.counter("ratelimit.service.global_shadow_mode") == 1


async def test_hits_addend_with_a_token_bucket() -> None:
    h = harness(
        rule("rate_limit: {unit: second, requests_per_unit: 5, algorithm: token_bucket}\n"),
        now=T0,
    )

    async def ask(hits: int | None = None, request_hits: int = 0) -> tuple[int, int, int]:
        response = await h.service.should_rate_limit(
            request("d", descriptor(("k", "v"), hits=hits), hits=request_hits)
        )
        status = response.statuses[0]
        return status.code, status.limit_remaining, status.duration_until_reset.seconds

    assert await ask(3) == (OK, 2, 1)
    assert await ask(request_hits=3) == (OVER, 2, 1)  # all or nothing: nothing taken
    assert await ask(2) == (OK, 0, 1)
    assert await ask(0) == (OK, 0, 1)  # checks without counting
    h.clock.now = T0 + 0.4  # two tokens back
    assert await ask(6) == (OVER, 2, 1)  # more than the burst never fits
    assert await ask(2) == (OK, 0, 1)
    stats = h.rule("d.k")
    assert (stats["total_hits"], stats["over_limit"], stats["within_limit"]) == (16, 9, 7)


async def test_sliding_window_hits_addend_and_retry_duration() -> None:
    h = harness(
        rule("rate_limit: {unit: minute, requests_per_unit: 10, algorithm: sliding_window}\n"),
        now=T0,
    )
    first = await h.service.should_rate_limit(request("d", descriptor(("k", "v"), hits=10)))
    assert (first.statuses[0].code, first.statuses[0].duration_until_reset.seconds) == (OK, 120)
    h.clock.now = T0 + 90  # half of the previous window's 10 still weigh
    refused = await h.service.should_rate_limit(request("d", descriptor(("k", "v"), hits=6)))
    status = refused.statuses[0]
    assert (status.code, status.limit_remaining) == (OVER, 5)
    assert status.duration_until_reset.seconds == 6  # 10 * (60 - e) / 60 <= 4 from e = 36 s


async def test_replaces_drops_a_descriptor_by_any_of_its_limits_names() -> None:
    h = harness(
        "domain: d\ndescriptors:\n"
        "  - key: many\n    rate_limits:\n"
        "      - {unit: second, requests_per_unit: 1, name: first}\n"
        "      - {unit: minute, requests_per_unit: 5, algorithm: sliding_window, name: second}\n"
        "  - key: other\n"
        "    rate_limit: {unit: minute, requests_per_unit: 5, replaces: [{name: second}]}\n",
        now=T0,
    )
    response = await h.service.should_rate_limit(
        request("d", descriptor(("many", "x")), descriptor(("other", "y")))
    )
    assert not response.statuses[0].HasField("current_limit")
    assert response.statuses[1].limit_remaining == 4


async def test_headers_follow_the_deciding_limit() -> None:
    modes = Modes(response_headers_enabled=True)
    h = harness(
        rule(
            "rate_limits:\n"
            "  - {unit: second, requests_per_unit: 2, algorithm: token_bucket, name: fast}\n"
            "  - {unit: hour, requests_per_unit: 3, algorithm: sliding_window, name: slow}\n"
        ),
        modes=modes,
        now=T0,
    )
    seen = []
    for _ in range(4):
        response = await h.service.should_rate_limit(request("d", descriptor(("k", "v"))))
        status = response.statuses[0]
        headers = [(x.key, x.value) for x in response.response_headers_to_add]
        assert [key for key, _ in headers] == [
            "RateLimit-Limit",
            "RateLimit-Remaining",
            "RateLimit-Reset",
        ]
        seen.append((status.code, status.current_limit.name, [value for _, value in headers]))
    assert seen == [
        (OK, "fast", ["2", "1", "1"]),  # least remaining: the bucket's 1 token (slow has 2)
        (OK, "fast", ["2", "0", "1"]),  # least remaining again (slow has 1)
        (OVER, "fast", ["2", "0", "1"]),  # only the bucket refuses (a token in 0.5 s)
        # both refuse: the one a retry waits for, the sliding window (3 admitted this hour:
        # a hit fits when 3 * (W - e) / W <= 2, 20 minutes into the next hour)
        (OVER, "slow", ["3", "0", "4800"]),
    ]


async def test_quota_mode_with_a_sliding_window() -> None:
    h = harness(
        "domain: d\ndescriptors:\n"
        "  - key: q\n    quota_mode: true\n"
        "    rate_limit: {unit: minute, requests_per_unit: 1, algorithm: sliding_window}\n"
        "  - key: r\n    rate_limit: {unit: minute, requests_per_unit: 5}\n",
        now=T0,
    )
    await h.service.should_rate_limit(request("d", descriptor(("q", "x"))))
    response = await h.service.should_rate_limit(
        request("d", descriptor(("q", "x")), descriptor(("r", "y")))
    )
    # quota mode counts the new algorithms' codes as upstream's: all quota descriptors over
    assert [s.code for s in response.statuses] == [OVER, OK]
    assert response.overall_code == OVER


async def test_local_cache_and_stop_increment_leave_the_new_limits_alone() -> None:
    text = (
        "domain: d\ndescriptors:\n"
        "  - key: s\n"
        "    rate_limit: {unit: minute, requests_per_unit: 1, algorithm: sliding_window}\n"
        "  - key: f\n    rate_limit: {unit: minute, requests_per_unit: 1}\n"
    )
    h = harness(text, now=T0, local_cache_bytes=1 << 20, stop_increment_when_over_limit=True)
    codes = []
    for _ in range(3):
        response = await h.service.should_rate_limit(
            request("d", descriptor(("s", "x")), descriptor(("f", "y")))
        )
        codes.append([status.code for status in response.statuses])
    assert codes == [[OK, OK], [OVER, OVER], [OVER, OVER]]
    # the fixed window's third answer came from the local cache; the sliding window's from
    # its state (the new algorithms never count refused hits, so neither setting applies)
    assert h.rule("d.s")["over_limit_with_local_cache"] == 0
    assert h.rule("d.f")["over_limit_with_local_cache"] == 1
    assert [len(call) for call in h.store.decisions] == [1, 1, 1]


async def test_without_a_message_the_new_limits_still_answer_one() -> None:
    h = harness(
        "domain: d\ndescriptors:\n"
        "  - key: plain\n    rate_limit: {unit: minute, requests_per_unit: 5}\n"
        "  - key: bucket\n"
        "    rate_limit: {unit: minute, requests_per_unit: 5, algorithm: token_bucket}\n",
        now=T0,
    )
    plain = await h.service.decide(request("d", descriptor(("plain", "x"))), message=False)
    assert (plain.response, plain.resets) == (None, None)  # the encoders use the window
    bucket = await h.service.decide(request("d", descriptor(("bucket", "x"))), message=False)
    assert bucket.response is None
    assert bucket.resets == {0: 12}  # its duration is its own: the encoders are told it
    overall, codes, remaining, limits, now, _, resets = bucket
    answer = rls_pb2.RateLimitResponse.FromString(
        decision_wire(overall, codes, remaining, limits, now, resets)
    )
    status = answer.statuses[0]
    assert (status.limit_remaining, status.duration_until_reset.seconds) == (4, 12)


def _file_provider(server: RateLimitServer) -> FileConfigProvider:
    assert isinstance(server.provider, FileConfigProvider)
    return server.provider
