"""Damaged tables: a namespace's table that exists but cannot be read (a truncated Parquet file, a Lance
data file or manifest cut short by a full disk, a crash or a careless copy).

Every door names such a table the same way instead of failing with the reader's own error (which names
neither the namespace nor the table, and from LanceDB carries Rust source paths): `IndexDamaged` carries
the namespace, the table, the stage that writes it and the repair. The service answers 503
`index_damaged`, MCP the same JSON error, the CLI one line and exit 3.

Two ways a read finds one. The store's readers (`NamespaceStore.read_table`, `read_schema`,
`open_lance_table`, `tables`) raise `IndexDamaged` themselves. A Lance data file cut short only fails
once a search reads it, deep inside LanceDB with an error that says nothing of which table: the doors
then call `pipeline.io.repair.diagnose`, which reads every table's footer (Parquet) or id column (Lance) and names the
first that fails, or re-raise the original error when every table reads.

An index run calls `pipeline.io.repair.clear_damage` first: a damaged table is removed, so the stage that writes it builds
it anew from its inputs, exactly as for a table that was never written.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from pipeline.core import schema
from pipeline.core.plain import attributes

LANCE_DIR = "lancedb"  # as `pipeline.io.store.LANCE_DIR` (which imports this module)

# The indexing stage (Dagster asset) that writes each table: the one to re-run when it is damaged.
PARQUET_STAGES: dict[str, str] = {
    schema.INPUT_DOCUMENTS: "input_documents",
    schema.INGEST_ERRORS: "input_documents",
    schema.BASE_TEXT_UNITS: "base_text_units",
    schema.DOCUMENTS: "documents",
    schema.EXTRACTED_GRAPH: "extracted_graph",
    schema.FAILED_EXTRACTIONS: "extracted_graph",
    schema.ENTITIES: "entities_and_relationships",
    schema.RELATIONSHIPS: "entities_and_relationships",
    schema.DESCRIPTION_SUMMARIES: "entities_and_relationships",
    schema.COVARIATES: "claims",
    schema.TEXT_UNITS: "text_units",
    schema.COMMUNITIES: "communities",
    schema.COMMUNITY_REPORTS: "community_reports",
    schema.FAILED_REPORTS: "community_reports",
}
LANCE_STAGES: dict[str, str] = {
    schema.LANCE_TEXT_UNITS: "text_unit_embeddings",
    schema.LANCE_TEXT_UNIT_PIECES: "text_unit_embeddings",
    schema.LANCE_COMMUNITY_REPORTS: "report_embeddings",
    schema.LANCE_ENTITIES: "report_embeddings",
}
KIND_NAMES = {"parquet": "Parquet", "lancedb": "LanceDB"}


class IndexDamaged(RuntimeError):
    """A table of `namespace` exists and cannot be read. `reason` is short and names no file path or
    library internals (the reader's own error is the exception's `__cause__`, for logs)."""

    def __init__(self, namespace: str, table: str, kind: str, reason: str) -> None:
        self.namespace = namespace
        self.table = table
        self.kind = kind
        self.reason = reason
        stages = PARQUET_STAGES if kind == "parquet" else LANCE_STAGES
        self.stage: str | None = stages.get(table)
        rebuilt = f" (its {self.stage} stage rebuilds it)" if self.stage else ""
        self.repair = f"re-run `pipeline index --namespace {namespace}`{rebuilt}"
        super().__init__(
            f"namespace {namespace!r}: {KIND_NAMES.get(kind, kind)} table {table!r} is damaged "
            f"({reason}); {self.repair}"
        )

    def detail(self) -> dict[str, Any]:
        return attributes(self, "namespace", "table", "kind", "stage", "repair")


PARQUET_UNREADABLE = "not a readable Parquet file"
LANCE_UNREADABLE = "its LanceDB files cannot be read"


# What pyarrow raises for a file that is not (or no longer) Parquet: ArrowInvalid (a ValueError) for a
# missing footer, OSError for a footer or page that does not decode, EOFError for a short read.
PARQUET_ERRORS = (pa.ArrowException, OSError, ValueError, EOFError)


def read_parquet(
    source: pa.NativeFile, namespace: str, table: str, columns: list[str] | None = None
) -> pa.Table:
    """`pq.read_table`, raising IndexDamaged for a file that does not read. Asking for a column the
    table lacks is the caller's mistake, not damage: that error is raised as pyarrow gives it."""
    try:
        return pq.read_table(source, columns=columns)
    except PARQUET_ERRORS as exc:
        if columns is not None and _lacks_columns(source, columns):
            raise
        raise IndexDamaged(namespace, table, "parquet", PARQUET_UNREADABLE) from exc


def read_parquet_schema(source: pa.NativeFile, namespace: str, table: str) -> pa.Schema:
    try:
        return pq.read_schema(source)
    except PARQUET_ERRORS as exc:
        raise IndexDamaged(namespace, table, "parquet", PARQUET_UNREADABLE) from exc


def read_parquet_rows(source: pa.NativeFile, namespace: str, table: str) -> int:
    """The row count from the footer alone."""
    try:
        return pq.read_metadata(source).num_rows
    except PARQUET_ERRORS as exc:
        raise IndexDamaged(namespace, table, "parquet", PARQUET_UNREADABLE) from exc


def _lacks_columns(source: pa.NativeFile, columns: list[str]) -> bool:
    try:
        names = set(pq.read_schema(source).names)
    except PARQUET_ERRORS:
        return False
    return any(c.split(".")[0] not in names for c in columns)


@contextmanager
def lance_reads(namespace: str, table: str) -> Iterator[None]:
    """Around opening (or counting) a LanceDB table known to exist: any failure means its files do
    not read (a manifest or data file cut short raises `lance error: LanceError(IO) ...`)."""
    try:
        yield
    except IndexDamaged:
        raise
    except Exception as exc:
        raise IndexDamaged(namespace, table, "lancedb", LANCE_UNREADABLE) from exc
