"""What one basic search question can cost (`pipeline query basic --estimate`), phase by phase; the
rules are `pipeline.query.estimate`'s."""

from __future__ import annotations

from typing import Any

from pipeline.query.answer.passage_answer import build_basic_context
from pipeline.query.basic.search import retrieve
from pipeline.query.estimate import Asked, Phase, QueryEstimate


def estimate_phases(estimate: QueryEstimate, asked: Asked, config: Any) -> None:
    store, question, settings, embedder = asked

    units, _ = retrieve(store, embedder, question, config)
    context = build_basic_context(question, units, config.context_max_tokens, config.encoding)
    calls = 1 if units else 0
    estimate.phases.append(
        Phase(
            "answer",
            calls,
            context.prompt_tokens * calls,
            settings.llm_local_answer_max_tokens * calls,
            "exact",
        )
    )
