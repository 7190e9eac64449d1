"""LanceDB vector tables for a namespace: text-unit vectors with a full-text index, and search over them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from pipeline.embedding import CachedEmbedder, Embedder, ProgressFn
from pipeline.schema import LANCE_TEXT_UNIT_PIECES, LANCE_TEXT_UNITS, lance_text_units_schema
from pipeline.store import NamespaceStore


@dataclass
class EmbedStats:
    rows: int
    pieces: int
    embedded: int  # vectors computed by the model in this call
    cache_hits: int
    dimension: int


def _vector_array(vectors: np.ndarray, dim: int) -> pa.FixedSizeListArray:
    flat = pa.array(np.ascontiguousarray(vectors, dtype=np.float32).reshape(-1))
    return pa.FixedSizeListArray.from_arrays(flat, dim)


def index_text_units(
    store: NamespaceStore,
    text_units: pa.Table,
    documents: pa.Table,
    embedder: CachedEmbedder,
    progress: ProgressFn | None = None,
) -> EmbedStats:
    """Embed every text unit (cached by text) and replace the namespace's LanceDB tables
    `text_units` (one row and vector per unit) and `text_unit_pieces` (one row per model-sized window)."""
    before_hits, before_computed = embedder.cache_hits, embedder.computed
    texts = text_units.column("text").to_pylist()
    vectors, pieces = embedder.embed_with_pieces(texts, progress=progress)
    titles = dict(zip(documents.column("id").to_pylist(), documents.column("title").to_pylist(), strict=True))
    dim = embedder.dimension
    unit_ids = text_units.column("id").to_pylist()
    doc_ids = text_units.column("document_id").to_pylist()
    starts = text_units.column("start_char").to_pylist()
    doc_titles = pa.array([titles.get(d) for d in doc_ids], pa.string())
    table = pa.table(
        {
            "id": text_units.column("id"),
            "text": text_units.column("text"),
            "document_id": text_units.column("document_id"),
            "document_title": doc_titles,
            "start_char": text_units.column("start_char"),
            "end_char": text_units.column("end_char"),
            "n_tokens": text_units.column("n_tokens"),
            "vector": _vector_array(vectors.reshape(len(texts), dim) if texts else np.zeros((0, dim)), dim),
        },
        schema=lance_text_units_schema(dim),
    )
    piece_table = pa.table(
        {
            "id": [f"{unit_ids[p.owner]}:{p.start}" for p in pieces],
            "text_unit_id": [unit_ids[p.owner] for p in pieces],
            "document_id": [doc_ids[p.owner] for p in pieces],
            "start_char": pa.array([starts[p.owner] + p.start for p in pieces], pa.int64()),
            "end_char": pa.array([starts[p.owner] + p.end for p in pieces], pa.int64()),
            "vector": _vector_array(
                np.stack([p.vector for p in pieces]) if pieces else np.zeros((0, dim)), dim
            ),
        }
    )
    store.replace_lance_table(LANCE_TEXT_UNIT_PIECES, piece_table)
    store.replace_lance_table(LANCE_TEXT_UNITS, table, fts_columns=("text",))
    return EmbedStats(
        rows=table.num_rows,
        pieces=piece_table.num_rows,
        embedded=embedder.computed - before_computed,
        cache_hits=embedder.cache_hits - before_hits,
        dimension=dim,
    )


def embed_text_units(
    text_units: pa.Table, embedder: CachedEmbedder, progress: ProgressFn | None = None
) -> EmbedStats:
    """Compute (or find cached) the vectors of some text units without writing any table: a shard's
    part of the work. The vectors land in the embedding cache, where `index_text_units` finds them."""
    before_hits, before_computed = embedder.cache_hits, embedder.computed
    texts = text_units.column("text").to_pylist()
    _, pieces = embedder.embed_with_pieces(texts, progress=progress)
    return EmbedStats(
        rows=len(texts),
        pieces=len(pieces),
        embedded=embedder.computed - before_computed,
        cache_hits=embedder.cache_hits - before_hits,
        dimension=embedder.dimension,
    )


def _clean(rows: list[dict[str, Any]], include_vectors: bool) -> list[dict[str, Any]]:
    out = []
    for row in rows:
        row = dict(row)
        if "_distance" in row:
            row["score"] = 1.0 - float(row.pop("_distance"))  # cosine distance -> similarity
        elif "_score" in row:
            row["score"] = float(row.pop("_score"))
        if not include_vectors:
            row.pop("vector", None)
        out.append(row)
    return out


def vector_search(
    store: NamespaceStore,
    embedder: Embedder | CachedEmbedder,
    query: str,
    k: int = 10,
    table: str = LANCE_TEXT_UNITS,
    where: str | None = None,
    include_vectors: bool = False,
) -> list[dict[str, Any]]:
    """Nearest rows of a LanceDB table by cosine similarity to the embedded query, best first.

    For `text_units` the match is made against each unit's pieces (model-sized windows) and a unit
    scores as its best piece, so a sentence deep inside a long chunk still finds that chunk.
    """
    vector = embedder.embed([query])[0]
    if table == LANCE_TEXT_UNITS and store.has_lance_table(LANCE_TEXT_UNIT_PIECES):
        return _search_units_by_pieces(store, vector, k, where, include_vectors)
    search = store.open_lance_table(table).search(vector).metric("cosine").limit(k)
    if where:
        search = search.where(where, prefilter=True)
    return _clean(search.to_list(), include_vectors)


def _search_units_by_pieces(
    store: NamespaceStore, vector: np.ndarray, k: int, where: str | None, include_vectors: bool
) -> list[dict[str, Any]]:
    units = store.open_lance_table(LANCE_TEXT_UNITS)
    pieces = store.open_lance_table(LANCE_TEXT_UNIT_PIECES)
    allowed: set[str] | None = None
    if where:
        allowed = {r["id"] for r in units.search().where(where).select(["id"]).limit(None).to_list()}
        if not allowed:
            return []
    best: dict[str, float] = {}
    limit = max(4 * k, 50)
    total = pieces.count_rows()
    while True:
        hits = (
            pieces.search(vector)
            .metric("cosine")
            .select(["text_unit_id", "_distance"])
            .limit(limit)
            .to_list()
        )
        for hit in hits:
            uid = hit["text_unit_id"]
            if allowed is not None and uid not in allowed:
                continue
            best.setdefault(uid, 1.0 - float(hit["_distance"]))  # hits come best first
        if len(best) >= k or limit >= total:
            break
        limit *= 4
    top = sorted(best.items(), key=lambda kv: -kv[1])[:k]
    if not top:
        return []
    quoted = ", ".join("'" + uid.replace("'", "''") + "'" for uid, _ in top)
    rows = {r["id"]: r for r in units.search().where(f"id IN ({quoted})").limit(None).to_list()}
    out = []
    for uid, score in top:
        if uid not in rows:  # pieces and units are two tables: mid re-index a piece may outlive its unit
            continue
        row = dict(rows[uid])
        row["score"] = score
        if not include_vectors:
            row.pop("vector", None)
        out.append(row)
    return out


def text_search(
    store: NamespaceStore,
    query: str,
    k: int = 10,
    table: str = LANCE_TEXT_UNITS,
    include_vectors: bool = False,
) -> list[dict[str, Any]]:
    """BM25 full-text search over the table's indexed text, best first."""
    search = store.open_lance_table(table).search(query, query_type="fts").limit(k)
    return _clean(search.to_list(), include_vectors)


def vector_ids(store: NamespaceStore, table: str = LANCE_TEXT_UNITS) -> tuple[list[str], int]:
    """(ids, count of rows whose vector is missing or not finite) of a LanceDB table."""
    arrow = store.open_lance_table(table).to_arrow()
    ids = arrow.column("id").to_pylist()
    vec = arrow.column("vector").combine_chunks()
    if len(vec) == 0:
        return ids, 0
    values = np.asarray(vec.flatten().to_numpy(zero_copy_only=False)).reshape(len(vec), -1)
    bad = int(vec.null_count) + int((~np.isfinite(values).all(axis=1)).sum())
    return ids, bad
