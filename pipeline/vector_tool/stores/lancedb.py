"""LanceDB, the default store: a namespace's LanceDB tables (``<storage_root>/<namespace>/lancedb``, a local
folder or an s3:// prefix).

Options (``database_config["lancedb"]``): ``nprobes`` (IVF partitions searched), ``refine_factor``
(re-rank ``top_k x factor`` candidates with exact distances), ``distance`` (``cosine`` | ``l2`` | ``dot``),
``where`` (an SQL prefilter, ANDed with the tool's filter), ``hybrid`` (vector + full text fused by RRF,
``fts_column`` default ``text``) and ``match_pieces`` (for ``text_units``: match the model-sized pieces
and score a unit by its best piece, default on, cosine only).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from pipeline.core.schema import LANCE_TEXT_UNIT_PIECES, LANCE_TEXT_UNITS
from pipeline.io.store import NamespaceStore
from pipeline.vector_tool.filters import LOGICAL, FilterError, compile_filter, conditions
from pipeline.vector_tool.stores.base import (
    IndexRows,
    QueryResult,
    StoreBase,
    StoreError,
    StoreQuery,
    fuse_rrf,
)

OPTIONS = {"nprobes", "refine_factor", "distance", "where", "hybrid", "fts_column", "match_pieces"}
DISTANCES = ("cosine", "l2", "dot")
_HIDDEN = {"vector", "_distance", "_score", "_relevance_score", "_rowid"}


def _literal(value: Any) -> str:
    if value is None:  # only inside $in / $nin; `= NULL` is written IS NULL by _condition
        return "NULL"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    return "'" + str(value).replace("'", "''") + "'"


def _condition(field: str, op: str, operand: Any) -> str:
    if operand is None and op in ("$eq", "$ne"):
        return f"{field} IS {'NOT ' if op == '$ne' else ''}NULL"
    if op in ("$in", "$nin"):
        if not operand:
            return "false" if op == "$in" else "true"
        values = ", ".join(_literal(v) for v in operand)
        return f"{field} {'NOT ' if op == '$nin' else ''}IN ({values})"
    sql_op = {"$eq": "=", "$ne": "!=", "$gt": ">", "$gte": ">=", "$lt": "<", "$lte": "<="}[op]
    return f"{field} {sql_op} {_literal(operand)}"


def _join(word: str, parts: list[str]) -> str:
    if not parts:
        return "true"
    return parts[0] if len(parts) == 1 else "(" + f" {word} ".join(f"({p})" for p in parts) + ")"


def filter_sql(filter: Mapping[str, Any] | None) -> str | None:
    """The tool's filter as a LanceDB (DataFusion) SQL predicate over the table's columns."""
    return compile_filter(filter, _condition, _join) if filter else None


def _kind(type_: pa.DataType) -> str | None:
    """What a filter value must be to compare with a column of this type (None: not filterable)."""
    if pa.types.is_string(type_) or pa.types.is_large_string(type_):
        return "string"
    if pa.types.is_boolean(type_):
        return "bool"
    if pa.types.is_integer(type_):
        return "integer"
    if pa.types.is_floating(type_):
        return "number"
    if pa.types.is_temporal(type_):
        return "date"
    return None


_WANTS = {
    "string": "a string",
    "bool": "true or false",
    "integer": "an integer",
    "number": "a number",
    "date": "a date or time as a string",
}


def _fits(kind: str, value: Any) -> bool:
    if value is None:
        return True
    if kind in ("string", "date"):
        return isinstance(value, str)
    if kind == "bool":
        return isinstance(value, bool)
    if kind == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(value, int | float) and not isinstance(value, bool)


def check_filter(schema: pa.Schema, filter: Mapping[str, Any] | None) -> None:
    """Refuse a filter on a field the table lacks or with a value its column cannot hold, naming the
    field and what it takes. LanceDB's own message for these quotes the table's schema or a Rust source
    path of the lance crate, which a caller should not see."""
    if not filter:
        return
    kinds = {f.name: _kind(f.type) for f in schema if f.name not in _HIDDEN}
    fields = sorted(name for name, kind in kinds.items() if kind is not None)
    for field, op, operand in conditions(filter):
        kind = kinds.get(field)
        if kind is None:
            raise FilterError(
                f"filter field {field!r} is not a filterable field of this index; fields: {', '.join(fields)}"
            )
        values = operand if op in ("$in", "$nin") else [operand]
        bad = next((v for v in values if not _fits(kind, v)), None)
        if bad is not None:
            raise FilterError(
                f"filter field {field!r} takes {_WANTS[kind]}, got {type(bad).__name__} {str(bad)[:40]!r}"
            )
    for key in LOGICAL:
        for sub in filter.get(key, ()):
            check_filter(schema, sub)


def _score(distance: float, metric: str) -> float:
    # cosine and dot distances are 1 - similarity; l2 is the squared distance, mapped into (0, 1].
    return 1.0 / (1.0 + distance) if metric == "l2" else 1.0 - distance


class LanceDBStore(StoreBase):
    store_type = "lancedb"
    known_options = OPTIONS

    def __init__(self, store: NamespaceStore) -> None:
        self.store = store

    @classmethod
    def at(cls, storage_root: Any, namespace: str) -> LanceDBStore:
        return cls(NamespaceStore(storage_root, namespace))

    def __repr__(self) -> str:
        return f"LanceDBStore({self.store!r})"

    @property
    def identity(self) -> str:
        uri = self.store.lance_uri
        # A local root may be relative: the identity names the same data whatever the working directory.
        return f"lancedb:{Path(uri).resolve() if self.store.storage.is_local else uri}"

    def _table(self, index_name: str) -> Any:
        return self.store.open_lance_table(index_name)  # TableNotFoundError names the namespace

    def _row(self, row: Mapping[str, Any], score: float, include_vector: bool) -> QueryResult:
        vector = row.get("vector")
        return QueryResult(
            id=str(row["id"]),
            score=float(score),
            metadata={k: v for k, v in row.items() if k not in _HIDDEN and k != "id"},
            vector=[float(x) for x in vector] if include_vector and vector is not None else None,
            document=row.get("text"),
        )

    def _query(self, q: StoreQuery) -> list[QueryResult]:
        p = q.options
        metric = p.get("distance") or "cosine"
        if metric not in DISTANCES:
            raise StoreError(f"lancedb: distance must be one of {DISTANCES}, got {metric!r}")
        if q.filter:
            check_filter(self._table(q.index_name).schema, q.filter)
        wheres = [w for w in (p.get("where"), filter_sql(q.filter)) if w]
        where = _join("AND", wheres) if wheres else None
        vector = np.asarray(q.vector, dtype=np.float32)
        if p.get("hybrid"):
            if not q.query_text:
                raise StoreError("lancedb: hybrid search needs the query text")
            dense = self._vector(q.index_name, vector, q.top_k, where, q.include_vector, metric, p)
            column = p.get("fts_column") or "text"
            sparse = self._text(q.index_name, q.query_text, q.top_k, where, column, q.include_vector)
            return fuse_rrf([dense, sparse], q.top_k)
        return self._vector(q.index_name, vector, q.top_k, where, q.include_vector, metric, p)

    def _search(self, table: Any, vector: np.ndarray, metric: str, limit: int, p: Mapping[str, Any]) -> Any:
        search = table.search(vector, vector_column_name="vector").distance_type(metric).limit(limit)
        if p.get("nprobes") is not None:
            search = search.nprobes(int(p["nprobes"]))
        if p.get("refine_factor") is not None:
            search = search.refine_factor(int(p["refine_factor"]))
        return search

    def _vector(
        self,
        index_name: str,
        vector: np.ndarray,
        top_k: int,
        where: str | None,
        include_vector: bool,
        metric: str,
        p: Mapping[str, Any],
    ) -> list[QueryResult]:
        if (
            index_name == LANCE_TEXT_UNITS
            and metric == "cosine"
            and p.get("match_pieces", True)
            and self.store.has_lance_table(LANCE_TEXT_UNIT_PIECES)
        ):
            return self._by_pieces(vector, top_k, where, include_vector, p)
        search = self._search(self._table(index_name), vector, metric, top_k, p)
        if where:
            search = search.where(where, prefilter=True)
        return [self._row(r, _score(r["_distance"], metric), include_vector) for r in search.to_list()]

    def _by_pieces(
        self, vector: np.ndarray, top_k: int, where: str | None, include_vector: bool, p: Mapping[str, Any]
    ) -> list[QueryResult]:
        # A 1,200-token unit's mean vector is diluted; a sentence deep inside it still matches its piece.
        units = self._table(LANCE_TEXT_UNITS)
        pieces = self._table(LANCE_TEXT_UNIT_PIECES)
        allowed = None
        if where:
            allowed = {r["id"] for r in units.search().where(where).select(["id"]).limit(None).to_list()}
            if not allowed:
                return []
        best: dict[str, float] = {}
        limit, total = max(4 * top_k, 50), pieces.count_rows()
        while True:
            search = self._search(pieces, vector, "cosine", limit, p).select(["text_unit_id", "_distance"])
            for hit in search.to_list():
                uid = hit["text_unit_id"]
                if allowed is None or uid in allowed:
                    best.setdefault(uid, 1.0 - float(hit["_distance"]))  # hits come best first
            if len(best) >= top_k or limit >= total:
                break
            limit *= 4
        top = sorted(best.items(), key=lambda kv: -kv[1])[:top_k]
        if not top:
            return []
        quoted = ", ".join(_literal(uid) for uid, _ in top)
        rows = {r["id"]: r for r in units.search().where(f"id IN ({quoted})").limit(None).to_list()}
        return [self._row(rows[uid], score, include_vector) for uid, score in top]

    def _text(
        self,
        index_name: str,
        query_text: str,
        top_k: int,
        where: str | None,
        column: str,
        include_vector: bool,
    ) -> list[QueryResult]:
        table = self._table(index_name)
        if table.count_rows() == 0:  # an empty table has no full-text index: nothing to find, no error
            return []
        search = table.search(query_text, query_type="fts", fts_columns=column).limit(top_k)
        if where:
            search = search.where(where, prefilter=True)
        return [self._row(r, r["_score"], include_vector) for r in search.to_list()]

    def text_query(
        self, index_name: str, query_text: str, top_k: int, *, filter: Mapping[str, Any] | None = None
    ) -> list[QueryResult]:
        if filter:
            check_filter(self._table(index_name).schema, filter)
        return self._text(index_name, query_text, top_k, filter_sql(filter), "text", False)

    def index_rows(self, index_name: str) -> IndexRows:
        table = self._table(index_name).to_arrow()
        dim = table.schema.field("vector").type.list_size
        vectors = table.column("vector").combine_chunks().flatten().to_numpy(zero_copy_only=False)
        meta_cols = [c for c in table.schema.names if c not in _HIDDEN and c != "id"]
        return IndexRows(
            ids=[str(i) for i in table.column("id").to_pylist()],
            documents=table.column("text").to_pylist() if "text" in table.schema.names else [""] * len(table),
            metadata=table.select(meta_cols).to_pylist(),
            vectors=np.asarray(vectors, dtype=np.float32).reshape(table.num_rows, dim),
        )

    def index_fingerprint(self, index_name: str) -> str:
        return f"{self.identity}/{index_name}@{self._table(index_name).version}"
