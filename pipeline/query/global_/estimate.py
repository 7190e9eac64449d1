"""What one global search question can cost (`pipeline query global --estimate`), phase by phase; the
rules are `pipeline.query.estimate`'s."""

from __future__ import annotations

import math
from typing import Any

from pipeline.core import schema
from pipeline.io.store import NamespaceStore
from pipeline.query.common.intent import is_broad
from pipeline.query.estimate import Asked, Phase, QueryEstimate, prompt_tokens
from pipeline.query.global_.search import plan_batches, selection_mode
from pipeline.query.global_.selection_tasks import RateItem, RateRequest, rate_messages
from pipeline.query.global_.tasks import map_messages


def estimate_phases(estimate: QueryEstimate, asked: Asked, config: Any) -> None:
    store, question = asked.store, asked.question

    reduce = Phase(
        "reduce", 1, config.reduce_budget - config.reduce_reserve, config.reduce_reserve, "upper bound"
    )
    if selection_mode(store, config) == "dynamic":
        _rating(estimate, store, question, config)
        n = config.max_map_batches
        estimate.phases.append(
            Phase(
                "map", n, n * (config.map_budget - config.map_reserve), n * config.map_reserve, "upper bound"
            )
        )
        estimate.phases.append(reduce)
        estimate.notes.append(
            "dynamic selection: which reports are mapped depends on the ratings; the map phase is its bound"
        )
        return
    batches = plan_batches(store, question, config)
    prompt = sum(prompt_tokens(map_messages(question, b.content), config.encoding) for b in batches)
    estimate.phases.append(Phase("map", len(batches), prompt, len(batches) * config.map_reserve, "exact"))
    if batches:
        estimate.phases.append(reduce)


def _rating(estimate: QueryEstimate, store: NamespaceStore, question: str, config: Any) -> None:
    """At most ceil(max_rated / rate_batch_size) rating calls, each of the mean report's size."""

    if is_broad(question):
        estimate.notes.append("a broad question: the top-level reports are mapped without rating")
        return
    reports = store.read_table(
        schema.COMMUNITY_REPORTS, columns=["community", "title", "summary"]
    ).to_pylist()
    calls = math.ceil(min(config.max_rated, len(reports)) / config.rate_batch_size)
    sample = reports[: config.rate_batch_size * 8]  # the mean batch, measured on up to 8 batches of reports
    batches = [sample[i : i + config.rate_batch_size] for i in range(0, len(sample), config.rate_batch_size)]
    mean = sum(
        prompt_tokens(
            rate_messages(
                RateRequest(
                    question=question,
                    reports=[
                        RateItem(community=r["community"], title=r["title"] or "", summary=r["summary"] or "")
                        for r in b
                    ],
                )
            ),
            config.encoding,
        )
        for b in batches
    ) / max(1, len(batches))
    estimate.phases.append(
        Phase("rate", calls, round(mean * calls), calls * config.map_reserve, "upper bound")
    )
