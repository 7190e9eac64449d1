"""DRIFT search offline, on the tiny hand-built graph (real Parquet, LanceDB and MiniLM vectors), on an
empty namespace and on the sample book (samples/demo indexed through the Dagster job)."""

from __future__ import annotations

import asyncio
import json

import pytest

from pipeline.api import drift_search
from pipeline.core import schema
from pipeline.engine.offline import OfflineEngine
from pipeline.io.store import NamespaceStore, TableNotFoundError
from pipeline.query.common.scope import QueryScope
from pipeline.query.drift.search import DriftSearchConfig, DriftSearchError, drift_search_async
from tests.support.empty_index import build_empty_index

QUESTION = "How is Scrooge related to Bob Cratchit?"


def run(store, embedder, cfg=None, question=QUESTION):
    cfg = cfg or DriftSearchConfig()
    return asyncio.run(drift_search_async(QueryScope(store, OfflineEngine(), embedder), question, cfg))


def test_offline_drift_answers_with_a_tree_whose_citations_resolve_to_rows(tiny, embedder):
    result = run(tiny, embedder)
    assert result.status == "completed", result.reason
    root = result.nodes[0]
    assert root.parent is None and root.status == "answered" and root.score > 0 and root.communities
    # Follow-ups name entities of the index, hang under their parent and are answered by local search.
    followers = [n for n in result.nodes if n.parent is not None]
    assert followers and all(n.id in result.nodes[n.parent].children for n in followers)
    answered = [n for n in followers if n.status == "answered"]
    assert answered and all(n.answer and n.citations for n in answered)
    # At most `breadth` follow-ups ran per round, `depth` rounds.
    cfg = DriftSearchConfig()
    for depth in range(1, cfg.depth + 1):
        assert sum(1 for n in followers if n.depth == depth and n.status != "open") <= cfg.breadth
    u = result.usage
    assert u["primer_calls"] == min(cfg.primer_folds, len(root.communities))
    assert u["follow_up_calls"] == len(answered) <= cfg.depth * cfg.breadth
    assert u["reduce_calls"] == 1 and u["max_calls"] == cfg.max_calls == 9
    # The final answer cites rows of the steps' contexts: reports of the namespace, passages with offsets.
    assert result.citations and result.unresolved_citations == []
    communities = set(tiny.read_table(schema.COMMUNITIES).column("community").to_pylist())
    units = {u["id"]: u for u in tiny.read_table(schema.TEXT_UNITS).to_pylist()}
    for c in result.citations:
        if c["section"] == "reports":
            assert c["community"] in communities
        if c["section"] == "sources":
            unit = units[c["text_unit_id"]]
            assert (c["start_char"], c["end_char"]) == (unit["start_char"], unit["end_char"])
    tree = result.to_dict()["tree"]
    assert tree["id"] == 0 and {c["id"] for c in tree["children"]} == set(root.children)


def test_depth_zero_is_the_primer_and_the_reduce_only(tiny, embedder):
    result = run(tiny, embedder, DriftSearchConfig(depth=0))
    assert result.status == "completed" and [n.id for n in result.nodes] == [0]
    assert result.usage["follow_up_calls"] == 0 and result.usage["max_calls"] == 2 + 0 + 1


def test_an_unrelated_question_is_no_results_before_any_call(tiny, embedder):
    result = run(tiny, embedder, question="What is the boiling point of liquid nitrogen in kelvin?")
    assert result.status == "no_results" and "relevant" in result.reason
    assert result.nodes == [] and result.usage["primer_calls"] == 0


def test_an_empty_namespace_is_no_results_and_an_unindexed_one_is_not_ready(tmp_path, embedder):
    empty = NamespaceStore(tmp_path / "st", "empty")
    build_empty_index(empty, embedder.dimension)
    result = run(empty, embedder)
    assert result.status == "no_results" and result.reason == "the namespace has no community reports"
    with pytest.raises(TableNotFoundError):
        run(NamespaceStore(tmp_path / "st", "never-indexed"), embedder)


@pytest.mark.parametrize(
    "overrides",
    [{"depth": -1}, {"breadth": 0}, {"primer_k": 0}, {"primer_folds": 2.5}, {"community_level": -1}],
)
def test_invalid_settings_are_clear_errors(overrides):
    with pytest.raises(DriftSearchError):
        DriftSearchConfig(**overrides)


def test_a_level_the_namespace_lacks_is_a_clear_error(tiny, embedder):
    with pytest.raises(DriftSearchError, match="does not exist"):
        run(tiny, embedder, DriftSearchConfig(community_level=9))


def test_on_the_sample_book_drift_answers_with_citations_to_the_book(sample_book):
    from pipeline.settings import Settings

    result = drift_search(
        "demo", "What happens at Fezziwig's party?", settings=Settings(storage_root=sample_book)
    )
    assert result.status == "completed", result.reason
    assert "Fezziwig" in result.answer and result.unresolved_citations == []
    store = NamespaceStore(sample_book, "demo")
    ids = {
        "reports": ("community", schema.COMMUNITIES, "community"),
        "entities": ("entity_id", schema.ENTITIES, "id"),
        "relationships": ("relationship_id", schema.RELATIONSHIPS, "id"),
        "claims": ("claim_id", schema.COVARIATES, "id"),
        "sources": ("text_unit_id", schema.TEXT_UNITS, "id"),
    }
    for c in result.citations:  # every cited row is a row of the namespace's tables
        key, table, column = ids[c["section"]]
        assert c[key] in set(store.read_table(table, columns=[column]).column(column).to_pylist()), c
    # The follow-ups' local evidence made it into the answer, not only the primer's reports.
    assert {c["section"] for c in result.citations} - {"reports"}
    assert any("Fezziwig" in n.question for n in result.nodes[1:])  # a follow-up about him
    assert result.usage["primer_calls"] + result.usage["follow_up_calls"] + 1 <= result.usage["max_calls"]


def test_saved_drift_answers_keep_the_tree(tiny, embedder, tmp_path):
    from pipeline.query.saved_questions import write_answers
    from pipeline.settings import Settings

    parts = {"settings": Settings(), "engine": OfflineEngine(), "embedder": embedder}
    answers = write_answers("drift", tiny, [QUESTION], given={"depth": 1}, **parts)
    (row,) = tiny.read_table("query_drift_answers").to_pylist()
    assert row["status"] == "completed" and row["max_calls"] == 2 + 3 + 1
    assert row["model_calls"] <= row["max_calls"] and row["nodes"] >= row["answered"] > 1
    assert QUESTION in answers.markdown
    nodes = json.loads(row["tree_json"])
    assert nodes[0]["id"] == 0 and all(n["parent"] == 0 for n in nodes[1:])  # depth 1: children of the primer
