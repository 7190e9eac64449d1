"""The namespace-scoped store: the only way pipeline code opens a namespace's data.

Layout under the storage root::

    <storage_root>/<namespace>/<table>.parquet     Parquet tables (GraphRAG names)
    <storage_root>/<namespace>/lancedb/            LanceDB tables (vectors + full-text indexes)
    <storage_root>/_cache/                         content-addressed caches (embeddings, LLM)

Namespace names cannot start with '_' so the cache folder can never collide with a namespace.
"""

from __future__ import annotations

import datetime as dt
import os
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from pipeline.namespace import validate_namespace


class TableNotFoundError(LookupError):
    """A table was asked for before the asset that writes it was materialized."""


@dataclass(frozen=True)
class TableInfo:
    name: str
    kind: str  # "parquet" | "lancedb"
    rows: int
    modified: dt.datetime


class NamespaceStore:
    """Parquet and LanceDB access for exactly one namespace."""

    def __init__(self, storage_root: str | os.PathLike[str], namespace: str) -> None:
        self.namespace = validate_namespace(namespace)
        self.storage_root = Path(storage_root)
        self.root = self.storage_root / self.namespace
        self._db: Any = None

    def __repr__(self) -> str:
        return f"NamespaceStore({str(self.storage_root)!r}, {self.namespace!r})"

    # ---- Parquet -------------------------------------------------------------------------
    def parquet_path(self, table: str) -> Path:
        return self.root / f"{table}.parquet"

    def has_table(self, table: str) -> bool:
        return self.parquet_path(table).is_file()

    def write_table(self, table: str, data: pa.Table) -> Path:
        """Write atomically: readers see the old file or the new one, never half of one."""
        path = self.parquet_path(table)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex}.tmp")
        try:
            pq.write_table(data, tmp, compression="zstd")
            os.replace(tmp, path)
        finally:
            tmp.unlink(missing_ok=True)
        return path

    def read_table(self, table: str, columns: list[str] | None = None) -> pa.Table:
        path = self.parquet_path(table)
        if not path.is_file():
            raise TableNotFoundError(
                f"namespace {self.namespace!r} has no table {table!r} yet "
                f"(expected {path}); materialize the asset that writes it first"
            )
        return pq.read_table(path, columns=columns)

    # ---- LanceDB -------------------------------------------------------------------------
    @property
    def lance_uri(self) -> Path:
        return self.root / "lancedb"

    def lancedb(self) -> Any:
        if self._db is None:
            import lancedb

            self.lance_uri.mkdir(parents=True, exist_ok=True)
            self._db = lancedb.connect(str(self.lance_uri))
        return self._db

    def has_lance_table(self, name: str) -> bool:
        return name in self.lancedb().list_tables().tables

    def open_lance_table(self, name: str) -> Any:
        if not self.has_lance_table(name):
            raise TableNotFoundError(
                f"namespace {self.namespace!r} has no LanceDB table {name!r} yet; "
                "materialize the embedding asset first"
            )
        return self.lancedb().open_table(name)

    def replace_lance_table(
        self, name: str, data: pa.Table, fts_columns: list[str] | tuple[str, ...] = ()
    ) -> Any:
        """Replace the table's rows so that a reader only ever sees a complete version.

        An existing table with the same schema gets all its rows replaced by one merge-insert keyed by
        `id` (one Lance commit: a reader sees the old rows or the new ones, and the full-text index of the
        old version keeps answering, unindexed new rows being searched flat); the index is then rebuilt as
        a further commit. An overwrite would publish a version with no full-text index first, where
        full-text queries fail until the index lands, so it is kept for new tables and schema changes."""
        from lancedb.index import FTS

        db = self.lancedb()
        table = db.open_table(name) if self.has_lance_table(name) else None
        ids = data.column("id") if "id" in data.column_names else None
        in_place = (
            table is not None
            and ids is not None
            and table.schema.equals(data.schema, check_metadata=True)
            and pc.count_distinct(ids).as_py() == data.num_rows
        )
        if in_place:
            (
                table.merge_insert("id")
                .when_matched_update_all()
                .when_not_matched_insert_all()
                .when_not_matched_by_source_delete()
                .execute(data)
            )
        else:
            table = db.create_table(name, data, mode="overwrite")
        for column in fts_columns:
            if data.num_rows:
                table.create_index(column, config=FTS(), replace=True)
        return table

    # ---- Status --------------------------------------------------------------------------
    def tables(self) -> list[TableInfo]:
        infos: list[TableInfo] = []
        if not self.root.is_dir():
            return infos
        for path in sorted(self.root.glob("*.parquet")):
            meta = pq.read_metadata(path)
            infos.append(
                TableInfo(
                    path.stem,
                    "parquet",
                    meta.num_rows,
                    dt.datetime.fromtimestamp(path.stat().st_mtime, dt.UTC),
                )
            )
        if self.lance_uri.is_dir():
            db = self.lancedb()
            for name in sorted(db.list_tables().tables):
                tbl = db.open_table(name)
                versions = tbl.list_versions()
                ts = versions[-1]["timestamp"] if versions else dt.datetime.now()
                if ts.tzinfo is None:
                    ts = ts.astimezone(dt.UTC)
                infos.append(TableInfo(name, "lancedb", tbl.count_rows(), ts))
        return infos


def cache_dir(storage_root: str | os.PathLike[str]) -> Path:
    """Folder for content-addressed caches shared by all namespaces (keys are content hashes)."""
    path = Path(storage_root) / "_cache"
    path.mkdir(parents=True, exist_ok=True)
    return path
