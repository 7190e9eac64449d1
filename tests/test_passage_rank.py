"""Local search's passage ranking on the tiny hand-built graph (`tests.support.tiny_index`, conftest's `tiny`; real Parquet, real
LanceDB, real MiniLM vectors): each signal alone, the fusion, and the per-process index cache."""

from __future__ import annotations

import asyncio

import numpy as np
import pyarrow as pa
import pytest

from pipeline.core import schema
from pipeline.engine.offline import OfflineEngine
from pipeline.io.store import NamespaceStore
from pipeline.query.common.scope import QueryScope
from pipeline.query.local.search import LocalSearchConfig, local_search_async
from pipeline.query.retrieval.passage_index import load_passage_index
from pipeline.query.retrieval.passage_rank import (
    PassageRankOptions,
    bm25_scores,
    dense_scores,
    ppr_scores,
    rank_passages,
)
from tests.support.tiny_index import eid


def unit(store: NamespaceStore, i: int) -> str:
    return f"{store.namespace}-u{i}"


def test_ppr_from_an_entity_reaches_passages_through_shared_entities_before_unrelated_ones(tiny):
    """Marley is mentioned only in u0; Scrooge (Marley's neighbour, in u0) also appears in u1 and u3,
    while u2 (London) is reached only through Fezziwig: the walk orders them by that distance."""
    index = load_passage_index(tiny)
    no_dense = np.full(index.n_units, -1.0)
    scores = ppr_scores(index, [eid("marley")], no_dense, PassageRankOptions())
    by_unit = dict(zip(index.unit_ids, scores, strict=True))
    assert by_unit[unit(tiny, 0)] > max(by_unit[unit(tiny, 1)], by_unit[unit(tiny, 3)])
    assert min(by_unit[unit(tiny, 1)], by_unit[unit(tiny, 3)]) > by_unit[unit(tiny, 2)]


def test_specific_entities_weigh_more_than_common_ones_in_the_restart(tiny):
    """Scrooge is in 3 of 4 passages, Tiny Tim in 1: seeded with both, the walk favours Tim's passage."""
    index = load_passage_index(tiny)
    assert (
        index.specificity[index.entity_position[eid("tim")]]
        > index.specificity[index.entity_position[eid("scrooge")]]
    )
    no_dense = np.full(index.n_units, -1.0)
    scores = ppr_scores(index, [eid("scrooge"), eid("tim")], no_dense, PassageRankOptions())
    best = index.unit_ids[int(np.argmax(scores))]
    assert best == unit(tiny, 1)


def test_bm25_ranks_the_passage_with_the_rare_word_first(tiny, embedder):
    index = load_passage_index(tiny)
    scores = bm25_scores(index, "Who lit the gas lamps?")
    assert index.unit_ids[int(np.argmax(scores))] == unit(tiny, 2)
    assert not bm25_scores(index, "the of and").any()  # only stop words: no signal, no error


def test_dense_scores_a_unit_by_its_best_piece(tiny, embedder):
    index = load_passage_index(tiny)
    vector = embedder.embed(["apprentices danced at a ball in the warehouse"])[0]
    assert index.unit_ids[int(np.argmax(dense_scores(index, vector)))] == unit(tiny, 3)


def test_fusion_records_each_signals_rank_and_ablations_change_the_lists(tiny, embedder):
    index = load_passage_index(tiny)
    question = "Who is the son of the clerk?"
    vector = embedder.embed([question])[0]
    fused = rank_passages(tiny, index, question, vector, [eid("cratchit")])
    assert fused[0].id == unit(tiny, 1)
    assert set(fused[0].ranks) == {"dense", "bm25", "ppr"}
    only_dense = rank_passages(tiny, index, question, vector, [], PassageRankOptions(signals=("dense",)))
    assert all(set(p.ranks) == {"dense"} for p in only_dense)
    # The tiny namespace has no chunk graph: the walk signal ranks nothing instead of failing.
    assert rank_passages(tiny, index, question, vector, [], PassageRankOptions(signals=("walk",))) == []
    with pytest.raises(ValueError, match="passage signals"):
        PassageRankOptions(signals=("dense", "colbert"))


def test_index_is_built_once_and_rebuilt_when_a_table_changes(tiny):
    first = load_passage_index(tiny)
    assert load_passage_index(tiny) is first
    units = tiny.read_table(schema.TEXT_UNITS)
    tiny.write_table(schema.TEXT_UNITS, pa.concat_tables([units.slice(0, 0), units]))  # same rows, new file
    assert tiny.file_modified("text_units.parquet") is not None
    second = load_passage_index(tiny)
    assert second is not first and second.unit_ids == first.unit_ids


def test_local_search_evidence_follows_the_fused_ranking(tiny, embedder):
    result = asyncio.run(
        local_search_async(
            QueryScope(tiny, OfflineEngine(), embedder), "Who is Bob Cratchit's son?", LocalSearchConfig()
        )
    )
    assert result.status == "completed"
    assert result.passages[0]["id"] == unit(tiny, 1)
    ranked = [p["id"] for p in result.passages]
    chunks = [e["id"] for e in result.evidence if e["kind"] == "chunk"]
    assert chunks == sorted(chunks, key=ranked.index)
    assert all(e["signals"] for e in result.evidence if e["kind"] == "chunk")


def test_cache_keeps_the_most_recently_used_namespaces(tmp_path, monkeypatch):
    from pipeline.query.caches import index_cache

    monkeypatch.setattr(index_cache, "MAX_NAMESPACES", 2)
    stores = [NamespaceStore(tmp_path, name) for name in ("ns_a", "ns_b", "ns_c")]
    built: list[str] = []

    def load(store: NamespaceStore) -> str:
        return index_cache.cached_index(store, "test", (1,), lambda: built.append(store.namespace) or "x")

    for store in (*stores[:2], stores[0], stores[2], stores[0], stores[1]):
        load(store)
    # ns_b was the least recently used when ns_c came in, so only it was built twice.
    assert built == ["ns_a", "ns_b", "ns_c", "ns_b"]


def test_a_serving_process_keeps_built_indexes_out_of_gc_and_frees_a_replaced_one(tmp_path, monkeypatch):
    import gc
    import weakref

    from pipeline.query.caches import index_cache

    class Loaded:  # holds a reference cycle, so only the collector can free it
        def __init__(self) -> None:
            self.me = self

    store = NamespaceStore(tmp_path, "ns_gc")
    monkeypatch.setattr(index_cache, "_freeze_after_build", False)  # restored after the test
    index_cache.freeze_indexes_after_build()
    try:
        first = index_cache.cached_index(store, "gc_test", (1,), Loaded)
        assert not any(o is first for o in gc.get_objects())  # frozen: full passes no longer walk it
        gone = weakref.ref(first)
        del first
        second = index_cache.cached_index(store, "gc_test", (2,), Loaded)  # the tables changed
        assert gone() is None  # the replaced version was unfrozen and collected, cycle and all
        assert not any(o is second for o in gc.get_objects())
    finally:
        gc.unfreeze()
