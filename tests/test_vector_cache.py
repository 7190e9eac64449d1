"""The in-memory vector search (`pipeline.query.caches.vector_cache`) against LanceDB's own flat search
on a real table, its level filter, its fallback for tables too large to hold, absent tables and re-index freshness."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from pipeline.io.store import NamespaceStore
from pipeline.query.caches import vector_cache
from pipeline.query.caches.vector_cache import nearest

DIM = 16


def _table(seed: int, n: int = 200) -> pa.Table:
    rng = np.random.default_rng(seed)
    vectors = rng.normal(size=(n, DIM)).astype(np.float32)
    return pa.table(
        {
            "id": [f"e{i}" for i in range(n)],
            "community": list(range(n)),
            "level": [i % 3 for i in range(n)],
            "vector": pa.FixedSizeListArray.from_arrays(pa.array(vectors.reshape(-1)), DIM),
        }
    )


def _lance_nearest(store: NamespaceStore, query: np.ndarray, k: int, where: str | None = None) -> list:
    search = store.open_lance_table("things").search(query).metric("cosine").limit(k)
    if where:
        search = search.where(where, prefilter=True)
    return [(r["id"], 1.0 - r["_distance"]) for r in search.select(["id", "_distance"]).to_list()]


def test_nearest_returns_lancedb_flat_search_rows_in_its_order(tmp_path):
    store = NamespaceStore(tmp_path, "vc")
    store.lancedb().create_table("things", _table(1))
    query = np.random.default_rng(7).normal(size=DIM).astype(np.float32)
    ours = nearest(store, "things", "id", query, 10)
    theirs = _lance_nearest(store, query, 10)
    assert [k for k, _ in ours] == [k for k, _ in theirs]
    assert np.allclose([s for _, s in ours], [s for _, s in theirs], atol=1e-5)


def test_nearest_at_a_level_keeps_only_that_levels_rows(tmp_path):
    store = NamespaceStore(tmp_path, "vc")
    store.lancedb().create_table("things", _table(2))
    query = np.random.default_rng(8).normal(size=DIM).astype(np.float32)
    ours = nearest(store, "things", "id", query, 5, level=2)
    assert [k for k, _ in ours] == [k for k, _ in _lance_nearest(store, query, 5, "level = 2")]
    assert all(int(k[1:]) % 3 == 2 for k, _ in ours)


def test_a_table_above_the_row_limit_is_left_to_lancedb(tmp_path, monkeypatch):
    store = NamespaceStore(tmp_path, "vc")
    store.lancedb().create_table("things", _table(3))
    monkeypatch.setattr(vector_cache, "MAX_ROWS", 199)
    assert nearest(store, "things", "id", np.ones(DIM, dtype=np.float32), 5) is None


def test_a_table_not_written_yet_finds_nothing(tmp_path):
    store = NamespaceStore(tmp_path, "vc")
    assert nearest(store, "absent", "id", np.ones(DIM, dtype=np.float32), 5) == []
    store.lancedb().create_table("things", _table(6))
    assert nearest(store, "absent", "id", np.ones(DIM, dtype=np.float32), 5) == []


def test_a_reindexed_table_is_searched_at_its_new_version(tmp_path):
    store = NamespaceStore(tmp_path, "vc")
    db = store.lancedb()
    db.create_table("things", _table(4))
    query = np.random.default_rng(9).normal(size=DIM).astype(np.float32)
    before = nearest(store, "things", "id", query, 3)
    db.create_table("things", _table(5), mode="overwrite")  # as a re-index's schema change writes it
    after = nearest(store, "things", "id", query, 3)
    assert [k for k, _ in after] == [k for k, _ in _lance_nearest(store, query, 3)]
    assert before != after
