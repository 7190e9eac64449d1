"""What a LanceDB replace writes and keeps (`pipeline.io.store.NamespaceStore.replace_lance_table`): the
rows that differ from the table's own, and which old versions are pruned after it."""

from __future__ import annotations

import datetime as dt
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from pipeline.io.manifest import COMMITTED_TAG


def indexed_columns(table: Any) -> set[str]:
    return {column for index in table.list_indices() for column in index.columns}


def id_filter(ids: list[str]) -> str:
    quoted = ", ".join("'" + i.replace("'", "''") + "'" for i in ids)
    return f"id IN ({quoted})"


def _column_equal(a: pa.ChunkedArray, b: pa.ChunkedArray) -> np.ndarray:
    """Row by row: are the two columns' values equal (two nulls being equal)."""
    kind = a.type
    vectors = pa.types.is_fixed_size_list(kind) and pa.types.is_floating(kind.value_type)
    if vectors and not a.null_count and not b.null_count:
        width = kind.list_size
        x = a.combine_chunks().flatten().to_numpy(zero_copy_only=False).reshape(-1, width)
        y = b.combine_chunks().flatten().to_numpy(zero_copy_only=False).reshape(-1, width)
        return (x == y).all(axis=1)
    if pa.types.is_primitive(kind) or pa.types.is_string(kind) or pa.types.is_large_string(kind):
        equal = pc.fill_null(pc.equal(a, b), False)
        return np.asarray(pc.or_(equal, pc.and_(pc.is_null(a), pc.is_null(b))), dtype=bool)
    return np.asarray([u == v for u, v in zip(a.to_pylist(), b.to_pylist(), strict=True)], dtype=bool)


def row_difference(current: pa.Table, data: pa.Table) -> tuple[pa.Table, list[str]]:
    """The rows of `data` that `current` lacks or holds otherwise, and the ids of `current` that
    `data` lacks (same schema, ids unique in both)."""
    position = {row_id: i for i, row_id in enumerate(current.column("id").to_pylist())}
    new_ids = data.column("id").to_pylist()
    pos = np.asarray([position.get(row_id, -1) for row_id in new_ids], dtype=np.int64)
    present = np.flatnonzero(pos >= 0)
    same = np.zeros(len(new_ids), dtype=bool)
    if len(present):
        ours = data.take(pa.array(present))
        theirs = current.take(pa.array(pos[present]))
        equal = np.ones(len(present), dtype=bool)
        for name in data.column_names:
            equal &= _column_equal(ours.column(name), theirs.column(name))
        same[present] = equal
    kept = set(new_ids)
    removed = [row_id for row_id in position if row_id not in kept]
    return data.filter(pa.array(~same)), removed


def prune_versions(table: Any, keep: int, started_from: int | None = None) -> None:
    """Delete the files of every version older than both the newest `keep` and `started_from`, and
    compact the table.

    LanceDB deletes versions older than an age, not by number, and reads its clock a moment after
    this one: the age chosen puts the cut halfway between the newest version to delete and the oldest
    to keep, so that moment would have to exceed half their distance to cost a version to keep."""
    versions = sorted(table.list_versions(), key=lambda v: v["version"])
    oldest_kept = len(versions) - keep
    if started_from is not None:
        oldest_kept = min(
            oldest_kept, next((i for i, v in enumerate(versions) if v["version"] >= started_from), 0)
        )
    if oldest_kept <= 0:
        return
    newest_gone, first_kept = versions[oldest_kept - 1]["timestamp"], versions[oldest_kept]["timestamp"]
    cut = newest_gone + (first_kept - newest_gone) / 2
    now = dt.datetime.now(cut.tzinfo) if cut.tzinfo else dt.datetime.now()
    # optimize() also compacts small data files and folds unindexed rows into the indexes, all in
    # LanceDB's own code (cleanup_old_versions alone needs the separate pylance package).
    try:
        table.optimize(cleanup_older_than=max(now - cut, dt.timedelta(0)))
    except Exception as exc:  # noqa: BLE001 - LanceDB raises its errors as plain ones
        if COMMITTED_TAG not in str(exc):
            raise
        # Lance's clock, read after its compaction, passed the version a manifest names (which its tag
        # kept): a second cut a second before that version leaves it out of reach of any such delay.
        cut = first_kept - dt.timedelta(seconds=1)
        now = dt.datetime.now(cut.tzinfo) if cut.tzinfo else dt.datetime.now()
        table.optimize(cleanup_older_than=max(now - cut, dt.timedelta(0)))
