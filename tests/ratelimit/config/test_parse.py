"""Rule file loading: upstream's exact messages and their order, and the tree that is built."""

from __future__ import annotations

import pickle
import textwrap

import pytest

from handlers.ratelimit.config.model import RuleLimit, RuleSet, Unit
from handlers.ratelimit.config.parse import ConfigError, dump, load_documents, load_rule_set

BASIC = """\
# Basic configuration for testing.
domain: test-domain
descriptors:
  # Top level key/value with no default rate limit.
  - key: key1
    value: value1
    descriptors:
      # 2nd level key only with default rate limit.
      - key: subkey1
        rate_limit:
          unit: second
          requests_per_unit: 5

      # 2nd level key/value with limit. Specific override at 2nd level.
      - key: subkey1
        value: subvalue1
        rate_limit:
          unit: second
          requests_per_unit: 10

  # Top level key only with default rate limit.
  - key: key2
    rate_limit:
      unit: minute
      requests_per_unit: 20

  # Top level key/value with limit. Specific override at 1st level.
  - key: key2
    value: value2
    rate_limit:
      unit: minute
      requests_per_unit: 30

  # Top level key/value with no limit, effectively whitelisted.
  - key: key2
    value: value3

  - key: key3
    rate_limit:
      unit: hour
      requests_per_unit: 1

  - key: key5
    value: value5
    rate_limit:
      unit: day
      requests_per_unit: 15
    descriptors:
      - key: subkey5
        value: subvalue5
        rate_limit:
          unit: day
          requests_per_unit: 25
"""


def load(text: str, name: str = "config.yaml", *, merge: bool = False) -> RuleSet:
    return load_rule_set([(name, textwrap.dedent(text))], merge_domains=merge)


def error_of(*files: tuple[str, str], merge: bool = False) -> str:
    with pytest.raises(ConfigError) as caught:
        load_rule_set([(name, textwrap.dedent(text)) for name, text in files], merge_domains=merge)
    return str(caught.value)


def error(text: str, name: str = "config.yaml") -> str:
    return error_of((name, text))


# --- §3.2, one message at a time -------------------------------------------------------------


def test_yaml_syntax_error_end_of_stream() -> None:
    assert error("'''\n", "bad_yaml.yaml") == (
        "bad_yaml.yaml: error loading config file: yaml: line 2: found unexpected end of stream"
    )


def test_yaml_syntax_error_mapping_value_with_line() -> None:
    text = """\
    domain: test-domain
    descriptors: key: a
    """
    assert error(text) == (
        "config.yaml: error loading config file: yaml: line 2: "
        "mapping values are not allowed in this context"
    )
    assert error("domain: test-domain\ndescriptors: - key: a\n") == (
        "config.yaml: error loading config file: yaml: line 2: "
        "block sequence entries are not allowed in this context"
    )


def test_yaml_syntax_error_on_first_line_has_no_line() -> None:
    assert error("domain: a: b\n") == (
        "config.yaml: error loading config file: yaml: "
        "mapping values are not allowed in this context"
    )


def test_yaml_parser_error_uses_yaml_v2_line() -> None:
    # yaml.v2 prints a parser error's 0-based mark line: here the problem is on line 4
    text = """\
    domain: test-domain
    descriptors:
      - key: a
     value: b
    """
    assert error(text) == (
        "config.yaml: error loading config file: yaml: line 3: did not find expected key"
    )


def test_unknown_alias() -> None:
    text = """\
    domain: test-domain
    descriptors: *missing
    """
    assert error(text) == (
        "config.yaml: error loading config file: yaml: unknown anchor 'missing' referenced"
    )


def test_type_mismatches_are_all_listed_with_lines() -> None:
    text = """\
    domain: test-domain
    descriptors:
      - key: key1
        rate_limit:
          unit: minute
          requests_per_unit: ten
        shadow_mode: "true"
      - key: key2
        descriptors: nested
    """
    assert error(text) == (
        "config.yaml: error loading config file: yaml: unmarshal errors:\n"
        "  line 6: cannot unmarshal !!str `ten` into uint32\n"
        "  line 7: cannot unmarshal !!str `true` into bool\n"
        "  line 9: cannot unmarshal !!str `nested` into []config.YamlDescriptor"
    )


def test_type_mismatch_long_value_is_shortened_and_collections_have_no_value() -> None:
    text = """\
    domain: {name: test-domain}
    descriptors:
      - key: key1
        rate_limit:
          unit: minute
          requests_per_unit: 99999999999
    """
    assert error(text) == (
        "config.yaml: error loading config file: yaml: unmarshal errors:\n"
        "  line 1: cannot unmarshal !!map into string\n"
        "  line 6: cannot unmarshal !!int `9999999...` into uint32"
    )


def test_negative_requests_per_unit() -> None:
    text = """\
    domain: test-domain
    descriptors:
      - key: key1
        rate_limit: {unit: minute, requests_per_unit: -1}
    """
    assert error(text) == (
        "config.yaml: error loading config file: yaml: unmarshal errors:\n"
        "  line 4: cannot unmarshal !!int `-1` into uint32"
    )


def test_document_that_is_not_a_map() -> None:
    assert error("- domain: test-domain\n") == (
        "config.yaml: error loading config file: yaml: unmarshal errors:\n"
        "  line 1: cannot unmarshal !!seq into map[interface {}]interface {}"
    )


def test_non_string_key() -> None:
    text = """\
    0.25: test-domain
    descriptors:
      - key: key1
        value: value1
        ratelimit:
          unit: day
          requests_per_unit: 5
    """
    assert error(text, "non_string_key.yaml") == (
        "non_string_key.yaml: config error, key is not of type string: 0.25"
    )


@pytest.mark.parametrize(
    ("key", "shown"),
    [("1", "1"), ("true", "true"), ("~", "<nil>"), ("1000000.0", "1e+06"), ("0.00001", "1e-05")],
)
def test_non_string_key_is_printed_like_go(key: str, shown: str) -> None:
    assert error(f"domain: d\n{key}: x\n") == (
        f"config.yaml: config error, key is not of type string: {shown}"
    )


def test_unknown_key() -> None:
    text = """\
    domain: test-domain
    descriptors:
      - key: key1
        value: value1
        ratelimit:
          unit: day
          requests_per_unit: 5
    """
    assert error(text, "misspelled_key.yaml") == (
        "misspelled_key.yaml: config error, unknown key 'ratelimit'"
    )


def test_unknown_key_nested() -> None:
    text = """\
    domain: test-domain
    descriptors:
      - key: key1
        value: value1
        rate_limit:
          unit: day
          requestsperunit: 5
    """
    assert error(text, "misspelled_key2.yaml") == (
        "misspelled_key2.yaml: config error, unknown key 'requestsperunit'"
    )


def test_known_key_at_the_wrong_level_is_unknown() -> None:
    # upstream accepts (and ignores) it; the JSON Schema rejects it, and so do we
    text = """\
    domain: test-domain
    descriptors:
      - key: key1
        unit: minute
    """
    assert error(text) == "config.yaml: config error, unknown key 'unit'"


def test_keys_under_metadata_are_not_checked() -> None:
    text = """\
    domain: test-domain
    descriptors:
      - key: key1
        metadata:
          anything: {goes: [1.5, here]}
    """
    node = load(text).domains["test-domain"].root.children["key1"]
    assert node.metadata == {"anything": {"goes": [1.5, "here"]}}


def test_list_of_non_maps() -> None:
    text = """\
    domain: test-domain
    descriptors:
      - a
      - b
      - c
    """
    assert error(text, "non_map_list.yaml") == (
        "non_map_list.yaml: config error, yaml file contains list of type other than map: a"
    )


def test_list_of_non_maps_prints_nested_lists_like_go() -> None:
    text = """\
    domain: test-domain
    descriptors:
      - [a, 1, true, ~]
    """
    assert error(text) == (
        "config.yaml: config error, yaml file contains list of type other than map: "
        "[a 1 true <nil>]"
    )


@pytest.mark.parametrize("leaf", ["1.5", "08", ".5", "1e3", "18446744073709551615", ".inf"])
def test_other_leaf_type(leaf: str) -> None:
    # yaml.v2 resolves these to floats or a uint64: neither is a string, int or bool
    text = f"""\
    domain: test-domain
    descriptors:
      - key: key1
        rate_limit:
          unit: minute
          requests_per_unit: {leaf}
    """
    assert error(text) == "config.yaml: error checking config"


@pytest.mark.parametrize("text", ["", "# nothing\n", "descriptors: []\n", 'domain: ""\n'])
def test_empty_domain(text: str) -> None:
    assert error(text, "empty_domain.yaml") == (
        "empty_domain.yaml: config file cannot have empty domain"
    )


def test_missing_top_level_descriptors() -> None:
    # stricter than upstream, as the JSON Schema: descriptors is required (may be [])
    assert error("domain: test-domain\n") == (
        "config.yaml: config error, missing key 'descriptors'"
    )
    assert load("domain: test-domain\ndescriptors: []\n").domains["test-domain"].root.children == {}


def test_duplicate_domain() -> None:
    duplicate = """\
    domain: test-domain
    descriptors:
      - key: other
        rate_limit: {unit: minute, requests_per_unit: 1}
    """
    assert error_of(("basic_config.yaml", BASIC), ("duplicate_domain.yaml", duplicate)) == (
        "duplicate_domain.yaml: duplicate domain 'test-domain' in config file"
    )


def test_empty_key() -> None:
    text = """\
    domain: test-domain
    descriptors:
      - key: key1
        descriptors:
          - value: value1
            rate_limit: {unit: minute, requests_per_unit: 1}
    """
    assert error(text, "empty_key.yaml") == "empty_key.yaml: descriptor has empty key"


def test_duplicate_key() -> None:
    text = """\
    domain: test-domain
    descriptors:
      - key: key1
        value: value1
        rate_limit:
          unit: day
          requests_per_unit: 5
      - key: key1
        value: value1
        rate_limit:
          unit: minute
          requests_per_unit: 10
    """
    assert error(text, "duplicate_key.yaml") == (
        "duplicate_key.yaml: duplicate descriptor composite key 'test-domain.key1_value1'"
    )


def test_duplicate_nested_key_names_the_full_path() -> None:
    text = """\
    domain: test-domain
    descriptors:
      - key: key1
        value: value1
        descriptors:
          - key: subkey1
          - key: subkey1
    """
    assert error(text) == (
        "config.yaml: duplicate descriptor composite key 'test-domain.key1_value1.subkey1'"
    )


def test_same_key_under_different_parents_is_not_a_duplicate() -> None:
    text = """\
    domain: test-domain
    descriptors:
      - key: a
        descriptors: [{key: k, rate_limit: {unit: second, requests_per_unit: 1}}]
      - key: b
        descriptors: [{key: k, rate_limit: {unit: second, requests_per_unit: 2}}]
    """
    assert [node.full_key for node in load(text).rules()] == ["test-domain.a.k", "test-domain.b.k"]


@pytest.mark.parametrize(
    ("unit_line", "shown"),
    [("unit: foo", "foo"), ("unit: unknown", "unknown"), ("unit: UNKNOWN", "UNKNOWN"), ("", "")],
)
def test_bad_limit_unit(unit_line: str, shown: str) -> None:
    text = f"""\
    domain: test-domain
    descriptors:
      - key: key1
        rate_limit:
          requests_per_unit: 5
          {unit_line}
    """
    assert error(text, "bad_limit_unit.yaml") == (
        f"bad_limit_unit.yaml: invalid rate limit unit '{shown}'"
    )


@pytest.mark.parametrize("unit", ["second", "MINUTE", "Hour", "day", "week", "month", "year"])
def test_units_are_case_insensitive(unit: str) -> None:
    text = f"""\
    domain: d
    descriptors:
      - key: k
        rate_limit: {{unit: {unit}, requests_per_unit: 3}}
    """
    limit = load(text).domains["d"].root.children["k"].limit
    assert limit == RuleLimit(3, Unit[unit.upper()])


@pytest.mark.parametrize("unit", ["minute", "foo", '""'])
def test_unlimited_with_unit(unit: str) -> None:
    # upstream refuses a valid unit; the schema (and we) refuse any unit but `unknown`
    text = f"""\
    domain: test-domain
    descriptors:
      - key: foo
        rate_limit:
          unlimited: true
          unit: {unit}
          requests_per_unit: 5
    """
    assert error(text, "unlimited_with_unit.yaml") == (
        "unlimited_with_unit.yaml: should not specify rate limit unit when unlimited"
    )


def test_missing_requests_per_unit() -> None:
    # stricter than upstream (which would block everything with 0), as the JSON Schema
    text = """\
    domain: test-domain
    descriptors:
      - key: key1
        rate_limit:
          unit: minute
    """
    assert error(text) == (
        "config.yaml: config error, rate limit 'test-domain.key1' is missing "
        "'requests_per_unit' (required unless unlimited)"
    )


def test_requests_per_unit_zero_is_allowed() -> None:
    text = """\
    domain: test-domain
    descriptors:
      - key: banned
        rate_limit: {unit: minute, requests_per_unit: 0}
    """
    assert load(text).domains["test-domain"].root.children["banned"].limit == RuleLimit(
        0, Unit.MINUTE
    )


def test_replaces_empty() -> None:
    text = """\
    domain: test-domain
    descriptors:
      - key: key1
        rate_limit:
          name: limit1
          unit: minute
          requests_per_unit: 5
          replaces:
            - name: other
            - name: ""
    """
    assert error(text, "replaces_empty.yaml") == (
        "replaces_empty.yaml: should not have an empty replaces entry"
    )


def test_replaces_self() -> None:
    text = """\
    domain: test-domain
    descriptors:
      - key: key1
        rate_limit:
          name: limit1
          unit: minute
          requests_per_unit: 5
          replaces:
            - name: limit1
    """
    assert error(text, "replaces_self.yaml") == (
        "replaces_self.yaml: replaces should not contain name of same descriptor"
    )


def test_share_threshold_without_wildcard() -> None:
    text = """\
    domain: test-domain
    descriptors:
      - key: files
        value: files/
        share_threshold: true
        rate_limit:
          unit: minute
          requests_per_unit: 100
    """
    assert error(text) == (
        "config.yaml: share_threshold can only be used with wildcard values (containing '*'), "
        "but found key 'files_files/'"
    )


def test_share_threshold_with_a_middle_wildcard_is_fine() -> None:
    text = """\
    domain: test-domain
    descriptors:
      - key: midpath
        value: /api*v1
        share_threshold: true
        rate_limit: {unit: minute, requests_per_unit: 100}
    """
    node = load(text).domains["test-domain"].root.children["midpath_/api*v1"]
    assert node.share_threshold


def test_metadata_with_a_non_string_key() -> None:
    text = """\
    domain: test-domain
    descriptors:
      - key: key1
        metadata:
          1: one
    """
    assert error(text) == ("config.yaml: error parsing metadata: key is not of type string: 1")


def test_metadata_with_invalid_utf8() -> None:
    text = """\
    domain: test-domain
    descriptors:
      - key: key1
        metadata:
          blob: !!binary /w==
    """
    assert error(text) == (
        'config.yaml: error parsing metadata: proto: invalid UTF-8 in string: "\\xff"'
    )


def test_metadata_that_is_not_a_map() -> None:
    text = """\
    domain: test-domain
    descriptors:
      - key: key1
        metadata: service_1
    """
    assert error(text) == (
        "config.yaml: error loading config file: yaml: unmarshal errors:\n"
        "  line 4: cannot unmarshal !!str `service_1` into map[string]interface {}"
    )


# --- order of the checks ---------------------------------------------------------------------


def test_checks_inside_one_descriptor_run_in_upstream_order() -> None:
    everything_wrong = """\
    domain: test-domain
    descriptors:
      - key: key1
      - key: key1
        share_threshold: true
        metadata: {1: x}
        rate_limit:
          name: n
          unit: foo
          replaces: [{name: n}]
        descriptors:
          - value: no-key
    """
    expected = [
        "duplicate descriptor composite key 'test-domain.key1'",
        "invalid rate limit unit 'foo'",
        "replaces should not contain name of same descriptor",
        "share_threshold can only be used with wildcard values (containing '*'), "
        "but found key 'key1'",
        "error parsing metadata: key is not of type string: 1",
        "descriptor has empty key",
    ]
    text = textwrap.dedent(everything_wrong)
    fixes = [
        ("  - key: key1\n  - key: key1\n", "  - key: key0\n  - key: key1\n"),
        ("unit: foo", "unit: minute\n      requests_per_unit: 1"),
        ("replaces: [{name: n}]", "replaces: [{name: m}]"),
        ("share_threshold: true", "share_threshold: false"),
        ("metadata: {1: x}", "metadata: {one: x}"),
    ]
    for message, (old, new) in zip(expected, [*fixes, ("", "")], strict=True):
        assert error(text) == f"config.yaml: {message}"
        text = text.replace(old, new) if old else text


def test_empty_key_comes_before_anything_else() -> None:
    text = """\
    domain: test-domain
    descriptors:
      - value: v
        share_threshold: true
        rate_limit: {unit: foo}
    """
    assert error(text) == "config.yaml: descriptor has empty key"


def test_every_file_is_parsed_before_any_is_loaded() -> None:
    semantic = "domain: a\ndescriptors: [{key: k, rate_limit: {unit: foo}}]\n"
    syntax = "'''\n"
    assert error_of(("a.yaml", semantic), ("b.yaml", syntax)) == (
        "b.yaml: error loading config file: yaml: line 2: found unexpected end of stream"
    )


def test_empty_domain_comes_before_duplicate_domain() -> None:
    first = "domain: a\ndescriptors: []\n"
    assert error_of(("a.yaml", first), ("b.yaml", "descriptors: []\n")) == (
        "b.yaml: config file cannot have empty domain"
    )


# --- the tree --------------------------------------------------------------------------------


def test_basic_tree_shape() -> None:
    rules = load(BASIC, "basic_config.yaml")
    assert list(rules.domains) == ["test-domain"]
    root = rules.domains["test-domain"].root
    assert root.full_key == "test-domain"
    assert list(root.children) == [
        "key1_value1",
        "key2",
        "key2_value2",
        "key2_value3",
        "key3",
        "key5_value5",
    ]
    key1 = root.children["key1_value1"]
    assert (key1.key, key1.value, key1.limit) == ("key1", "value1", None)
    assert list(key1.children) == ["subkey1", "subkey1_subvalue1"]
    assert key1.children["subkey1"].limit == RuleLimit(5, Unit.SECOND)
    assert (
        key1.children["subkey1_subvalue1"].full_key == "test-domain.key1_value1.subkey1_subvalue1"
    )
    whitelisted = root.children["key2_value3"]
    assert whitelisted.limit is None and whitelisted.children == {}
    assert [node.full_key for node in rules.rules()] == [
        "test-domain.key1_value1.subkey1",
        "test-domain.key1_value1.subkey1_subvalue1",
        "test-domain.key2",
        "test-domain.key2_value2",
        "test-domain.key3",
        "test-domain.key5_value5",
        "test-domain.key5_value5.subkey5_subvalue5",
    ]


def test_wildcards_are_listed_in_configuration_order_on_their_level() -> None:
    text = """\
    domain: test-domain
    descriptors:
      - key: file
        value: test1
        rate_limit: {unit: minute, requests_per_unit: 50}
      - key: file
        value: test*
        rate_limit: {unit: minute, requests_per_unit: 100}
      - key: midWild
        value: bar*b
        rate_limit: {unit: minute, requests_per_unit: 1}
      - key: nestedWild
        value: val1
        descriptors:
          - key: wild
            value: goo*
            rate_limit: {unit: minute, requests_per_unit: 2}
          - key: wild
            value: foo*
            rate_limit: {unit: minute, requests_per_unit: 3}
    """
    root = load(text).domains["test-domain"].root
    assert root.wildcards == ["file_test*", "midWild_bar*b"]
    nested = root.children["nestedWild_val1"]
    assert nested.wildcards == ["wild_goo*", "wild_foo*"]
    assert nested.children["wild_goo*"].full_key == "test-domain.nestedWild_val1.wild_goo*"


def test_descriptor_fields_reach_the_node() -> None:
    text = """\
    domain: test-domain
    descriptors:
      - key: route
        value: api/*
        share_threshold: true
        value_to_metric: true
        descriptors:
          - key: method
            detailed_metric: true
            shadow_mode: true
            quota_mode: true
            metadata:
              service_with_quota:
                name: service_2
            rate_limit:
              name: per_method
              unit: minute
              requests_per_unit: 60
              replaces:
                - name: a
                - name: b
      - key: internal
        rate_limit:
          unlimited: true
    """
    root = load(text).domains["test-domain"].root
    route = root.children["route_api/*"]
    assert (route.share_threshold, route.value_to_metric, route.detailed_metric) == (
        True,
        True,
        False,
    )
    method = route.children["method"]
    assert (method.detailed_metric, method.shadow_mode, method.quota_mode) == (True, True, True)
    assert method.metadata == {"service_with_quota": {"name": "service_2"}}
    assert method.limit == RuleLimit(60, Unit.MINUTE, False, "per_method", ("a", "b"))
    assert root.children["internal"].limit == RuleLimit(0, Unit.UNKNOWN, unlimited=True)
    assert root.children["internal"].metadata is None


def test_unlimited_may_say_unknown_and_ignores_requests_per_unit() -> None:
    text = """\
    domain: d
    descriptors:
      - key: k
        rate_limit: {unlimited: true, unit: unknown, requests_per_unit: 7, name: free}
    """
    limit = load(text).domains["d"].root.children["k"].limit
    assert limit == RuleLimit(0, Unit.UNKNOWN, unlimited=True, name="free")


def test_integer_and_boolean_scalars_are_taken_as_their_text() -> None:
    text = """\
    domain: 200
    descriptors:
      - key: yes
        value: 0x1F
        rate_limit: {unit: second, requests_per_unit: 1, name: 007}
      - key: on
        value: 2024-01-31
    """
    rules = load(text)
    root = rules.domains["200"].root
    assert list(root.children) == ["yes_0x1F", "on_2024-01-31"]
    assert root.children["yes_0x1F"].limit == RuleLimit(1, Unit.SECOND, name="007")


def test_null_optional_fields_are_absent() -> None:
    text = """\
    domain: d
    descriptors:
      - key: k
        value: ~
        rate_limit: ~
        shadow_mode: ~
        metadata: ~
        descriptors: ~
    """
    node = load(text).domains["d"].root.children["k"]
    assert (node.value, node.limit, node.shadow_mode, node.metadata) == ("", None, False, None)


def test_only_the_first_document_counts() -> None:
    text = """\
    domain: first
    descriptors: []
    ---
    this is: '''not even parsed
    """
    assert list(load(text).domains) == ["first"]


def test_anchors_and_merge_keys() -> None:
    text = """\
    domain: d
    descriptors:
      - key: a
        rate_limit: &per_minute {unit: minute, requests_per_unit: 10}
      - key: b
        rate_limit:
          <<: *per_minute
          requests_per_unit: 20
    """
    root = load(text).domains["d"].root
    assert root.children["a"].limit == RuleLimit(10, Unit.MINUTE)
    assert root.children["b"].limit == RuleLimit(20, Unit.MINUTE)


def test_bytes_input() -> None:
    rules = load_rule_set([("b.yaml", b"domain: d\ndescriptors: []\n")], merge_domains=False)
    assert list(rules.domains) == ["d"]


# --- merging ---------------------------------------------------------------------------------

MERGE_1 = """\
domain: test-domain
descriptors:
  - key: key1
    rate_limit: {unit: minute, requests_per_unit: 10}
"""
MERGE_2 = """\
domain: test-domain
descriptors:
  - key: key2
    rate_limit: {unit: minute, requests_per_unit: 20}
"""


def test_merge_domains_on() -> None:
    rules = load_rule_set([("m1.yaml", MERGE_1), ("m2.yaml", MERGE_2)], merge_domains=True)
    assert list(rules.domains) == ["test-domain"]
    assert [node.full_key for node in rules.rules()] == ["test-domain.key1", "test-domain.key2"]


def test_merge_domains_off() -> None:
    assert error_of(("m1.yaml", MERGE_1), ("m2.yaml", MERGE_2)) == (
        "m2.yaml: duplicate domain 'test-domain' in config file"
    )


def test_merge_still_refuses_the_same_descriptor_twice() -> None:
    assert error_of(("m1.yaml", MERGE_1), ("m1-copy.yaml", MERGE_1), merge=True) == (
        "m1-copy.yaml: duplicate descriptor composite key 'test-domain.key1'"
    )


# --- dump ------------------------------------------------------------------------------------


def test_dump_lines() -> None:
    text = """\
    domain: foo
    descriptors:
      - key: k1
        value: v1
        rate_limit: {unit: minute, requests_per_unit: 3}
      - key: k2
        shadow_mode: true
        quota_mode: true
        rate_limit: {unlimited: true}
        descriptors:
          - key: k3
            rate_limit: {unit: day, requests_per_unit: 0}
    """
    assert dump(load(text)) == [
        "foo.k1_v1: unit=MINUTE requests_per_unit=3, shadow_mode: false, quota_mode: false",
        "foo.k2: unit=UNKNOWN requests_per_unit=0, shadow_mode: true, quota_mode: true",
        "foo.k2.k3: unit=DAY requests_per_unit=0, shadow_mode: false, quota_mode: false",
    ]


# --- already-parsed documents (xDS) ----------------------------------------------------------


def test_load_documents_shares_the_loader() -> None:
    documents = [
        (
            "foo-1",
            {
                "domain": "foo",
                "descriptors": [
                    {
                        "key": "k1",
                        "value": "v1",
                        "rate_limit": {"unit": "MINUTE", "requests_per_unit": 3},
                    },
                    {
                        "key": "k2",
                        "rate_limit": {
                            "unit": "UNKNOWN",
                            "requests_per_unit": 0,
                            "unlimited": True,
                        },
                    },
                ],
            },
        ),
        (
            "foo-2",
            {
                "domain": "foo",
                "descriptors": [
                    {
                        "key": "k3",
                        "rate_limit": {"unit": "SECOND", "requests_per_unit": 1},
                        "metadata": {"a": 1.5},
                    }
                ],
            },
        ),
    ]
    rules = load_documents(documents, merge_domains=True)
    assert dump(rules) == [
        "foo.k1_v1: unit=MINUTE requests_per_unit=3, shadow_mode: false, quota_mode: false",
        "foo.k2: unit=UNKNOWN requests_per_unit=0, shadow_mode: false, quota_mode: false",
        "foo.k3: unit=SECOND requests_per_unit=1, shadow_mode: false, quota_mode: false",
    ]
    assert rules.domains["foo"].root.children["k3"].metadata == {"a": 1.5}
    with pytest.raises(ConfigError) as caught:
        load_documents(documents, merge_domains=False)
    assert str(caught.value) == "foo-2: duplicate domain 'foo' in config file"


@pytest.mark.parametrize(
    ("document", "message"),
    [
        ({"domain": "d", "descriptors": [], "extra": 1}, "config error, unknown key 'extra'"),
        ({"domain": "d", "descriptors": [{"key": 1.5}]}, "error checking config"),
        (
            {"domain": "d", "descriptors": ["x"]},
            "config error, yaml file contains list of type other than map: x",
        ),
        (
            {
                "domain": "d",
                "descriptors": [
                    {"key": "k", "rate_limit": {"unit": "MINUTE", "requests_per_unit": "5"}}
                ],
            },
            "error loading config file: yaml: unmarshal errors:\n"
            "  cannot unmarshal !!str `5` into uint32",
        ),
        ({"domain": "", "descriptors": []}, "config file cannot have empty domain"),
    ],
)
def test_load_documents_messages(document: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        load_documents([("xds-config", document)], merge_domains=False)
    assert str(caught.value) == f"xds-config: {message}"
    assert caught.value.config_name == "xds-config"
    assert caught.value.message == message


# --- yaml.v2 details -------------------------------------------------------------------------


def test_self_referencing_anchor() -> None:
    assert error("domain: d\ndescriptors: &loop [*loop]\n") == (
        "config.yaml: error loading config file: yaml: anchor 'loop' value contains itself"
    )


def test_excessive_aliasing() -> None:
    lines = ["l0: &l0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 10)}]" for i in range(1, 8)]
    assert error("\n".join(lines) + "\n") == (
        "config.yaml: error loading config file: yaml: document contains excessive aliasing"
    )


def test_excessive_depth() -> None:
    assert error("domain: " + "[" * 150 + "]" * 150 + "\n") == (
        "config.yaml: error loading config file: yaml: exceeded max depth of 100"
    )


def test_merge_of_several_maps_first_wins() -> None:
    text = """\
    domain: d
    descriptors:
      - key: k
        rate_limit:
          <<: [{unit: second, requests_per_unit: 1}, {unit: hour, requests_per_unit: 2}]
    """
    assert load(text).domains["d"].root.children["k"].limit == RuleLimit(1, Unit.SECOND)


def test_merge_of_a_scalar() -> None:
    assert error("domain: d\ndescriptors: []\n<<: 5\n") == (
        "config.yaml: error loading config file: yaml: "
        "map merge requires map or sequence of maps as the value"
    )


def test_explicit_tags() -> None:
    text = """\
    domain: !!str 5
    descriptors:
      - key: !custom k
        rate_limit: {unit: minute, requests_per_unit: !!int "7"}
    """
    rules = load(text)
    assert rules.domains["5"].root.children["k"].limit == RuleLimit(7, Unit.MINUTE)
    assert error("domain: !!int abc\ndescriptors: []\n") == (
        "config.yaml: error loading config file: yaml: cannot decode !!str `abc` as a !!int"
    )


@pytest.mark.parametrize("word", ["y", "n", "on", "off", "No", "TRUE"])
def test_yaml_1_1_booleans_are_booleans(word: str) -> None:
    text = f"""\
    domain: d
    descriptors:
      - key: k
        shadow_mode: {word}
    """
    expected = word.lower() in ("y", "on", "true")
    assert load(text).domains["d"].root.children["k"].shadow_mode is expected


def test_config_error_round_trips_through_pickle() -> None:
    error = ConfigError("a.yaml", "descriptor has empty key")
    copy = pickle.loads(pickle.dumps(error))
    assert (str(copy), copy.config_name, copy.message) == (
        "a.yaml: descriptor has empty key",
        "a.yaml",
        "descriptor has empty key",
    )
