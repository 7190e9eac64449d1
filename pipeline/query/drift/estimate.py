"""What one DRIFT search question can cost (`pipeline query drift --estimate`), phase by phase; the
rules are `pipeline.query.estimate`'s."""

from __future__ import annotations

from typing import Any

from pipeline.query.drift.steps import primer_reports, split_folds
from pipeline.query.drift.tasks import PrimerRequest, primer_messages
from pipeline.query.estimate import Asked, Phase, QueryEstimate, prompt_tokens
from pipeline.query.retrieval.local_index import load_local_index


def estimate_phases(estimate: QueryEstimate, asked: Asked, config: Any) -> None:
    store, question, settings, embedder = asked

    index = load_local_index(store)
    hits = primer_reports(store, index, embedder.embed([question])[0], config)
    folds = split_folds([r for r, _ in hits], config.primer_folds) if hits else []
    answer_limit = settings.llm_local_answer_max_tokens
    prompt = sum(
        prompt_tokens(
            primer_messages(
                PrimerRequest(question=question, reports=f, max_follow_ups=config.follow_ups_per_step)
            ),
            config.local.encoding,
        )
        for f in folds
    )
    estimate.phases.append(Phase("primer", len(folds), prompt, len(folds) * answer_limit, "exact"))
    if not folds:
        estimate.notes.append(
            "no community report to prime from: the query answers no_results without a call"
        )
        return
    n = config.depth * config.breadth
    estimate.phases.append(
        Phase("follow-ups", n, n * config.local.context_max_tokens, n * answer_limit, "upper bound")
    )
    estimate.phases.append(
        Phase("reduce", 1, config.reduce_budget, settings.llm_reduce_max_tokens, "upper bound")
    )
