"""Global search through the LLM client over real HTTP: the fault proxy (scripted model replies and
injected faults) and the real llama.cpp server with SmolLM2-135M."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path

import pytest

from pipeline.caches.sqlite_llm import LLMCache
from pipeline.engine.llm import LLMEngine
from pipeline.io.store import NamespaceStore
from pipeline.llm import LLMClient
from pipeline.llm.retry import Backoff
from pipeline.query.global_search import GlobalSearchConfig, GlobalTasks, global_search_async, plan_batches
from tests.support.fault_proxy import FaultProxy
from tests.support.llm_server import MODEL_ALIAS, LlamaServer
from tests.test_global_search import write_reports

IDS = re.compile(r"\[Community ID: (\d+) \| summary part \d+\]")
CONFIG = GlobalSearchConfig(map_budget=700, map_reserve=100, map_concurrency=1)


def engine_for(base_url: str, tmp_path: Path, max_tokens: int = 256) -> LLMEngine:
    client = LLMClient(
        model=MODEL_ALIAS,
        api_key="test-key",
        base_url=base_url,
        timeout_s=120,
        max_retries=0,  # one HTTP attempt per call: the map step's own retry is what is under test
        max_tokens=max_tokens,
        cache=LLMCache(tmp_path / "llm.sqlite"),
        backoff=Backoff(initial_s=0.01, max_s=0.05),
    )
    return LLMEngine(client)


class ScriptedModel:
    """Replies like a model would, chosen from the prompt: map answers by the batch's communities."""

    def __init__(self, answer_for) -> None:  # noqa: ANN001 - (community ids) -> (answer, usefulness)
        self.answer_for = answer_for
        self.map_requests = 0
        self.reduce_contexts: list[str] = []

    def __call__(self, request: dict) -> str:
        user = request["messages"][-1]["content"]
        if "Partial answers:" in user:
            self.reduce_contexts.append(user)
            return json.dumps({"answer": "Final answer [Communities: 1]"})
        self.map_requests += 1
        answer, usefulness = self.answer_for([int(i) for i in IDS.findall(user)])
        return json.dumps({"answer": answer, "usefulness": usefulness})


@pytest.fixture
def store(tmp_path):
    s = NamespaceStore(tmp_path / "storage", "synthetic")
    write_reports(s, n=40, oversized=None)
    return s


def run(store, engine, config=CONFIG):
    return asyncio.run(global_search_async(store, "What happened in the city?", GlobalTasks(engine), config))


def test_scripted_model_one_batch_failing_twice_is_partial(store, tmp_path):
    model = ScriptedModel(lambda ids: (f"Point [Community ID: {ids[0]}]", 50))
    with FaultProxy(None, responder=model) as proxy:
        proxy.script("500", "500")  # the first batch's call and its one retry
        result = run(store, engine_for(proxy.base_url, tmp_path))
    assert result.status == "partial"
    assert len(result.failed_batches) == 1 and result.failed_batches[0]["attempts"] == 2
    assert "500" in result.failed_batches[0]["reason"]
    assert result.answer == "Final answer [Communities: 1]"
    assert len(result.map_answers) == result.batches - 1


def test_scripted_model_every_batch_failing_is_no_results_with_the_reason(store, tmp_path):
    model = ScriptedModel(lambda ids: ("unused", 50))
    n = len(plan_batches(store, "What happened in the city?", CONFIG))
    with FaultProxy(None, responder=model) as proxy:
        proxy.script(*["500"] * (2 * n))
        result = run(store, engine_for(proxy.base_url, tmp_path))
    assert result.status == "no_results"
    assert result.reason.startswith(f"every map batch failed ({n})") and "500" in result.reason
    assert model.map_requests == 0 and model.reduce_contexts == []


def test_scripted_model_usefulness_zero_everywhere_is_no_results_without_a_reduce_call(store, tmp_path):
    model = ScriptedModel(lambda ids: ("", 0))
    with FaultProxy(None, responder=model) as proxy:
        result = run(store, engine_for(proxy.base_url, tmp_path))
        received = proxy.received
    assert result.status == "no_results" and "usefulness 0" in result.reason
    assert model.reduce_contexts == []
    assert received == result.batches  # one request per batch and nothing more


def test_scripted_model_reduce_skips_an_answer_too_long_for_its_budget_and_keeps_a_shorter_later_one(
    store, tmp_path
):
    long_answer = " ".join(f"Very long point {i} about community finances." for i in range(400))

    def answer_for(ids):
        if 3 in ids:
            return long_answer + " [Community ID: 3]", 95  # most useful, but too long to fit
        return f"Short point about the harbour. [Community ID: {ids[0]}]", 40  # every other batch

    model = ScriptedModel(answer_for)
    config = GlobalSearchConfig(
        map_budget=700, map_reserve=100, map_concurrency=1, reduce_budget=1200, reduce_reserve=200
    )
    with FaultProxy(None, responder=model) as proxy:
        result = run(store, engine_for(proxy.base_url, tmp_path), config)
    assert result.status == "completed"
    used = [a["usefulness"] for a in result.map_answers]
    assert used and set(used) == {40}  # the 95 was skipped, the later shorter ones still went in
    (context,) = model.reduce_contexts
    assert "Short point about the harbour." in context and "Very long point" not in context


def test_against_the_local_smollm2_server_the_whole_path_returns_a_validated_result(
    tmp_path, llm_server: LlamaServer
):
    store = NamespaceStore(tmp_path / "storage", "smol")
    write_reports(store, n=3, oversized=None)
    engine = engine_for(llm_server.base_url, tmp_path, max_tokens=96)
    result = asyncio.run(
        global_search_async(store, "What happened to the harbour?", GlobalTasks(engine), GlobalSearchConfig())
    )
    assert result.status in {"completed", "partial", "no_results"}
    assert result.batches == 1
    assert all(
        0 <= a["usefulness"] <= 100 and (a["answer"] or a["usefulness"] == 0) for a in result.map_answers
    )
    if result.status != "no_results":
        assert result.answer.strip()
    assert result.usage["map_calls"] >= 1
