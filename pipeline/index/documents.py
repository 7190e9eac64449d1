"""documents: GraphRAG's final documents table, the input documents with the ids of their text units
(create_final_documents).

Rules:
1. Every row of `input_documents`, in its order, with `text_unit_ids` = its units in `base_text_units`
   in chunk order; a document whose content chunked to nothing keeps an empty list.
2. This stage is the table's one writer: the ingest and chunking stages write their own tables, so the
   last materialization of `documents` is the step that last changed it.
"""

from __future__ import annotations

from collections import defaultdict

import pyarrow as pa

from pipeline.core import schema
from pipeline.index.context import IndexContext
from pipeline.index.report import StageReport, Stopwatch


def final_documents(documents: pa.Table, units: pa.Table) -> pa.Table:
    """Rule 1: `documents` with `text_unit_ids` filled from `units` (id, document_id, chunk_index)."""
    by_doc: dict[str, list[tuple[int, str]]] = defaultdict(list)
    for unit in units.select(["id", "document_id", "chunk_index"]).to_pylist():
        by_doc[unit["document_id"]].append((unit["chunk_index"], unit["id"]))
    ids = [[u for _, u in sorted(by_doc.get(d, []))] for d in documents.column("id").to_pylist()]
    col = documents.schema.get_field_index("text_unit_ids")
    return documents.set_column(col, "text_unit_ids", pa.array(ids, type=pa.list_(pa.string())))


def run(ctx: IndexContext) -> StageReport:
    clock = Stopwatch()
    store = ctx.store
    docs = final_documents(
        store.read_table(schema.INPUT_DOCUMENTS),
        store.read_table(schema.BASE_TEXT_UNITS, ["id", "document_id", "chunk_index"]),
    )
    store.write_table(schema.DOCUMENTS, docs)
    unit_ids = docs.column("text_unit_ids").to_pylist()
    return StageReport(
        rows=docs.num_rows,
        metadata={
            "documents": docs.num_rows,
            "text_units": sum(len(ids) for ids in unit_ids),
            "documents_without_text_units": sum(1 for ids in unit_ids if not ids),
        },
        duration_s=clock.seconds(),
    )
