"""DRIFT search as every door sees it (`pipeline.query.common.mode`)."""

from __future__ import annotations

from pipeline.core import schema
from pipeline.query.common.mode import Mode
from pipeline.query.drift.estimate import estimate_phases as estimate
from pipeline.query.drift.search import DriftSearchConfig, DriftSearchError, drift_search_async
from pipeline.query.drift.shown import drift_shown
from pipeline.query.drift.terminal import TERMINAL
from pipeline.query.requests import DriftOptions

MODE = Mode(
    name="drift",
    options=DriftOptions,
    config=DriftSearchConfig,
    search=drift_search_async,
    needs=(
        ("parquet", schema.ENTITIES),
        ("parquet", schema.COMMUNITIES),
        ("lancedb", schema.LANCE_COMMUNITY_REPORTS),
        ("lancedb", schema.LANCE_TEXT_UNITS),
    ),
    errors=(DriftSearchError,),
    routable=True,
    http_doc="DRIFT: primer over reports, follow-up local searches, reduce; the tree in `nodes` (`drift_search`).",
    tool_doc="Answer a question that needs both breadth and detail: a primer over the community reports nearest "
    "to it, `depth` rounds of `breadth` follow-up local searches, and a reduce. The result's `nodes` "
    "are the search tree (question, answer, score, citations, children).",
    saved_doc="Saved DRIFT questions; with none and no file, nothing is asked.",
    hint="starts from the nearest community reports and follows up with local searches (broader than local, cheaper than global)",
    estimate=estimate,
    terminal=TERMINAL,
    shown=drift_shown,
)
