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
from pipeline.query.answer.prompt_text import skeleton_text


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
    # A mode that hands the question on (auto): the mode whose phases the bound counts, the dearest
    routed: str | None = None

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


def prompt_tokens(messages: list[dict[str, str]], encoding: str) -> int:
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
