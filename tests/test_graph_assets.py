"""The whole graph for christmas_carol through Dagster (offline engine), run twice.

Real Dagster instance (temp DAGSTER_HOME), real Parquet; every table read back with polars.
"""

from __future__ import annotations

import json
import os

import networkx as nx
import polars as pl
import pytest

from assets.launch import add_namespace
from pipeline.core import schema
from pipeline.io.store import NamespaceStore
from tests.conftest import shared_data
from tests.support.fault_proxy import FaultProxy

NAMESPACE = "carol_graph"
GRAPHRAG_COLUMNS = {
    schema.ENTITIES: ["id", "human_readable_id", "title", "type", "description", "text_unit_ids", "frequency", "degree"],
    schema.RELATIONSHIPS: [
        "id", "human_readable_id", "source", "target", "description", "weight", "combined_degree", "text_unit_ids",
    ],
    schema.COMMUNITIES: [
        "id", "human_readable_id", "community", "level", "parent", "children", "title", "entity_ids",
        "relationship_ids", "text_unit_ids", "period", "size",
    ],
    schema.COVARIATES: [
        "id", "human_readable_id", "covariate_type", "type", "description", "subject_id", "object_id", "status",
        "start_date", "end_date", "source_text", "text_unit_id",
    ],
    schema.TEXT_UNITS: [
        "id", "human_readable_id", "text", "n_tokens", "document_id", "entity_ids", "relationship_ids", "covariate_ids",
    ],
    schema.DOCUMENTS: ["id", "human_readable_id", "title", "text", "text_unit_ids", "creation_date", "raw_data"],
}  # fmt: skip
GRAPH_TABLES = [schema.ENTITIES, schema.RELATIONSHIPS, schema.COMMUNITIES, schema.COVARIATES]


def _run(instance):
    from assets.definitions import defs

    add_namespace(instance, NAMESPACE)
    job = defs.resolve_job_def("index_namespace")
    config = {"ops": {"input_documents": {"config": {"input_dir": str(shared_data("christmas_carol"))}}}}
    return job.execute_in_process(
        partition_key=NAMESPACE, instance=instance, run_config=config, raise_on_error=False
    )


def _read(store: NamespaceStore, table: str) -> pl.DataFrame:
    return pl.read_parquet(store.parquet_path(table))


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory, dagster_instance):
    storage = tmp_path_factory.mktemp("graph_storage")
    old = os.environ.get("PIPELINE_STORAGE_ROOT")
    os.environ["PIPELINE_STORAGE_ROOT"] = str(storage)
    store = NamespaceStore(storage, NAMESPACE)
    try:
        first = _run(dagster_instance)
        snapshot = {t: _read(store, t) for t in GRAPH_TABLES} if first.success else {}
        second = _run(dagster_instance)
        yield {"store": store, "first": first, "second": second, "snapshot": snapshot}
    finally:
        if old is None:
            os.environ.pop("PIPELINE_STORAGE_ROOT", None)
        else:
            os.environ["PIPELINE_STORAGE_ROOT"] = old


def _metadata(result, asset: str) -> dict:
    for event in result.get_asset_materialization_events():
        mat = event.materialization
        if mat.asset_key.to_user_string() == asset:
            return {k: getattr(v, "value", v) for k, v in mat.metadata.items()}
    raise AssertionError(f"{asset} was not materialized")


def test_runs_succeed_and_materialize_every_graph_asset(runs):
    for key in ("first", "second"):
        result = runs[key]
        assert result.success
        materialized = {
            e.materialization.asset_key.to_user_string() for e in result.get_asset_materialization_events()
        }
        assert {"extracted_graph", "entities", "relationships", "claims", "communities"} <= materialized


def test_every_asset_check_passes(runs):
    evaluations = {e.check_name: e.passed for e in runs["first"].get_asset_check_evaluations()}
    expected = {
        "no_failed_extractions",
        "entity_ids_unique",
        "relationships_reference_entities",
        "every_entity_in_one_community_per_level",
        "no_empty_community",
        "levels_nest",
    }
    assert expected <= set(evaluations)
    assert all(evaluations[name] for name in expected), evaluations


def test_tables_are_readable_with_polars_and_carry_graphrag_columns(runs):
    store = runs["store"]
    for table, columns in GRAPHRAG_COLUMNS.items():
        frame = _read(store, table)
        assert frame.height > 0, table
        assert frame.columns[: len(columns)] == columns, table
    for table in (schema.EXTRACTED_GRAPH, schema.FAILED_EXTRACTIONS):
        assert _read(store, table).columns == schema.__dict__[f"{table.upper()}_SCHEMA"].names


def test_the_graph_is_plausible_for_the_book(runs):
    store = runs["store"]
    entities = _read(store, schema.ENTITIES)
    titles = set(entities["title"])
    assert {"Ebenezer Scrooge", "Jacob Marley", "Bob Cratchit", "Tiny Tim"} <= titles
    # one entity per person, titled by the full name, the other forms kept as aliases
    assert not {"Scrooge", "Mr. Scrooge", "Marley", "Old Marley", "Bob"} & titles
    scrooge = entities.filter(pl.col("title") == "Ebenezer Scrooge").row(0, named=True)
    assert {"Scrooge", "Mr. Scrooge"} <= set(scrooge["aliases"])
    assert scrooge["type"] == "person" and scrooge["degree"] == entities["degree"].max()
    assert "Scrooge" in scrooge["description"]
    # no heading, caption or contents entry became an entity
    assert not {"Tailpiece", "Heading", "STAVE THREE", "STAVE ONE", "Illustration"} & titles
    rels = _read(store, schema.RELATIONSHIPS)
    assert set(rels["source_id"]) | set(rels["target_id"]) <= set(entities["id"])
    claims = _read(store, schema.COVARIATES)
    assert claims["covariate_type"].unique().to_list() == ["claim"]
    assert set(claims["status"]) <= {"TRUE", "FALSE", "SUSPECTED"}


def test_text_units_and_documents_link_to_the_graph(runs):
    store = runs["store"]
    units = _read(store, schema.TEXT_UNITS)
    entities = _read(store, schema.ENTITIES)
    by_unit = units.select("id", "entity_ids").explode("entity_ids").drop_nulls()
    from_entities = entities.select("id", "text_unit_ids").explode("text_unit_ids")
    assert set(zip(by_unit["id"], by_unit["entity_ids"], strict=True)) == set(
        zip(from_entities["text_unit_ids"], from_entities["id"], strict=True)
    )
    assert units["relationship_ids"].list.len().sum() > 0
    claims = _read(store, schema.COVARIATES)
    assert units["covariate_ids"].list.len().sum() == claims.height
    docs = _read(store, schema.DOCUMENTS)
    assert docs["text_unit_ids"].list.len().sum() == units.height


def test_every_entity_has_a_level_0_community(runs):
    store = runs["store"]
    communities = _read(store, schema.COMMUNITIES)
    level0 = communities.filter(pl.col("level") == 0).explode("entity_ids")["entity_ids"]
    assert sorted(level0) == sorted(_read(store, schema.ENTITIES)["id"])


def test_metadata_reports_counts_degrees_and_sizes_per_level(runs):
    result = runs["first"]
    assert _metadata(result, "extracted_graph")["method"] == "offline"
    assert _metadata(result, "extracted_graph")["failed_extractions"] == 0
    ents = _metadata(result, "entities")
    assert ents["entities"] > 100 and "buckets" in ents["degree_distribution"]
    comms = _metadata(result, "communities")
    assert comms["levels"] >= 2 and "| level |" in comms["sizes_per_level"]


def test_graphml_export_opens_with_networkx(runs):
    store = runs["store"]
    path = _metadata(runs["first"], "communities")["graphml"]
    graph = nx.read_graphml(path)
    assert graph.number_of_nodes() == _read(store, schema.ENTITIES).height
    assert graph.number_of_edges() == _read(store, schema.RELATIONSHIPS).height
    node = next(iter(graph.nodes(data=True)))[1]
    assert {"label", "type", "community", "community_level_0"} <= set(node)


def test_a_rerun_gives_the_same_ids(runs):
    store = runs["store"]
    for table, before in runs["snapshot"].items():
        after = _read(store, table)
        assert sorted(after["id"]) == sorted(before["id"]), table
    communities = _read(store, schema.COMMUNITIES).sort("community")
    before = runs["snapshot"][schema.COMMUNITIES].sort("community")
    assert communities.select("community", "parent", "children", "entity_ids").equals(
        before.select("community", "parent", "children", "entity_ids")
    )


# ---- the LLM path through Dagster, against a scripted OpenAI-compatible server ----------------------
LLM_NAMESPACE = "llm_graph"
MARKER = "Zyxwvut"  # the paragraph whose extraction never validates
PARAGRAPHS = [
    "Marie Curie was born in Warsaw. She moved to Paris to study physics at the Sorbonne.",
    "Pierre Curie and Marie Curie worked together in Paris on radioactivity for many years.",
    f"{MARKER} Corporation is mentioned here only so that this paragraph fails to extract.",
]


class ScriptedServer(FaultProxy):
    """Answers like a model would: extraction JSON naming entities, summaries, and prose for MARKER."""

    def __init__(self) -> None:
        super().__init__(None)

    def _canned(self, path: str, body: bytes) -> bytes:
        request = json.loads(body)
        last = request["messages"][-1]["content"]
        text = json.dumps(request["messages"])
        if MARKER in text:
            content = "I cannot help with that."
        elif "You merge descriptions" in text:
            content = json.dumps({"summary": "A merged description."})
        elif "MANY entities" in last:
            content = json.dumps({"entities": [], "relationships": [], "claims": []})
        elif "community of entities in a knowledge graph" in text:  # a report: every one must land now
            content = json.dumps(
                {
                    "title": "Marie Curie and Paris",
                    "summary": "Marie Curie lived and worked in Paris.",
                    "findings": [{"summary": "Paris", "explanation": "She lived there."}],
                    "rating": 5,
                    "rating_explanation": "A small community.",
                }
            )
        else:
            unit = last.rsplit("Text:\n", 1)[1][:40]  # after the worked example's text
            content = json.dumps(
                {
                    "entities": [
                        {"name": "Marie Curie", "type": "person", "description": f"Seen in: {unit}"},
                        {"name": "Paris", "type": "geo", "description": "A city."},
                    ],
                    "relationships": [
                        {
                            "source": "Marie Curie",
                            "target": "Paris",
                            "description": "Lived there.",
                            "strength": 6,
                        },
                        {
                            "source": "Marie Curie",
                            "target": "Sorbonne",
                            "description": "Studied.",
                            "strength": 4,
                        },
                    ],
                    "claims": [],
                }
            )
        with self._lock:
            self.canned_content = content
            return super()._canned(path, body)


@pytest.fixture(scope="module")
def llm_runs(tmp_path_factory: pytest.TempPathFactory, dagster_instance):
    storage = tmp_path_factory.mktemp("llm_graph_storage")
    input_dir = tmp_path_factory.mktemp("llm_graph_input")
    (input_dir / "curie.txt").write_text("\n\n".join(PARAGRAPHS), encoding="utf-8")
    env = {
        "PIPELINE_STORAGE_ROOT": str(storage),
        "PIPELINE_CHUNK_SIZE": "24",
        "PIPELINE_CHUNK_OVERLAP": "0",
        "PIPELINE_LLM_PROVIDER": "openai",
        "PIPELINE_EXTRACTION_PACK_TOKENS": "0",
        "PIPELINE_REPORT_MIN_ENTITIES": "0",
        "PIPELINE_SUMMARIZE_MAX_WORDS": "10",  # shorter than Marie Curie's descriptions together: a call
        "PIPELINE_LLM_MODEL": "scripted",
        "PIPELINE_LLM_MAX_RETRIES": "0",
        "PIPELINE_CHECK_MAX_FAILED_SHARE": "0.5",  # 1 of 3 units fails on purpose: a warning, not a block
    }
    old = {k: os.environ.get(k) for k in env}
    from assets.definitions import defs

    job = defs.resolve_job_def("index_namespace")
    config = {"ops": {"input_documents": {"config": {"input_dir": str(input_dir)}}}}
    with ScriptedServer() as server:
        os.environ.update(env, PIPELINE_LLM_BASE_URL=server.base_url)
        try:
            add_namespace(dagster_instance, LLM_NAMESPACE)
            runs = [
                job.execute_in_process(
                    partition_key=LLM_NAMESPACE,
                    instance=dagster_instance,
                    run_config=config,
                    raise_on_error=False,
                )
                for _ in range(2)
            ]
        finally:
            os.environ.pop("PIPELINE_LLM_BASE_URL", None)
            for k, v in old.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v
    yield {"store": NamespaceStore(storage, LLM_NAMESPACE), "runs": runs}


def test_llm_path_failure_is_recorded_and_the_run_continues(llm_runs):
    first = llm_runs["runs"][0]
    assert first.success
    meta = _metadata(first, "extracted_graph")
    assert meta["method"] == "llm" and meta["failed_extractions"] == 1 and meta["llm_calls"] > 0
    check = next(e for e in first.get_asset_check_evaluations() if e.check_name == "no_failed_extractions")
    assert not check.passed and check.severity.value == "WARN"
    store = llm_runs["store"]
    failed = _read(store, schema.FAILED_EXTRACTIONS)
    assert failed.height == 1 and failed["error_type"].to_list() == ["LLMValidationError"]
    units = _read(store, schema.TEXT_UNITS).filter(pl.col("id") == failed["text_unit_id"][0])
    assert MARKER in units["text"][0]


def test_llm_path_builds_the_graph_with_inferred_endpoints_and_summaries(llm_runs):
    store = llm_runs["store"]
    entities = _read(store, schema.ENTITIES)
    rows = {r["title"]: r for r in entities.iter_rows(named=True)}
    assert rows["Marie Curie"]["description"] == "A merged description."  # several descriptions: one call
    assert rows["Paris"]["description"] == "A city."  # one distinct description: kept, no call
    assert rows["Sorbonne"]["type"] == "unknown"  # endpoint rule: added, not dropped
    assert _metadata(llm_runs["runs"][0], "entities")["description_llm_calls"] == 1
    communities = _read(store, schema.COMMUNITIES)
    assert sorted(communities.filter(pl.col("level") == 0).explode("entity_ids")["entity_ids"]) == sorted(
        entities["id"]
    )


def test_llm_path_rerun_asks_only_for_the_failed_unit(llm_runs):
    second = llm_runs["runs"][1]
    assert second.success
    meta = _metadata(second, "extracted_graph")
    first_meta = _metadata(llm_runs["runs"][0], "extracted_graph")
    assert meta["llm_calls"] == 2  # the failed unit's call and its repair retry, nothing else
    assert meta["llm_cache_hits"] == first_meta["llm_calls"] - 2
    assert _metadata(second, "entities")["llm_calls"] == 0  # the summary came from the cache
