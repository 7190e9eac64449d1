"""What one lazy search question can cost (`pipeline query lazy --estimate`), phase by phase; the
rules are `pipeline.query.estimate`'s."""

from __future__ import annotations

from typing import Any

from pipeline import prompts
from pipeline.query.estimate import Asked, Phase, QueryEstimate, prompt_tokens
from pipeline.query.lazy.tasks import ExpandRequest, RateUnitsRequest, UnitItem, rate_messages
from pipeline.query.lazy.tree import rank_units
from pipeline.query.retrieval.local_index import load_local_index
from pipeline.query.retrieval.passage_index import load_passage_index


def estimate_phases(estimate: QueryEstimate, asked: Asked, config: Any) -> None:
    """Expansion (exact prompt), ratings (upper bound: the call cap, each call a full batch of the
    question's longest ranked units, cut as the prompt cuts them), the answer (within its budget)."""
    store, question, settings, embedder = asked

    enc = config.encoding
    expand = prompts.LAZY_EXPAND.messages(**vars(ExpandRequest(question, config.subqueries)))
    limit = settings.llm_map_max_tokens
    estimate.phases.append(Phase("expand", 1, prompt_tokens(expand, enc), limit, "exact"))
    graph = load_local_index(store)
    passages = load_passage_index(store, graph)
    (ranking,) = rank_units(store, passages, embedder, [question], config.ranking_depth)
    texts = sorted(
        (graph.text_units[passages.unit_ids[r]]["text"] for r in ranking.rank), key=len, reverse=True
    )[: config.units_per_call]
    items = [UnitItem(i + 1, t) for i, t in enumerate(texts)]
    per_call = prompt_tokens(rate_messages(RateUnitsRequest(question, items)), enc)
    calls = config.max_rate_calls if texts else 0
    estimate.phases.append(Phase("rate", calls, per_call * calls, limit * calls, "upper bound"))
    answer_limit = settings.llm_local_answer_max_tokens
    estimate.phases.append(Phase("answer", 1, config.context_max_tokens, answer_limit, "upper bound"))
    estimate.notes.append(
        f"lazy: at most {config.max_calls} calls for a budget of {config.budget} units, "
        f"{config.units_per_call} per call, over up to {config.subqueries} subqueries"
    )
