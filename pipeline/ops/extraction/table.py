"""The `extracted_graph` and `failed_extractions` tables <-> extraction records."""

from __future__ import annotations

from dataclasses import asdict

import pyarrow as pa
import pyarrow.compute as pc

from pipeline.core import schema, tables
from pipeline.core.plain import plain
from pipeline.ops.extraction.models import (
    ExtractionFailure,
    RawClaim,
    RawEntity,
    RawRelationship,
    UnitExtraction,
)


def to_table(units: list[UnitExtraction]) -> pa.Table:
    return tables.to_table([plain(u) for u in units], schema.EXTRACTED_GRAPH_SCHEMA)


def from_table(table: pa.Table) -> list[UnitExtraction]:
    """The records of an `extracted_graph` table; a record column left out of the read (a stage that
    needs only the claims) decodes as empty."""
    units = []
    for row in table.to_pylist():
        units.append(
            UnitExtraction(
                text_unit_id=row["text_unit_id"],
                document_id=row["document_id"],
                method=row["method"],
                version=row["version"],
                status=row["status"],
                rounds=row["rounds"],
                n_sentences=row["n_sentences"] or 0,
                # absent from tables written before records were validated one by one
                dropped_records=row.get("dropped_records") or 0,
                retyped_entities=row.get("retyped_entities") or 0,
                entities=[RawEntity(**e) for e in row.get("entities") or []],
                relationships=[RawRelationship(**r) for r in row.get("relationships") or []],
                claims=[RawClaim(**c) for c in row.get("claims") or []],
            )
        )
    return units


def table_counts(table: pa.Table) -> dict[str, int]:
    """What the records of an `extracted_graph` table hold (mentions, claims, failed and partial units,
    gleaning rounds), read off its columns: the stage reports them without decoding every record."""

    def total(values: pa.ChunkedArray | pa.Array) -> int:
        return int(pc.sum(pc.fill_null(values, 0)).as_py() or 0)

    def mentions(column: str) -> int:
        return total(pc.list_value_length(table.column(column)))

    def has_status(status: str) -> int:
        return total(pc.cast(pc.equal(table.column("status"), status), pa.int64()))

    rounds = pc.fill_null(table.column("rounds"), 0)
    return {
        "text_units": table.num_rows,
        "entity_mentions": mentions("entities"),
        "relationship_mentions": mentions("relationships"),
        "claims": mentions("claims"),
        "failed_text_units": has_status("failed"),
        "partial_text_units": has_status("partial"),
        "gleaning_rounds_used": total(pc.max_element_wise(pc.subtract(rounds, 1), 0)),
        "dropped_records": total(table.column("dropped_records")),
        "retyped_entities": total(table.column("retyped_entities")),
    }


def failures_table(failures: list[ExtractionFailure]) -> pa.Table:
    return tables.to_table([asdict(f) for f in failures], schema.FAILED_EXTRACTIONS_SCHEMA)
