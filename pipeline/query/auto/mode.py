"""Auto search as every door sees it (`pipeline.query.common.mode`)."""

from __future__ import annotations

import json
from collections import Counter

import pyarrow as pa

from pipeline.core import schema
from pipeline.query.auto.estimate import estimate_phases as estimate
from pipeline.query.auto.search import AutoSearchConfig, auto_search_async
from pipeline.query.auto.shown import auto_shown
from pipeline.query.auto.terminal import TERMINAL
from pipeline.query.common.mode import Mode, Saved
from pipeline.query.requests import AutoOptions


def _routes(table: pa.Table, config: object) -> dict[str, object]:
    """How many saved questions took each route, and each one's route and reason."""
    routes = Counter(table.column("route").to_pylist())
    decisions = [
        {"question": q, "route": r, "reason": why}
        for q, r, why in zip(
            table.column("question").to_pylist(),
            table.column("route").to_pylist(),
            table.column("reason").to_pylist(),
            strict=True,
        )
    ]
    return {**{f"route_{r}": n for r, n in sorted(routes.items())}, "routes": decisions}


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
    saved=Saved(
        columns=(
            ("route", pa.string()),  # the routable mode it took
            ("reason", pa.string()),  # why that route
            ("router", pa.string()),  # given | llm | offline
            ("result_json", pa.string()),  # the routed mode's whole result
        ),
        row=lambda res: {
            "route": res.route,
            "reason": res.reason,
            "router": res.router,
            "result_json": json.dumps(res.result, default=str),
        },
        summary=lambda res: f" — routed to **{res.route}** ({res.reason})\n\n{res.answer}",
        deps=("text_unit_embeddings", "communities"),
        description="Saved questions, each routed to the mode that fits it; the route and its reason kept "
        "with the answer.",
        metadata=_routes,
    ),
)
