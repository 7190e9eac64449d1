"""Table and column names, defined once (Microsoft GraphRAG's names plus our extra columns).

Writers, readers and tests import these instead of spelling column names again.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

# --- table names (Parquet files `<name>.parquet`, LanceDB tables) ---
# Each table has one writing runner (tests/test_layout.py). The stages that run before the graph read
# the input tables; the final `documents` and `text_units` (GraphRAG's create_final_*) add the back-links
# once the tables they point to exist, so a table's last materialization is the step that changed it.
INPUT_DOCUMENTS = "input_documents"  # DOCUMENTS_SCHEMA, text_unit_ids empty (pipeline.index.input_documents)
BASE_TEXT_UNITS = "base_text_units"  # TEXT_UNITS_SCHEMA, id lists empty (pipeline.index.base_text_units)
DOCUMENTS = "documents"  # + text_unit_ids (pipeline.index.documents)
INGEST_ERRORS = "ingest_errors"
TEXT_UNITS = "text_units"  # + entity_ids, relationship_ids, covariate_ids (pipeline.index.text_units)
COMMUNITY_REPORTS = "community_reports"  # GraphRAG columns + fingerprint (pipeline.ops.reports)
# query-time tables (assets/query): saved questions answered after every re-index

# LanceDB table names
LANCE_TEXT_UNITS = "text_units"
LANCE_TEXT_UNIT_PIECES = "text_unit_pieces"  # model-sized windows of long text units, for search

# Chunk-similarity graph snapshot (Arrow IPC file under the namespace folder; see pipeline.chunk_graph)
CHUNK_GRAPH_SNAPSHOT = "chunk_graph.arrow"

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
        # JSON layout map of a parsed file: pages, sections, masked headers/footers (pipeline.parse.layout);
        # null for plain text and rows
        ("layout", pa.string()),
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
        # where the unit sits in a parsed file (pipeline.parse.layout): 1-based first and last page (null
        # for documents without pages) and its section path "5 Arrays › 5.7 Matrix facilities" (null
        # outside any section), so a citation can name them
        ("page_start", pa.int64()),
        ("page_end", pa.int64()),
        ("section", pa.string()),
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


def lance_text_unit_pieces_schema(dim: int, split_tag: str = "") -> pa.Schema:
    """`split_tag`: the embedder's split rule the pieces were cut by (`CachedEmbedder.split_tag`), so a
    re-index can take an unchanged unit's pieces instead of tokenizing it again."""
    return pa.schema(
        [
            ("id", pa.string()),  # "<text unit id>:<offset of the piece in the unit>"
            ("text_unit_id", pa.string()),
            ("document_id", pa.string()),
            ("start_char", pa.int64()),  # in the document, like text_units' offsets
            ("end_char", pa.int64()),
            ("vector", pa.list_(pa.float32(), dim)),
        ],
        metadata={"split_tag": split_tag} if split_tag else None,
    )


# --- graph tables (pipeline.ops.extraction -> pipeline.ops.resolution / pipeline.ops.claims -> pipeline.ops.communities) ---
EXTRACTED_GRAPH = "extracted_graph"  # one row per text unit: every round's raw records, before resolution
FAILED_EXTRACTIONS = "failed_extractions"
ENTITIES = "entities"
RELATIONSHIPS = "relationships"
COVARIATES = "covariates"  # GraphRAG's name for claims
COMMUNITIES = "communities"
# The offline description summaries of the last resolution, by digest of what each summarized, for the
# next run to reuse (pipeline.ops.descriptions.SummaryReuse); not a GraphRAG table.
DESCRIPTION_SUMMARIES = "description_summaries"
GRAPHML_EXPORT = "graph.graphml"  # for Gephi / Cytoscape, in the namespace folder
GRAPH_VIEW = "graph.html"  # a self-contained page of the graph (pipeline.ops.graph_view)
EVAL_REPORT = "eval_report.json"  # the last `pipeline eval` metrics, for the web app (service.browse)

_RAW_ENTITY = pa.struct(
    [
        ("name", pa.string()),
        ("type", pa.string()),
        ("description", pa.string()),
        ("round", pa.int64()),  # 0 = first extraction, k = k-th gleaning round
        ("mentions", pa.int64()),
        ("evidence", pa.list_(pa.int64())),  # sentence start offsets in the document (offline)
        ("inferred", pa.bool_()),  # added for a relationship endpoint the extractor did not list
    ]
)
_RAW_RELATIONSHIP = pa.struct(
    [
        ("source", pa.string()),
        ("target", pa.string()),
        ("description", pa.string()),
        ("strength", pa.float64()),
        ("round", pa.int64()),
        ("evidence", pa.list_(pa.int64())),
    ]
)
_RAW_CLAIM = pa.struct(
    [
        ("subject", pa.string()),
        ("object", pa.string()),
        ("claim_type", pa.string()),
        ("status", pa.string()),
        ("start_date", pa.string()),
        ("end_date", pa.string()),
        ("description", pa.string()),
        ("source_text", pa.string()),
        ("start_char", pa.int64()),
        ("end_char", pa.int64()),
        ("round", pa.int64()),
    ]
)
EXTRACTED_GRAPH_SCHEMA = pa.schema(
    [
        ("text_unit_id", pa.string()),
        ("document_id", pa.string()),
        ("method", pa.string()),  # offline | llm
        ("version", pa.string()),  # extractor or prompt version
        ("status", pa.string()),  # ok | partial (a gleaning round failed) | failed
        ("rounds", pa.int64()),
        ("n_sentences", pa.int64()),
        ("dropped_records", pa.int64()),  # LLM records that failed validation (the rest were kept)
        ("retyped_entities", pa.int64()),  # LLM entities of a type not asked for, stored as "unknown"
        ("entities", pa.list_(_RAW_ENTITY)),
        ("relationships", pa.list_(_RAW_RELATIONSHIP)),
        ("claims", pa.list_(_RAW_CLAIM)),
    ]
)
FAILED_EXTRACTIONS_SCHEMA = pa.schema(
    [
        ("text_unit_id", pa.string()),
        ("document_id", pa.string()),
        ("round", pa.int64()),  # the round that failed; earlier rounds' records are kept
        ("error_type", pa.string()),
        ("reason", pa.string()),
    ]
)
ENTITIES_SCHEMA = pa.schema(
    [
        ("id", pa.string()),  # sha256 of (normalised name, type): stable across re-runs
        ("human_readable_id", pa.int64()),
        ("title", pa.string()),  # most frequent surface form (GraphRAG upper-cases; we keep the text's case)
        ("type", pa.string()),
        ("description", pa.string()),
        ("text_unit_ids", pa.list_(pa.string())),
        ("frequency", pa.int64()),  # number of text units mentioning it
        ("degree", pa.int64()),
        # ours
        ("aliases", pa.list_(pa.string())),  # other surface forms merged into it, for local search
        ("document_ids", pa.list_(pa.string())),
        ("name_key", pa.string()),  # normalised name (pipeline.core.names.normalize_name)
    ]
)
DESCRIPTION_SUMMARIES_SCHEMA = pa.schema([("digest", pa.string()), ("summary", pa.string())])
RELATIONSHIPS_SCHEMA = pa.schema(
    [
        ("id", pa.string()),  # sha256 of the (sorted) endpoint ids
        ("human_readable_id", pa.int64()),
        ("source", pa.string()),  # entity title, as GraphRAG
        ("target", pa.string()),
        ("description", pa.string()),
        ("weight", pa.float64()),  # sum of strengths (LLM) or of co-occurring sentences (offline)
        ("combined_degree", pa.int64()),
        ("text_unit_ids", pa.list_(pa.string())),
        # ours
        ("source_id", pa.string()),
        ("target_id", pa.string()),
        ("document_ids", pa.list_(pa.string())),
        ("npmi", pa.float64()),  # sentence-level NPMI of offline co-occurrence edges; null for LLM edges
    ]
)
COVARIATES_SCHEMA = pa.schema(
    [
        ("id", pa.string()),
        ("human_readable_id", pa.int64()),
        ("covariate_type", pa.string()),  # always "claim"
        ("type", pa.string()),
        ("description", pa.string()),
        ("subject_id", pa.string()),  # entity title, as GraphRAG
        ("object_id", pa.string()),
        ("status", pa.string()),  # TRUE | FALSE | SUSPECTED
        ("start_date", pa.string()),
        ("end_date", pa.string()),
        ("source_text", pa.string()),
        ("text_unit_id", pa.string()),
        # ours
        ("subject_entity_id", pa.string()),  # null when the subject is not a resolved entity
        ("object_entity_id", pa.string()),
        ("document_id", pa.string()),
        ("start_char", pa.int64()),  # source_text's offsets in the document, when found there
        ("end_char", pa.int64()),
        ("round", pa.int64()),
    ]
)
# What GraphRAG stores for a claim's unknown object or date (a null would read as "nan" in its claims
# context); our readers take it as missing (pipeline.ops.claims.known)
CLAIM_NONE = "NONE"
COMMUNITIES_SCHEMA = pa.schema(
    [
        ("id", pa.string()),  # sha256 of (level, member entity ids): same members, same id
        ("human_readable_id", pa.int64()),
        ("community", pa.int64()),
        ("level", pa.int64()),
        ("parent", pa.int64()),  # -1 for level-0 communities
        ("children", pa.list_(pa.int64())),
        ("title", pa.string()),
        ("entity_ids", pa.list_(pa.string())),
        ("relationship_ids", pa.list_(pa.string())),  # edges with both endpoints inside
        ("text_unit_ids", pa.list_(pa.string())),  # of the member entities (GraphRAG: of the edges)
        ("period", pa.string()),
        ("size", pa.int64()),
        # ours
        ("method", pa.string()),  # leiden | isolates (entities without edges, see pipeline.ops.communities)
    ]
)


# --- community reports (pipeline.ops.reports) and their LanceDB tables (pipeline.index.report_embeddings) ---
FAILED_REPORTS = "failed_reports"
LANCE_COMMUNITY_REPORTS = "community_reports"
LANCE_ENTITIES = "entities"

FINDING = pa.struct([("summary", pa.string()), ("explanation", pa.string())])
COMMUNITY_REPORTS_SCHEMA = pa.schema(
    [
        (
            "id",
            pa.string(),
        ),  # the community's id: stable while the members are (GraphRAG: sha512 of the text)
        ("human_readable_id", pa.int64()),  # = community
        ("community", pa.int64()),  # = communities.community
        ("level", pa.int64()),
        ("parent", pa.int64()),
        ("children", pa.list_(pa.int64())),
        ("title", pa.string()),
        ("summary", pa.string()),
        ("full_content", pa.string()),  # markdown: "# title", summary, "## finding" sections
        ("rank", pa.float64()),  # 0-10: the LLM's rating, or the offline rank from size and degree
        ("rating_explanation", pa.string()),
        ("findings", pa.list_(FINDING)),
        ("full_content_json", pa.string()),  # the report as JSON (title, summary, findings, rating, ...)
        ("period", pa.string()),
        ("size", pa.int64()),
        # ours
        ("fingerprint", pa.string()),  # sha256 of everything the report depends on; equal -> reused
        ("method", pa.string()),  # offline | llm
        ("model", pa.string()),  # "offline" or endpoint/model, with the prompt version
        ("context_tokens", pa.int64()),  # tokens of the context the report was written from
        ("sub_reports", pa.list_(pa.int64())),  # children whose reports replaced their raw context
        ("data_refs", pa.string()),  # JSON: each cited context id -> the row it names (ops/reports/citations)
    ]
)
FAILED_REPORTS_SCHEMA = pa.schema(
    [
        ("community", pa.int64()),
        ("level", pa.int64()),
        ("fingerprint", pa.string()),
        ("error_type", pa.string()),
        ("reason", pa.string()),
        ("raw_output", pa.string()),  # the model's last reply, when it did not validate
    ]
)


def _reused_vectors_schema(
    columns: list[tuple[str, pa.DataType]], dim: int, model_id: str, vector_text: str
) -> pa.Schema:
    """`columns` then the vector. The embedding model and the rule that made the embedded text ride in the
    schema metadata: vectors are only carried over from a table written by the same model under the same
    rule (`pipeline.index.report_embeddings`)."""
    return pa.schema(
        [*columns, ("vector", pa.list_(pa.float32(), dim))],
        metadata={"embedding_model": model_id, "vector_text": vector_text},
    )


def lance_community_reports_schema(dim: int, model_id: str, vector_text: str = "") -> pa.Schema:
    """The vector is of title + summary (report_embeddings.report_text)."""
    columns = [
        ("id", pa.string()),
        ("community", pa.int64()),
        ("level", pa.int64()),
        ("title", pa.string()),
        ("summary", pa.string()),
        ("full_content", pa.string()),
        ("rank", pa.float64()),
    ]
    return _reused_vectors_schema(columns, dim, model_id, vector_text)


def lance_entities_schema(dim: int, model_id: str, vector_text: str = "") -> pa.Schema:
    """The vector is of the title (report_embeddings.entity_text)."""
    columns = [
        ("id", pa.string()),
        ("title", pa.string()),
        ("type", pa.string()),
        ("description", pa.string()),
        ("aliases", pa.list_(pa.string())),
    ]
    return _reused_vectors_schema(columns, dim, model_id, vector_text)


# Microsoft GraphRAG's default LanceDB table names: its query engine reads these (pipeline.interop)
LANCE_MS_ENTITY_DESCRIPTION = "entity_description"  # vector of "title:description"
LANCE_MS_COMMUNITY_FULL_CONTENT = "community_full_content"  # vector of the report's full_content
LANCE_MS_TEXT_UNIT_TEXT = "text_unit_text"  # vector of the unit's text


def _lance_ms_vectors_schema(dim: int, model_id: str = "") -> pa.Schema:
    # GraphRAG's store reads `id` and `vector` (and the dates when present); `text` is what was embedded.
    return pa.schema(
        [
            ("id", pa.string()),  # the row's id in the Parquet table GraphRAG joins it to
            ("text", pa.string()),
            ("vector", pa.list_(pa.float32(), dim)),
            ("create_date", pa.string()),
            ("update_date", pa.string()),
        ],
        metadata={"embedding_model": model_id},
    )


lance_entity_description_schema = _lance_ms_vectors_schema
lance_community_full_content_schema = _lance_ms_vectors_schema
lance_text_unit_text_schema = _lance_ms_vectors_schema


def vector_array(vectors: np.ndarray, dim: int) -> pa.FixedSizeListArray:
    """A float32 matrix as the fixed-size-list vector column of a LanceDB table."""
    flat = pa.array(np.ascontiguousarray(vectors, dtype=np.float32).reshape(-1))
    return pa.FixedSizeListArray.from_arrays(flat, dim)


# The saved answers of the query-time assets, in their own module, are part of this namespace too.
from pipeline.core.answer_schema import *  # noqa: E402, F403
