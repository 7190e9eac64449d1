"""What one global search question can cost (`pipeline query global --estimate`), phase by phase; the
rules are `pipeline.query.estimate`'s."""

from __future__ import annotations

import math
from typing import Any

from pipeline.core import schema
from pipeline.io.store import NamespaceStore
from pipeline.prompts.indexing import COMMUNITY_REPORT
from pipeline.query.estimate import Asked, Phase, QueryEstimate, prompt_tokens
from pipeline.query.global_.first_use import stand_ins
from pipeline.query.global_.search import plan_batches, selection_mode
from pipeline.query.global_.selection import community_tree
from pipeline.query.global_.selection_tasks import RateItem, RateRequest, rate_messages
from pipeline.query.global_.tasks import map_messages
from pipeline.query.retrieval.intent import is_broad


def estimate_phases(estimate: QueryEstimate, asked: Asked, config: Any) -> None:
    store, question = asked.store, asked.question

    reduce = Phase(
        "reduce", 1, config.reduce_budget - config.reduce_reserve, config.reduce_reserve, "upper bound"
    )
    held = stand_ins(store)
    if selection_mode(store, config) == "dynamic":
        _rating(estimate, store, question, config)
        # A broad question maps the top-level reports, unrated; any other may keep any report
        maybe = held & set(community_tree(store).roots) if is_broad(question) else held
        _first_use(estimate, len(maybe), config, "upper bound")
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
    _first_use(estimate, len(held & {c for b in batches for c in b.community_ids}), config, "exact")
    prompt = sum(prompt_tokens(map_messages(question, b.content), config.encoding) for b in batches)
    estimate.phases.append(Phase("map", len(batches), prompt, len(batches) * config.map_reserve, "exact"))
    if batches:
        estimate.phases.append(reduce)


def _first_use(estimate: QueryEstimate, stand_ins: int, config: Any, basis: str) -> None:
    """The deferred reports (`PIPELINE_REPORTS=on_demand`) the question may have written before its map
    (`global_.first_use`): how many is `basis` (exact: those it maps; upper bound: dynamic selection
    keeps some); each one's tokens are its context budget's bound. Where a model is configured."""
    n = min(stand_ins, config.first_use_reports)
    if not n:
        return
    template = prompt_tokens(COMMUNITY_REPORT.messages(context="", max_words=0), config.encoding)
    estimate.phases.append(
        Phase(
            "reports",
            n,
            n * (template + config.report_context_tokens),
            n * config.report_reserve,
            "upper bound",
        )
    )
    estimate.notes.append(
        f"first use: {n} deferred community report(s) ({basis}) written before the map and kept for later "
        f"questions (at most {config.first_use_reports} a question; {stand_ins} among those it may map)"
    )


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
