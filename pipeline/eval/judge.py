"""The judge of `pipeline eval`: is a mode's answer correct against the reference? (GraphRAG-Bench's
correct / partially / incorrect.)

Offline there is no model to judge with, so the offline form returns no verdict and the report leaves
the column out. With a model, the reply is validated JSON (`Judgement`) and cached like every call; a
reply that does not validate is repaired once by the client, and if it still does not (or the call
fails) the question counts as unjudged, never as wrong.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, Field

from pipeline import prompts
from pipeline.engine.base import Engine
from pipeline.engine.task import Task, TaskContext
from pipeline.llm.errors import LLMError

ANSWER_CHARS = 4000  # of the graded answer: its opening holds what it claims


@dataclass(frozen=True)
class JudgeRequest:
    question: str
    reference: str
    answer: str


class Verdict(BaseModel):
    """The model's reply: a verdict is required, so a reply without one is malformed."""

    verdict: Literal["correct", "partially", "incorrect"] = Field(
        description="correct, partially or incorrect"
    )
    reason: str = Field(default="", max_length=1000, description="One sentence saying why")


class Judgement(BaseModel):
    verdict: Literal["correct", "partially", "incorrect"] | None  # None: no model to judge with
    reason: str = ""


async def _offline_judge(request: JudgeRequest, ctx: TaskContext) -> Judgement:
    return Judgement(verdict=None, reason="no model configured")


async def _model_judge(request: JudgeRequest, ctx: TaskContext) -> Judgement:
    prompt = prompts.EVAL_JUDGE
    messages = prompt.messages(
        question=request.question, reference=request.reference, answer=request.answer[:ANSWER_CHARS]
    )
    reply = await ctx.ask(prompt, messages, Verdict)
    return Judgement(verdict=reply.verdict, reason=reply.reason)


JUDGE: Task[JudgeRequest, Judgement] = Task(
    "eval_judge", offline=_offline_judge, model=_model_judge, limit="map"
)


async def judge(engine: Engine, question: str, reference: str, answer: str) -> str | None:
    """The verdict, "unjudged" when the model's reply never validated or the call failed, or None when
    there is no model (the offline engine)."""
    if not reference:
        return None
    try:
        result = await engine.run(JUDGE, JudgeRequest(question, reference, answer))
    except LLMError:
        return "unjudged"
    return result.verdict
