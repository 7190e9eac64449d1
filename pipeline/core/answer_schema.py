"""The tables of global search's saved questions, answered stage by stage (batches, map answers,
answers), by name and schema; `pipeline.core.schema` re-exports them, so every table is still
`schema.<NAME>`. The other modes' saved-answer tables are declared by their mode records
(`pipeline.query.common.mode.Saved`), on `answers_schema`, and registered with their names in
`pipeline.core.tables.ANSWER_TABLES` by the query registry."""

from __future__ import annotations

import pyarrow as pa

__all__ = [
    "MAP_POINT",
    "QUERY_GLOBAL_ANSWERS",
    "QUERY_GLOBAL_ANSWERS_SCHEMA",
    "QUERY_GLOBAL_BATCHES",
    "QUERY_GLOBAL_BATCHES_SCHEMA",
    "QUERY_GLOBAL_MAP_ANSWERS",
    "QUERY_GLOBAL_MAP_ANSWERS_SCHEMA",
    "answers_schema",
]

QUERY_GLOBAL_BATCHES = "query_global_batches"
QUERY_GLOBAL_MAP_ANSWERS = "query_global_map_answers"
QUERY_GLOBAL_ANSWERS = "query_global_answers"


def answers_schema(*columns: tuple[str, pa.DataType]) -> pa.Schema:
    """A mode's saved answers: the three columns `pipeline.query.saved_questions` writes in every mode's
    table, then the mode's own."""
    return pa.schema([("question", pa.string()), ("status", pa.string()), ("answer", pa.string()), *columns])


QUERY_GLOBAL_BATCHES_SCHEMA = pa.schema(
    [
        ("question", pa.string()),
        ("batch", pa.int64()),
        ("community_ids", pa.list_(pa.int64())),
        ("tokens", pa.int64()),
        ("content", pa.string()),
    ]
)
MAP_POINT = pa.struct(
    [("description", pa.string()), ("score", pa.float64()), ("communities", pa.list_(pa.int64()))]
)
QUERY_GLOBAL_MAP_ANSWERS_SCHEMA = pa.schema(
    [
        ("question", pa.string()),
        ("batch", pa.int64()),
        ("community_ids", pa.list_(pa.int64())),
        ("status", pa.string()),
        ("points", pa.list_(MAP_POINT)),  # scored above 0, each citing communities of its batch
        ("top_score", pa.float64()),  # the best point's score; 0 without points
        ("dropped_points", pa.int64()),  # points of the reply that failed validation
        ("attempts", pa.int64()),
        ("error", pa.string()),
    ]
)
QUERY_GLOBAL_ANSWERS_SCHEMA = answers_schema(
    ("reason", pa.string()),
    ("cited_communities", pa.list_(pa.int64())),
    ("points_used", pa.int64()),  # map points that went into the reduce
    ("failed_batches", pa.int64()),
    ("batches", pa.int64()),
)
