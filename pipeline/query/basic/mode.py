"""Basic search as every door sees it (`pipeline.query.common.mode`)."""

from __future__ import annotations

import json

import pyarrow as pa

from pipeline.core import schema
from pipeline.query.basic.estimate import estimate_phases as estimate
from pipeline.query.basic.search import BasicSearchConfig, BasicSearchError, basic_search_async
from pipeline.query.basic.terminal import TERMINAL
from pipeline.query.common.mode import Mode, RouteHint, Saved
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
    route_hint=RouteHint(
        "basic: a fact stated in one or two passages (who, when, where, which, how many)",
        (
            "Who wrote the letter?",
            "When was the company founded?",
            "What is the name of the ship's captain?",
            "Where was the treaty signed?",
            "How many children did she have?",
        ),
        compared=True,
    ),
    saved=Saved(
        columns=(
            ("reason", pa.string()),
            ("sources_json", pa.string()),  # the retrieved units: id, document, offsets, scores
            ("citations_json", pa.string()),
        ),
        row=lambda res: {
            "sources_json": json.dumps([{k: v for k, v in s.items() if k != "text"} for s in res.sources]),
            "reason": res.reason,
            "citations_json": json.dumps(res.citations, default=str),
        },
        summary=lambda res: f" ({len(res.sources)} passages)\n\n{res.answer}",
        description="Saved basic questions: the nearest passages by embedding answered with citations.",
    ),
)
