"""Global search through the LLM client over real HTTP: the fault proxy (scripted model replies and
injected faults) and the real llama.cpp server with SmolLM2-135M. Map replies are lists of scored
points; the reduce is asked with the best points of all batches."""

from __future__ import annotations

import asyncio
import json
import re

import pytest

from pipeline.engine.llm import LLMEngine
from pipeline.io.store import NamespaceStore
from pipeline.llm import LLMClient
from pipeline.llm.errors import LLMCallError
from pipeline.query.common.scope import QueryScope
from pipeline.query.global_.search import GlobalSearchConfig, global_search_async, plan_batches
from pipeline.query.global_.tasks import MAP
from tests.support.community_reports import write_reports
from tests.support.fault_proxy import FaultProxy
from tests.support.llm_engines import llama_engine
from tests.support.llm_server import LlamaServer

IDS = re.compile(r"\[Community ID: (\d+) \| summary part \d+\]")
CONFIG = GlobalSearchConfig(map_budget=700, map_reserve=100, map_concurrency=1)


def point(description: str, score, communities) -> dict:  # noqa: ANN001 - as a model would write it
    return {"description": description, "score": score, "communities": communities}


class ScriptedModel:
    """Replies like a model would, chosen from the prompt: map points by the batch's communities."""

    def __init__(self, points_for) -> None:  # noqa: ANN001 - (community ids) -> list of point dicts
        self.points_for = points_for
        self.map_requests = 0
        self.reduce_contexts: list[str] = []

    def __call__(self, request: dict) -> str:
        user = request["messages"][-1]["content"]
        if "Partial answers:" in user:
            self.reduce_contexts.append(user)
            return "Final answer [Communities: 1]"
        self.map_requests += 1
        return json.dumps({"points": self.points_for([int(i) for i in IDS.findall(user)])})


@pytest.fixture
def store(tmp_path):
    s = NamespaceStore(tmp_path / "storage", "synthetic")
    write_reports(s, n=40, oversized=None)
    return s


def run(store, engine, config=CONFIG):
    return asyncio.run(
        global_search_async(QueryScope(store, engine, None), "What happened in the city?", config)
    )


def test_scripted_model_one_batch_failing_twice_is_partial(store, tmp_path):
    model = ScriptedModel(lambda ids: [point(f"Point about community {ids[0]}", 50, ids[:1])])
    with FaultProxy(None, responder=model) as proxy:
        proxy.script("500", "500")  # the first batch's call and its one retry
        result = run(store, llama_engine(proxy.base_url, tmp_path))
    assert result.status == "partial"
    assert len(result.failed_batches) == 1 and result.failed_batches[0]["attempts"] == 2
    assert "500" in result.failed_batches[0]["reason"]
    assert result.answer == "Final answer [Communities: 1]"
    assert len({p["batch"] for p in result.points}) == result.batches - 1


def test_scripted_model_every_batch_failing_is_the_models_error_never_no_results(store, tmp_path):
    """`no_results` says the index holds nothing relevant: a model that failed every batch is an error."""
    model = ScriptedModel(lambda ids: [point("unused", 50, ids)])
    n = len(plan_batches(store, "What happened in the city?", CONFIG))
    with FaultProxy(None, responder=model) as proxy:
        proxy.script(*["500"] * (2 * n))
        with pytest.raises(LLMCallError) as failed:
            run(store, llama_engine(proxy.base_url, tmp_path))
    assert failed.value.status == 500 and failed.value.task == "global_map"
    assert model.map_requests == 0 and model.reduce_contexts == []


def test_scripted_model_no_point_above_zero_is_no_results_without_a_reduce_call(store, tmp_path):
    # Empty lists, and points scored 0: neither answers anything.
    model = ScriptedModel(lambda ids: [point("Nothing relevant here.", 0, ids)] if ids[0] % 2 else [])
    with FaultProxy(None, responder=model) as proxy:
        result = run(store, llama_engine(proxy.base_url, tmp_path))
        received = proxy.received
    assert result.status == "no_results" and "no point scored above 0" in result.reason
    assert model.reduce_contexts == []
    assert received == result.batches  # one request per batch and nothing more


def test_scripted_model_reduce_takes_the_best_points_across_batches_each_validated(store, tmp_path):
    batches = plan_batches(store, "What happened in the city?", CONFIG)
    first, second = batches[0].community_ids[0], batches[1].community_ids[0]

    def points_for(ids):
        if first in ids:
            return [
                point("The flood destroyed the harbour.", 90, [first]),
                point("A minor detail of the first batch.", 10, [first]),
                point("A point scored far above the scale.", 250, []),  # clamped to 100, no ids
                point("A point citing a community of another batch.", 70, [second]),
                point("A point whose score is not a number.", "high", [first]),  # dropped, counted
                {"score": 80},  # no description: dropped, counted
            ]
        if second in ids:
            return [point("The tram line links the university.", 60, [second])]
        return [point(f"A weak point about community {ids[0]}.", 5, ids[:1])]

    model = ScriptedModel(points_for)
    with FaultProxy(None, responder=model) as proxy:
        result = run(store, llama_engine(proxy.base_url, tmp_path))
    assert result.status == "completed", result.reason
    scores = [p["score"] for p in result.points]
    assert scores[:4] == [100, 90, 70, 60] and scores == sorted(scores, reverse=True)
    by_text = {p["description"]: p for p in result.points}
    # Points cite only communities of their own batch; one citing none of them gets the whole batch's.
    assert by_text["The flood destroyed the harbour."]["community_ids"] == [first]
    assert by_text["A point scored far above the scale."]["community_ids"] == batches[0].community_ids
    assert (
        by_text["A point citing a community of another batch."]["community_ids"] == batches[0].community_ids
    )
    assert "A point whose score is not a number." not in by_text
    # The reduce reads the points best first, whichever batch they came from.
    (context,) = model.reduce_contexts
    order = [
        context.index(text)
        for text in ("far above the scale", "The flood destroyed", "The tram line", "A minor detail")
    ]
    assert order == sorted(order)
    assert f"[Score: 90; Community IDs: {first}]\nThe flood destroyed the harbour." in context


def test_scripted_model_reduce_skips_a_point_too_long_for_its_budget_and_keeps_a_shorter_later_one(
    store, tmp_path
):
    long_point = " ".join(f"Very long point {i} about community finances." for i in range(400))

    def points_for(ids):
        if 3 in ids:  # the best point, but too long to fit; its batch's short point still goes in
            return [point(long_point, 95, [3]), point("Short point about the budget.", 30, [3])]
        return [point(f"Short point about the harbour, community {ids[0]}.", 40, ids[:1])]

    model = ScriptedModel(points_for)
    config = GlobalSearchConfig(
        map_budget=700, map_reserve=100, map_concurrency=1, reduce_budget=1200, reduce_reserve=200
    )
    with FaultProxy(None, responder=model) as proxy:
        result = run(store, llama_engine(proxy.base_url, tmp_path), config)
    assert result.status == "completed"
    used = [p["score"] for p in result.points]
    assert used and set(used) == {40, 30}  # the 95 was skipped, the later shorter ones still went in
    (context,) = model.reduce_contexts
    assert "Short point about the harbour" in context and "Short point about the budget." in context
    assert "Very long point" not in context


class FaultyMapEngine(LLMEngine):
    """A fake engine: the real LLM path, except that the map of the batch holding `community` raises a
    ValueError (a bug in a task function, not an LLMError) on every attempt."""

    def __init__(self, client: LLMClient, community: int) -> None:
        super().__init__(client)
        self.community = community
        self.raised = 0

    async def run(self, task, request, **kw):  # noqa: ANN001, ANN003, ANN201
        if task is MAP and self.community in request.community_ids:
            self.raised += 1
            raise ValueError("a task function failed")
        return await super().run(task, request, **kw)


def test_fake_engine_map_raising_a_non_llm_error_is_one_failed_batch_and_partial(store, tmp_path):
    model = ScriptedModel(lambda ids: [point(f"Point about community {ids[0]}.", 50, ids[:1])])
    with FaultProxy(None, responder=model) as proxy:
        engine = FaultyMapEngine(llama_engine(proxy.base_url, tmp_path).client, community=5)
        result = run(store, engine)
    assert result.status == "partial" and engine.raised == 2  # the call and its one retry
    [failed] = result.failed_batches
    assert 5 in failed["community_ids"] and failed["attempts"] == 2
    assert failed["reason"] == "ValueError: a task function failed"
    assert result.reason == f"1 of {result.batches} map batches failed"
    assert model.map_requests == result.batches - 1 and len(model.reduce_contexts) == 1


def test_scripted_model_malformed_map_reply_is_a_failed_batch(store, tmp_path):
    def responder(request: dict) -> str:
        user = request["messages"][-1]["content"]
        if "Partial answers:" in user:
            return "Final answer [Communities: 1]"
        # The batch holding community 0 answers in the old format, its repair request too.
        prompt = request["messages"][1]["content"]
        if 0 in [int(i) for i in IDS.findall(prompt)]:
            return json.dumps({"answer": "the old format", "usefulness": 80})  # no points: invalid
        return json.dumps({"points": [point("A valid point.", 50, [])]})

    with FaultProxy(None, responder=responder) as proxy:
        result = run(store, llama_engine(proxy.base_url, tmp_path))
    assert result.status == "partial"
    [failed] = result.failed_batches
    assert 0 in failed["community_ids"] and failed["attempts"] == 2
    assert failed["reason"].startswith("LLMValidationError") and "points" in failed["reason"]


@pytest.mark.matrix(chat="llama.cpp (SmolLM2)", doors=("Python API",), modes=("global",))
def test_against_the_local_smollm2_server_the_whole_path_returns_a_validated_result(
    tmp_path, llm_server: LlamaServer
):
    store = NamespaceStore(tmp_path / "storage", "smol")
    write_reports(store, n=3, oversized=None)
    engine = llama_engine(llm_server.base_url, tmp_path, max_tokens=96)
    result = asyncio.run(
        global_search_async(
            QueryScope(store, engine, None),
            "What happened to the harbour?",
            # SmolLM2's window is 2,048 tokens: small reserves keep its answers short (they are max_tokens)
            GlobalSearchConfig(map_reserve=96, reduce_reserve=96),
        )
    )
    assert result.status in {"completed", "partial", "no_results"}
    assert result.batches == 1
    assert all(0 < p["score"] <= 100 and p["description"] for p in result.points)
    if result.status != "no_results":
        assert result.answer.strip()
    assert result.usage["map_calls"] >= 1
