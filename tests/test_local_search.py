"""Local search on a tiny hand-built graph (real Parquet, real LanceDB, real MiniLM vectors)."""

from __future__ import annotations

import asyncio
import dataclasses

import numpy as np
import pytest

from pipeline.core import schema
from pipeline.core.rrf import reciprocal_rank_fusion
from pipeline.engine.offline import OfflineEngine
from pipeline.io.store import NamespaceStore
from pipeline.query.common.scope import QueryScope
from pipeline.query.local.search import LocalSearchConfig, LocalSearchError, local_search_async
from pipeline.query.retrieval.community_rank import expand, topology_candidates
from pipeline.query.retrieval.entity_match import (
    MatchOptions,
    alias_channel,
    exact_channel,
    fuzzy_channel,
    match_entities,
    semantic_channel,
)
from pipeline.query.retrieval.intent import QueryIntent, offline_intent
from pipeline.query.retrieval.local_index import load_local_index
from tests.support.tiny_index import PARAGRAPHS, build_tiny_index, eid


@pytest.fixture(scope="module")
def tiny_and_text(tiny: NamespaceStore) -> tuple[NamespaceStore, str]:
    """The shared tiny namespace (conftest's `tiny`) and its one document's text."""
    return tiny, "\n\n".join(PARAGRAPHS)


def entities_of(store):
    return load_local_index(store).entities


def test_rrf_arithmetic():
    fused = dict(reciprocal_rank_fusion([["a", "b"], ["b", "c"]], k=60))
    assert fused["a"] == pytest.approx(1 / 61)
    assert fused["b"] == pytest.approx(1 / 62 + 1 / 61)
    assert fused["c"] == pytest.approx(1 / 62)
    assert [x for x, _ in reciprocal_rank_fusion([["a", "b"], ["b", "c"]], k=60)] == ["b", "a", "c"]


def test_exact_channel_matches_names_on_word_boundaries(tiny_and_text):
    store, _ = tiny_and_text
    hits = [h for h, _ in exact_channel("How is Jacob Marley related to London?", entities_of(store))]
    assert hits == [eid("marley"), eid("london")]  # longer name first
    assert exact_channel("Is Londoner a word?", entities_of(store)) == []


def test_alias_channel_uses_resolution_aliases(tiny_and_text):
    store, _ = tiny_and_text
    assert [h for h, _ in alias_channel("What did Scrooge want?", entities_of(store))] == [eid("scrooge")]


def test_fuzzy_channel_tolerates_a_misspelling(tiny_and_text):
    store, _ = tiny_and_text
    q = "Where did Bob Cratchet work?"
    hits = [h for h, _ in fuzzy_channel(q, offline_intent(q), entities_of(store), 85)]
    assert hits[0] == eid("cratchit")


def test_semantic_channel_uses_precomputed_entity_vectors(tiny_and_text, embedder):
    store, _ = tiny_and_text
    before = embedder.computed + embedder.cache_hits
    vector = embedder.embed(["a miserly, cold-hearted old man"])[0]
    hits = semantic_channel(store, vector, threshold=0.1, top_k=3)
    assert hits[0][0] == eid("scrooge")
    assert embedder.computed + embedder.cache_hits == before + 1  # only the question was embedded


def test_tables_too_large_to_hold_are_searched_in_lancedb_with_the_same_rows(
    tiny_and_text, embedder, tmp_path, monkeypatch
):
    # The in-memory search (tiny's store) and LanceDB's (a second store of the same index, with every
    # table over the row limit) must give the same entities, report candidates and report vectors.
    from pipeline.query.caches import vector_cache
    from pipeline.query.retrieval.community_rank import report_vectors, semantic_candidates

    held, _ = tiny_and_text
    big = NamespaceStore(tmp_path, "tiny")
    build_tiny_index(big, embedder)
    vector = embedder.embed(["a miserly, cold-hearted old man and his clerk"])[0]
    communities = sorted(load_local_index(held).communities)
    in_memory = (
        semantic_channel(held, vector, threshold=0.0, top_k=4),
        semantic_candidates(load_local_index(held), vector, None, 3),
        report_vectors(held, communities),
    )
    monkeypatch.setattr(vector_cache, "MAX_ROWS", 0)
    assert vector_cache.nearest(big, schema.LANCE_ENTITIES, "id", vector, 4) is None
    in_lance = (
        semantic_channel(big, vector, threshold=0.0, top_k=4),
        semantic_candidates(load_local_index(big), vector, None, 3),
        report_vectors(big, communities),
    )
    for ours, theirs in zip(in_memory[:2], in_lance[:2], strict=True):
        assert [k for k, _ in ours] == [k for k, _ in theirs] and ours
        assert np.allclose([v for _, v in ours], [v for _, v in theirs], atol=1e-5)
    assert in_memory[2].keys() == in_lance[2].keys() and in_memory[2]
    assert all(np.allclose(in_memory[2][c], in_lance[2][c]) for c in communities if c in in_memory[2])


def test_seed_cap_and_intent_merge(tiny_and_text):
    store, _ = tiny_and_text
    q = "Scrooge, Marley, Cratchit and Tiny Tim in London"
    intent = QueryIntent(entities=["Fezziwig"], keywords=[], themes=[])
    seeds = match_entities(q, intent, entities_of(store), store, None, MatchOptions(max_seeds=2))
    assert len([s for s in seeds if "intent" not in s.channels]) == 2
    assert seeds[-1].id == eid("fezziwig") and seeds[-1].channels == {"intent": 1.0}


def test_two_hop_expansion_and_level_lifting(tiny_and_text):
    store, _ = tiny_and_text
    index = load_local_index(store)
    assert set(expand(index, [eid("tim")], 1)) == {eid("tim"), eid("cratchit")}
    assert set(expand(index, [eid("tim")], 2)) == {eid("tim"), eid("cratchit"), eid("scrooge")}
    reached = expand(index, [eid("tim")], 2)
    assert topology_candidates(index, reached, None) == [2, 4]  # leaves
    assert topology_candidates(index, reached, 0) == [0, 1]  # lifted through parents
    assert index.lift(4, 0) == 1 and index.lift(1, 1) == 1


def run_local(store, question, embedder, **cfg):
    return asyncio.run(
        local_search_async(QueryScope(store, OfflineEngine(), embedder), question, LocalSearchConfig(**cfg))
    )


def test_a_result_as_a_dict_equals_asdict_and_editing_it_leaves_the_result_alone(tiny_and_text, embedder):
    store, _ = tiny_and_text
    result = run_local(store, "How is Scrooge related to Jacob Marley?", embedder)
    out = result.to_dict()
    assert out == dataclasses.asdict(result)
    out["passages"][0]["signals"]["edited"] = 1
    out["seeds"].clear()
    assert "edited" not in result.passages[0]["signals"] and result.seeds


def test_offline_local_search_cites_evidence_that_maps_back_to_the_source(tiny_and_text, embedder):
    store, text = tiny_and_text
    result = run_local(store, "How is Scrooge related to Jacob Marley?", embedder)
    assert result.status == "completed"
    assert {s["title"] for s in result.seeds} >= {"Ebenezer Scrooge", "Jacob Marley"}
    assert result.communities[0]["id"] == 2
    assert set(result.communities[0]["matched_entities"]) == {"Ebenezer Scrooge", "Jacob Marley"}
    kinds = {e["kind"] for e in result.evidence}
    assert kinds == {"chunk", "claim"}
    for ev in result.evidence:
        assert ev["document_title"] == "carol.txt"
        assert text[ev["start_char"] : ev["end_char"]] == ev["text"]
    claim = next(e for e in result.evidence if e["kind"] == "claim")
    assert claim["text"] == "Marley had been dead seven years."
    # a claim names the text unit it came from, whose span holds the quote
    unit = load_local_index(store).text_units[claim["text_unit_id"]]
    assert unit["start_char"] <= claim["start_char"] < claim["end_char"] <= unit["end_char"]
    # The offline answer cites context rows as the LLM's does, and every citation resolves to one.
    assert "[Data: " in result.answer and result.citations, result.answer
    assert result.unresolved_citations == []
    rows = {(r["section"], r["id"]) for r in result.context_rows}
    assert {(c["section"], c["id"]) for c in result.citations} <= rows
    for c in result.citations:
        if c["section"] == "sources":
            assert c["document_title"] == "carol.txt" and c["end_char"] > c["start_char"]


def test_requested_level_is_validated_and_used(tiny_and_text, embedder):
    store, _ = tiny_and_text
    result = run_local(store, "Tell me about Tiny Tim", embedder, community_level=0)
    assert {c["level"] for c in result.communities} == {0}
    with pytest.raises(LocalSearchError, match="does not exist"):
        run_local(store, "Tiny Tim", embedder, community_level=7)
    with pytest.raises(LocalSearchError, match="non-negative"):
        run_local(store, "Tiny Tim", embedder, community_level=-1)


class _Unreachable:
    """The same vectors under a calibration whose `relevant` level no cosine reaches."""

    def __init__(self, inner) -> None:
        self.inner = inner
        self.calibration = dataclasses.replace(inner.calibration, relevant=2.0)

    def __getattr__(self, name):
        return getattr(self.inner, name)


def test_offline_selector_falls_back_to_the_ranking_when_nothing_passes(tiny_and_text, embedder):
    from pipeline.query.local.search import LocalSearchResult
    from pipeline.query.retrieval.local_retrieval import _select

    store, _ = tiny_and_text
    question = "What was the weather like that Christmas Eve?"
    candidates = [{**c, "matched_entities": []} for c in run_local(store, question, embedder).communities]
    result = LocalSearchResult(question, "completed")
    chosen = asyncio.run(
        _select(QueryScope(store, OfflineEngine(), _Unreachable(embedder)), question, candidates, result)
    )
    assert (
        chosen == candidates
        and result.selection == "fallback"
        and "used the ranking" in result.fallbacks["selection"]
    )


def test_an_unrelated_question_is_no_results_with_the_reason(tiny_and_text, embedder):
    store, _ = tiny_and_text
    result = run_local(store, "What is the airspeed velocity of an unladen swallow?", embedder)
    assert result.status == "no_results" and not result.seeds
    assert "relevance floor 0.25" in result.reason and result.communities == []
    assert result.selection == "" and result.context == {}  # no selector call, no context built


def test_top_k_and_level_are_validated_with_a_clear_error():
    for bad in (-1, 0, 2.5, True, "3"):
        with pytest.raises(LocalSearchError, match=f"top_k must be a positive integer, got {bad!r}"):
            LocalSearchConfig(top_k=bad)
    with pytest.raises(LocalSearchError, match="non-negative integer, got 1.5"):
        LocalSearchConfig(community_level=1.5)


def test_a_branch_that_stops_above_the_level_adds_no_community():
    from types import SimpleNamespace

    from pipeline.query.retrieval.local_index import LocalIndex

    communities = {
        0: {"community": 0, "level": 0, "parent": -1, "children": [2]},
        1: {"community": 1, "level": 0, "parent": -1, "children": []},  # a leaf at level 0
        2: {"community": 2, "level": 1, "parent": 0, "children": []},
    }
    index = SimpleNamespace(communities=communities, leaf_of={"a": 2, "b": 1})
    index.lift = lambda c, level: LocalIndex.lift(index, c, level)
    assert topology_candidates(index, ["a", "b"], 1) == [2]  # not community 1, which is level 0
    assert topology_candidates(index, ["a", "b"], 0) == [0, 1]
    assert topology_candidates(index, ["a", "b"], None) == [1, 2]


def test_the_wrappers_arguments_override_the_config_which_overrides_the_defaults(tiny_and_text, embedder):
    from pipeline.api import local_search
    from pipeline.settings import Settings

    store, _ = tiny_and_text
    settings = Settings(storage_root=store.storage_root)
    config = LocalSearchConfig(top_k=1, community_level=0)
    result = local_search(
        "tiny",
        "How is Scrooge related to Jacob Marley?",
        settings=settings,
        engine=OfflineEngine(),
        embedder=embedder,
        config=config,
    )
    assert len(result.communities) <= 1 and {c["level"] for c in result.communities} == {0}
    result = local_search(
        "tiny",
        "How is Scrooge related to Jacob Marley?",
        community_level=1,
        settings=settings,
        engine=OfflineEngine(),
        embedder=embedder,
        config=config,
    )
    assert len(result.communities) <= 1 and {c["level"] for c in result.communities} == {1}


def test_offline_selection_floor_is_the_embedders_relevant_level(tiny_and_text, embedder):
    store, _ = tiny_and_text
    question = "What was the weather like that Christmas Eve?"
    assert embedder.calibration.relevant == 0.25  # MiniLM's
    assert run_local(store, question, embedder).selection == "offline"


def test_cancellation_between_stages(tiny_and_text, embedder):
    import threading

    store, _ = tiny_and_text
    cancel = threading.Event()
    cancel.set()
    result = asyncio.run(
        local_search_async(
            QueryScope(store, OfflineEngine(), embedder, cancel=cancel), "Scrooge?", LocalSearchConfig()
        )
    )
    assert result.status == "cancelled" and "query parsing" in result.reason


def test_namespace_scoping_holds(tiny_and_text, embedder):
    store_a, _ = tiny_and_text
    # Beside "tiny" under the same storage root: scoping must come from the namespace, not the root
    other = NamespaceStore(store_a.storage, "other-ns")
    assert other.storage_root == store_a.storage_root
    build_tiny_index(other, embedder, with_claim=False)
    question = "How is Scrooge related to Jacob Marley?"
    units = {
        s.namespace: set(s.read_table(schema.TEXT_UNITS).column("id").to_pylist()) for s in (store_a, other)
    }
    for store, theirs in ((other, store_a), (store_a, other)):
        result = run_local(store, question, embedder)
        assert result.evidence and not {e["id"] for e in result.evidence} & units[theirs.namespace]
        assert all(e["document_id"] == f"doc-{store.namespace}" for e in result.evidence)


@pytest.mark.matrix(doors=("Dagster query assets",), modes=("local",))
def test_local_answers_asset_materializes_saved_questions(tiny_and_text, dagster_instance, monkeypatch):
    import json

    from dagster import materialize

    from assets.launch import add_namespace
    from assets.query.assets import query_asset
    from assets.resources import default_resources

    store, text = tiny_and_text
    monkeypatch.setenv("PIPELINE_STORAGE_ROOT", str(store.storage_root))
    add_namespace(dagster_instance, "tiny")
    questions = ["How is Scrooge related to Jacob Marley?", "Who is Tiny Tim's father?"]
    result = materialize(
        [query_asset("local_answers")],
        partition_key="tiny",
        instance=dagster_instance,
        resources=default_resources(),
        run_config={"ops": {"local_answers": {"config": {"questions": questions}}}},
    )
    assert result.success
    rows = store.read_table("query_local_answers").to_pylist()
    assert [r["question"] for r in rows] == questions
    assert all(r["status"] == "completed" and r["n_evidence"] > 0 for r in rows)
    for ev in json.loads(rows[1]["evidence_json"]):
        assert text[ev["start_char"] : ev["end_char"]] == ev["text"]
