"""`pipeline query <mode> --estimate`: the model calls, tokens and cost one question can take, per phase,
counted without sending anything.

Rules:
- Retrieval runs as the query would (embedding, report and passage search): no model is involved in it.
- A phase whose prompts are known before any model answers is `exact`: global search's map batches, the
  DRIFT primer's folds, basic search's one answer. Completion tokens are at most the phase's
  max_tokens (the output limit sent with the call).
- A phase that depends on the model's answers is an `upper bound`: DRIFT's follow-ups (depth x breadth
  calls, each prompt within the local context budget), lazy search's ratings (its call cap, each a full
  batch of the longest ranked units) and every reduce (within its budget).
- Cost is tokens at the configured prices (`PIPELINE_LLM_PRICES` over `pipeline.llm.usage.DEFAULT_PRICES`);
  a model missing from the table costs 0. The LLM cache is not consulted: a repeated question is cheaper.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, NamedTuple

from pipeline.core.tokens import count_tokens
from pipeline.embeddings.base import Embedder
from pipeline.io.store import NamespaceStore
from pipeline.llm.usage import DEFAULT_PRICES, estimate_cost
from pipeline.query.common.prompt_text import skeleton_text


@dataclass
class Phase:
    phase: str
    calls: int
    prompt_tokens: int
    completion_tokens: int  # the output limits of those calls: the most they can return
    basis: str  # exact | upper bound


@dataclass
class QueryEstimate:
    mode: str
    namespace: str
    question: str
    model: str
    engine: str  # the configured engine: "offline" sends nothing whatever this says
    phases: list[Phase] = field(default_factory=list)
    cost_usd: float = 0.0
    notes: list[str] = field(default_factory=list)

    @property
    def calls(self) -> int:
        return sum(p.calls for p in self.phases)

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["calls"] = self.calls
        out["prompt_tokens"] = sum(p.prompt_tokens for p in self.phases)
        out["completion_tokens"] = sum(p.completion_tokens for p in self.phases)
        return out

    def render(self) -> str:
        lines = [
            f"{self.mode} search on {self.namespace!r} with {self.model} ({self.engine} engine): at most "
            f"{self.calls} model calls, ${self.cost_usd:.4f}",
            f"  {'phase':<12} {'calls':>6} {'prompt tok':>11} {'max completion':>15}  basis",
        ]
        for p in self.phases:
            lines.append(
                f"  {p.phase:<12} {p.calls:>6} {p.prompt_tokens:>11} {p.completion_tokens:>15}  {p.basis}"
            )
        lines += [f"  note: {n}" for n in self.notes]
        return "\n".join(lines)


class Asked(NamedTuple):
    """The question being estimated and what its phases read."""

    store: NamespaceStore
    question: str
    settings: Any
    embedder: Embedder


def _tokens(messages: list[dict[str, str]], encoding: str) -> int:
    return count_tokens(skeleton_text(messages), encoding)


def _finish(estimate: QueryEstimate, settings: Any) -> QueryEstimate:
    prices = {**DEFAULT_PRICES, **settings.llm_prices}
    estimate.cost_usd = round(
        sum(
            estimate_cost(settings.llm_model, p.prompt_tokens, p.completion_tokens, prices)
            for p in estimate.phases
        ),
        6,
    )
    if settings.llm_provider == "offline":
        estimate.notes.append("the configured engine is offline: a real run sends none of these calls")
    return estimate


def estimate_query(
    mode: Any, store: NamespaceStore, question: str, settings: Any, embedder: Embedder, config: Any
) -> QueryEstimate:
    """The calls one question of `mode` (a registered mode's record, `pipeline.query.registry`) can
    take, with `config` its mode's config; the record's `estimate` adds its phases."""
    if mode.estimate is None:
        raise ValueError(f"no estimate for {mode.name!r} search")
    estimate = QueryEstimate(mode.name, store.namespace, question, settings.llm_model, settings.llm_provider)
    mode.estimate(estimate, Asked(store, question, settings, embedder), config)
    return _finish(estimate, settings)


def _global(estimate: QueryEstimate, asked: Asked, config: Any) -> None:
    store, question = asked.store, asked.question
    from pipeline.query.global_.search import plan_batches, selection_mode
    from pipeline.query.global_.tasks import map_messages

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
    prompt = sum(_tokens(map_messages(question, b.content), config.encoding) for b in batches)
    estimate.phases.append(Phase("map", len(batches), prompt, len(batches) * config.map_reserve, "exact"))
    if batches:
        estimate.phases.append(reduce)


def _rating(estimate: QueryEstimate, store: NamespaceStore, question: str, config: Any) -> None:
    """At most ceil(max_rated / rate_batch_size) rating calls, each of the mean report's size."""
    import math

    from pipeline.core import schema
    from pipeline.query.common.intent import is_broad
    from pipeline.query.global_.selection_tasks import RateItem, RateRequest, rate_messages

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
        _tokens(
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


def _drift(estimate: QueryEstimate, asked: Asked, config: Any) -> None:
    store, question, settings, embedder = asked
    from pipeline.query.common.local_index import load_local_index
    from pipeline.query.drift.steps import primer_reports, split_folds
    from pipeline.query.drift.tasks import PrimerRequest, primer_messages

    index = load_local_index(store)
    hits = primer_reports(store, index, embedder.embed([question])[0], config)
    folds = split_folds([r for r, _ in hits], config.primer_folds) if hits else []
    answer_limit = settings.llm_local_answer_max_tokens
    prompt = sum(
        _tokens(
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


def _basic(estimate: QueryEstimate, asked: Asked, config: Any) -> None:
    store, question, settings, embedder = asked
    from pipeline.query.basic.search import retrieve
    from pipeline.query.common.passage_answer import build_basic_context

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


def _lazy(estimate: QueryEstimate, asked: Asked, config: Any) -> None:
    """Expansion (exact prompt), ratings (upper bound: the call cap, each call a full batch of the
    question's longest ranked units, cut as the prompt cuts them), the answer (within its budget)."""
    store, question, settings, embedder = asked
    from pipeline import prompts
    from pipeline.query.common.local_index import load_local_index
    from pipeline.query.common.passage_index import load_passage_index
    from pipeline.query.lazy.tasks import ExpandRequest, RateUnitsRequest, UnitItem, rate_messages
    from pipeline.query.lazy.tree import rank_units

    enc = config.encoding
    expand = prompts.LAZY_EXPAND.messages(**vars(ExpandRequest(question, config.subqueries)))
    limit = settings.llm_map_max_tokens
    estimate.phases.append(Phase("expand", 1, _tokens(expand, enc), limit, "exact"))
    graph = load_local_index(store)
    passages = load_passage_index(store, graph)
    (ranking,) = rank_units(store, passages, embedder, [question], config.ranking_depth)
    texts = sorted(
        (graph.text_units[passages.unit_ids[r]]["text"] for r in ranking.rank), key=len, reverse=True
    )[: config.units_per_call]
    items = [UnitItem(i + 1, t) for i, t in enumerate(texts)]
    per_call = _tokens(rate_messages(RateUnitsRequest(question, items)), enc)
    calls = config.max_rate_calls if texts else 0
    estimate.phases.append(Phase("rate", calls, per_call * calls, limit * calls, "upper bound"))
    answer_limit = settings.llm_local_answer_max_tokens
    estimate.phases.append(Phase("answer", 1, config.context_max_tokens, answer_limit, "upper bound"))
    estimate.notes.append(
        f"lazy: at most {config.max_calls} calls for a budget of {config.budget} units, "
        f"{config.units_per_call} per call, over up to {config.subqueries} subqueries"
    )
