"""The tables the query-time assets write (saved questions answered stage by stage), by name and
schema; `pipeline.core.schema` re-exports them, so every table is still `schema.<NAME>`."""

from __future__ import annotations

import pyarrow as pa

__all__ = [
    "MAP_POINT",
    "QUERY_BASIC_ANSWERS",
    "QUERY_BASIC_ANSWERS_SCHEMA",
    "QUERY_DRIFT_ANSWERS",
    "QUERY_DRIFT_ANSWERS_SCHEMA",
    "QUERY_GLOBAL_ANSWERS",
    "QUERY_GLOBAL_ANSWERS_SCHEMA",
    "QUERY_GLOBAL_BATCHES",
    "QUERY_GLOBAL_BATCHES_SCHEMA",
    "QUERY_GLOBAL_MAP_ANSWERS",
    "QUERY_GLOBAL_MAP_ANSWERS_SCHEMA",
    "QUERY_LOCAL_ANSWERS",
    "QUERY_LOCAL_ANSWERS_SCHEMA",
    "QUERY_LAZY_ANSWERS",
    "QUERY_LAZY_ANSWERS_SCHEMA",
    "QUERY_AUTO_ANSWERS",
    "QUERY_AUTO_ANSWERS_SCHEMA",
]

QUERY_GLOBAL_BATCHES = "query_global_batches"
QUERY_GLOBAL_MAP_ANSWERS = "query_global_map_answers"
QUERY_GLOBAL_ANSWERS = "query_global_answers"
QUERY_LOCAL_ANSWERS = "query_local_answers"
QUERY_DRIFT_ANSWERS = "query_drift_answers"
QUERY_BASIC_ANSWERS = "query_basic_answers"


def _answers_schema(*columns: tuple[str, pa.DataType]) -> pa.Schema:
    """A mode's saved answers: the three columns `query.saved_questions.answer_all` writes in every mode's
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
QUERY_GLOBAL_ANSWERS_SCHEMA = _answers_schema(
    ("reason", pa.string()),
    ("cited_communities", pa.list_(pa.int64())),
    ("points_used", pa.int64()),  # map points that went into the reduce
    ("failed_batches", pa.int64()),
    ("batches", pa.int64()),
)
QUERY_LOCAL_ANSWERS_SCHEMA = _answers_schema(
    ("communities", pa.list_(pa.int64())),
    ("selection", pa.string()),
    # [{ref, id, kind, text, document_id, document_title, start_char, end_char}]
    ("evidence_json", pa.string()),
    ("n_evidence", pa.int64()),
)


QUERY_DRIFT_ANSWERS_SCHEMA = _answers_schema(
    ("reason", pa.string()),
    ("nodes", pa.int64()),  # steps in the tree, open ones included
    ("answered", pa.int64()),
    ("failed_steps", pa.int64()),
    ("model_calls", pa.int64()),  # primer + follow-up + reduce task calls
    ("max_calls", pa.int64()),
    ("tree_json", pa.string()),  # every node: question, status, score, answer, citations, children
    ("citations_json", pa.string()),  # the rows the final answer cites
)

QUERY_BASIC_ANSWERS_SCHEMA = _answers_schema(
    ("reason", pa.string()),
    ("sources_json", pa.string()),  # the retrieved units: id, document, offsets, scores
    ("citations_json", pa.string()),
)

QUERY_LAZY_ANSWERS = "query_lazy_answers"
QUERY_LAZY_ANSWERS_SCHEMA = _answers_schema(
    ("reason", pa.string()),
    ("units_tested", pa.int64()),
    ("units_relevant", pa.int64()),
    ("model_calls", pa.int64()),  # expansion + ratings + answer (at most max_calls)
    ("tests_json", pa.string()),  # per subquery: budget, tested, relevant, calls, stopped branches
    ("citations_json", pa.string()),
)
QUERY_AUTO_ANSWERS = "query_auto_answers"
QUERY_AUTO_ANSWERS_SCHEMA = pa.schema(
    [
        ("question", pa.string()),
        ("route", pa.string()),  # basic | local | global | drift | lazy
        ("reason", pa.string()),  # why that route
        ("router", pa.string()),  # given | llm | offline
        ("status", pa.string()),
        ("answer", pa.string()),
        ("result_json", pa.string()),  # the routed mode's whole result
    ]
)
