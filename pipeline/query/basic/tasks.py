"""Basic search's one task — the answer from the nearest passages — in its offline and LLM forms (the
`BASIC_ANSWER` task). The context is a `LocalContext` holding only its Sources section, so the answer
cites `[Data: Sources (7)]` and the local search's citation parser resolves it."""

from __future__ import annotations

from pipeline import prompts
from pipeline.engine.task import Task, TaskContext
from pipeline.query.common.answer_context import AnswerRequest, offline_answer


def basic_messages(question: str, context_text: str) -> list[dict[str, str]]:
    """The answer prompt as sent: the context builder measures its budget on exactly this."""
    return prompts.BASIC_ANSWER.messages(question=question, context=context_text or "(no data)")


async def _offline(request: AnswerRequest, ctx: TaskContext) -> str:
    """The passages' sentences that hold most of the question's words, each cited to its passage."""
    return offline_answer(request.question, request.context)


async def _model(request: AnswerRequest, ctx: TaskContext) -> str:
    return await ctx.ask_text(prompts.BASIC_ANSWER, basic_messages(request.question, request.context.text))


BASIC_ANSWER: Task[AnswerRequest, str] = Task(
    "basic_answer", offline=_offline, model=_model, limit="local_answer"
)
