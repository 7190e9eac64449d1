"""The `context` event: what an answer is about to read, sent once a mode has chosen it and before it
answers, so that a reader sees the sources while the answer is written.

Each source is one row: `section` (reports, entities, relationships, claims, sources, communities),
`id` (the short id an answer cites: `[Data: Sources (3)]`), `rank` within its section, `score` (the
mode's own: a ranking's fused score, a cosine, a relevance rating; None where the mode ranks rows by
order only), its `text`, and what it names (`text_unit_id`, `document_id`, `document_title`,
`start_char`/`end_char`, and `page_start`/`page_end`/`document_section` where the document has a layout).
The service bounds the list and its texts as it bounds the result (`pipeline.service.streams`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from pipeline.query.answer.answer_context import LocalContext
from pipeline.query.answer.pages import document_layouts, place
from pipeline.query.common.events import CONTEXT
from pipeline.query.common.scope import QueryScope

# A ref key -> {its value: score}: how a mode says which of its context rows scored what.
Scores = Mapping[str, Mapping[Any, float | None]]


def context_sources(context: LocalContext, scores: Scores | None = None) -> list[dict[str, Any]]:
    """A `LocalContext`'s rows as sources, in the order the answer reads them; a row's score is the
    first of `scores` whose key its ref has (`{"text_unit_id": {"u-1": 0.8}}`)."""
    ranks: Counter[str] = Counter()
    out = []
    for row in context.rows:
        ranks[row.section] += 1
        score = next(
            (table[row.ref[key]] for key, table in (scores or {}).items() if row.ref.get(key) in table),
            None,
        )
        out.append(
            {
                "section": row.section,
                "id": row.id,
                "rank": ranks[row.section],
                "score": score,
                "text": row.text,
                **row.ref,
            }
        )
    return out


def ranked(rows: Iterable[Mapping[str, Any]], section: str, score: str = "score") -> list[dict[str, Any]]:
    """Rows of one section in rank order as sources (a mode's own rows: global's communities)."""
    return [
        {"section": section, "rank": n, "score": row.get(score), **row} for n, row in enumerate(rows, start=1)
    ]


def emit_context(scope: QueryScope, build: Callable[[], list[dict[str, Any]]]) -> None:
    """Send the sources `build()` lists as the `context` event, each passage placed on its pages and
    section when its document has a layout; nothing is built when no door listens."""
    if scope.events is None:
        return
    sources = build()
    layouts = document_layouts(scope.store)
    if layouts is not None and layouts.any_layout:
        sources = [place(dict(s), layouts) if "start_char" in s else s for s in sources]
    scope.emit(CONTEXT, sources=sources)
