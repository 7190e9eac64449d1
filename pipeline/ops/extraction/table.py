"""The `extracted_graph` and `failed_extractions` tables <-> extraction records."""

from __future__ import annotations

from dataclasses import asdict

import pyarrow as pa

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
                entities=[RawEntity(**e) for e in row["entities"] or []],
                relationships=[RawRelationship(**r) for r in row["relationships"] or []],
                claims=[RawClaim(**c) for c in row["claims"] or []],
            )
        )
    return units


def failures_table(failures: list[ExtractionFailure]) -> pa.Table:
    return tables.to_table([asdict(f) for f in failures], schema.FAILED_EXTRACTIONS_SCHEMA)
