"""Local search as every door sees it (`pipeline.query.common.mode`)."""

from __future__ import annotations

from pipeline.core import schema
from pipeline.query.common.mode import Mode
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
)
