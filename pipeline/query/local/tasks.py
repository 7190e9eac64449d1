"""Local search's answer (`ANSWER`) in its offline and LLM forms, from the mixed context its retrieval
built (`pipeline.query.retrieval.local_retrieval`).

Both forms read the same `LocalContext` (`pipeline.query.answer.answer_context`) and cite its rows the
same way, `[Data: Entities (3, 7); Relationships (12); Sources (4)]`, so one parser resolves the
citations of either. The prompt is rendered in one place (`local_context.answer_messages`), where the
context builder measures the budget on that same rendering.
"""

from __future__ import annotations

from pipeline import prompts
from pipeline.query.answer.answer_context import answer_task
from pipeline.query.retrieval.local_context import answer_messages

ANSWER = answer_task("local_answer", prompts.LOCAL_ANSWER, answer_messages)
