"""Local search as every door sees it (`pipeline.query.common.mode`)."""

from __future__ import annotations

import json

import pyarrow as pa

from pipeline.core import schema
from pipeline.query.common.mode import Mode, RouteHint, Saved
from pipeline.query.local.search import LocalSearchConfig, LocalSearchError, local_search_async
from pipeline.query.local.shown import local_shown
from pipeline.query.local.terminal import TERMINAL
from pipeline.query.requests import LocalOptions

MODE = Mode(
    name="local",
    options=LocalOptions,
    config=LocalSearchConfig,
    search=local_search_async,
    needs=(
        ("parquet", schema.ENTITIES),
        ("parquet", schema.RELATIONSHIPS),
        ("parquet", schema.COMMUNITIES),
        ("lancedb", schema.LANCE_TEXT_UNITS),
    ),
    errors=(LocalSearchError,),
    routable=True,
    http_doc="Entity/graph/vector retrieval with evidence cited to document offsets (`local_search`).",
    tool_doc='Answer a question about specific entities ("how is X related to Y?") with evidence cited to '
    "document offsets.",
    saved_doc="Saved local questions; with none and no file, nothing is asked.",
    hint="answers questions about specific entities with cited evidence",
    terminal=TERMINAL,
    shown=local_shown,
    route_hint=RouteHint(
        "local: how specific named people, places or things relate, from the knowledge graph",
        (
            "How is the doctor related to the family he treats?",
            "What role does the lawyer play in the dispute over the inheritance?",
            "What is the relationship between the king and his advisor?",
            "Which people does the merchant deal with, and how?",
        ),
        compared=True,
    ),
    saved=Saved(
        columns=(
            ("communities", pa.list_(pa.int64())),
            ("selection", pa.string()),
            # [{ref, id, kind, text, document_id, document_title, start_char, end_char}]
            ("evidence_json", pa.string()),
            ("n_evidence", pa.int64()),
        ),
        row=lambda res: {
            "communities": [c["id"] for c in res.communities],
            "selection": res.selection,
            "evidence_json": json.dumps(res.evidence, default=str),
            "n_evidence": len(res.evidence),
        },
        summary=lambda res: f" ({len(res.evidence)} evidence items)\n\n{res.answer}",
        deps=("report_embeddings",),
        description="Saved local questions answered with ranked communities and evidence cited to document "
        "offsets.",
    ),
)
