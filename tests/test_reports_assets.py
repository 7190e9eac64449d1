"""The report assets end to end through a real Dagster instance (temp DAGSTER_HOME), real Parquet and
LanceDB, real MiniLM: the whole offline chain, search over the new LanceDB tables, then the LLM path
through the client and a request-counting proxy, re-materialized after one document changes.

The proxy answers each report request with a numbered, valid report (no model: fingerprint reuse is
about which calls are made, not about what the model writes; tests/test_reports_llm.py runs the real
local model).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from dagster import materialize

from assets.indexing.assets import indexing_assets
from assets.indexing.graph import graph_assets
from assets.indexing.reports import report_assets
from assets.launch import run_index
from assets.resources import default_resources
from pipeline.caches.sqlite_embedding import EmbeddingCache
from pipeline.core import schema
from pipeline.embeddings.cached import CachedEmbedder
from pipeline.embeddings.minilm import LocalMiniLMEmbedder
from pipeline.index.report_embeddings import entity_text, report_text
from pipeline.io.store import NamespaceStore
from pipeline.query.retrieval.nearest import text_search, vector_search
from tests.support.env import scoped_env
from tests.support.fault_proxy import FaultProxy

NAMESPACE = "pioneers"
DOCS = {
    "curie.txt": (
        "Marie Curie studied physics in Paris with Pierre Curie. Marie Curie and Pierre Curie discovered "
        "polonium and radium in their laboratory in Paris. Pierre Curie taught at the Sorbonne, and Marie "
        "Curie later led the Radium Institute. Irene Joliot-Curie, their daughter, worked with Frederic "
        "Joliot at the Radium Institute. Irene Joliot-Curie and Frederic Joliot won the Nobel Prize for "
        "artificial radioactivity.\n"
    ),
    "babbage.txt": (
        "Charles Babbage designed the Analytical Engine in London. Ada Lovelace wrote the first program for "
        "the Analytical Engine. Ada Lovelace corresponded with Charles Babbage about the Difference Engine. "
        "Augustus De Morgan tutored Ada Lovelace in mathematics in London. Mary Somerville introduced Ada "
        "Lovelace to Charles Babbage.\n"
    ),
    "dunant.txt": (
        "Henry Dunant founded the Red Cross in Geneva. Gustave Moynier chaired the Red Cross committee in "
        "Geneva. Henry Dunant and Gustave Moynier argued about the Geneva Convention. Florence Nightingale "
        "nursed soldiers in Scutari during the Crimean War. Florence Nightingale reformed nursing in England "
        "after the Crimean War.\n"
    ),
}
EDIT = " Marie Curie visited Warsaw with Bronislawa Dluska.\n"
ALL_ASSETS = [*indexing_assets, *graph_assets, *report_assets]
UPSTREAM = [
    "input_documents",
    "base_text_units",
    "documents",
    "text_units",
    "extracted_graph",
    "entities",
    "relationships",
    "claims",
    "communities",
]
REPORT_ASSETS = ["community_reports", "report_embeddings"]


class NumberedReportProxy(FaultProxy):
    """Counts requests and answers each with a valid report titled 'Canned report <n>'."""

    def __init__(self) -> None:
        super().__init__(None)

    def _canned(self, path: str, body: bytes) -> bytes:
        with self._lock:
            n = self.received
            self.canned_content = json.dumps(
                {
                    "title": f"Canned report {n}",
                    "summary": f"Summary of canned report {n}.",
                    "findings": [{"summary": f"Finding {n}", "explanation": f"Explanation {n}."}],
                    "rating": 5.0,
                    "rating_explanation": "Canned.",
                }
            )
            return super()._canned(path, body)


def _llm_env(base_url: str) -> dict[str, str]:
    return {
        "PIPELINE_LLM_PROVIDER": "openai",
        "PIPELINE_LLM_BASE_URL": base_url,
        "PIPELINE_LLM_MODEL": "canned-reporter",
        "PIPELINE_LLM_JSON_MODE": "json_object",
        "PIPELINE_LLM_CONCURRENCY": "1",
        "PIPELINE_EXTRACTION_PACK_TOKENS": "0",  # one request per unit, a report for every community
        "PIPELINE_REPORT_MIN_ENTITIES": "0",
    }


def _materialize(instance, selection: list[str], folder: Path | None = None) -> dict[str, dict]:
    run_config = {"ops": {"input_documents": {"config": {"input_dir": str(folder)}}}} if folder else None
    result = materialize(
        ALL_ASSETS,
        selection=selection,
        partition_key=NAMESPACE,
        instance=instance,
        resources=default_resources(),
        run_config=run_config,
    )
    assert result.success
    return {
        m.materialization.asset_key.to_user_string(): {
            k: getattr(v, "value", v) for k, v in m.materialization.metadata.items()
        }
        for m in result.get_asset_materialization_events()
    }


def _searches(store: NamespaceStore, embedder: CachedEmbedder) -> dict[str, list[dict]]:
    reports, entities = schema.LANCE_COMMUNITY_REPORTS, schema.LANCE_ENTITIES
    return {
        "report_vector": vector_search(
            store, embedder, "discovery of polonium and radium", k=2, table=reports
        ),
        "report_text": text_search(store, "Lovelace", k=2, table=reports),
        "entity_vector": vector_search(store, embedder, "Henri Dunan", k=3, table=entities),
        "entity_text_title": text_search(store, "Nightingale", k=2, table=entities),
        "entity_text_description": text_search(store, "polonium", k=5, table=entities),
        "entity_title_index_only": store.open_lance_table(entities)
        .search("Nightingale", query_type="fts", fts_columns="title")
        .limit(2)
        .to_list(),
        "fts_indexes": {
            table: sorted(c for i in store.open_lance_table(table).list_indices() for c in i.columns)
            for table in (reports, entities)
        },
    }


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory, dagster_instance) -> Iterator[dict]:
    storage = tmp_path_factory.mktemp("storage")
    folder = tmp_path_factory.mktemp("input")
    for name, text in DOCS.items():
        (folder / name).write_text(text, encoding="utf-8")
    store = NamespaceStore(storage, NAMESPACE)
    out: dict = {"store": store}
    with scoped_env(PIPELINE_STORAGE_ROOT=str(storage)):
        out["offline"] = run_index(NAMESPACE, input_dir=str(folder), instance=dagster_instance)
        query_cache = EmbeddingCache(tmp_path_factory.mktemp("query_cache") / "q.sqlite")
        embedder = CachedEmbedder(LocalMiniLMEmbedder(), query_cache)
        out["searches"] = _searches(store, embedder)
        with scoped_env(PIPELINE_ENTITY_VECTOR_DESCRIPTION_WORDS="12"):
            out["described"] = _materialize(dagster_instance, ["report_embeddings"])
        out["described_search"] = vector_search(
            store, embedder, "founder of the Red Cross", k=3, table=schema.LANCE_ENTITIES
        )
        with NumberedReportProxy() as proxy:
            with scoped_env(**_llm_env(proxy.base_url)):
                out["llm1"] = _materialize(dagster_instance, REPORT_ASSETS)
            out["calls1"] = proxy.received
            out["reports1"] = store.read_table(schema.COMMUNITY_REPORTS)
            out["entities1"] = store.read_table(schema.ENTITIES)
            (folder / "curie.txt").write_text(DOCS["curie.txt"].rstrip("\n") + EDIT, encoding="utf-8")
            out["upstream"] = _materialize(dagster_instance, UPSTREAM, folder)  # offline, as before
            with scoped_env(**_llm_env(proxy.base_url)):
                out["llm2"] = _materialize(dagster_instance, REPORT_ASSETS)
            out["calls2"] = proxy.received - out["calls1"]
            out["reports2"] = store.read_table(schema.COMMUNITY_REPORTS)
            out["entities2"] = store.read_table(schema.ENTITIES)
        yield out


def _step(result, asset: str) -> dict:
    return next(s.metadata for s in result.steps if s.asset == asset)


def test_the_whole_chain_materializes_offline_with_reports_and_embeddings(runs):
    result = runs["offline"]
    assert result.success, result.failures
    communities = runs["store"].read_table(schema.COMMUNITIES).num_rows
    meta = _step(result, "community_reports")
    assert meta["method"] == "offline" and meta["failed"] == 0
    assert meta["reports"] == meta["generated"] == communities >= 3
    assert "Marie Curie" in meta["top_level"]
    emb = _step(result, "report_embeddings")
    assert emb["reports_rows"] == communities and emb["reports_rows_embedded"] == communities
    assert emb["entities_rows"] == runs["entities1"].num_rows == emb["entities_rows_embedded"]


def test_reports_are_searchable_by_vector_and_full_text(runs):
    s = runs["searches"]
    assert "Marie Curie" in s["report_vector"][0]["title"]
    assert s["report_vector"][0]["score"] > s["report_vector"][1]["score"]
    assert "Ada Lovelace" in s["report_text"][0]["full_content"]
    assert {"id", "community", "level", "title", "summary", "full_content", "rank"} <= set(
        s["report_vector"][0]
    )


def test_entities_are_searchable_by_vector_and_full_text_on_title_and_description(runs):
    s = runs["searches"]
    # by default an entity's vector is its title's: a misspelt name finds it
    assert s["entity_vector"][0]["title"] == "Henry Dunant"
    assert s["entity_text_title"][0]["title"] == "Florence Nightingale"
    assert [h["title"] for h in s["entity_title_index_only"]] == ["Florence Nightingale"]
    assert s["fts_indexes"] == {
        schema.LANCE_COMMUNITY_REPORTS: ["full_content"],
        schema.LANCE_ENTITIES: ["description", "title"],
    }
    # "polonium" is in no title: only the description index can find it
    found = [h["title"] for h in s["entity_text_description"]]
    assert found and all("polonium" in h["description"].lower() for h in s["entity_text_description"])
    assert {"id", "title", "type", "description", "aliases"} <= set(s["entity_vector"][0])


def test_description_words_in_entity_vectors_are_a_setting_and_change_every_vector(runs):
    meta = runs["described"]["report_embeddings"]
    n = runs["entities1"].num_rows  # the graph as it was then (a document is edited later)
    # a different rule for the entity texts: no vector is carried over; the reports' rule is unchanged
    assert meta["entities_rows_embedded"] == n and meta["entities_vectors_kept"] == 0
    assert meta["reports_rows_embedded"] == 0
    # with the start of its description in its vector, an entity is found by what it is
    assert "Henry Dunant" in [h["title"] for h in runs["described_search"]]


def test_llm_reports_are_requested_once_per_community(runs):
    meta = runs["llm1"]["community_reports"]
    n = runs["reports1"].num_rows
    assert meta["method"] == "llm" and meta["failed"] == 0
    assert meta["generated"] == n == runs["calls1"] and meta["reused"] == 0  # the offline ones don't count
    assert meta["llm_calls"] == n and meta["llm_cache_hits"] == 0
    assert all(t.startswith("Canned report") for t in runs["reports1"].column("title").to_pylist())


def test_rematerializing_after_one_document_changes_regenerates_only_changed_fingerprints(runs):
    before = {r["fingerprint"]: r for r in runs["reports1"].to_pylist()}
    after = runs["reports2"].to_pylist()
    changed = [r for r in after if r["fingerprint"] not in before]
    kept = [r for r in after if r["fingerprint"] in before]
    meta = runs["llm2"]["community_reports"]
    assert changed and kept  # the edit touched some communities and left others alone
    assert runs["calls2"] == len(changed) == meta["generated"] == meta["llm_calls"]
    assert meta["reused"] == len(kept) and meta["llm_cache_hits"] == 0  # reuse came from fingerprints
    for r in kept:  # same report text as the first LLM run, new structure columns
        assert r["title"] == before[r["fingerprint"]]["title"]
    for r in changed:  # answers numbered after the first run's
        assert int(r["title"].rsplit(" ", 1)[1]) > runs["calls1"]
    warsaw = next(e["id"] for e in runs["entities2"].to_pylist() if e["title"] == "Warsaw")
    communities = runs["store"].read_table(schema.COMMUNITIES).to_pylist()
    holding = {c["community"] for c in communities if warsaw in c["entity_ids"]}
    assert holding <= {r["community"] for r in changed}  # the new entity's communities were rewritten


def test_only_changed_rows_are_embedded_again(runs):
    emb = runs["llm2"]["report_embeddings"]
    old_reports = {(r["id"], report_text(r["title"], r["summary"])) for r in runs["reports1"].to_pylist()}
    new_reports = [(r["id"], report_text(r["title"], r["summary"])) for r in runs["reports2"].to_pylist()]
    assert emb["reports_rows_embedded"] == sum(key not in old_reports for key in new_reports) > 0
    assert emb["reports_vectors_kept"] == emb["reports_rows"] - emb["reports_rows_embedded"] > 0
    assert emb["reports_rows_embedded"] == runs["llm2"]["community_reports"]["generated"]

    def keyed(table) -> list[tuple[str, str]]:
        return [(r["id"], entity_text(r["title"], r["description"])) for r in table.to_pylist()]

    old_entities = set(keyed(runs["entities1"]))
    changed_entities = [k for k in keyed(runs["entities2"]) if k not in old_entities]
    assert 0 < len(changed_entities) < runs["entities2"].num_rows
    assert emb["entities_rows_embedded"] == len(changed_entities)
    assert emb["entities_vectors_kept"] == runs["entities2"].num_rows - len(changed_entities)
    lance = runs["store"].open_lance_table(schema.LANCE_COMMUNITY_REPORTS).to_arrow()
    assert sorted(lance.column("id").to_pylist()) == sorted(runs["reports2"].column("id").to_pylist())
