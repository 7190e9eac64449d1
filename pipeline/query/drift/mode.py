"""DRIFT search as every door sees it (`pipeline.query.common.mode`)."""

from __future__ import annotations

import json
from typing import Any

import pyarrow as pa

from pipeline.core import schema
from pipeline.query.common.mode import Mode, RouteHint, Saved
from pipeline.query.drift.estimate import estimate_phases as estimate
from pipeline.query.drift.search import DriftSearchConfig, DriftSearchError, drift_search_async
from pipeline.query.drift.shown import drift_shown
from pipeline.query.drift.terminal import TERMINAL
from pipeline.query.requests import DriftOptions


def _outline(res: Any) -> str:
    steps = "\n".join(f"- [{n.id}] {n.status} ({n.score:g}): {n.question}" for n in res.nodes)
    return f"\n\n{res.answer}\n\nSteps:\n{steps}"


SAVED = Saved(
    columns=(
        ("reason", pa.string()),
        ("nodes", pa.int64()),  # steps in the tree, open ones included
        ("answered", pa.int64()),
        ("failed_steps", pa.int64()),
        ("model_calls", pa.int64()),  # primer + follow-up + reduce task calls
        ("max_calls", pa.int64()),
        ("tree_json", pa.string()),  # every node: question, status, score, answer, citations, children
        ("citations_json", pa.string()),  # the rows the final answer cites
    ),
    row=lambda res: {
        "reason": res.reason,
        "nodes": len(res.nodes),
        "answered": sum(1 for n in res.nodes if n.status == "answered"),
        "failed_steps": res.failed_steps,
        "model_calls": sum(res.usage[k] for k in ("primer_calls", "follow_up_calls", "reduce_calls")),
        "max_calls": res.usage["max_calls"],
        "tree_json": json.dumps(res.to_dict()["nodes"], default=str),
        "citations_json": json.dumps(res.citations, default=str),
    },
    summary=_outline,
    deps=("report_embeddings",),
    description="Saved DRIFT questions: primer over reports, follow-up local searches, reduce; the tree kept.",
    totals=("model_calls",),
    metadata=lambda table, config: {"max_calls_per_question": config.max_calls},
)

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
    route_hint=RouteHint(
        "drift: a broad question that also needs details, or writing something new from the material",
        (
            "Describe how the main character changes over the course of the story, with examples.",
            "Write a letter from one character to another about what happened to them.",
            "Imagine a different ending to the story and describe it.",
            "What does the collection say about family, and where does it show it?",
        ),
        compared=True,
    ),
    saved=SAVED,
)
