"""LanceDB tables keep a bounded number of versions: old files go after each replace, and a reader that
opened the previous version before a replace still reads it."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa

from pipeline.io.store import NamespaceStore


def _rows(generation: int, n: int = 300) -> pa.Table:
    return pa.table(
        {
            "id": [f"e{i}" for i in range(n)],
            "title": [f"title {i} of generation {generation}" for i in range(n)],
            "description": [f"generation {generation} text {i}" for i in range(n)],
        }
    )


def _bytes(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def test_replacing_ten_times_keeps_only_the_newest_versions(tmp_path):
    store = NamespaceStore(tmp_path, "ns", keep_versions=4)
    table = store.replace_lance_table("things", _rows(0), fts_columns=("title", "description"))
    one = _bytes(tmp_path / "ns" / "lancedb")
    for generation in range(1, 10):
        table = store.replace_lance_table("things", _rows(generation), fts_columns=("title", "description"))
    assert len(table.list_versions()) <= 4
    assert _bytes(tmp_path / "ns" / "lancedb") < 3 * one
    assert table.to_arrow().column("title").to_pylist()[0] == "title 0 of generation 9"
    assert [r["title"] for r in table.search("generation", query_type="fts").limit(1).to_list()]

    unpruned = NamespaceStore(tmp_path / "all", "ns", keep_versions=1000)
    for generation in range(10):
        table = unpruned.replace_lance_table(
            "things", _rows(generation), fts_columns=("title", "description")
        )
    assert len(table.list_versions()) == 30  # rows + two indexes per replace: what pruning removes
    assert _bytes(tmp_path / "all" / "ns" / "lancedb") > 5 * one


def test_a_reader_of_the_previous_version_finishes_after_a_replace(tmp_path):
    store = NamespaceStore(tmp_path, "ns", keep_versions=4)
    for generation in range(3):
        store.replace_lance_table("things", _rows(generation), fts_columns=("title", "description"))
    reader = store.open_lance_table("things")  # opened at generation 2's final version
    store.replace_lance_table("things", _rows(3), fts_columns=("title", "description"))
    titles = reader.to_arrow().column("title").to_pylist()
    assert titles[0] == "title 0 of generation 2"
    assert store.open_lance_table("things").to_arrow().column("title")[0].as_py() == "title 0 of generation 3"


def test_keep_versions_comes_from_the_settings(tmp_path, monkeypatch):
    from pipeline.settings import load_settings

    monkeypatch.setenv("PIPELINE_STORAGE_ROOT", str(tmp_path))
    monkeypatch.setenv("PIPELINE_LANCE_KEEP_VERSIONS", "7")
    assert NamespaceStore.from_settings(load_settings(), "ns").keep_versions == 7
