"""The vector tool's filter language at its edges: field names checked whole (`fullmatch`), NaN and
Infinity refused, values with quotes and backslashes quoted into LanceDB's SQL so that they find exactly
their rows, and a filter that does not fit the table refused by name with what is allowed, never with
LanceDB's own message (a Rust source path, the table's schema).

A real LanceDB table; the embedder is a constant (the filter, not the ranking, is under test)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from pipeline.io.store import NamespaceStore
from pipeline.vector_tool import FilterError, LanceDBStore, create_vector_query_tool, parse_filter
from pipeline.vector_tool.stores.lancedb import filter_sql

TITLES = ["O'Brien.txt", "back\\slash.txt", "plain.txt", "it''s.txt", "x' OR 'a'='a", "tail\\'.txt"]


class ConstantEmbedder:
    dimension = 4

    def embed(self, texts):
        return np.ones((len(texts), 4), dtype=np.float32)


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> LanceDBStore:
    ns = NamespaceStore(tmp_path_factory.mktemp("filters"), "t")
    rows = [
        {
            "id": f"u{i}",
            "text": f"row {i}",
            "document_title": title,
            "n_tokens": i * 10,
            "flag": i % 2 == 0,
            "weight": i * 0.5,
            "vector": np.eye(4, dtype=np.float32)[i % 4].tolist(),
        }
        for i, title in enumerate(TITLES)
    ]
    ns.replace_lance_table("items", pa.Table.from_pylist(rows))
    return LanceDBStore(ns)


def search(store: LanceDBStore, filter: object) -> dict:
    tool = create_vector_query_tool("items", ConstantEmbedder(), store=store, enable_filter=True)
    return tool.execute({"query_text": "q", "top_k": 20, "filter": json.dumps(filter)})


def titles(out: dict) -> set[str]:
    assert "error" not in out, out["error"]
    return {s["metadata"]["document_title"] for s in out["sources"]}


@pytest.mark.parametrize("title", TITLES)
def test_a_value_with_quotes_or_backslashes_finds_exactly_its_row(store: LanceDBStore, title: str) -> None:
    assert titles(search(store, {"document_title": title})) == {title}
    assert titles(search(store, {"document_title": {"$ne": title}})) == set(TITLES) - {title}


def test_in_and_nin_quote_each_value(store: LanceDBStore) -> None:
    picked = ["O'Brien.txt", "back\\slash.txt", "x' OR 'a'='a"]
    assert titles(search(store, {"document_title": {"$in": picked}})) == set(picked)
    assert titles(search(store, {"document_title": {"$nin": picked}})) == set(TITLES) - set(picked)
    # a quote cannot close the literal and add a condition of its own
    assert titles(search(store, {"document_title": "x' OR 'a'='a"})) == {"x' OR 'a'='a"}


def test_null_in_a_list_is_null_not_the_string_none(store: LanceDBStore) -> None:
    assert "NULL" in filter_sql({"n_tokens": {"$in": [10, None]}})
    assert titles(search(store, {"n_tokens": {"$in": [10, None]}})) == {TITLES[1]}


@pytest.mark.parametrize("field", ["i\n", "i\r\n", "title\n", "a b", "1a", "a-b", "a.b", ""])
def test_a_field_name_is_checked_whole(field: str) -> None:
    with pytest.raises(FilterError, match="invalid field name"):
        parse_filter({field: 1})


@pytest.mark.parametrize(
    "filter",
    [
        '{"weight": NaN}',
        '{"weight": {"$gt": Infinity}}',
        '{"weight": {"$lt": -Infinity}}',
        '{"weight": {"$in": [1, NaN]}}',
        {"weight": float("nan")},
        {"$or": [{"weight": float("inf")}]},
    ],
)
def test_nan_and_infinity_are_refused(filter: object) -> None:
    with pytest.raises(FilterError, match="'weight'.*finite"):
        parse_filter(filter)


def test_nan_never_reaches_lancedb_as_a_bare_name(store: LanceDBStore) -> None:
    out = search(store, {"weight": {"$gt": float("nan")}})
    assert out["sources"] == [] and "FilterError" in out["error"] and "finite" in out["error"]


def test_an_integer_beyond_64_bits_is_refused() -> None:
    with pytest.raises(FilterError, match="'n_tokens'.*64"):
        parse_filter({"n_tokens": 10**30})


def test_a_filter_nested_too_deeply_is_refused() -> None:
    node: dict = {"a": 1}
    for _ in range(200):
        node = {"$and": [node]}
    with pytest.raises(FilterError, match="nested"):
        parse_filter(node)


@pytest.mark.parametrize(
    ("filter", "needles"),
    [
        ({"nosuch": 1}, ["'nosuch'", "document_title", "n_tokens"]),
        ({"vector": 1}, ["'vector'", "document_title"]),
        ({"n_tokens": "abc"}, ["'n_tokens'", "integer"]),
        ({"n_tokens": 1.5}, ["'n_tokens'", "integer"]),
        ({"document_title": 3}, ["'document_title'", "string"]),
        ({"document_title": {"$gt": 5}}, ["'document_title'", "string"]),
        ({"flag": 1}, ["'flag'", "true or false"]),
        ({"weight": True}, ["'weight'", "number"]),
        ({"n_tokens": {"$in": [1, "two"]}}, ["'n_tokens'", "integer"]),
        ({"$or": [{"plain": 1}, {"n_tokens": 1}]}, ["'plain'"]),
    ],
)
def test_a_filter_that_does_not_fit_the_table_is_named_without_internals(
    store: LanceDBStore, filter: dict, needles: list[str]
) -> None:
    out = search(store, filter)
    assert out["sources"] == [] and out["error"].startswith("FilterError"), out
    for needle in needles:
        assert needle in out["error"], out["error"]
    for leak in (
        "/root/",
        ".rs",
        "cargo",
        "Schema error",
        "FixedSizeList",
        "Int64",
        "Utf8",
        str(Path.home()),
    ):
        assert leak not in out["error"], out["error"]


def test_matching_filters_still_find_their_rows(store: LanceDBStore) -> None:
    assert titles(search(store, {"weight": {"$gte": 2}, "flag": True})) == {TITLES[4]}
    assert titles(search(store, {"n_tokens": {"$lt": 20}, "weight": 0})) == {TITLES[0]}
