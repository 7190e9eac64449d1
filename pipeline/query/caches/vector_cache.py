"""Exact cosine search over a LanceDB table's vectors held in memory, kept per table version.

Local search asks the entity and report tables for their nearest rows on every question, and DRIFT asks
them again for each of its follow-ups. Through LanceDB each search cost 17-38 ms on MuSiQue (10,800
entity vectors) — a third of a DRIFT question — while a matrix product over the same vectors in memory
takes well under a millisecond. The tables carry no ANN index (LanceDB searches them flat), so the
in-memory search returns the same rows; ties are broken by row order.

A table above `MAX_ROWS` is not loaded (`nearest` returns None and the caller searches LanceDB): its
matrix would cost more memory than a process answering many namespaces should hold for one of them.
A table not written yet is searched as an empty one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from pipeline.io.store import NamespaceStore
from pipeline.query.caches.index_cache import cached_index, table_versions

# 250,000 vectors of 384 floats are 384 MB, raw and unit rows together: an 11 MB corpus's entities
# fit, a table past it is searched in LanceDB.
MAX_ROWS = 250_000


@dataclass(frozen=True)
class VectorMatrix:
    keys: list[Any]  # the key column, row by row
    raw: np.ndarray  # the stored vectors, float32, one row per key
    unit: np.ndarray  # the same rows scaled to unit length (zero rows stay zero)
    levels: np.ndarray | None  # the level column where the table has one (community reports)
    position: dict[Any, int]  # key -> row

    def vector(self, key: Any) -> np.ndarray | None:
        row = self.position.get(key)
        return None if row is None else self.raw[row]


# A table not written yet holds nothing: searching it finds nothing, as LanceDB's absent table did.
EMPTY = VectorMatrix([], np.zeros((0, 0), np.float32), np.zeros((0, 0), np.float32), None, {})


def column_matrix(column: Any) -> np.ndarray:
    """A pyarrow FixedSizeList column of vectors as a float32 [rows, dim] array."""
    flat = column.combine_chunks()
    if len(flat) == 0:
        return np.zeros((0, 0), dtype=np.float32)
    return np.asarray(flat.flatten().to_numpy(zero_copy_only=False), dtype=np.float32).reshape(len(flat), -1)


def held_vectors(store: NamespaceStore, table: str, key_column: str) -> VectorMatrix | None:
    """The table's vectors in memory, read once per version of it (`EMPTY` while the table does not
    exist); None when it has more than `MAX_ROWS` rows, for the caller to search LanceDB."""
    versions = table_versions(store, lance=[table])
    if versions[0] is None:
        return EMPTY
    return cached_index(store, f"vectors:{table}", versions, lambda: _load(store, table, key_column))


def nearest(
    store: NamespaceStore, table: str, key_column: str, vector: np.ndarray, k: int, level: int | None = None
) -> list[tuple[Any, float]] | None:
    """The `k` rows nearest to `vector` by cosine, best first, as (key, cosine); only rows at `level`
    when it is given. None when the table is too large to hold (`held_vectors`)."""
    matrix = held_vectors(store, table, key_column)
    if matrix is None:
        return None
    scores = cosines(matrix, vector)
    if not len(scores):
        return []
    rows = np.arange(len(scores))
    if level is not None:
        if matrix.levels is None:
            return []
        rows = rows[matrix.levels == level]
        scores = scores[rows]
    if len(rows) > k:
        top = np.argpartition(-scores, k - 1)[:k]
        rows, scores = rows[top], scores[top]
    order = np.lexsort((rows, -scores))
    return [(matrix.keys[rows[i]], float(scores[i])) for i in order]


def cosines(matrix: VectorMatrix, vector: np.ndarray) -> np.ndarray:
    """Each row's cosine to `vector`; none when the matrix is empty or the vector is zero."""
    query = np.asarray(vector, dtype=np.float32).reshape(-1)
    norm = float(np.linalg.norm(query))
    if not matrix.keys or norm == 0.0:
        return np.zeros(0, dtype=np.float32)
    return matrix.unit @ (query / norm)


def _load(store: NamespaceStore, table: str, key_column: str) -> VectorMatrix | None:
    lance = store.open_lance_table(table)
    if lance.count_rows() > MAX_ROWS:
        return None
    columns = [key_column, "vector"] + (["level"] if "level" in lance.schema.names else [])
    data = lance.to_arrow().select(columns)
    raw = column_matrix(data.column("vector"))
    norms = np.linalg.norm(raw, axis=1, keepdims=True)
    unit = np.divide(raw, norms, out=np.zeros_like(raw), where=norms > 0)
    keys = data.column(key_column).to_pylist()
    levels = data.column("level").to_numpy() if "level" in columns else None
    return VectorMatrix(keys, raw, unit, levels, {k: i for i, k in enumerate(keys)})
