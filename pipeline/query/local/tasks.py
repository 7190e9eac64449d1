"""Local search's answer (`ANSWER`) in its offline and LLM forms, from the mixed context its retrieval
built (`pipeline.query.common.local_retrieval`).

Both forms read the same `LocalContext` (`pipeline.query.common.answer_context`) and cite its rows the
same way, `[Data: Entities (3, 7); Relationships (12); Sources (4)]`, so one parser resolves the
citations of either. The prompt is rendered in one place (`local_context.answer_messages`), where the
context builder measures the budget on that same rendering.
"""

from __future__ import annotations

from pipeline import prompts
from pipeline.engine.task import Task, TaskContext
from pipeline.query.common.answer_context import AnswerRequest, offline_answer
from pipeline.query.common.local_context import answer_messages


async def _offline_answer(request: AnswerRequest, ctx: TaskContext) -> str:
    return offline_answer(request.question, request.context)


async def _model_answer(request: AnswerRequest, ctx: TaskContext) -> str:
    return await ctx.ask_text(prompts.LOCAL_ANSWER, answer_messages(request.question, request.context.text))


ANSWER: Task[AnswerRequest, str] = Task(
    "local_answer", offline=_offline_answer, model=_model_answer, limit="local_answer"
)
