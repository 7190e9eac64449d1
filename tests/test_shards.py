"""Document shards (pipeline/core/shards.py) and the shard-aware extraction (pipeline/index/extracted_graph.py), offline,
on real Parquet: shard parts merged in any order give the tables a one-process extraction writes."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pyarrow as pa
import pytest

from pipeline.core import schema
from pipeline.core.shards import ShardMismatchError, order_like, shard_of, shard_table, shard_units
from pipeline.engine.offline import OfflineEngine
from pipeline.index.extracted_graph import index_extracted_graph, index_extraction_shard
from pipeline.io.store import NamespaceStore
from pipeline.ops.chunking import chunk_documents_table
from pipeline.ops.ingest import documents_table, read_documents
from pipeline.settings import load_settings

NAMES = "Ada Ben Cora Dan Eva Finn Gia Hal Ivy Jon Kai Lea".split()


def _store(root: Path, n_docs: int = 24) -> NamespaceStore:
    folder = root / "input"
    folder.mkdir(parents=True)
    for i in range(n_docs):
        a, b = NAMES[i % 12], NAMES[(i + 5) % 12]
        (folder / f"d{i:02d}.txt").write_text(
            f"{a} Abbot met {b} Brandt in Lisbon for meeting {i}. {b} Brandt thanked {a} Abbot.\n"
        )
    docs = documents_table(read_documents(folder).documents)
    units, docs, _ = chunk_documents_table(docs, 1200, 100, "o200k_base")
    store = NamespaceStore(root / "storage", "shards")
    store.write_table(schema.INPUT_DOCUMENTS, docs)
    store.write_table(schema.BASE_TEXT_UNITS, units)
    return store


def test_shard_of_is_stable_and_in_range():
    ids = [f"{i:064x}" for i in range(400)]
    first = [shard_of(d, 4) for d in ids]
    assert first == [shard_of(d, 4) for d in ids]
    assert set(first) == {0, 1, 2, 3}
    assert min(Counter(first).values()) > 60  # a hash spreads them, roughly evenly
    with pytest.raises(ValueError):
        shard_of("x", 0)


def test_shards_partition_the_text_units_by_document(tmp_path: Path):
    units = _store(tmp_path).read_table(schema.BASE_TEXT_UNITS)
    parts = [shard_units(units, k, 3) for k in range(3)]
    ids = [uid for p in parts for uid in p.column("id").to_pylist()]
    assert sorted(ids) == sorted(units.column("id").to_pylist())  # every unit once
    for k, part in enumerate(parts):
        assert {shard_of(d, 3) for d in part.column("document_id").to_pylist()} <= {k}


def test_order_like_refuses_missing_or_extra_rows():
    table = pa.table({"text_unit_id": ["b", "a"]})
    assert order_like(table, "text_unit_id", ["a", "b"]).column("text_unit_id").to_pylist() == ["a", "b"]
    with pytest.raises(ShardMismatchError):
        order_like(table, "text_unit_id", ["a", "b", "c"])
    with pytest.raises(ShardMismatchError):
        order_like(table, "text_unit_id", ["a"])


def test_merged_shard_parts_equal_a_one_process_extraction(tmp_path: Path):
    one = _store(tmp_path / "one")
    index_extracted_graph(one, load_settings(shards=1), OfflineEngine())
    sharded = _store(tmp_path / "sharded")
    settings = load_settings(shards=3)
    for k in (2, 0, 1):  # workers finish in any order
        index_extraction_shard(sharded, settings, k, 3, OfflineEngine())
    summary = index_extracted_graph(sharded, settings, OfflineEngine())
    assert summary.counts["shards_merged"] == 3
    for table in (schema.EXTRACTED_GRAPH, schema.FAILED_EXTRACTIONS):
        assert sharded.read_table(table).equals(one.read_table(table)), table


def test_a_stale_or_missing_shard_part_is_extracted_by_the_merge(tmp_path: Path):
    store = _store(tmp_path)
    settings = load_settings(shards=3)
    for k in range(3):
        index_extraction_shard(store, settings, k, 3, OfflineEngine())
    # shard 1's part loses a row (as if written for older text units); shard 2's part is gone
    part = store.read_table(shard_table(schema.EXTRACTED_GRAPH, 1, 3))
    store.write_table(shard_table(schema.EXTRACTED_GRAPH, 1, 3), part.slice(1))
    store.delete_file(shard_table(schema.EXTRACTED_GRAPH, 2, 3) + ".parquet")
    summary = index_extracted_graph(store, settings, OfflineEngine())
    assert summary.counts["shards_merged"] == 1
    merged = store.read_table(schema.EXTRACTED_GRAPH).column("text_unit_id").to_pylist()
    assert merged == store.read_table(schema.BASE_TEXT_UNITS).column("id").to_pylist()


def test_a_shard_part_made_under_another_configuration_is_not_taken(tmp_path: Path):
    store = _store(tmp_path)
    for k in range(2):
        index_extraction_shard(store, load_settings(shards=2, extract_claims=False), k, 2, OfflineEngine())
    summary = index_extracted_graph(store, load_settings(shards=2), OfflineEngine())
    assert summary.counts["shards_merged"] == 0
    assert summary.counts["claims"] > 0


def test_parts_of_another_shard_count_are_removed_once_the_namespace_is_rebuilt(tmp_path: Path):
    store = _store(tmp_path)
    for k in range(2):
        index_extraction_shard(store, load_settings(shards=2), k, 2, OfflineEngine())
    settings = load_settings(shards=3)
    for k in range(3):
        index_extraction_shard(store, settings, k, 3, OfflineEngine())
    before = store.files("shards", ".parquet")
    assert sum("-of-002" in n for n in before) == 4 and sum("-of-003" in n for n in before) == 6
    summary = index_extracted_graph(store, settings, OfflineEngine())
    assert summary.counts["shards_merged"] == 3 and summary.counts["stale_shard_parts_removed"] == 4
    assert sorted(store.files("shards", ".parquet")) == sorted(n for n in before if "-of-003" in n)
    # back to one process: every part is stale then
    summary = index_extracted_graph(store, load_settings(shards=1), OfflineEngine())
    assert summary.counts["stale_shard_parts_removed"] == 6 and store.files("shards", ".parquet") == []
