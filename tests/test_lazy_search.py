"""Lazy search and the router, offline: the relevance-test rules on a small tree of its own (a scripted
rater in place of the model: the rules, not a model, are under test), then the whole search and the
routing on the tiny hand-built namespace (conftest `tiny`) with the real MiniLM embedder."""

from __future__ import annotations

import asyncio
import threading

import numpy as np
import pytest

from pipeline.core import schema
from pipeline.engine.offline import OfflineEngine
from pipeline.llm.errors import LLMCallError
from pipeline.query import registry
from pipeline.query.auto.route import offline_route
from pipeline.query.auto.search import AutoSearchConfig, auto_search_async
from pipeline.query.common.scope import QueryScope
from pipeline.query.lazy.relevance import ProbeOptions, Tests, rate_call_cap, run_tests, shares
from pipeline.query.lazy.search import LazySearchConfig, LazySearchError, lazy_search_async
from pipeline.query.lazy.tasks import UnitRating, UnitRatings, offline_subqueries
from pipeline.query.lazy.tree import CommunityTree, Ranking

# Root 0 holds units 0-5 with children 1 (units 0-2) and 2 (units 3-5); root 3 holds units 6-9.
TREE = CommunityTree(
    roots=[0, 3],
    children={0: [1, 2], 1: [], 2: [], 3: []},
    units={0: [0, 1, 2, 3, 4, 5], 1: [0, 1, 2], 2: [3, 4, 5], 3: [6, 7, 8, 9]},
)


def ranking(order: list[int]) -> Ranking:
    return Ranking("q", np.zeros(2, dtype=np.float32), {row: i for i, row in enumerate(order)})


class Rater:
    """Rates unit rows by a table (unlisted: 0); can fail chosen calls; records what it was asked."""

    def __init__(self, scores: dict[int, float], fail: set[int] = frozenset()) -> None:
        self.scores, self.fail, self.calls, self.asked = scores, fail, 0, []

    async def __call__(self, request):  # noqa: ANN001, ANN204 - a RateUnitsRequest
        self.calls += 1
        rows = [int(u.text) for u in request.units]
        self.asked.append(rows)
        if self.calls in self.fail:
            raise LLMCallError("scripted failure")
        return UnitRatings(
            ratings=[UnitRating(id=u.id, score=self.scores.get(int(u.text), 0)) for u in request.units]
        )


def run(rater: Rater, order: list[int], **options) -> list:
    opts = ProbeOptions(
        **{"budget": 100, "units_per_call": 2, "max_irrelevant": 1, "threshold": 5, **options}
    )
    tests = Tests(TREE, str, lambda r, rows: [None] * len(rows), rater, opts, lambda: None)
    coro = run_tests([ranking(order)], tests)
    return asyncio.run(coro)


def test_a_relevant_community_is_recursed_into_before_its_siblings_and_the_budget_is_exact():
    rater = Rater({0: 9, 3: 9, 6: 9})
    (probe,) = run(rater, list(range(10)), budget=5)
    # Root 0 (its best units 0, 1), then its child 1 (unit 2), then child 2 (units 3, 4): budget 5 spent.
    assert rater.asked == [[0, 1], [2], [3, 4]]
    assert len(probe.tested) == 5 and probe.spent and 6 not in probe.tested


def test_a_branch_stops_after_its_run_of_irrelevant_communities():
    rater = Rater({3: 9})  # a relevant unit below an irrelevant first visit
    (probe,) = run(rater, list(range(10)), max_irrelevant=1)
    assert rater.asked == [[0, 1]] and probe.stopped_branches == 1 and probe.relevant(5) == {}
    rater = Rater({3: 9})
    (probe,) = run(rater, list(range(10)), max_irrelevant=2)
    assert rater.asked == [[0, 1], [6, 7]] and probe.stopped_branches == 0


def test_a_failed_rating_call_is_retried_once_and_then_keeps_its_units_untested():
    rater = Rater({0: 9, 6: 9}, fail={1, 2})  # the first call and its retry fail
    (probe,) = run(rater, list(range(10)), max_irrelevant=1)
    assert rater.asked[:2] == [[0, 1], [0, 1]]
    assert probe.failures == [{"community": 0, "units": 2}]
    assert 0 not in probe.tested and 1 not in probe.tested
    # The failure is not taken for irrelevance: the next root is still tested.
    assert rater.asked[2] == [6, 7] and probe.tested[6] == 9


def test_the_budget_and_the_call_cap_are_shared_between_subqueries():
    assert shares(10, 3) == [4, 3, 3] and shares(2, 3) == [1, 1, 0]
    assert rate_call_cap(100, 3, 8) == 2 * (5 + 5 + 5)
    assert LazySearchConfig(budget=10, subqueries=1, units_per_call=8).max_calls == 1 + 4 + 1
    with pytest.raises(LazySearchError, match="budget"):
        LazySearchConfig(budget=0)


def test_offline_subqueries_are_the_question_its_entities_and_its_keywords():
    assert offline_subqueries("How is Scrooge related to Bob Cratchit?", 4) == [
        "How is Scrooge related to Bob Cratchit?",
        "Scrooge",
        "Bob Cratchit",
    ]


def lazy(store, embedder, question, **cfg):
    return asyncio.run(
        lazy_search_async(QueryScope(store, OfflineEngine(), embedder), question, LazySearchConfig(**cfg))
    )


def test_lazy_search_answers_from_tested_units_with_citations_to_their_offsets(tiny, embedder):
    result = lazy(tiny, embedder, "How is Scrooge related to Bob Cratchit?", budget=6)
    assert result.status == "completed", result.reason
    assert 0 < result.units_tested <= 6 and result.units_relevant > 0
    assert result.usage["max_calls"] == LazySearchConfig(budget=6).max_calls
    units = {u["id"]: u for u in tiny.read_table(schema.TEXT_UNITS).to_pylist()}
    assert result.citations
    for c in result.citations:
        unit = units[c["text_unit_id"]]
        assert (c["start_char"], c["end_char"]) == (unit["start_char"], unit["end_char"])
    assert any("Cratchit" in s["text"] for s in result.sources)


def test_the_budget_the_relevant_units_leave_goes_to_untested_units_never_to_irrelevant_ones(tiny, embedder):
    question = "How is Scrooge related to Bob Cratchit?"
    alone = lazy(tiny, embedder, question, budget=2, fill_context=False)
    filled = lazy(tiny, embedder, question, budget=2)
    rated = [s for s in filled.sources if s["rating"] is not None]
    assert rated == alone.sources and all(s["rating"] is not None for s in alone.sources)
    fill = filled.sources[len(rated) :]
    assert fill and all(s["rating"] is None for s in fill)  # the fill comes after every relevant unit
    assert filled.ratings and set(filled.ratings).isdisjoint(s["text_unit_id"] for s in fill)
    assert len(filled.context_rows) == len(filled.sources) > len(alone.context_rows)


def test_lazy_search_finds_nothing_for_an_unrelated_question(tiny, embedder):
    result = lazy(tiny, embedder, "What is the orbital period of Neptune's moons?", budget=6)
    assert result.status == "no_results" and result.units_relevant == 0 and result.citations == []


def test_lazy_search_cancelled_before_it_starts_sends_nothing(tiny, embedder):
    cancel = threading.Event()
    cancel.set()
    engine = OfflineEngine()
    coro = lazy_search_async(
        QueryScope(tiny, engine, embedder, cancel=cancel), "Who is Bob Cratchit?", LazySearchConfig()
    )
    result = asyncio.run(coro)
    assert result.status == "cancelled" and result.answer == "" and result.units_tested == 0


@pytest.mark.parametrize(
    ("question", "route"),
    [
        ("Summarize the story as a whole.", "global"),
        ("Write a diary entry for Bob Cratchit on Christmas Eve.", "drift"),
        ("Who was Scrooge's partner?", "basic"),
        ("Who founded the company that built the bridge?", "local"),
        ("In which country was the author of Peter Pan born?", "local"),
    ],
)
def test_offline_routing_rules(question, route, embedder):
    assert offline_route(question, embedder).route == route


def test_offline_routing_never_sends_a_fact_lookup_to_global(embedder):
    for question in ("Who was Scrooge's partner?", "When did Marley die?", "How many children had Cratchit?"):
        assert offline_route(question, embedder).route != "global"


def test_offline_routing_never_sends_a_yes_no_or_how_to_question_to_global(embedder):
    # Their nearest prototype was global at cosine 0.05-0.10 (issue 58): a guess, and global cites no page.
    for question in (
        "Can I put inline data inside the body of a loop?",
        "Does the parser accept tabs between columns?",
        "How can I give the x axis a probability scale?",
    ):
        assert offline_route(question, embedder).route != "global", question


def test_auto_search_says_which_mode_answered_and_why(tiny, embedder):
    coro = auto_search_async(
        registry.scope(tiny, OfflineEngine(), embedder), "Summarize the story as a whole."
    )
    result = asyncio.run(coro)
    assert (result.route, result.router) == ("global", "offline") and "summary" in result.reason
    assert result.status == result.result["status"] and result.answer == result.result["answer"]
    given = AutoSearchConfig(route="lazy")
    result = asyncio.run(
        auto_search_async(registry.scope(tiny, OfflineEngine(), embedder), "Who is Bob Cratchit?", given)
    )
    assert (result.route, result.router) == ("lazy", "given") and "units_tested" in result.result


def test_offline_auto_keeps_the_passage_mode_whose_best_passage_shows_most_of_the_question(tiny, embedder):
    from pipeline.query.auto.compare import context_scores, stem_frequencies

    question = "Who was Scrooge's partner?"
    result = asyncio.run(auto_search_async(registry.scope(tiny, OfflineEngine(), embedder), question))
    assert set(result.compared) == {"basic", "local", "lazy"}
    ranked = sorted(
        ("basic", "local", "lazy"),
        key=lambda m: (-result.compared[m]["best_passage"], -result.compared[m]["context"]),
    )  # a stable sort: a tie keeps the earlier of basic, local, lazy
    assert result.route == ranked[0]
    # the kept mode's scores are those of the context it shows
    shown = registry.mode(result.route).shown(result.result, tiny).texts
    assert context_scores(question, shown, stem_frequencies(tiny)) == result.compared[result.route]
    assert "held the most of the question in one passage" in result.reason


def test_a_rare_word_outweighs_a_common_one_and_the_whole_context_breaks_a_tie():
    from collections import Counter

    from pipeline.query.auto.compare import StemFrequencies, context_scores, keep
    from pipeline.query.retrieval.sentence_rank import stems

    frequencies = StemFrequencies(
        100, Counter({s: 90 for s in stems("ghost")} | {s: 2 for s in stems("Marley")})
    )
    question = "Which ghost was Marley?"
    rare = context_scores(question, ["Marley was dead.", "Nothing else."], frequencies)
    common = context_scores(question, ["A ghost appeared.", "Nothing else."], frequencies)
    assert rare["context"] == common["context"] and rare["best_passage"] > common["best_passage"]
    assert keep({"basic": common, "local": rare}) == "local"
    # the same best passage: the context that holds the rest of the question wins, then basic over local
    one = context_scores(question, ["Marley was dead."], frequencies)
    both = context_scores(question, ["Marley was dead.", "The ghost wore chains."], frequencies)
    assert one["best_passage"] == both["best_passage"] and both["context"] > one["context"]
    assert keep({"basic": one, "lazy": both}) == "lazy"
    assert keep({"local": one, "basic": one}) == "basic"


def test_the_lazy_estimate_is_its_call_bound(tiny, embedder):
    from pipeline.query import registry
    from pipeline.query.estimate import estimate_query
    from pipeline.settings import Settings

    cfg = LazySearchConfig(budget=10, units_per_call=4)
    settings = Settings(llm_provider="openai", llm_model="gpt-4o-mini")
    est = estimate_query(registry.mode("lazy"), tiny, "Who is Bob Cratchit?", settings, embedder, cfg)
    phases = {p.phase: p for p in est.phases}
    assert est.calls == cfg.max_calls == 1 + cfg.max_rate_calls + 1
    assert (phases["expand"].calls, phases["expand"].basis) == (1, "exact")
    assert (phases["rate"].calls, phases["rate"].basis) == (cfg.max_rate_calls, "upper bound")
    assert phases["answer"].prompt_tokens == cfg.context_max_tokens and est.cost_usd > 0
