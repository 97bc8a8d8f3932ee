"""The metadata and filter grammars, hostile input included, and their translation into each
store's filter language (LanceDB SQL, Weaviate filters)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from handlers.rag.filters import (
    MAX_CONDITIONS,
    MAX_DEPTH,
    MAX_IN,
    AllOf,
    AnyOf,
    Equals,
    FilterError,
    Range,
    matches,
    parse_filter,
)
from handlers.rag.metadata import (
    MAX_KEYS,
    MetadataError,
    MetadataValue,
    check_collection,
    metadata_terms,
    parse_metadata,
    term,
)
from handlers.rag.stores.lancedb_where import where_sql
from handlers.rag.stores.weaviate_where import weaviate_where

DOC: dict[str, MetadataValue] = {
    "year": 2021,
    "dept": "finance",
    "tags": ["q1", "audited"],
    "draft": False,
    "score": 0.5,
}


@pytest.mark.parametrize(
    ("condition", "expected"),
    [
        ({}, True),
        ({"year": 2021}, True),
        ({"year": 2021.0}, True),
        ({"year": "2021"}, False),  # typed: a string is not the number
        ({"draft": False}, True),
        ({"draft": 0}, False),  # a boolean is not a number
        ({"tags": "audited"}, True),  # a list contains it
        ({"tags": {"$in": ["x", "q1"]}}, True),
        ({"year": {"$gte": 2020, "$lt": 2021}}, False),
        ({"year": {"$gt": 2020, "$lte": 2021}}, True),
        ({"dept": {"$gt": 1}}, False),  # ranges hold for numbers only
        ({"missing": 1}, False),
        ({"$or": [{"dept": "legal"}, {"score": {"$lt": 1}}]}, True),
        ({"$and": [{"dept": "finance"}, {"year": {"$in": [1999, 2000]}}]}, False),
        ({"dept": "finance", "year": {"$eq": 2021}}, True),
    ],
)
def test_filters_hold_as_documented(condition: dict[str, Any], expected: bool) -> None:
    assert matches(parse_filter(condition), DOC) is expected


def test_a_filter_parses_into_its_tree() -> None:
    parsed = parse_filter({"year": {"$gte": 2020, "$gt": 2020}, "$or": [{"a": 1}, {"b": "x"}]})
    assert parsed == AllOf(
        (
            Range("year", 2020.0, False, None, True),
            AnyOf((Equals("a", (1,)), Equals("b", ("x",)))),
        )
    )
    assert parse_filter(None) is None
    assert parse_filter({}) is None


def nested(depth: int) -> dict[str, Any]:
    condition: dict[str, Any] = {"a": 1}
    for _ in range(depth):
        condition = {"$or": [condition]}
    return condition


@pytest.mark.parametrize(
    ("condition", "path", "message"),
    [
        ([], (), "JSON object"),
        ("year = 1", (), "JSON object"),
        ({"$where": "1"}, ("$where",), "unknown operator"),
        ({"year": {"$regex": "."}}, ("year", "$regex"), "unknown operator"),
        ({"year": {}}, ("year",), "at least one operator"),
        ({"year": [1, 2]}, ("year",), "a value is"),
        ({"year": None}, ("year",), "a value is"),
        ({"year": {"$gt": "2020"}}, ("year", "$gt"), "a number"),
        ({"year": {"$gt": True}}, ("year", "$gt"), "a number"),
        ({"year": {"$in": []}}, ("year", "$in"), "1 to"),
        ({"year": {"$in": list(range(MAX_IN + 1))}}, ("year", "$in"), "1 to"),
        ({"year": {"$in": [1, {"x": 1}]}}, ("year", "$in", 1), "a value is"),
        ({"$or": []}, ("$or",), "1 to"),
        ({"$or": {"a": 1}}, ("$or",), "1 to"),
        ({"$and": [1]}, ("$and", 0), "JSON object"),
        ({"it's": 1}, ("it's",), "metadata key"),
        ({"a'; DROP TABLE chunks; --": 1}, ("a'; DROP TABLE chunks; --",), "metadata key"),
        ({"": 1}, ("",), "metadata key"),
        ({"k" * 65: 1}, ("k" * 65,), "metadata key"),
        ({"a": "x" * 1025}, ("a",), "at most"),
    ],
)
def test_hostile_filters_are_refused_with_their_place(
    condition: object, path: tuple[str | int, ...], message: str
) -> None:
    with pytest.raises(FilterError, match=message) as caught:
        parse_filter(condition)
    assert caught.value.path == path


def test_nesting_and_size_are_bounded() -> None:
    assert parse_filter(nested(MAX_DEPTH)) is not None
    with pytest.raises(FilterError, match="nest at most"):
        parse_filter(nested(MAX_DEPTH + 1))
    with pytest.raises(FilterError, match="nest at most"):
        parse_filter(nested(10_000))  # refused at its depth limit, never recursed through
    many = {"$and": [{f"k{i}": i for i in range(MAX_CONDITIONS // 2 + 1)}] * 2}
    with pytest.raises(FilterError, match="key conditions"):
        parse_filter(many)
    with pytest.raises(FilterError, match="finite"):
        parse_filter({"a": {"$lt": 10**400}})


def test_quotes_in_values_never_reach_the_sql() -> None:
    hostile = "x' OR '1'='1"
    sql = where_sql("default", parse_filter({"name": hostile, "n": {"$gte": -1.5e-7}}))
    assert hostile not in sql and "OR '1'" not in sql
    assert term("name", hostile) in sql
    assert sql.startswith("collection = 'default' AND (array_has_any(meta_terms, ['")
    assert "map_extract(meta_numbers, 'n')[1] >= CAST('-1.5e-07' AS DOUBLE)" in sql
    with pytest.raises(MetadataError):
        where_sql("x' OR 1=1 --", None)


def test_empty_branches_translate_to_constants() -> None:
    assert where_sql("c", AnyOf(())) == "collection = 'c' AND FALSE"
    assert where_sql("c", AllOf(())) == "collection = 'c' AND TRUE"
    assert where_sql("c", Equals("a", ())) == "collection = 'c' AND FALSE"


def values(where: Any) -> list[Any]:
    """The values a Weaviate filter tree compares with, depth first."""
    if hasattr(where, "filters"):
        return [value for item in where.filters for value in values(item)]
    return [where.value]


def test_weaviate_filters_name_the_collection_and_the_terms() -> None:
    translated = weaviate_where("legal", parse_filter({"$or": [{"a": 1}, {"b": {"$in": ["x"]}}]}))
    assert values(translated) == ["legal", [term("a", 1)], [term("b", "x")]]
    assert values(weaviate_where("legal", AllOf(()))) == ["legal"]
    assert values(weaviate_where("legal", AnyOf(()))) == ["legal", ["none"]]
    with pytest.raises(ValueError, match="range"):
        weaviate_where("legal", Range("a", 1.0))


def test_metadata_is_checked_and_typed() -> None:
    text = json.dumps(DOC)
    assert parse_metadata(text) == DOC
    assert parse_metadata(None) == parse_metadata("  ") == {}
    assert parse_metadata('{"n": 3.0}') == {"n": 3}
    assert metadata_terms({"n": 3.0}) == metadata_terms({"n": 3}) != metadata_terms({"n": "3"})
    assert metadata_terms({"t": ["a", "a"]}) == [term("t", "a")]


@pytest.mark.parametrize(
    "text",
    [
        "[]",
        "not json",
        '{"a": null}',
        '{"a": {"b": 1}}',
        '{"a": [1]}',
        '{"a": NaN}',
        '{"a": 1e999}',
        '{"bad key": 1}',
        '{"$a": 1}',
        json.dumps({f"k{i}": i for i in range(MAX_KEYS + 1)}),
        json.dumps({"a": "x" * 9000}),
        "[" * 100_000,
        '{"a": ' + "9" * 5000 + "}",
    ],
)
def test_bad_metadata_is_refused(text: str) -> None:
    with pytest.raises(MetadataError):
        parse_metadata(text)


def test_collection_names_follow_their_grammar() -> None:
    assert check_collection("team-a_2") == "team-a_2"
    for bad in ("", "Team", "-a", "a" * 65, "a'b", "a b", "ä"):
        with pytest.raises(MetadataError):
            check_collection(bad)
