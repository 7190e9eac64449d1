"""`pipeline eval`'s judge through the LLM client over real HTTP, against a scripted OpenAI-compatible
server (the fault proxy answering itself): a verdict is validated JSON and cached, a malformed reply is
asked once more (the client's repair) and, malformed again, counts as unjudged, never as wrong; and a
whole evaluation of the tiny hand-built namespace with the LLM engine judges every answer."""

from __future__ import annotations

import asyncio
import json
import threading

from pipeline import prompts
from pipeline.eval.judge import judge
from pipeline.eval.questions import EvalQuestion
from pipeline.eval.run import evaluate_async
from pipeline.settings import Settings
from tests.support.fault_proxy import FaultProxy
from tests.support.llm_engines import scripted_engine

QUESTION = "How is Scrooge related to Bob Cratchit?"


class ScriptedJudge:
    """Judges with the replies given, one per judge request (the last repeated); answers the basic
    search's answer prompt with a fixed answer. Counts the judge requests."""

    def __init__(self, *replies: str) -> None:
        self.replies, self.judged, self.lock = list(replies), 0, threading.Lock()

    def __call__(self, body: dict) -> str:
        system = body["messages"][0]["content"]
        if system.startswith(prompts.BASIC_ANSWER.system):
            return "Bob Cratchit is Scrooge's clerk [Data: Sources (1)]."
        assert system.startswith(prompts.EVAL_JUDGE.system), system[:80]
        with self.lock:
            self.judged += 1
            return self.replies[min(self.judged, len(self.replies)) - 1]


def run_judge(tmp_path, model: ScriptedJudge, answer: str = "He is his clerk.") -> tuple[str | None, int]:
    with FaultProxy(None, responder=model) as proxy:
        engine = scripted_engine(proxy.base_url, tmp_path)
        verdict = asyncio.run(judge(engine, QUESTION, "Bob Cratchit is Scrooge's clerk", answer))
        return verdict, proxy.received


def test_a_verdict_is_validated_json_and_cached(tmp_path):
    model = ScriptedJudge(json.dumps({"verdict": "correct", "reason": "same fact"}))
    with FaultProxy(None, responder=model) as proxy:
        engine = scripted_engine(proxy.base_url, tmp_path)
        for _ in range(2):
            assert (
                asyncio.run(judge(engine, QUESTION, "Bob Cratchit is Scrooge's clerk", "His clerk."))
                == "correct"
            )
        assert proxy.received == 1  # the second judgement is the cache's


def test_a_malformed_reply_is_retried_once_then_unjudged_never_wrong(tmp_path):
    model = ScriptedJudge("I think it is right.", json.dumps({"verdict": "maybe"}))
    assert run_judge(tmp_path, model) == ("unjudged", 2)
    assert model.judged == 2


def test_a_malformed_reply_repaired_on_the_retry_counts(tmp_path):
    model = ScriptedJudge('{"verdict": ', json.dumps({"verdict": "partially", "reason": "half"}))
    assert run_judge(tmp_path, model) == ("partially", 2)


def test_an_evaluation_with_a_model_judges_every_answer(tmp_path, tiny, embedder):
    questions = [
        EvalQuestion("a", QUESTION, ("Bob Cratchit is Scrooge's clerk",), type="relation"),
        EvalQuestion("b", "Who is Scrooge's clerk?", ("Bob Cratchit",), type="fact"),
    ]
    model = ScriptedJudge(json.dumps({"verdict": "correct"}), "not json", "still not json")
    with FaultProxy(None, responder=model) as proxy:
        engine = scripted_engine(proxy.base_url, tmp_path)
        run = asyncio.run(evaluate_async(tiny, engine, embedder, Settings(), questions, ["basic"]))
    assert [r.judge for r in run.rows] == ["correct", "unjudged"]
    overall = run.summary["basic"]["overall"]
    assert (overall["judge_accuracy"], overall["judged"], overall["unjudged"]) == (100.0, 1, 1)
    assert overall["calls"] == 2  # the two answers; the judge's calls are not the mode's
    assert overall["prompt_tokens"] > 0
