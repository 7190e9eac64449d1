"""Global search as every door sees it (`pipeline.query.common.mode`)."""

from __future__ import annotations

from pipeline.core import schema
from pipeline.query.common.mode import Mode, RouteHint
from pipeline.query.global_.context import GlobalContextError
from pipeline.query.global_.estimate import estimate_phases as estimate
from pipeline.query.global_.search import GlobalSearchConfig, global_search_async
from pipeline.query.global_.shown import global_shown
from pipeline.query.global_.terminal import TERMINAL
from pipeline.query.requests import GlobalOptions

MODE = Mode(
    name="global",
    options=GlobalOptions,
    config=GlobalSearchConfig,
    search=global_search_async,
    needs=(("parquet", schema.COMMUNITIES), ("parquet", schema.COMMUNITY_REPORTS)),
    errors=(GlobalContextError,),
    routable=True,
    http_doc="Map-reduce over community reports (`pipeline.query.global_.search`).",
    tool_doc='Answer a corpus-wide question ("what are the main themes?") by map-reduce over community reports.',
    saved_doc="Saved global questions; with none, a default 'main themes' one.",
    hint="answers corpus-wide questions from community summaries",
    estimate=estimate,
    terminal=TERMINAL,
    shown=global_shown,
    # offline, a summary question is taken as routed: the passage modes' contexts cannot hold a whole
    # collection, so comparing them would always pick one of them
    route_hint=RouteHint(
        "global: a summary or the main themes of the whole collection or a whole document",
        (
            "What are the main themes of these documents?",
            "Summarize the story as a whole.",
            "What are the most important topics across the collection?",
            "Give an overview of the events described.",
        ),
    ),
)
