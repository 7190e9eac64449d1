"""Basic search offline: on the tiny hand-built graph (real LanceDB and MiniLM vectors) and on the sample
book (samples/demo indexed through the Dagster job)."""

from __future__ import annotations

import asyncio
import json

import pytest

from pipeline.api import basic_search
from pipeline.core import schema
from pipeline.core.rrf import reciprocal_rank_fusion
from pipeline.engine.offline import OfflineEngine
from pipeline.io.store import NamespaceStore
from pipeline.query.basic.search import BasicSearchConfig, BasicSearchError, basic_search_async
from pipeline.query.common.scope import QueryScope
from pipeline.query.retrieval.nearest import text_search

QUESTION = "What did Bob Cratchit earn as Scrooge's clerk?"


def test_offline_basic_quotes_the_nearest_passage_cited_to_its_offsets(tiny, embedder):
    result = asyncio.run(
        basic_search_async(QueryScope(tiny, OfflineEngine(), embedder), QUESTION, BasicSearchConfig())
    )
    assert result.status == "completed"
    assert result.sources[0]["text"].startswith("Bob Cratchit worked as Scrooge's clerk")
    assert [s["score"] for s in result.sources] == sorted((s["score"] for s in result.sources), reverse=True)
    assert "fifteen shillings" in result.answer and result.unresolved_citations == [] and result.citations
    units = {u["id"]: u for u in tiny.read_table(schema.TEXT_UNITS).to_pylist()}
    for c in result.citations:
        unit = units[c["text_unit_id"]]
        assert (c["document_id"], c["start_char"], c["end_char"]) == (
            unit["document_id"],
            unit["start_char"],
            unit["end_char"],
        )
    assert result.usage["calls"] == 0  # offline: nothing sent


def test_full_text_fusion_is_an_option_and_top_k_is_validated(tiny, embedder):
    dense = asyncio.run(
        basic_search_async(QueryScope(tiny, OfflineEngine(), embedder), QUESTION, BasicSearchConfig(top_k=4))
    )
    assert len(dense.sources) == 4 and all(s["cosine"] is not None for s in dense.sources)
    assert [s["cosine"] for s in dense.sources] == sorted((s["cosine"] for s in dense.sources), reverse=True)
    cfg = BasicSearchConfig(top_k=4, full_text=True)
    fused = asyncio.run(basic_search_async(QueryScope(tiny, OfflineEngine(), embedder), QUESTION, cfg))
    # The fused order is the reciprocal-rank fusion of the dense order and BM25's.
    lexical = [r["id"] for r in text_search(tiny, QUESTION, k=8)]
    expected = reciprocal_rank_fusion([[s["text_unit_id"] for s in dense.sources], lexical], k=60)
    assert lexical and [s["text_unit_id"] for s in fused.sources] == [u for u, _ in expected][:4]
    with pytest.raises(BasicSearchError):
        BasicSearchConfig(top_k=0)


def test_saved_basic_answers_are_one_row_per_question(tiny, embedder):
    from pipeline.query.saved_questions import write_answers
    from pipeline.settings import Settings

    questions = [QUESTION, "What did Scrooge say about Christmas?"]
    parts = {"settings": Settings(), "engine": OfflineEngine(), "embedder": embedder}
    write_answers("basic", tiny, questions, given={"top_k": 2}, **parts)
    rows = tiny.read_table("query_basic_answers").to_pylist()
    assert [r["question"] for r in rows] == questions
    for row in rows:
        assert row["status"] == "completed" and len(json.loads(row["sources_json"])) == 2
        assert json.loads(row["citations_json"])


def test_on_the_sample_book_basic_cites_passages_whose_offsets_hold_them(sample_book):
    from pipeline.settings import Settings

    result = basic_search(
        "demo", "What happens at Fezziwig's party?", settings=Settings(storage_root=sample_book)
    )
    assert result.status == "completed" and "Fezziwig" in result.answer and result.citations
    store = NamespaceStore(sample_book, "demo")
    (document,) = store.read_table(schema.DOCUMENTS).to_pylist()
    units = {u["id"]: u for u in store.read_table(schema.TEXT_UNITS).to_pylist()}
    for c in result.citations:
        assert document["text"][c["start_char"] : c["end_char"]] == units[c["text_unit_id"]]["text"]


def test_min_score_leaves_out_passages_below_it_and_none_left_is_no_results(tiny, embedder):
    scope = QueryScope(tiny, OfflineEngine(), embedder)
    every = asyncio.run(basic_search_async(scope, QUESTION, BasicSearchConfig(top_k=6)))
    cosines = sorted(s["cosine"] for s in every.sources)
    floor = (cosines[0] + cosines[-1]) / 2  # between the worst and the best passage
    kept = asyncio.run(basic_search_async(scope, QUESTION, BasicSearchConfig(top_k=6, min_score=floor)))
    assert kept.status == "completed" and 0 < len(kept.sources) < len(every.sources)
    assert all(s["cosine"] >= floor for s in kept.sources)
    assert all(c["text_unit_id"] in {s["text_unit_id"] for s in kept.sources} for c in kept.citations)
    none = asyncio.run(basic_search_async(scope, QUESTION, BasicSearchConfig(top_k=6, min_score=1.0)))
    assert none.status == "no_results" and "min_score" in none.reason and none.usage["calls"] == 0


@pytest.mark.parametrize("k", [1, 3, 10, 40])
def test_held_piece_vectors_rank_units_as_lancedb_flat_search_does(tiny, embedder, k):
    from pipeline.query.retrieval.nearest import _best_units_held, _best_units_lance

    units = [r["id"] for r in tiny.read_table(schema.TEXT_UNITS, columns=["id"]).to_pylist()]
    questions = [QUESTION, "Who is Marley?", "Christmas dinner at the Cratchits' house", "ghost"]
    for question in questions:
        vector = embedder.embed([question])[0]
        for allowed in (None, set(units[::2])):
            held = _best_units_held(tiny, vector, k, allowed)
            flat = _best_units_lance(tiny, vector, k, allowed)
            assert held is not None and [u for u, _ in held] == [u for u, _ in flat], (question, k)
            assert all(abs(a - b) < 1e-5 for (_, a), (_, b) in zip(held, flat, strict=True))
            assert allowed is None or {u for u, _ in held} <= allowed


def test_front_matter_is_read_once_per_version_of_the_documents_table(tmp_path):
    from pipeline.core.boilerplate import content_span
    from pipeline.core.tables import to_table
    from pipeline.query.answer.front_matter import document_regions

    def write(text: str) -> None:
        row = {name: None for name in schema.DOCUMENTS_SCHEMA.names} | {
            "id": "d1",
            "title": "t",
            "text": text,
        }
        store.write_table(schema.DOCUMENTS, to_table([row], schema.DOCUMENTS_SCHEMA))

    store = NamespaceStore(tmp_path, "docs")
    assert document_regions(store) is None  # no documents table: nothing to mask
    first = "[Illustration: a door knocker]\n\nMarley was dead: to begin with."
    write(first)
    regions = document_regions(store)
    assert regions is document_regions(store)  # unchanged table: the same held regions, no re-read
    assert regions("d1") == content_span(first).regions != () and regions("unknown") == ()
    second = "Marley was dead: to begin with. There is no doubt whatever about that."
    write(second)  # a re-index rewrote the table: its regions are the new text's
    assert document_regions(store)("d1") == content_span(second).regions == ()


def test_front_matter_is_read_from_what_chunking_stored_and_else_from_the_documents(tmp_path):
    from pipeline.core.boilerplate import Region, content_span
    from pipeline.core.stored_regions import REGIONS_KEY
    from pipeline.core.tables import to_table
    from pipeline.query.answer.front_matter import DocumentRegions, document_regions

    store = NamespaceStore(tmp_path, "docs")
    text = "[Illustration: a door knocker]\n\nMarley was dead: to begin with."
    doc = {name: None for name in schema.DOCUMENTS_SCHEMA.names} | {"id": "d1", "title": "t", "text": text}
    store.write_table(schema.DOCUMENTS, to_table([doc], schema.DOCUMENTS_SCHEMA))
    unit = {name: None for name in schema.TEXT_UNITS_SCHEMA.names} | {
        "id": "u1",
        "text": "M",
        "document_id": "d1",
    }
    units = to_table([unit], schema.TEXT_UNITS_SCHEMA)
    # Stored regions that the rules would not find in the text: what is answered must come from storage.
    stored = {REGIONS_KEY: b'{"d1":[[0,5,"heading"]]}'}
    store.write_table(schema.TEXT_UNITS, units.replace_schema_metadata(stored))
    regions = document_regions(store)
    assert regions("d1") == (Region(0, 5, "heading"),) and regions("d2") == () and regions(None) == ()
    store.write_table(schema.TEXT_UNITS, units)  # units cut before regions were stored: from the documents
    regions = document_regions(store)
    assert isinstance(regions, DocumentRegions) and regions("d1") == content_span(text).regions != ()


def test_held_rows_are_lancedb_rows_without_vectors_and_follow_a_rewrite(tmp_path):
    import pyarrow as pa

    from pipeline.query.caches.row_cache import held_rows

    store = NamespaceStore(tmp_path, "docs")

    def write(texts: list[str]) -> None:
        vectors = pa.array([[float(i), 1.0] for i in range(len(texts))], pa.list_(pa.float32(), 2))
        rows = pa.table({"id": [f"u{i}" for i in range(len(texts))], "text": texts, "vector": vectors})
        store.replace_lance_table("passages", rows)

    assert held_rows(store, "passages") is None  # no table: LanceDB is asked, and names it missing
    write(["first", "second", "third"])
    held = held_rows(store, "passages")
    lance = {
        r["id"]: r for r in store.open_lance_table("passages").to_arrow().drop_columns(["vector"]).to_pylist()
    }
    assert held.rows(["u2", "u0", "missing"]) == {"u2": lance["u2"], "u0": lance["u0"]}
    assert held_rows(store, "passages") is held  # unchanged table: no second read
    write(["first", "second, rewritten", "third"])  # a re-index lands: the next fetch sees it
    assert held_rows(store, "passages").rows(["u1"]) == {"u1": {"id": "u1", "text": "second, rewritten"}}


def test_vector_search_fetches_the_same_units_from_held_rows_as_from_lancedb(tiny, embedder, monkeypatch):
    import pipeline.query.retrieval.nearest as search

    questions = [QUESTION, "Who is Marley?", "Christmas dinner at the Cratchits' house"]
    held = [search.vector_search(tiny, embedder, q, k=3) for q in questions]
    monkeypatch.setattr(search, "held_rows", lambda store, table: None)  # as for a table too large to hold
    from_lance = [search.vector_search(tiny, embedder, q, k=3) for q in questions]
    assert held == from_lance and all(len(hits) == 3 for hits in held)
