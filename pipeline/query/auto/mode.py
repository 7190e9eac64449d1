"""Auto search as every door sees it (`pipeline.query.common.mode`)."""

from __future__ import annotations

from pipeline.core import schema
from pipeline.query.auto.estimate import estimate_phases as estimate
from pipeline.query.auto.search import AutoSearchConfig, auto_search_async
from pipeline.query.auto.shown import auto_shown
from pipeline.query.auto.terminal import TERMINAL
from pipeline.query.common.mode import Mode
from pipeline.query.requests import AutoOptions

MODE = Mode(
    name="auto",
    summary="Routes the question to the mode that fits it and says which and why.",
    options=AutoOptions,
    config=AutoSearchConfig,
    search=auto_search_async,
    # auto falls back to lazy search, which needs the graph's communities and the text units only
    needs=(("parquet", schema.COMMUNITIES), ("lancedb", schema.LANCE_TEXT_UNITS)),
    http_doc="Routes the question to basic, local, global, DRIFT or lazy; `route` and `reason` say which and why.",
    tool_doc="Answer with the mode that fits the question (basic, local, global, drift or lazy); the result's "
    "`route` and `reason` say which and why, `result` is that mode's result.",
    saved_doc="Saved questions routed per question; with none, nothing is asked.",
    hint="picks the mode itself",
    terminal=TERMINAL,
    shown=auto_shown,
    estimate=estimate,
    routes=True,  # its `route` event says where it sent the question and why
)
