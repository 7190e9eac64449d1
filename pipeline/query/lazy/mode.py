"""Lazy search as every door sees it (`pipeline.query.common.mode`)."""

from __future__ import annotations

import json

import pyarrow as pa

from pipeline.core import schema
from pipeline.query.common.mode import Mode, RouteHint, Saved
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
    route_hint=RouteHint(
        "lazy: a question that needs reasoning over facts spread across several passages",
        (
            "Why did the merchant leave the city after the fire?",
            "What led to the quarrel between the brothers, and how was it resolved?",
            "How did the decision at the meeting affect the people involved later?",
            "What connects the accident to the company's earlier choices?",
        ),
        compared=True,
    ),
    saved=Saved(
        columns=(
            ("reason", pa.string()),
            ("units_tested", pa.int64()),
            ("units_relevant", pa.int64()),
            ("model_calls", pa.int64()),  # expansion + ratings + answer (at most max_calls)
            ("tests_json", pa.string()),  # per subquery: budget, tested, relevant, calls, stopped branches
            ("citations_json", pa.string()),
        ),
        row=lambda res: {
            "units_tested": res.units_tested,
            "units_relevant": res.units_relevant,
            "reason": res.reason,
            "model_calls": sum(res.usage[k] for k in ("expand_calls", "rate_calls", "answer_calls")),
            "tests_json": json.dumps(res.tests),
            "citations_json": json.dumps(res.citations, default=str),
        },
        summary=lambda res: (
            f" ({res.units_tested} units tested, {res.units_relevant} relevant)\n\n{res.answer}"
        ),
        deps=("text_unit_embeddings", "communities"),
        description="Saved lazy questions: relevance tests of passages in community order within a budget, "
        "answered with citations; no community reports needed.",
        totals=("units_tested", "model_calls"),
        metadata=lambda table, config: {"max_calls_per_question": config.max_calls},
    ),
)
