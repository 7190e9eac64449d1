"""`pipeline index --estimate`: the LLM calls, tokens and cost of an index run, counted without sending one.

Rules, in order:
1. Text units: the input folder chunked as the `documents` and `text_units` stages would (nothing is
   written); without a folder, the namespace's stored text_units.
2. Every LLM stage runs its own code on an engine whose client sends nothing (`pipeline.llm.dry_run`):
   the prompts are the engine's own, token for token, and a call whose cache key the LLM cache holds
   costs nothing (the real client would answer it from there).
3. Extraction is counted over every text unit. Every allowed gleaning round is counted (a run stops a
   unit's gleaning when a round adds nothing, so past the first gleaning round this is an upper bound);
   a gleaning prompt repeats the first answer: exact when that answer is cached, else of expected size.
4. When every extraction call is cached, the model's graph is known: description calls are counted on
   it exactly, then claims and communities are built as the run builds them and the reports counted on
   them: exact when every description call is cached too; otherwise the number of reports is exact,
   their prompts hold descriptions of expected size, and stored reports are not counted as reused.
5. Otherwise the offline rules' graph of the same text units stands in for the model's (figures marked
   "estimated"): its records, resolved as the model's would be, give the description calls and the
   communities whose reports are counted.
6. Completion tokens: `expected` = each call's max_tokens x its task's fraction
   (`pipeline.llm.dry_run.COMPLETION_FRACTION`); `max` = max_tokens, the upper bound. Cost = tokens at
   the configured prices (`PIPELINE_LLM_PRICES` over `pipeline.llm.usage.DEFAULT_PRICES`).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, get_args

import pyarrow as pa

from pipeline.core import schema
from pipeline.core.plain import attributes
from pipeline.core.stored_regions import mask_stored
from pipeline.index.community_reports import reports_by_settings
from pipeline.index.input_documents import ingest_options
from pipeline.io.store import NamespaceStore
from pipeline.llm.dry_run import (
    COMPLETION_FRACTION,
    DEFAULT_COMPLETION_FRACTION,
    MESSAGE_OVERHEAD_TOKENS,
    REPLY_PRIMING_TOKENS,
    CallLedger,
    Tally,
)
from pipeline.llm.transport import default_concurrency, endpoint_label
from pipeline.llm.usage import DEFAULT_PRICES, estimate_cost
from pipeline.ops.chunking import chunk_documents_table
from pipeline.ops.claims import build_covariates
from pipeline.ops.communities import build_communities
from pipeline.ops.extraction.models import ExtractionOptions
from pipeline.ops.extraction.run import extract_graph
from pipeline.ops.ingest import documents_table, read_documents
from pipeline.ops.resolution import ResolutionOptions, resolve_graph
from pipeline.settings import Settings
from pipeline.settings.methods import IndexMethod

STAGES = ("extraction", "descriptions", "reports")
METHODS: tuple[str, ...] = get_args(IndexMethod)
# Minutes: a call takes CALL_LATENCY_S before its first token and then writes OUTPUT_TOKENS_PER_S (about
# what gpt-4o-mini's API gives; a local server is slower, a bigger model too), llm_concurrency at once.
CALL_LATENCY_S = 0.8
OUTPUT_TOKENS_PER_S = 70.0


def minutes_at(t: Tally, concurrency: int) -> float:
    seconds = t.calls * CALL_LATENCY_S + t.completion_tokens / OUTPUT_TOKENS_PER_S
    return seconds / max(concurrency, 1) / 60


@dataclass
class StageEstimate:
    stage: str
    basis: str  # "exact" (the run's own prompts and cache) or "estimated" (see `note`)
    note: str
    tally: Tally


@dataclass
class IndexEstimate:
    namespace: str
    model: str
    endpoint: str
    engine: str  # the configured provider
    method: str  # the indexing method the figures are for (standard | fast | nlp)
    concurrency: int  # llm_concurrency: calls in flight, for the minutes
    text_units: int
    text_units_source: str
    prices: tuple[float, float] | None  # USD per 1M (prompt, completion) tokens; None: not in the table
    stages: list[StageEstimate] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def total(self) -> Tally:
        out = Tally()
        for s in self.stages:
            out.merge(s.tally)
        return out

    def cost(self, t: Tally) -> tuple[float, float]:
        """(expected, upper bound) in USD."""
        prices = {self.model: self.prices} if self.prices else {}
        return (
            estimate_cost(self.model, t.prompt_tokens, t.completion_tokens, prices),
            estimate_cost(self.model, t.prompt_tokens, t.completion_tokens_max, prices),
        )

    def minutes(self, t: Tally) -> float:
        """Wall minutes of the calls at the configured concurrency (see CALL_SECONDS)."""
        return minutes_at(t, self.concurrency)

    def _figures(self, t: Tally) -> dict[str, Any]:
        expected, upper = self.cost(t)
        return {
            "minutes": round(self.minutes(t), 2),
            "calls": t.calls,
            "cached": t.cached,
            "calls_by_task": dict(sorted(t.by_task.items())),
            "prompt_tokens": t.prompt_tokens,
            "completion_tokens_expected": t.completion_tokens,
            "completion_tokens_max": t.completion_tokens_max,
            "cost_usd": round(expected, 6),
            "cost_usd_max": round(upper, 6),
            "cached_tokens_paid_before": t.cached_prompt_tokens + t.cached_completion_tokens,
        }

    def to_dict(self) -> dict[str, Any]:
        return {
            **attributes(
                self, "namespace", "model", "endpoint", "engine", "method", "text_units", "text_units_source"
            ),
            "prices_usd_per_million_tokens": (
                {"prompt": self.prices[0], "completion": self.prices[1]} if self.prices else None
            ),
            "stages": {
                s.stage: {"basis": s.basis, "note": s.note, **self._figures(s.tally)} for s in self.stages
            },
            "total": self._figures(self.total()),
            "assumptions": {
                "completion_fraction_of_max_tokens": dict(COMPLETION_FRACTION),
                "default_completion_fraction": DEFAULT_COMPLETION_FRACTION,
                "prompt_tokens_per_message": MESSAGE_OVERHEAD_TOKENS,
                "prompt_tokens_reply_priming": REPLY_PRIMING_TOKENS,
            },
            "notes": list(self.notes),
        }

    def render(self) -> str:
        """The estimate as a table for a terminal."""
        price = (
            f"${self.prices[0]:g} / ${self.prices[1]:g} per 1M prompt / completion tokens"
            if self.prices
            else "no price configured (cost 0)"
        )
        lines = [
            f"Estimate for namespace {self.namespace!r}, method {self.method}: model {self.model} at "
            f"{self.endpoint}, {price}",
            f"{self.text_units} text units ({self.text_units_source}); nothing was sent to the model",
            "",
            f"{'stage':<13}{'calls':>7}{'cached':>8}{'prompt tok':>12}{'completion tok':>20}"
            f"{'cost USD':>20}  basis",
            f"{'':<13}{'to pay':>7}{'(free)':>8}{'':>12}{'expected / max':>20}{'expected / max':>20}",
        ]

        def row(name: str, t: Tally, basis: str) -> str:
            expected, upper = self.cost(t)
            completion = f"{t.completion_tokens:,} / {t.completion_tokens_max:,}"
            cost = f"{expected:.4f} / {upper:.4f}"
            return (
                f"{name:<13}{t.calls:>7,}{t.cached:>8,}{t.prompt_tokens:>12,}{completion:>20}"
                f"{cost:>20}  {basis}"
            )

        lines += [row(s.stage, s.tally, s.basis) for s in self.stages]
        lines.append(row("total", self.total(), ""))
        lines.append("")
        lines += [f"- {s.stage}: {s.note}" for s in self.stages]
        fractions = ", ".join(f"{k} {v:g}" for k, v in COMPLETION_FRACTION.items())
        lines.append(
            f"- completion tokens: expected = each call's max_tokens x its task's fraction ({fractions}; "
            f"other tasks {DEFAULT_COMPLETION_FRACTION:g}); max = max_tokens"
        )
        lines += [f"- {n}" for n in self.notes]
        return "\n".join(lines)


def _text_units(
    store: NamespaceStore, settings: Settings, input_dir: str | Path | None
) -> tuple[pa.Table, str]:
    folder = Path(input_dir) if input_dir else Path(settings.input_root) / store.namespace
    if folder.is_dir():
        docs = documents_table(read_documents(folder, ingest_options(settings)).documents)
        units, _, _ = chunk_documents_table(
            docs, settings.chunk_size, settings.chunk_overlap, settings.encoding
        )
        units = mask_stored(units, docs)  # what extraction is sent (extracted_graph rule 0)
        n = docs.num_rows
        return units, f"{n} document{'' if n == 1 else 's'} in {folder}, chunked as the run will"
    if stored := store.first_table(schema.BASE_TEXT_UNITS, schema.TEXT_UNITS):
        units = store.read_table(stored)
        if docs_table := store.first_table(schema.INPUT_DOCUMENTS, schema.DOCUMENTS):
            units = mask_stored(units, lambda: store.read_table(docs_table, ["id", "text"]))
        return units, f"the namespace's stored text_units ({folder} is missing)"
    raise FileNotFoundError(f"no input folder {folder} and no stored text_units for {store.namespace!r}")


def estimate_index(
    namespace: str,
    settings: Settings,
    input_dir: str | Path | None = None,
    units: tuple[pa.Table, str] | None = None,
) -> IndexEstimate:
    """What indexing `namespace` would ask of the model, by the rules in the module docstring."""
    from pipeline.runtime import (  # the composition root
        index_method,
        make_engine,
        make_stage_engines,
        stage_forms,
    )

    store = NamespaceStore.from_settings(settings, namespace)
    units, source = _text_units(store, settings, input_dir) if units is None else units
    ledger = CallLedger(settings.encoding)
    # each stage on its method's engine: an NLP stage's engine sends nothing, so it counts no call
    engines = make_stage_engines(settings, dry_run=ledger)
    engine = engines["extraction"]
    options = ExtractionOptions.from_settings(settings)
    prices = {**DEFAULT_PRICES, **settings.llm_prices}
    out = IndexEstimate(
        namespace=namespace,
        model=settings.llm_model,
        endpoint=endpoint_label(settings.llm_base_url),
        engine=settings.llm_provider,
        method=index_method(settings),
        concurrency=settings.llm_concurrency or default_concurrency(settings.llm_base_url),
        text_units=units.num_rows,
        text_units_source=source,
        prices=tuple(prices[settings.llm_model]) if settings.llm_model in prices else None,
    )

    with ledger.stage("extraction") as extraction:
        run = extract_graph(units, options, engine)
    graph_known = extraction.calls == 0 and not run.failures
    glean = settings.extraction_max_gleanings
    exact = extraction.calls == 0 or (glean == 0)
    basis = "exact" if exact else "estimated"
    out.stages.append(StageEstimate("extraction", basis, _extraction_note(settings, extraction), extraction))

    if graph_known:
        records = run.units
    else:  # the offline rules' records stand in for the model's, resolved as the model's would be
        offline = make_engine(settings.with_overrides(llm_provider="offline"))
        stand_in = extract_graph(units, options, offline).units
        records = [dataclasses.replace(u, method="llm") for u in stand_in]
    with ledger.stage("descriptions") as descriptions:
        graph = resolve_graph(records, ResolutionOptions.from_settings(settings), engines["descriptions"])
    stand_in_note = "the offline rules' graph of these text units stands in for the model's"
    out.stages.append(
        StageEstimate(
            "descriptions",
            "exact" if graph_known else "estimated",
            (
                f"{graph.stats.entities} entities and {graph.stats.relationships} relationships of the "
                "cached extraction; one call per one with several descriptions (a long list is summarized "
                "in rounds, each repeating the last answer, which is of expected size until cached)"
                if graph_known
                else f"{stand_in_note} ({graph.stats.entities} entities, {graph.stats.relationships} "
                "relationships); one call per one with several descriptions"
            ),
            descriptions,
        )
    )

    covariates, _ = build_covariates(records, graph.entities)
    communities = build_communities(
        graph.entities,
        graph.relationships,
        max_cluster_size=settings.max_cluster_size,
        seed=settings.leiden_seed,
        resolution=settings.leiden_resolution,
    )
    descriptions_known = graph_known and descriptions.calls == 0
    previous = None
    if descriptions_known and store.has_table(schema.COMMUNITY_REPORTS):
        previous = store.read_table(schema.COMMUNITY_REPORTS)
    forms = stage_forms(settings)
    threshold = settings.report_min_entities if forms["reports"] == "model" else 0
    with ledger.stage("reports") as reports:
        reports_by_settings(
            communities,
            graph.entities,
            graph.relationships,
            covariates,
            engines["reports"],
            settings,
            previous=previous,
            min_entities=threshold,
        )
    if descriptions_known:
        basis, note = (
            "exact",
            f"{communities.num_rows} communities; stored reports with the same fingerprint are reused",
        )
    elif graph_known:
        basis = "estimated"
        note = (
            f"{communities.num_rows} communities (exact); their contexts hold descriptions of expected size "
            "and no stored report is counted as reused"
        )
    else:
        basis, note = "estimated", f"{communities.num_rows} communities of the stand-in graph"
    out.stages.append(StageEstimate("reports", basis, note, reports))

    invalid = sum(s.tally.invalid_synthetic for s in out.stages)
    if invalid:
        out.notes.append(f"{invalid} synthetic replies did not validate: those stages' figures are off")

    if out.prices is None:
        out.notes.append(f"no price for {settings.llm_model!r}: set PIPELINE_LLM_PRICES to get a cost")
    return out


def _extraction_note(settings: Settings, t: Tally) -> str:
    glean = settings.extraction_max_gleanings
    rounds = (
        "no gleaning"
        if glean == 0
        else f"{glean} gleaning round(s) per unit counted"
        + (
            " (past the first, an upper bound: a round that adds nothing ends a unit's gleaning)"
            if glean > 1
            else ""
        )
    )
    cached = (
        "" if t.calls == 0 else "; gleaning prompts of uncached units hold a first answer of expected size"
    )
    return f"one call per text unit plus {rounds}; prompts are the run's own{cached}"
