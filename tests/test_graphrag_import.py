"""`pipeline import graphrag` on a folder that Microsoft GraphRAG 3.3.0 wrote (tests/fixtures/ms_graphrag_3_3,
made by bench/interop_graphrag.py): our tables filled, every query mode answering with citations that
resolve to document offsets, clear errors, and the GraphRAG-named export tables. graphrag itself is not
installed here: the fixture is its real output."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pipeline.core import schema
from pipeline.engine.offline import OfflineEngine
from pipeline.index import graphrag_import
from pipeline.index.context import IndexContext
from pipeline.interop.ms_graphrag_convert import convert
from pipeline.interop.ms_graphrag_export import write_ms_tables
from pipeline.interop.ms_graphrag_read import GraphRAGImportError, read_output
from pipeline.io.store import NamespaceStore
from pipeline.ops.reports.models import ReportIdentity
from pipeline.settings import Settings

FIXTURE = Path(__file__).parent / "fixtures" / "ms_graphrag_3_3" / "output"
QUESTION = "What happened at Gull Point during the storm?"


def _import(root: Path, embedder: object, source: Path = FIXTURE, namespace: str = "gr", **settings: object):
    config = Settings(storage_root=root, **settings)
    ctx = IndexContext(NamespaceStore(root, namespace), config, OfflineEngine(), embedder)  # type: ignore[arg-type]
    return ctx, graphrag_import.run(ctx, source)


@pytest.fixture(scope="module")
def imported(tmp_path_factory: pytest.TempPathFactory, embedder: object) -> tuple[IndexContext, object]:
    return _import(tmp_path_factory.mktemp("storage"), embedder)


def _docs(store: NamespaceStore) -> dict[str, str]:
    return {d["id"]: d["text"] for d in store.read_table(schema.DOCUMENTS).to_pylist()}


def _assert_resolves(store: NamespaceStore, document_id: str, start: int, end: int) -> None:
    units = store.read_table(schema.TEXT_UNITS).to_pylist()
    spans = {(u["document_id"], u["start_char"], u["end_char"]) for u in units}
    assert (document_id, start, end) in spans  # a unit's offsets, and the unit's text is there:
    unit = next(
        u for u in units if (u["document_id"], u["start_char"], u["end_char"]) == (document_id, start, end)
    )
    assert _docs(store)[document_id][start:end] == unit["text"]


def test_import_fills_the_columns_graphrag_lacks_without_an_llm_call(imported):
    ctx, report = imported
    store, meta = ctx.store, report.all_metadata()
    assert meta["llm_calls"] == 0 and meta["source_version"] == "3.x"
    theirs = pq.read_table(FIXTURE / "text_units.parquet")
    units = store.read_table(schema.TEXT_UNITS).to_pylist()
    assert len(units) == theirs.num_rows == meta["text_units_located"]
    docs = _docs(store)
    assert all(docs[u["document_id"]][u["start_char"] : u["end_char"]] == u["text"] for u in units)
    entities = store.read_table(schema.ENTITIES).to_pylist()
    ids = {e["id"] for e in entities}
    assert all(e["aliases"] == [] for e in entities)
    relationships = store.read_table(schema.RELATIONSHIPS).to_pylist()
    assert relationships and all(r["source_id"] in ids and r["target_id"] in ids for r in relationships)
    reports = store.read_table(schema.COMMUNITY_REPORTS).to_pylist()
    written = {r["community"]: r for r in pq.read_table(FIXTURE / "community_reports.parquet").to_pylist()}
    for r in reports:
        assert (
            r["method"] == "graphrag-import" and r["full_content"] == written[r["community"]]["full_content"]
        )
        assert len(r["fingerprint"]) == 64
        cited = json.loads(r["data_refs"]).get("Entities", {})
        assert cited and set(cited.values()) <= ids  # their [Data: Entities (n)] resolved to our rows


def test_every_query_mode_answers_on_the_import_with_citations_at_document_offsets(imported, embedder):
    from pipeline.api import basic_search, drift_search, global_search, lazy_search, local_search

    ctx, _ = imported
    store = ctx.store
    kwargs = {"settings": ctx.settings, "engine": OfflineEngine(), "embedder": embedder}

    result = global_search("gr", QUESTION, **kwargs)
    assert result.status == "completed" and result.cited_communities
    communities = {c["community"]: c for c in store.read_table(schema.COMMUNITIES).to_pylist()}
    units = {u["id"]: u for u in store.read_table(schema.TEXT_UNITS).to_pylist()}
    for community in result.cited_communities:
        for unit_id in communities[community]["text_unit_ids"]:
            u = units[unit_id]
            _assert_resolves(store, u["document_id"], u["start_char"], u["end_char"])

    local = local_search("gr", QUESTION, **kwargs)
    assert local.status == "completed"
    chunks = [e for e in local.evidence if e["kind"] == "chunk"]
    assert chunks
    for e in chunks:
        _assert_resolves(store, e["document_id"], e["start_char"], e["end_char"])

    for mode in (drift_search, basic_search, lazy_search):
        answer = mode("gr", QUESTION, **kwargs)
        assert answer.status == "completed", mode.__name__
        sources = [c for c in answer.citations if c["section"] == "sources"]
        assert sources, mode.__name__
        for c in sources:
            _assert_resolves(store, c["document_id"], c["start_char"], c["end_char"])


def test_a_folder_missing_a_table_names_it_and_writes_nothing(tmp_path: Path, embedder):
    source = tmp_path / "output"
    shutil.copytree(FIXTURE, source)
    (source / "relationships.parquet").unlink()
    with pytest.raises(GraphRAGImportError, match=r"missing relationships\.parquet"):
        _import(tmp_path / "storage", embedder, source)
    assert not NamespaceStore(tmp_path / "storage", "gr").exists()


def test_a_table_missing_a_column_names_the_column(tmp_path: Path):
    source = tmp_path / "output"
    shutil.copytree(FIXTURE, source)
    units = pq.read_table(source / "text_units.parquet").drop_columns(["text"])
    pq.write_table(units, source / "text_units.parquet")
    with pytest.raises(GraphRAGImportError, match=r"'text_units' table lacks column\(s\) text"):
        read_output(source)


def test_a_unit_whose_text_is_not_in_its_document_keeps_null_offsets_and_is_counted(tmp_path: Path, embedder):
    source = tmp_path / "output"
    shutil.copytree(FIXTURE, source)
    units = pq.read_table(source / "text_units.parquet")
    texts = units.column("text").to_pylist()
    texts[1] = "A passage that no document of this index contains."
    pq.write_table(
        units.set_column(units.column_names.index("text"), "text", pa.array(texts)),
        source / "text_units.parquet",
    )

    ctx, report = _import(tmp_path / "storage", embedder, source)
    meta = report.all_metadata()
    assert meta["text_units_without_offsets"] == 1 and meta["text_units_located"] == units.num_rows - 1
    assert not next(c for c in report.checks if c.name == "every_text_unit_located").passed
    ours = ctx.store.read_table(schema.TEXT_UNITS).to_pylist()
    assert len(ours) == units.num_rows  # kept, not dropped
    lost = [u for u in ours if u["text"] == texts[1]]
    assert len(lost) == 1 and lost[0]["start_char"] is None and lost[0]["end_char"] is None
    assert ctx.store.open_lance_table(schema.LANCE_TEXT_UNITS).count_rows() == units.num_rows


def test_a_2x_folder_with_document_ids_lists_is_read_as_2x():
    output = read_output(FIXTURE)
    for unit in output.rows["text_units"]:
        unit["document_ids"] = [unit.pop("document_id")]
    output.version = "2.x"
    converted = convert(
        output, ReportIdentity("offline", "offline", "v"), budget=8000, max_words=2000, encoding="o200k_base"
    )
    assert converted.stats.units_located == len(output.rows["text_units"])
    assert converted.tables[schema.TEXT_UNITS].column("document_id").null_count == 0


def test_export_writes_graphrags_table_names_with_the_texts_it_embeds(imported, embedder):
    ctx, _ = imported
    store = ctx.store
    ours_before = store.open_lance_table(schema.LANCE_ENTITIES).version
    stats = write_ms_tables(store, embedder)
    assert set(stats.rows) == {"entity_description", "community_full_content", "text_unit_text"}

    entities = {e["id"]: e for e in store.read_table(schema.ENTITIES).to_pylist()}
    rows = store.open_lance_table("entity_description").to_arrow().to_pylist()
    assert {r["id"] for r in rows} == set(entities)
    assert all(r["text"] == f"{entities[r['id']]['title']}:{entities[r['id']]['description']}" for r in rows)
    assert len(rows[0]["vector"]) == embedder.dimension

    reports = {r["id"]: r["full_content"] for r in store.read_table(schema.COMMUNITY_REPORTS).to_pylist()}
    rows = store.open_lance_table("community_full_content").to_arrow().to_pylist()
    assert {r["id"]: r["text"] for r in rows} == reports
    units = {u["id"]: u["text"] for u in store.read_table(schema.TEXT_UNITS).to_pylist()}
    rows = store.open_lance_table("text_unit_text").to_arrow().to_pylist()
    assert {r["id"]: r["text"] for r in rows} == units
    assert store.open_lance_table(schema.LANCE_ENTITIES).version == ours_before  # ours untouched


def test_the_cli_names_a_bad_folder_before_dagster_runs(tmp_path: Path, storage_root: Path, capsys):
    from assets.cli import main

    assert main(["import", "graphrag", "--from", str(tmp_path / "nowhere"), "--namespace", "gr"]) == 2
    assert "is not a folder" in capsys.readouterr().err
    assert not NamespaceStore(storage_root, "gr").exists()


def test_the_import_is_a_dagster_run_with_its_metadata_and_check(storage_root: Path, dagster_instance):
    from assets.import_launch import run_import

    result = run_import("imported", str(FIXTURE), instance=dagster_instance)
    assert result.success, result.failures
    (step,) = result.steps
    assert step.asset == "graphrag_import"
    assert step.metadata["text_units_located"] == 4 and step.metadata["llm_calls"] == 0
    assert dagster_instance.has_dynamic_partition("namespace", "imported")  # a partition like any index
    assert NamespaceStore(storage_root, "imported").has_lance_table(schema.LANCE_TEXT_UNITS)
