"""`pipeline query global|drift|basic --estimate`: the calls, tokens and cost one question can take, counted
without sending anything, on the tiny hand-built graph (real Parquet, LanceDB and MiniLM vectors)."""

from __future__ import annotations

import json
import math

from pipeline.core.tokens import count_tokens
from pipeline.llm.usage import DEFAULT_PRICES, estimate_cost
from pipeline.query import registry
from pipeline.query.answer.passage_answer import build_basic_context
from pipeline.query.auto.route import route_hints, route_messages
from pipeline.query.basic.search import BasicSearchConfig, retrieve
from pipeline.query.drift.search import DriftSearchConfig
from pipeline.query.drift.steps import primer_reports, split_folds
from pipeline.query.drift.tasks import PrimerRequest, primer_messages
from pipeline.query.estimate import estimate_query
from pipeline.query.global_.search import GlobalSearchConfig, plan_batches
from pipeline.query.global_.tasks import map_messages
from pipeline.query.retrieval.local_index import load_local_index
from pipeline.settings import Settings

QUESTION = "How is Scrooge related to Bob Cratchit?"


def _tokens(messages) -> int:  # noqa: ANN001
    return count_tokens("\n".join(m["content"] for m in messages))


SETTINGS = Settings(llm_provider="openai", llm_model="gpt-4o-mini")


def test_drift_estimate_is_its_call_bound_with_the_primers_exact_prompts(tiny, embedder):
    cfg = DriftSearchConfig(primer_folds=2, depth=2, breadth=3)
    est = estimate_query(registry.mode("drift"), tiny, QUESTION, SETTINGS, embedder, cfg)
    phases = {p.phase: p for p in est.phases}
    assert est.calls == cfg.max_calls == 9
    hits = primer_reports(tiny, load_local_index(tiny), embedder.embed([QUESTION])[0], cfg)
    folds = split_folds([r for r, _ in hits], cfg.primer_folds)
    exact = sum(
        _tokens(primer_messages(PrimerRequest(question=QUESTION, reports=f, max_follow_ups=3))) for f in folds
    )
    assert (phases["primer"].calls, phases["primer"].prompt_tokens, phases["primer"].basis) == (
        2,
        exact,
        "exact",
    )
    assert phases["follow-ups"].calls == 6 and phases["follow-ups"].basis == "upper bound"
    assert phases["follow-ups"].prompt_tokens == 6 * cfg.local.context_max_tokens
    prices = {**DEFAULT_PRICES, **SETTINGS.llm_prices}
    cost = sum(estimate_cost("gpt-4o-mini", p.prompt_tokens, p.completion_tokens, prices) for p in est.phases)
    assert est.cost_usd == round(cost, 6) > 0


def test_global_estimate_counts_the_static_batches_exactly_and_bounds_dynamic_selection(tiny, embedder):
    static = GlobalSearchConfig(selection="static")
    est = estimate_query(registry.mode("global"), tiny, QUESTION, SETTINGS, embedder, static)
    batches = plan_batches(tiny, QUESTION, static)
    (mapped,) = [p for p in est.phases if p.phase == "map"]
    assert mapped.calls == len(batches) and mapped.basis == "exact"
    assert mapped.prompt_tokens == sum(_tokens(map_messages(QUESTION, b.content)) for b in batches)
    dynamic = GlobalSearchConfig(selection="dynamic", max_rated=12, rate_batch_size=4, max_map_batches=3)
    bound = {
        p.phase: p.calls
        for p in estimate_query(registry.mode("global"), tiny, QUESTION, SETTINGS, embedder, dynamic).phases
    }
    reports = tiny.read_table("community_reports").num_rows
    assert bound == {"rate": math.ceil(min(12, reports) / 4), "map": 3, "reduce": 1}


def test_basic_estimate_is_its_one_answers_exact_prompt(tiny, embedder):
    cfg = BasicSearchConfig(top_k=3)
    (answer,) = estimate_query(registry.mode("basic"), tiny, QUESTION, SETTINGS, embedder, cfg).phases
    units, _ = retrieve(tiny, embedder, QUESTION, cfg)
    assert (
        answer.calls == 1
        and answer.prompt_tokens == build_basic_context(QUESTION, units, 12_000, "o200k_base").prompt_tokens
    )


def test_the_cli_prints_the_estimate_and_says_an_offline_engine_sends_nothing(tiny, monkeypatch, capsys):
    from assets.cli import main

    monkeypatch.setenv("PIPELINE_STORAGE_ROOT", str(tiny.storage.uri()).removeprefix("file://"))
    assert main(["query", "drift", "--namespace", "tiny", "--estimate", "--json", QUESTION]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["mode"] == "drift" and out["calls"] == 9 and out["engine"] == "offline"
    assert any("sends none of these calls" in n for n in out["notes"])


def test_auto_estimate_is_its_routing_call_and_the_dearest_routable_modes_phases(tiny, embedder):
    auto = estimate_query(
        registry.mode("auto"), tiny, QUESTION, SETTINGS, embedder, registry.configure("auto", SETTINGS)
    )
    routed = [
        estimate_query(registry.mode(n), tiny, QUESTION, SETTINGS, embedder, registry.configure(n, SETTINGS))
        for n in registry.routable()
        if registry.mode(n).estimate is not None
    ]
    assert {e.mode for e in routed} == {"basic", "drift", "global", "lazy"}
    dearest = max(routed, key=lambda e: (e.cost_usd, e.calls))
    route, *phases = auto.phases
    assert auto.mode == "auto" and phases == dearest.phases and auto.routed == dearest.mode
    prompt = _tokens(route_messages(QUESTION, route_hints()))
    assert (route.phase, route.calls, route.prompt_tokens) == ("route", 1, prompt)
    assert route.completion_tokens == SETTINGS.llm_map_max_tokens
    assert auto.cost_usd > dearest.cost_usd
    assert any(n.startswith("auto may also route to local,") for n in auto.notes)
    # A route given by the caller: that mode's phases, no routing call
    given = registry.configure("auto", SETTINGS, {"route": "basic"})
    basic = next(e for e in routed if e.mode == "basic")
    assert (
        estimate_query(registry.mode("auto"), tiny, QUESTION, SETTINGS, embedder, given).phases
        == basic.phases
    )


def test_the_cli_estimates_auto(tiny, monkeypatch, capsys):
    from assets.cli import main

    monkeypatch.setenv("PIPELINE_STORAGE_ROOT", str(tiny.storage.uri()).removeprefix("file://"))
    assert main(["query", "auto", "--namespace", "tiny", "--estimate", "--json", QUESTION]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["mode"] == "auto" and out["phases"][0]["phase"] == "route"
    assert any("which has no estimate" in n for n in out["notes"])
