"""Basic search as every door sees it (`pipeline.query.common.mode`)."""

from __future__ import annotations

from pipeline.core import schema
from pipeline.query.basic.estimate import estimate_phases as estimate
from pipeline.query.basic.search import BasicSearchConfig, BasicSearchError, basic_search_async
from pipeline.query.basic.terminal import TERMINAL
from pipeline.query.common.mode import Mode
from pipeline.query.common.shown import sources_shown
from pipeline.query.requests import BasicOptions

MODE = Mode(
    name="basic",
    options=BasicOptions,
    config=BasicSearchConfig,
    search=basic_search_async,
    needs=(("lancedb", schema.LANCE_TEXT_UNITS),),
    errors=(BasicSearchError,),
    routable=True,
    lane="quick",
    http_doc="Vector RAG: the nearest passages answered with citations (`pipeline.query.basic.search`).",
    tool_doc="Answer from the passages nearest the question (vector RAG), cited to their document offsets.",
    saved_doc="Saved basic questions; with none and no file, nothing is asked.",
    hint="answers from the nearest passages",
    estimate=estimate,
    terminal=TERMINAL,
    shown=sources_shown,
)
