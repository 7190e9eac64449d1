"""Columns are defined once, in pipeline.core.schema: every table the pipeline writes has exactly its
schema's columns, and a column added to a schema but not to the code computing it fails here."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from pipeline.core import schema, tables
from pipeline.core.shards import shard_table
from pipeline.core.tables import SchemaError, check_table, to_table
from pipeline.index.extracted_graph import index_extraction_shard
from pipeline.index.run import index_folder
from pipeline.io.store import NamespaceStore
from pipeline.ops.extraction.models import ExtractionFailure
from pipeline.ops.extraction.table import failures_table as extraction_failures_table
from pipeline.ops.reports.build import ReportFailure
from pipeline.ops.reports.build import failures_table as report_failures_table
from pipeline.query.global_.search import GlobalSearchConfig
from pipeline.query.registry import MODES
from pipeline.query.saved_questions import (
    write_answers,
    write_global_answers,
    write_global_batches,
    write_global_map_answers,
)
from pipeline.runtime import cached_embedder, make_engine
from pipeline.settings import Settings

NAMESPACE = "schema_check"
PEOPLE = [("Ada Abbot", "Lisbon"), ("Ben Brandt", "Porto"), ("Cora Costa", "Lisbon"), ("Dan Duarte", "Porto")]


def _ingest_error_row() -> dict:
    return {"source_path": "a.png", "row": None, "error_type": "unsupported", "reason": "png"}


# ---- the strict writer ---------------------------------------------------------------------------
def test_to_table_names_a_missing_column():
    row = _ingest_error_row()
    del row["reason"]
    with pytest.raises(SchemaError, match=r"ingest_errors row 0 .*missing \['reason'\]") as err:
        to_table([row], schema.INGEST_ERRORS_SCHEMA)
    assert err.value.table == "ingest_errors" and err.value.missing == ["reason"] and err.value.extra == []


def test_to_table_names_an_extra_column():
    rows = [_ingest_error_row(), {**_ingest_error_row(), "severity": "high"}]
    with pytest.raises(SchemaError, match=r"ingest_errors row 1 .*extra \['severity'\]") as err:
        to_table(rows, schema.INGEST_ERRORS_SCHEMA)
    assert err.value.missing == [] and err.value.extra == ["severity"]


def test_to_table_checks_the_fields_of_struct_values():
    unit = {
        "text_unit_id": "t",
        "document_id": "d",
        "method": "offline",
        "version": "v",
        "status": "ok",
        "rounds": 1,
        "n_sentences": 1,
        "dropped_records": 0,
        "retyped_entities": 0,
        "entities": [{"name": "Ada", "type": "person", "description": "", "round": 0, "mentions": 1}],
        "relationships": [],
        "claims": [],
    }
    with pytest.raises(SchemaError, match=r"entities\[0\] .*missing \['evidence', 'inferred'\]"):
        to_table([unit], schema.EXTRACTED_GRAPH_SCHEMA)


def test_to_table_takes_columns_and_casts_them_to_the_schema_types():
    dim = 3
    columns = {
        "id": ["u:0"],
        "text_unit_id": ["u"],
        "document_id": ["d"],
        "start_char": pa.array([5], pa.int32()),
        "end_char": np.array([9], dtype=np.int16),
        "vector": schema.vector_array(np.ones((1, dim)), dim),
    }
    table = to_table(columns, schema.lance_text_unit_pieces_schema(dim))
    assert table.schema == schema.lance_text_unit_pieces_schema(dim)
    with pytest.raises(SchemaError, match=r"LanceDB text_unit_pieces columns .*missing \['end_char'\]"):
        to_table(
            {k: v for k, v in columns.items() if k != "end_char"}, schema.lance_text_unit_pieces_schema(dim)
        )


def test_no_rows_give_an_empty_table_of_the_schema():
    table = to_table([], schema.ENTITIES_SCHEMA)
    assert table.num_rows == 0 and table.schema == schema.ENTITIES_SCHEMA


def test_check_table_reports_missing_extra_and_mistyped_columns():
    good = to_table([_ingest_error_row()], schema.INGEST_ERRORS_SCHEMA)
    assert check_table(good, schema.INGEST_ERRORS_SCHEMA) is good
    with pytest.raises(SchemaError, match=r"missing \['reason'\].*extra \['why'\]"):
        check_table(
            good.rename_columns(["source_path", "row", "error_type", "why"]), schema.INGEST_ERRORS_SCHEMA
        )
    mistyped = good.set_column(1, "row", pa.array([1], pa.int32()))
    with pytest.raises(SchemaError, match="column 'row' is int32, the schema says int64"):
        check_table(mistyped, schema.INGEST_ERRORS_SCHEMA)


def test_every_schema_in_the_module_is_registered():
    parquet = {v for k, v in vars(schema).items() if k.endswith("_SCHEMA") and isinstance(v, pa.Schema)}
    lance = {k for k in vars(schema) if k.startswith("lance_") and k.endswith("_schema")}
    assert parquet == set(tables.TABLE_SCHEMAS.values())
    assert {f"lance_{n}_schema" for n in tables.LANCE_SCHEMAS} == lance
    assert (
        tables.registered_schema(shard_table(schema.EXTRACTED_GRAPH, 2, 5)) is schema.EXTRACTED_GRAPH_SCHEMA
    )
    assert tables.registered_schema("scratch") is None


# ---- the store refuses what does not fit ---------------------------------------------------------
def test_write_table_refuses_a_missing_column_and_keeps_the_previous_file(tmp_path: Path):
    store = NamespaceStore(tmp_path, "ns")
    good = to_table([_ingest_error_row()], schema.INGEST_ERRORS_SCHEMA)
    store.write_table(schema.INGEST_ERRORS, good)
    before = store.read_bytes(f"{schema.INGEST_ERRORS}.parquet")
    with pytest.raises(SchemaError, match=r"ingest_errors does not match .*missing \['reason'\]"):
        store.write_table(schema.INGEST_ERRORS, good.drop_columns(["reason"]))
    assert store.read_bytes(f"{schema.INGEST_ERRORS}.parquet") == before
    part = shard_table(schema.FAILED_EXTRACTIONS, 0, 2)
    with pytest.raises(SchemaError, match=r"missing \['reason'\]"):
        store.write_table(part, extraction_failures_table([]).drop_columns(["reason"]))
    assert not store.has_table(part)
    store.write_table("scratch", pa.table({"anything": [1]}))  # no registered schema: written as is


def test_replace_lance_table_refuses_a_missing_column_and_keeps_the_table(tmp_path: Path):
    store = NamespaceStore(tmp_path, "ns")
    dim = 4
    rows = {
        "id": ["u:0", "u:9"],
        "text_unit_id": ["u", "u"],
        "document_id": ["d", "d"],
        "start_char": [0, 9],
        "end_char": [9, 20],
        "vector": schema.vector_array(np.eye(2, dim), dim),
    }
    store.replace_lance_table(
        schema.LANCE_TEXT_UNIT_PIECES, to_table(rows, schema.lance_text_unit_pieces_schema(dim))
    )
    version = store.open_lance_table(schema.LANCE_TEXT_UNIT_PIECES).version
    bad = pa.table({k: v for k, v in rows.items() if k != "document_id"})
    with pytest.raises(SchemaError, match=r"LanceDB text_unit_pieces .*missing \['document_id'\]"):
        store.replace_lance_table(schema.LANCE_TEXT_UNIT_PIECES, bad)
    table = store.open_lance_table(schema.LANCE_TEXT_UNIT_PIECES)
    assert table.version == version and table.count_rows() == 2


# ---- what the real code writes ---------------------------------------------------------------------
def _corpus(folder: Path) -> None:
    folder.mkdir(parents=True)
    for i in range(6):
        a, city_a = PEOPLE[i % 4]
        b, city_b = PEOPLE[(i + 1) % 4]
        (folder / f"story{i}.txt").write_text(
            f"{a} founded the Harbour Guild in {city_a} in 1990. {a} met {b} in {city_b} for meeting {i}. "
            f"{b} thanked {a} for the loan. {b} accused {a} of hiding the ledger. "
            f"{a} and {b} sailed from {city_a} to {city_b}.\n",
            encoding="utf-8",
        )
    (folder / "rows.json").write_text(
        json.dumps(
            [{"id": "r1", "title": "Row", "text": f"{PEOPLE[0][0]} visited {PEOPLE[2][1]}."}, {"title": "x"}]
        ),
        encoding="utf-8",
    )
    (folder / "image.png").write_bytes(b"\x89PNG")


@pytest.fixture(scope="module")
def indexed(tmp_path_factory: pytest.TempPathFactory) -> NamespaceStore:
    """A tiny corpus through every indexing stage, a shard's extraction and the saved-question tables:
    a column the code forgets to compute raises SchemaError here."""
    root = tmp_path_factory.mktemp("schema")
    _corpus(root / "input")
    # with the GraphRAG-named export tables too, so their columns are checked as well
    settings = Settings(storage_root=root / "storage", input_root=root / "input", graphrag_export=True)
    index_folder(NAMESPACE, root / "input", settings=settings, log=lambda _: None)
    store = NamespaceStore(settings.storage_root, NAMESPACE)
    engine, embedder = make_engine(settings), cached_embedder(settings)
    index_extraction_shard(store, settings, 0, 2, engine)
    questions = ["Who founded the Harbour Guild?"]
    write_global_batches(store, questions, engine, embedder, GlobalSearchConfig())
    write_global_map_answers(store, engine, embedder, GlobalSearchConfig(), log=lambda _: None)
    write_global_answers(store, engine, embedder, GlobalSearchConfig())
    small = {"drift": {"depth": 1}, "lazy": {"budget": 8}}  # a tiny corpus: keep the searches short
    for name, mode in MODES.items():
        if mode.saved is not None:
            parts = {"settings": settings, "engine": engine, "embedder": embedder}
            write_answers(name, store, questions, given=small.get(name), **parts)
    return store


# Failure tables stay empty on a clean offline run; their builders are given a failure instead.
FAILURE_TABLES = {schema.FAILED_EXTRACTIONS, schema.FAILED_REPORTS}


@pytest.mark.parametrize("name", sorted({*tables.TABLE_SCHEMAS, *tables.ANSWER_TABLES} - FAILURE_TABLES))
def test_the_pipeline_writes_every_column_of(indexed: NamespaceStore, name: str):
    table = indexed.read_table(name)
    assert table.num_rows > 0, f"{name} is empty: its rows' columns were never checked"
    check_table(table, tables.registered_schema(name), name=name)


@pytest.mark.parametrize("name", sorted(tables.LANCE_SCHEMAS))
def test_the_pipeline_writes_every_column_of_lance(indexed: NamespaceStore, name: str):
    table = indexed.open_lance_table(name).to_arrow()
    assert table.num_rows > 0, f"LanceDB {name} is empty: its rows' columns were never checked"
    tables.check_lance_table(name, table)


def test_every_table_the_pipeline_writes_has_a_schema(indexed: NamespaceStore):
    for info in indexed.tables():
        if info.kind == "parquet":
            assert tables.registered_schema(info.name) is not None, info.name
        else:
            assert info.name in tables.LANCE_SCHEMAS, info.name
    assert indexed.has_table(shard_table(schema.EXTRACTED_GRAPH, 0, 2))


def test_failure_tables_are_built_with_every_column():
    extraction = extraction_failures_table([ExtractionFailure("t", "d", 1, "LLMError", "timeout")])
    reports = report_failures_table([ReportFailure(3, 0, "fp", "LLMError", "invalid JSON", "{")])
    check_table(extraction, schema.FAILED_EXTRACTIONS_SCHEMA)
    check_table(reports, schema.FAILED_REPORTS_SCHEMA)
    assert extraction.num_rows == reports.num_rows == 1
