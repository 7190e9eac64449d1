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


def test_replacing_ten_times_keeps_only_the_versions_since_the_previous_complete_one(tmp_path):
    store = NamespaceStore(tmp_path, "ns")
    table = store.replace_lance_table("things", _rows(0), fts_columns=("title", "description"))
    one = _bytes(tmp_path / "ns" / "lancedb")
    for generation in range(1, 10):
        started_from = table.version
        table = store.replace_lance_table("things", _rows(generation), fts_columns=("title", "description"))
    assert min(v["version"] for v in table.list_versions()) == started_from
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
    store = NamespaceStore(tmp_path, "ns")  # keep_versions=1 would do: the start of a replace is kept
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


def test_replacing_with_the_same_rows_writes_nothing(tmp_path):
    store = NamespaceStore(tmp_path, "ns", keep_versions=4)
    table = store.replace_lance_table("things", _rows(0), fts_columns=("title", "description"))
    version, size = table.version, _bytes(tmp_path / "ns" / "lancedb")
    shuffled = _rows(0).take(list(reversed(range(300))))  # same rows, another order
    table = store.replace_lance_table("things", shuffled, fts_columns=("title", "description"))
    assert (table.version, _bytes(tmp_path / "ns" / "lancedb")) == (version, size)
    # one changed row is a real replace
    changed = _rows(0).set_column(
        1, "title", pa.array(["changed"] + [f"title {i} of generation 0" for i in range(1, 300)])
    )
    table = store.replace_lance_table("things", changed, fts_columns=("title", "description"))
    assert table.version > version
    assert table.search("changed", query_type="fts").limit(1).to_list()[0]["id"] == "e0"


def test_a_replace_writes_only_what_changed_and_ends_with_exactly_the_new_rows(tmp_path):
    store = NamespaceStore(tmp_path, "ns", keep_versions=4)
    store.replace_lance_table("things", _rows(0), fts_columns=("title",))
    before = _bytes(tmp_path / "ns" / "lancedb")
    rows = _rows(0).to_pylist()
    rows[0]["title"] = "a new title"  # changed
    rows = rows[:-1]  # e299 removed
    rows.append({"id": "e'300", "title": "added", "description": "new"})  # added (a quote in an id)
    table = store.replace_lance_table(
        "things", pa.Table.from_pylist(rows, schema=_rows(0).schema), ("title",)
    )
    assert table.to_arrow().sort_by("id").to_pylist() == sorted(rows, key=lambda r: r["id"])
    # the new version holds two rows of data, not 300 again (the full-text index is rebuilt whole)
    data_files = sorted(
        (tmp_path / "ns" / "lancedb" / "things.lance" / "data").iterdir(), key=lambda f: f.stat().st_mtime
    )
    assert data_files[-1].stat().st_size < data_files[0].stat().st_size / 10
    assert _bytes(tmp_path / "ns" / "lancedb") < 2 * before
    assert [r["id"] for r in table.search("added", query_type="fts").limit(1).to_list()] == ["e'300"]


def test_lance_version_follows_appends_overwrites_and_drops(tmp_path):
    # Query caches key on it: each commit must show at once, a dropped table as None.
    store = NamespaceStore(tmp_path, "ns")
    assert store.lance_version("t") is None
    db = store.lancedb()
    db.create_table("t", pa.table({"id": ["a"], "x": [1]}))
    first = store.lance_version("t")
    db.open_table("t").add(pa.table({"id": ["b"], "x": [2]}))
    appended = store.lance_version("t")
    db.create_table("t", pa.table({"id": ["a"], "x": [1]}), mode="overwrite")
    overwritten = store.lance_version("t")
    assert first < appended < overwritten
    db.drop_table("t")
    assert store.lance_version("t") is None
