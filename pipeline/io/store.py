"""The namespace-scoped store: the only way pipeline code opens a namespace's data.

Layout under the storage root (a local folder or ``s3://bucket/prefix``, see `pipeline.io.storage`)::

    <storage_root>/<namespace>/<table>.parquet     Parquet tables (GraphRAG names)
    <storage_root>/<namespace>/lancedb/            LanceDB tables (vectors + full-text indexes)
    <storage_root>/<namespace>/<file>              other artifacts (GraphML, chunk-graph snapshot, markers)
    <storage_root>/<namespace>/_manifest.json      the committed index version queries read
    <storage_root>/<namespace>/_versions/<n>/      its frozen index files (`pipeline.io.manifest`)
    <storage_root>/_cache/                         content-addressed caches (embeddings, LLM), local roots

Namespace names cannot start with '_' so the cache folder can never collide with a namespace.
"""

from __future__ import annotations

import datetime as dt
import os
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from pipeline.core.kill_points import kill_point
from pipeline.core.namespace import validate_namespace
from pipeline.core.tables import check_lance_table, check_stored_table
from pipeline.io.damage import lance_reads, read_parquet, read_parquet_rows, read_parquet_schema
from pipeline.io.lance_versions import id_filter, indexed_columns, prune_versions, row_difference
from pipeline.io.manifest import PINNED_FILES, Manifest, committed_tags, read_manifest
from pipeline.io.storage import Location, StorageRoot
from pipeline.settings import Settings

LANCE_DIR = "lancedb"
# Newest versions of each LanceDB table kept after a replace, besides the version the replace started
# from, which is always kept: a reader that opened the table before the replace (or mid-way, at one
# of its commits) finishes its query on files that still exist. The default is the setting's.
KEEP_VERSIONS: int = Settings.model_fields["lance_keep_versions"].default


class TableNotFoundError(LookupError):
    """A table was asked for before the asset that writes it was materialized."""


@dataclass(frozen=True)
class TableInfo:
    name: str
    kind: str  # "parquet" | "lancedb"
    rows: int
    modified: dt.datetime


class NamespaceStore:
    """Parquet, LanceDB and other files for exactly one namespace, on a local or an S3 storage root.

    `storage_root` is a StorageRoot, or a local path / s3:// URI (an S3 one then takes its endpoint and
    keys from the PIPELINE_S3_* settings); `from_settings` uses the given settings instead."""

    def __init__(
        self,
        storage_root: str | os.PathLike[str] | StorageRoot,
        namespace: str,
        keep_versions: int = KEEP_VERSIONS,
    ) -> None:
        if keep_versions < 1:
            raise ValueError(f"keep_versions must be at least 1, got {keep_versions}")
        self.namespace = validate_namespace(namespace)
        self.storage = storage_root if isinstance(storage_root, StorageRoot) else StorageRoot(storage_root)
        self.keep_versions = keep_versions
        self._db: Any = None
        self._watch_db: Any = None  # a connection that sees every commit, for `lance_version`
        self._watched: dict[str, Any] = {}  # table name -> its open handle on that connection
        # Stamped into every Parquet table's schema metadata (the indexing method that wrote it)
        self.table_metadata: dict[bytes, bytes] = {}
        # Set on a view made by `pinned`: the committed version every read goes through
        self._pin: Manifest | None = None
        self._pinned_lance: dict[str, Any] = {}  # table name -> its handle checked out at the pin

    @classmethod
    def from_settings(cls, settings: Settings, namespace: str) -> NamespaceStore:
        return cls(StorageRoot.from_settings(settings), namespace, settings.lance_keep_versions)

    def __repr__(self) -> str:
        return f"NamespaceStore({self.storage.uri()!r}, {self.namespace!r})"

    # ---- one committed version (`pipeline.io.manifest`) -----------------------------------------
    def pinned(self) -> NamespaceStore:
        """A view of the namespace as of its last committed index run, for one question: its index
        files and LanceDB tables are read at the versions the manifest names, however many runs land
        meanwhile. Without a manifest (indexed before manifests) the view reads the current files.
        Writes through a view go to the current files, as with any store."""
        view = NamespaceStore(self.storage, self.namespace, self.keep_versions)
        view.table_metadata = dict(self.table_metadata)
        view._pin = read_manifest(self)
        return view

    @property
    def manifest(self) -> Manifest | None:
        """The committed version this view reads; None for a store reading the current files."""
        return self._pin

    def _read_key(self, name: str) -> str | None:
        """The key a read of `name` goes to: its frozen copy when pinned, None if the pin lacks it."""
        if self._pin is not None and name in PINNED_FILES:
            frozen = self._pin.files.get(name)
            return self._key(frozen) if frozen is not None else None
        return self._key(name)

    # ---- where -----------------------------------------------------------------------------------
    @property
    def storage_root(self) -> Location:
        return self.storage.location()

    @property
    def root(self) -> Location:
        """The namespace's folder: a Path on a local root, an s3:// URI otherwise (for messages and
        local tools; pipeline code goes through the methods below)."""
        return self.storage.location(self.namespace)

    @property
    def uri(self) -> str:
        return self.storage.uri(self.namespace)

    def _key(self, name: str) -> str:
        return f"{self.namespace}/{name}"

    def location(self, name: str) -> Location:
        """Where the namespace's file `name` lives (a Path on a local root, an s3:// URI otherwise)."""
        return self.storage.location(self._key(name))

    def exists(self) -> bool:
        """Whether the namespace has any data; never creates anything."""
        return self.storage.is_dir(self.namespace)

    # ---- files (artifacts other than tables) -----------------------------------------------------
    def has_file(self, name: str) -> bool:
        key = self._read_key(name)
        return key is not None and self.storage.is_file(key)

    def _existing_key(self, name: str) -> str:
        key = self._read_key(name)
        if key is None:
            raise FileNotFoundError(f"{self.uri}/{name} (not in the committed index version)")
        return key

    def read_bytes(self, name: str) -> bytes:
        return self.storage.read_bytes(self._existing_key(name))

    def write_bytes(self, name: str, data: bytes | pa.Buffer) -> int:
        """Replace the file (readers see the old one or the new one); returns its size."""
        return self.storage.write_bytes(self._key(name), data)

    def open_input_file(self, name: str) -> pa.NativeFile:
        """A random-access reader of the file; FileNotFoundError if there is none."""
        return self.storage.open_input_file(self._existing_key(name))

    def open_output(self, name: str) -> AbstractContextManager[pa.NativeFile]:
        """A stream that replaces the file when the `with` block completes, and leaves it alone if not."""
        return self.storage.open_output(self._key(name))

    def file_modified(self, name: str) -> dt.datetime | None:
        key = self._read_key(name)
        return self.storage.modified(key) if key is not None else None

    def file_size(self, name: str) -> int | None:
        key = self._read_key(name)
        return self.storage.size(key) if key is not None else None

    def delete_file(self, name: str) -> bool:
        return self.storage.delete(self._key(name))

    def files(self, folder: str, suffix: str = "") -> list[str]:
        """Names (relative to the namespace) of the files directly under `folder` ending in `suffix`."""
        prefix = f"{self.namespace}/"
        return [f.key.removeprefix(prefix) for f in self.storage.list_files(self._key(folder), suffix)]

    # ---- Parquet -------------------------------------------------------------------------
    def parquet_path(self, table: str) -> Location:
        return self.location(f"{table}.parquet")

    def has_table(self, table: str) -> bool:
        return self.has_file(f"{table}.parquet")

    def first_table(self, *tables: str) -> str | None:
        """The first of `tables` this namespace holds (a table, then the one an older index kept it in)."""
        return next((t for t in tables if self.has_table(t)), None)

    def write_table(self, table: str, data: pa.Table, *, committed: bool = False) -> Location:
        """Write atomically: readers see the old file or the new one, never half of one.

        A table whose schema is registered (`pipeline.core.tables.TABLE_SCHEMAS`) must have exactly its
        columns and types: SchemaError otherwise, before anything is written.
        `committed` (a pinned view): replace the committed version's frozen copy instead, for a report
        written on first use (`pipeline.index.community_reports_on_demand`), which completes that
        version rather than changing it. The copy is replaced, not written into, so the current file
        it may be linked to keeps its bytes."""
        check_stored_table(table, data)
        if self.table_metadata:
            data = data.replace_schema_metadata({**(data.schema.metadata or {}), **self.table_metadata})
        key = self._existing_key(f"{table}.parquet") if committed else self._key(f"{table}.parquet")
        with self.storage.open_output(key) as sink:
            pq.write_table(data, sink, compression="zstd")
        return self.location(key.removeprefix(f"{self.namespace}/"))

    def read_table(self, table: str, columns: list[str] | None = None) -> pa.Table:
        if not self.has_table(table):
            self.storage.check_bucket()  # a missing bucket is a configuration error, not a missing table
            raise TableNotFoundError(
                f"namespace {self.namespace!r} has no table {table!r} yet "
                f"(expected {self.parquet_path(table)}); materialize the asset that writes it first"
            )
        with self.open_input_file(f"{table}.parquet") as source:
            return read_parquet(source, self.namespace, table, columns)  # IndexDamaged if it does not read

    def read_schema(self, table: str) -> pa.Schema:
        """A stored table's schema (its columns as written), without reading its rows."""
        with self.open_input_file(f"{table}.parquet") as source:
            return read_parquet_schema(source, self.namespace, table)

    # ---- LanceDB -------------------------------------------------------------------------
    @property
    def lance_uri(self) -> str:
        return self.storage.uri(self._key(LANCE_DIR))

    def lancedb(self) -> Any:
        if self._db is None:
            import lancedb

            with self.storage.explain_errors():
                self._db = lancedb.connect(
                    self.lance_uri, storage_options=self.storage.lance_storage_options() or None
                )
        return self._db

    def lance_version(self, name: str) -> int | None:
        """The table's latest version, None when it does not exist.

        Query-time caches ask this before every search. Opening the table afresh each time cost 2-3 ms
        (a listing and an open); a handle kept on a connection with strong read consistency
        (`read_consistency_interval=0`: every read checks for a newer commit) answers in a fifth of
        that and still sees a re-index's commit, an overwrite or a dropped table at once. A pinned view
        answers its pin's version."""
        if self._pin is not None:
            return self._pin.lance.get(name)
        handle = self._watched.get(name)
        if handle is not None:
            try:
                return handle.version
            except Exception:  # noqa: BLE001 - dropped or rewritten beneath the handle: look again
                self._watched.pop(name, None)
        if not self._lance_table_exists(name):
            return None
        if self._watch_db is None:
            import lancedb

            with self.storage.explain_errors():
                self._watch_db = lancedb.connect(
                    self.lance_uri,
                    read_consistency_interval=dt.timedelta(0),
                    storage_options=self.storage.lance_storage_options() or None,
                )
        handle = self._watched[name] = self._watch_db.open_table(name)
        return handle.version

    def has_lance_dir(self) -> bool:
        # Asked before connecting: connecting to a local folder creates it, and a reader creates nothing.
        return self.storage.is_dir(self._key(LANCE_DIR))

    def _lance_table_exists(self, name: str) -> bool:
        return self.has_lance_dir() and name in self.lancedb().list_tables().tables

    def has_lance_table(self, name: str) -> bool:
        """Whether the table exists (in the committed version, for a pinned view)."""
        if self._pin is not None:
            return name in self._pin.lance
        return self._lance_table_exists(name)

    def open_lance_table(self, name: str) -> Any:
        """The table; on a pinned view, read-only at the pin's version (a time-travel checkout)."""
        if not self.has_lance_table(name):
            raise TableNotFoundError(
                f"namespace {self.namespace!r} has no LanceDB table {name!r} yet; "
                "materialize the embedding asset first"
            )
        with lance_reads(self.namespace, name):  # IndexDamaged if its files do not read
            if self._pin is None:
                return self.lancedb().open_table(name)
            handle = self._pinned_lance.get(name)
            if handle is None:
                handle = self.lancedb().open_table(name)
                handle.checkout(self._pin.lance[name])
                self._pinned_lance[name] = handle
            return handle

    def replace_lance_table(
        self, name: str, data: pa.Table, fts_columns: list[str] | tuple[str, ...] = ()
    ) -> Any:
        """Replace the table's rows so that a reader only ever sees a complete version.

        An existing table with the same schema gets all its rows replaced by one merge-insert keyed by
        `id` (one Lance commit: a reader sees the old rows or the new ones, and the full-text index of the
        old version keeps answering, unindexed new rows being searched flat); the index is then rebuilt as
        a further commit. An overwrite would publish a version with no full-text index first, where
        full-text queries fail until the index lands, so it is kept for new tables and schema changes.

        Rows equal to the table's own (same schema, same rows by id) and indexes already there are
        left alone: no commit, so re-running an unchanged index adds nothing to disk. After a write,
        versions older than both the one it started from and the newest `keep_versions` are deleted
        (`prune_versions`).

        A table registered in `pipeline.core.tables.LANCE_SCHEMAS` must have exactly its columns and
        types, for the dimension of its vectors: SchemaError otherwise, before anything is written."""
        from lancedb.index import FTS

        check_lance_table(name, data)

        db = self.lancedb()
        table = db.open_table(name) if self._lance_table_exists(name) else None
        started_from = table.version if table is not None else None
        committed = committed_tags(table).values() if table is not None else ()
        if started_from is not None and committed:
            # the versions kept manifests name are kept, however many commits come before the next one
            started_from = min(started_from, *committed)
        ids = data.column("id") if "id" in data.column_names else None
        in_place = (
            table is not None
            and ids is not None
            and table.schema.equals(data.schema, check_metadata=True)
            and pc.count_distinct(ids).as_py() == data.num_rows
        )
        if in_place:
            changed, removed = row_difference(table.to_arrow(), data)
            indexed = indexed_columns(table) >= {c for c in fts_columns if data.num_rows}
            if not changed.num_rows and not removed and indexed:
                return table  # a re-index of unchanged input: no new version, nothing more on disk
            # Only the rows that differ are written, in one commit: unchanged rows keep their files,
            # so a version costs what changed, and the previous version shares the rest.
            merge = table.merge_insert("id").when_matched_update_all().when_not_matched_insert_all()
            if removed:
                merge = merge.when_not_matched_by_source_delete(id_filter(removed))
            merge.execute(changed)
        else:
            table = db.create_table(name, data, mode="overwrite")
        kill_point("lance_commit")  # a test hook (kill_points.py): rows committed, index not yet rebuilt
        for column in fts_columns:
            if data.num_rows:
                table.create_index(column, config=FTS(), replace=True)
        prune_versions(table, self.keep_versions, started_from)
        return table

    # ---- Status --------------------------------------------------------------------------
    def tables(self) -> list[TableInfo]:
        infos: list[TableInfo] = []
        for stored in self.storage.list_files(self.namespace, ".parquet"):
            name = stored.name.removesuffix(".parquet")
            with self.storage.open_input_file(stored.key) as source:
                rows = read_parquet_rows(source, self.namespace, name)
            infos.append(TableInfo(name, "parquet", rows, stored.modified))
        if self.has_lance_dir():
            db = self.lancedb()
            for name in sorted(db.list_tables().tables):
                with lance_reads(self.namespace, name):
                    tbl = db.open_table(name)
                    versions = tbl.list_versions()
                    rows = tbl.count_rows()
                ts = versions[-1]["timestamp"] if versions else dt.datetime.now()
                if ts.tzinfo is None:
                    ts = ts.astimezone(dt.UTC)
                infos.append(TableInfo(name, "lancedb", rows, ts))
        return infos
