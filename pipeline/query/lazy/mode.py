"""Lazy search as every door sees it (`pipeline.query.common.mode`)."""

from __future__ import annotations

from pipeline.core import schema
from pipeline.query.common.mode import Mode
from pipeline.query.common.shown import sources_shown
from pipeline.query.lazy.estimate import estimate_phases as estimate
from pipeline.query.lazy.search import LazySearchConfig, LazySearchError, lazy_search_async
from pipeline.query.lazy.terminal import TERMINAL
from pipeline.query.requests import LazyOptions

MODE = Mode(
    name="lazy",
    options=LazyOptions,
    config=LazySearchConfig,
    search=lazy_search_async,
    needs=(("parquet", schema.COMMUNITIES), ("lancedb", schema.LANCE_TEXT_UNITS)),
    errors=(LazySearchError,),
    routable=True,
    http_doc="LazyGraphRAG: relevance tests within a budget, no reports needed (`pipeline.query.lazy.search`).",
    tool_doc="Answer from the passages found relevant by a fixed budget of relevance tests (`budget` units), "
    "walked in community order (LazyGraphRAG); needs no community reports. Cited to document offsets.",
    saved_doc="Saved lazy questions; with none and no file, nothing is asked.",
    hint="tests passages for relevance within a budget",
    estimate=estimate,
    terminal=TERMINAL,
    shown=sources_shown,
)
