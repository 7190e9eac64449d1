"""Table and column names, defined once (Microsoft GraphRAG's names plus our extra columns).

Writers, readers and tests import these instead of spelling column names again.
"""

from __future__ import annotations

import pyarrow as pa

# --- table names (Parquet files `<name>.parquet`, LanceDB tables) ---
DOCUMENTS = "documents"
INGEST_ERRORS = "ingest_errors"
TEXT_UNITS = "text_units"

# LanceDB table names
LANCE_TEXT_UNITS = "text_units"
LANCE_TEXT_UNIT_PIECES = "text_unit_pieces"  # model-sized windows of long text units, for search

DOCUMENTS_SCHEMA = pa.schema(
    [
        ("id", pa.string()),  # sha256 of the text: the document's identity across re-indexes
        ("human_readable_id", pa.int64()),
        ("title", pa.string()),
        ("text", pa.string()),
        ("text_unit_ids", pa.list_(pa.string())),
        ("creation_date", pa.string()),
        ("raw_data", pa.string()),  # JSON of the source row's other columns (null for files)
        # ours
        ("source_path", pa.string()),
        ("n_bytes", pa.int64()),
        ("metadata", pa.string()),  # JSON: format, row number, original id, ...
    ]
)

INGEST_ERRORS_SCHEMA = pa.schema(
    [
        ("source_path", pa.string()),
        ("row", pa.int64()),  # row number inside a JSON/CSV/Parquet file; null for whole files
        ("error_type", pa.string()),
        ("reason", pa.string()),
    ]
)

TEXT_UNITS_SCHEMA = pa.schema(
    [
        ("id", pa.string()),  # sha256 of (document id, start_char, text): stable across re-runs
        ("human_readable_id", pa.int64()),
        ("text", pa.string()),
        ("n_tokens", pa.int64()),
        ("document_id", pa.string()),
        ("entity_ids", pa.list_(pa.string())),
        ("relationship_ids", pa.list_(pa.string())),
        ("covariate_ids", pa.list_(pa.string())),
        # ours: where the text sits in its document, so evidence maps back to a source location
        ("start_char", pa.int64()),
        ("end_char", pa.int64()),
        ("chunk_index", pa.int64()),
    ]
)


def lance_text_units_schema(dim: int) -> pa.Schema:
    return pa.schema(
        [
            ("id", pa.string()),
            ("text", pa.string()),
            ("document_id", pa.string()),
            ("document_title", pa.string()),
            ("start_char", pa.int64()),
            ("end_char", pa.int64()),
            ("n_tokens", pa.int64()),
            ("vector", pa.list_(pa.float32(), dim)),
        ]
    )
