"""DRIFT and basic search through the LLM client over real HTTP, against a scripted OpenAI-compatible server
(the fault proxy answering itself) on the tiny hand-built graph: the calls a question costs, a failed
follow-up (`partial`), cancellation mid-tree, and citations that resolve to rows."""

from __future__ import annotations

import asyncio
import itertools
import json
import re
import threading
from collections import defaultdict

from pipeline import prompts
from pipeline.core import schema
from pipeline.core.tokens import count_tokens
from pipeline.io.store import NamespaceStore
from pipeline.query.basic.search import BasicSearchConfig, basic_search_async
from pipeline.query.common.scope import QueryScope
from pipeline.query.drift.search import DriftSearchConfig, drift_search_async
from tests.support.empty_index import build_empty_index
from tests.support.fault_proxy import FaultProxy, ProxyRequest
from tests.support.llm_engines import scripted_engine

QUESTION = "How is Scrooge related to Bob Cratchit?"


def first_id(user: str, label: str) -> str | None:
    match = re.search(rf"-----{label}-----\n[^\n]*\n(\d+)\|", user)
    return match.group(1) if match else None


def task_of(body: dict) -> str:
    system, user = body["messages"][0]["content"], body["messages"][1]["content"]
    if system.startswith(prompts.DRIFT_PRIMER.system):
        return "primer"
    if system.startswith(prompts.DRIFT_REDUCE.system):
        return "reduce"
    if system.startswith(prompts.BASIC_ANSWER.system):
        return "basic"
    if user.startswith("Overall question:"):
        return "follow_up"
    raise AssertionError(f"unexpected request: {system[:80]}")


class ScriptedModel:
    """Answers each DRIFT / basic task as a model would, citing the first rows it was given, and proposes
    fresh follow-ups every time (so every round is full); keeps every request by task."""

    def __init__(self) -> None:
        self.requests: dict[str, list[dict]] = defaultdict(list)
        self.counter = itertools.count(1)
        self.lock = threading.Lock()

    def __call__(self, body: dict) -> str:
        task = task_of(body)
        user = body["messages"][1]["content"]
        with self.lock:
            self.requests[task].append(body)
            n = next(self.counter)
        if task == "primer":
            report = first_id(user, "Reports")
            return json.dumps(
                {
                    "answer": f"Scrooge employs Bob Cratchit [Data: Reports ({report})].",
                    "score": 80,
                    "follow_up_queries": [f"What does Bob Cratchit earn ({n}.{i})?" for i in range(3)],
                }
            )
        if task == "follow_up":
            entity, source = first_id(user, "Entities"), first_id(user, "Sources")
            return json.dumps(
                {
                    "answer": f"Bob Cratchit is Scrooge's clerk [Data: Entities ({entity}); Sources ({source})].",
                    "score": 60,
                    "follow_up_queries": [f"Who is Tiny Tim to Scrooge ({n}.{i})?" for i in range(3)],
                }
            )
        if task == "reduce":  # the final answer keeps the steps' citations, as the prompt asks
            cited = re.findall(r"\[Data: [^\]]+\]", user)
            return (
                "Bob Cratchit is Scrooge's clerk "
                + " ".join(dict.fromkeys(cited))
                + " [Data: Sources (999)]."
            )
        source = first_id(user, "Sources")
        return f"Bob Cratchit is Scrooge's clerk [Data: Sources ({source})]; he is poor [Data: Sources (99)]."


def is_follow_up(request: ProxyRequest) -> bool:
    return isinstance(request.body, dict) and task_of(request.body) == "follow_up"


def drift(store, embedder, tmp_path, model, cfg=None, cancel=None, prepare=None):
    with FaultProxy(None, responder=model) as proxy:
        if prepare is not None:
            prepare(proxy)
        engine = scripted_engine(proxy.base_url, tmp_path)
        coro = drift_search_async(
            QueryScope(store, engine, embedder, cancel=cancel), QUESTION, cfg or DriftSearchConfig()
        )
        return asyncio.run(coro), proxy


def test_drift_calls_are_bounded_by_its_settings_and_counted_per_phase(tiny, embedder, tmp_path):
    model = ScriptedModel()
    cfg = DriftSearchConfig(primer_folds=2, depth=2, breadth=2)
    result, _ = drift(tiny, embedder, tmp_path, model, cfg)
    assert result.status == "completed", result.reason
    sent = {task: len(reqs) for task, reqs in model.requests.items()}
    # The model proposes three fresh follow-ups every time: each round is full, and no more than full.
    assert sent == {"primer": 2, "follow_up": 2 * 2, "reduce": 1}
    assert sum(sent.values()) == cfg.max_calls == 2 + 2 * 2 + 1
    u = result.usage
    assert (u["primer_calls"], u["follow_up_calls"], u["reduce_calls"], u["max_calls"]) == (2, 4, 1, 7)
    assert u["requests"] == 7  # nothing retried or repaired
    # Open follow-ups (proposed, never run) stay in the tree; answered ones cite their context's rows.
    statuses = [n.status for n in result.nodes]
    assert statuses.count("answered") == 1 + 4 and "open" in statuses
    # The reduce saw the steps' answers, best score first, and its citations resolve to rows.
    reduce_user = model.requests["reduce"][0]["messages"][1]["content"]
    assert reduce_user.index("Score: 80") < reduce_user.index("Score: 60")
    sections = {c["section"] for c in result.citations}
    assert sections == {"reports", "entities", "sources"}
    units = {u["id"]: u for u in tiny.read_table(schema.TEXT_UNITS).to_pylist()}
    for c in result.citations:
        if c["section"] == "sources":
            assert (c["start_char"], c["end_char"]) == (
                units[c["text_unit_id"]]["start_char"],
                units[c["text_unit_id"]]["end_char"],
            )
    assert result.unresolved_citations == ["Sources (999)"]
    # A follow-up prompt stays within the local context budget.
    for request in model.requests["follow_up"]:
        tokens = count_tokens("\n".join(m["content"] for m in request["messages"]))
        assert tokens <= cfg.local.context_max_tokens


def test_a_failed_follow_up_makes_the_answer_partial_not_a_failure(tiny, embedder, tmp_path):
    model = ScriptedModel()
    seen = itertools.count(1)
    cfg = DriftSearchConfig(depth=1, breadth=3)

    def second_follow_up_fails(proxy: FaultProxy) -> None:
        # The 2nd follow-up request is answered 500 (one HTTP attempt per call: a failed call).
        proxy.fault_when(lambda r: is_follow_up(r) and next(seen) == 2, "500")

    result, _ = drift(tiny, embedder, tmp_path, model, cfg, prepare=second_follow_up_fails)
    assert result.status == "partial" and result.failed_steps == 1
    (failed,) = [n for n in result.nodes if n.status == "failed"]
    assert "LLMCallError" in failed.error and failed.answer == ""
    assert failed.error in result.reason
    assert sum(1 for n in result.nodes if n.status == "answered") == 1 + 2
    assert result.answer and result.citations and len(model.requests["reduce"]) == 1


def test_a_failed_reduce_is_merged_from_the_steps(tiny, embedder, tmp_path):
    model = ScriptedModel()

    def reduce_fails(proxy: FaultProxy) -> None:
        proxy.fault_when(lambda r: isinstance(r.body, dict) and task_of(r.body) == "reduce", "500")

    result, _ = drift(tiny, embedder, tmp_path, model, DriftSearchConfig(depth=1), prepare=reduce_fails)
    assert result.status == "partial" and "reduce failed" in result.reason
    assert "Bob Cratchit is Scrooge's clerk" in result.answer and result.citations


def test_cancelling_mid_tree_keeps_what_was_done_and_sends_no_reduce(tiny, embedder, tmp_path):
    model = ScriptedModel()
    cancel = threading.Event()
    out: dict = {}

    with FaultProxy(None, responder=model) as proxy:
        held = proxy.hold(is_follow_up, from_nth=1)
        engine = scripted_engine(proxy.base_url, tmp_path)
        coro = drift_search_async(
            QueryScope(tiny, engine, embedder, cancel=cancel), QUESTION, DriftSearchConfig()
        )
        worker = threading.Thread(target=lambda: out.setdefault("result", asyncio.run(coro)))
        worker.start()
        held.wait_held(1)  # the first round's follow-ups are in flight
        cancel.set()  # the client closes the held calls' connections on its own: no race with a reply
        worker.join()
        held.release()
    result = out["result"]
    assert result.status == "cancelled" and result.answer == "" and "cancelled" in result.reason
    assert result.nodes[0].status == "answered" and result.nodes[0].children  # the primer is kept
    assert model.requests["reduce"] == [] and len(model.requests["primer"]) == 2
    assert result.usage["follow_up_calls"] <= DriftSearchConfig().breadth
    assert all(n.calls == 0 and n.status == "open" for n in result.nodes if n.depth >= 2)  # no second round


def test_drift_on_an_empty_namespace_sends_nothing(tmp_path, embedder):
    store = NamespaceStore(tmp_path / "st", "empty")
    build_empty_index(store, embedder.dimension)
    model = ScriptedModel()
    result, proxy = drift(store, embedder, tmp_path, model)
    assert result.status == "no_results" and model.requests == {} and proxy.received == 0


# ---- basic search -----------------------------------------------------------------------------------
def basic(store, embedder, tmp_path, model, cfg=None, cancel=None):
    with FaultProxy(None, responder=model) as proxy:
        engine = scripted_engine(proxy.base_url, tmp_path)
        coro = basic_search_async(
            QueryScope(store, engine, embedder, cancel=cancel), QUESTION, cfg or BasicSearchConfig()
        )
        return asyncio.run(coro)


def test_basic_answers_from_the_nearest_passages_with_citations_to_offsets(tiny, embedder, tmp_path):
    model = ScriptedModel()
    result = basic(tiny, embedder, tmp_path, model, BasicSearchConfig(top_k=3))
    assert result.status == "completed" and len(model.requests["basic"]) == 1
    assert len(result.sources) == 3 and result.sources[0]["text"].startswith("Bob Cratchit")
    (cited,) = result.citations
    assert cited["text_unit_id"] == result.sources[0]["text_unit_id"] and cited["document_id"] == "doc-tiny"
    assert result.unresolved_citations == ["Sources (99)"]
    prompt = "\n".join(m["content"] for m in model.requests["basic"][0]["messages"])
    assert count_tokens(prompt) == result.context["prompt_tokens"] <= result.context["budget"]


def test_basic_cancelled_while_its_answer_is_in_flight(tiny, embedder, tmp_path):
    model = ScriptedModel()
    cancel = threading.Event()
    out: dict = {}
    with FaultProxy(None, responder=model) as proxy:
        held = proxy.hold(from_nth=1)
        engine = scripted_engine(proxy.base_url, tmp_path)
        coro = basic_search_async(
            QueryScope(tiny, engine, embedder, cancel=cancel), QUESTION, BasicSearchConfig()
        )
        worker = threading.Thread(target=lambda: out.setdefault("result", asyncio.run(coro)))
        worker.start()
        held.wait_held(1)
        cancel.set()  # the client closes the held calls' connections on its own: no race with a reply
        worker.join()
        held.release()
    assert out["result"].status == "cancelled" and out["result"].answer == ""


def test_basic_on_an_empty_namespace_is_no_results_without_a_call(tmp_path, embedder):
    store = NamespaceStore(tmp_path / "st", "empty")
    build_empty_index(store, embedder.dimension)
    model = ScriptedModel()
    result = basic(store, embedder, tmp_path, model)
    assert result.status == "no_results" and result.reason == "the namespace has no text units"
    assert model.requests == {}
