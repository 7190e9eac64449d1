"""Lazy search and routing through the LLM client over real HTTP, against a scripted OpenAI-compatible
server (the fault proxy answering itself) on the tiny hand-built namespace: the calls of one question
never exceed `max_calls`, the budget bounds the units rated exactly, a failed rating call keeps its units
untested (partial, never a silently dropped branch), and the route classification is one cached call."""

from __future__ import annotations

import asyncio
import itertools
import json
import re
import threading
from collections import defaultdict

from pipeline import prompts
from pipeline.query import registry
from pipeline.query.auto.search import auto_search_async
from pipeline.query.common.scope import QueryScope
from pipeline.query.lazy.search import LazySearchConfig, lazy_search_async
from tests.support.fault_proxy import FaultProxy, ProxyRequest
from tests.support.llm_engines import scripted_engine

QUESTION = "How is Scrooge related to Bob Cratchit?"
TASKS = {
    "expand": prompts.LAZY_EXPAND,
    "rate": prompts.LAZY_RATE,
    "answer": prompts.BASIC_ANSWER,
    "route": prompts.ROUTE_QUESTION,
}


def task_of(body: dict) -> str:
    system = body["messages"][0]["content"]
    for task, prompt in TASKS.items():
        if system.startswith(prompt.system):
            return task
    raise AssertionError(f"unexpected request: {system[:80]}")


class ScriptedModel:
    """Answers each task as a model would: three subqueries, every passage rated `score`, an answer
    citing the first source; a route of `route`. Keeps every request by task."""

    def __init__(self, score: float = 8, route: str = "lazy") -> None:
        self.requests: dict[str, list[dict]] = defaultdict(list)
        self.score, self.route = score, route
        self.lock = threading.Lock()

    def __call__(self, body: dict) -> str:
        task = task_of(body)
        user = body["messages"][1]["content"]
        with self.lock:
            self.requests[task].append(body)
        if task == "expand":
            return json.dumps({"subqueries": [QUESTION, "Who is Bob Cratchit?", "Who employs Bob Cratchit?"]})
        if task == "rate":
            ids = re.findall(r"^(\d+): ", user, flags=re.M)
            return json.dumps({"ratings": [{"id": int(i), "score": self.score} for i in ids]})
        if task == "route":
            return json.dumps({"route": self.route, "reason": "scripted"})
        source = re.search(r"-----Sources-----\n[^\n]*\n(\d+)\|", user)
        return f"Bob Cratchit is Scrooge's clerk [Data: Sources ({source.group(1) if source else 1})]."


def rated_units(model: ScriptedModel) -> int:
    return sum(
        len(re.findall(r"^\d+: ", r["messages"][1]["content"], flags=re.M)) for r in model.requests["rate"]
    )


def is_rating(request: ProxyRequest) -> bool:
    return isinstance(request.body, dict) and task_of(request.body) == "rate"


def lazy(store, embedder, tmp_path, model, cfg, prepare=None):
    with FaultProxy(None, responder=model) as proxy:
        if prepare is not None:
            prepare(proxy)
        engine = scripted_engine(proxy.base_url, tmp_path)
        result = asyncio.run(lazy_search_async(QueryScope(store, engine, embedder), QUESTION, cfg))
        return result, proxy.received


def test_the_calls_of_a_question_never_exceed_max_calls_and_the_budget_is_exact(tiny, embedder, tmp_path):
    for budget in (10, 3):
        model = ScriptedModel()
        cfg = LazySearchConfig(budget=budget, units_per_call=2)
        (tmp_path / str(budget)).mkdir()
        result, received = lazy(tiny, embedder, tmp_path / str(budget), model, cfg)
        assert result.status == "completed", result.reason
        sent = {task: len(reqs) for task, reqs in model.requests.items()}
        assert sent["expand"] == 1 and sent["answer"] == 1
        assert sum(sent.values()) == received <= cfg.max_calls == result.usage["max_calls"]
        u = result.usage
        assert (u["expand_calls"], u["rate_calls"], u["answer_calls"]) == (1, sent["rate"], 1)
        # Every unit rated is counted once, and never more than the budget.
        assert rated_units(model) == result.units_tested <= budget
        assert result.citations and result.citations[0]["start_char"] is not None
    assert result.units_tested == 3  # the tiny namespace has more units than this budget: all of it spent


def test_a_failed_rating_call_keeps_its_units_untested_and_says_so(tiny, embedder, tmp_path):
    model = ScriptedModel()
    seen = itertools.count(1)

    def first_rating_and_its_retry_fail(proxy: FaultProxy) -> None:
        proxy.fault_when(lambda r: is_rating(r) and next(seen) <= 2, "500")

    cfg = LazySearchConfig(budget=10, subqueries=1, units_per_call=2)
    result, received = lazy(tiny, embedder, tmp_path, model, cfg, prepare=first_rating_and_its_retry_fail)
    assert result.status == "partial" and "untested" in result.reason
    (failure,) = result.failures
    assert failure["units"] == 2 and failure["community"] is not None
    # The two failed attempts (answered 500, never reaching the model) rated nothing; the units of the
    # later calls were tested, and the answer came from them.
    assert result.units_tested == rated_units(model) > 0 and result.answer
    assert result.usage["rate_calls"] == len(model.requests["rate"]) + 2
    assert received <= cfg.max_calls


def test_a_rating_reply_that_leaves_units_out_rates_only_those_it_names(tiny, embedder, tmp_path):
    class Forgetful(ScriptedModel):
        def __call__(self, body: dict) -> str:
            reply = super().__call__(body)
            if task_of(body) == "rate":
                ratings = json.loads(reply)["ratings"][:1]  # the first passage only
                return json.dumps({"ratings": ratings})
            return reply

    model = Forgetful()
    cfg = LazySearchConfig(budget=4, subqueries=1, units_per_call=2)
    result, _ = lazy(tiny, embedder, tmp_path, model, cfg)
    assert result.units_tested == len(model.requests["rate"])  # one unit per call was rated


def test_routing_is_one_cached_classification_call(tiny, embedder, tmp_path):
    model = ScriptedModel(route="basic")
    with FaultProxy(None, responder=model) as proxy:
        engine = scripted_engine(proxy.base_url, tmp_path)
        first = asyncio.run(auto_search_async(registry.scope(tiny, engine, embedder), "Who is Bob Cratchit?"))
        second = asyncio.run(
            auto_search_async(registry.scope(tiny, engine, embedder), "Who is Bob Cratchit?")
        )
    assert (first.route, first.router, first.reason) == ("basic", "llm", "scripted")
    assert len(model.requests["route"]) == 1 and second.route == "basic"  # the second from the cache
    assert first.result["status"] == "completed" and len(model.requests["answer"]) == 1


def test_an_invalid_route_falls_back_to_the_offline_rules(tiny, embedder, tmp_path):
    model = ScriptedModel(route="oracle")
    with FaultProxy(None, responder=model) as proxy:
        engine = scripted_engine(proxy.base_url, tmp_path)
        result = asyncio.run(
            auto_search_async(registry.scope(tiny, engine, embedder), "Summarize the story as a whole.")
        )
    assert result.router == "offline" and result.route == "global"
    assert "classification failed" in result.reason
