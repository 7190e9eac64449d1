"""The tasks of local search after parsing — community selection and the answer — in their offline and
LLM forms, as the `SELECT` and `ANSWER` tasks the engine runs.

Both answer forms read the same `LocalContext` (`pipeline.query.common.answer_context`) and cite its
rows the same way, `[Data: Entities (3, 7); Relationships (12); Sources (4)]`, so one parser resolves
the citations of either. The answer prompt is rendered here only (`answer_messages`), and the context
builder measures the budget on that same rendering.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
from pydantic import BaseModel, Field

from pipeline import prompts
from pipeline.embeddings.base import Embedder
from pipeline.engine.task import Task, TaskContext
from pipeline.query.common.answer_context import AnswerRequest, offline_answer


class CommunitySelection(BaseModel):
    selected_community_ids: list[int] = Field(description="Ids of the communities relevant to the question")


def candidates_text(candidates: list[dict[str, Any]]) -> str:
    return "\n".join(
        f"{c['id']}: {' '.join((c.get('summary') or c.get('title') or '').split())[:600]}" for c in candidates
    )


def offline_select(
    question: str,
    candidates: list[dict[str, Any]],
    embedder: Embedder,
    vectors: dict[int, np.ndarray] | None = None,
    query_vector: np.ndarray | None = None,
) -> CommunitySelection:
    """Keep communities that contain a matched entity or whose report is relevant to the question (a
    cosine of at least the embedding model's `relevant` level).

    A report's vector is the one `report_embeddings` stored ("title\nsummary", the vector local search
    ranks communities by) when `vectors` has it; only a candidate without one has its summary embedded
    here, which on a CPU costs a tenth of a second per long summary."""
    if not candidates:
        return CommunitySelection(selected_community_ids=[])
    vectors = vectors or {}
    missing = [c for c in candidates if c["id"] not in vectors]
    texts = [c.get("summary") or c.get("title") or "" for c in missing]
    needed = ([] if query_vector is not None else [question]) + texts
    fresh = iter(embedder.embed(needed)) if needed else iter(())
    query = query_vector if query_vector is not None else next(fresh)
    of = {**vectors, **{c["id"]: next(fresh) for c in missing}}
    floor = embedder.calibration.relevant
    keep = [c["id"] for c in candidates if float(of[c["id"]] @ query) >= floor or c["matched_entities"]]
    return CommunitySelection(selected_community_ids=keep)


def answer_messages(question: str, context_text: str) -> list[dict[str, str]]:
    """The answer prompt as sent: the context builder measures its budget on exactly this."""
    return prompts.LOCAL_ANSWER.messages(question=question, context=context_text or "(no data)")


# ---- the tasks ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class SelectRequest:
    question: str
    candidates: list[dict[str, Any]]  # {id, title, summary, matched_entities}
    # Offline only: the candidates' stored report vectors and the question's, so nothing is embedded again.
    vectors: dict[int, np.ndarray] = field(default_factory=dict)
    query_vector: np.ndarray | None = None


async def _offline_select(request: SelectRequest, ctx: TaskContext) -> CommunitySelection:
    return offline_select(
        request.question,
        request.candidates,
        ctx.need_embedder("community selection"),
        request.vectors,
        request.query_vector,
    )


async def _model_select(request: SelectRequest, ctx: TaskContext) -> CommunitySelection:
    prompt = prompts.LOCAL_SELECT_COMMUNITIES
    messages = prompt.messages(question=request.question, candidates=candidates_text(request.candidates))
    return await ctx.ask(prompt, messages, CommunitySelection)


async def _offline_answer(request: AnswerRequest, ctx: TaskContext) -> str:
    return offline_answer(request.question, request.context)


async def _model_answer(request: AnswerRequest, ctx: TaskContext) -> str:
    return await ctx.ask_text(prompts.LOCAL_ANSWER, answer_messages(request.question, request.context.text))


SELECT: Task[SelectRequest, CommunitySelection] = Task(
    "select_communities", offline=_offline_select, model=_model_select
)
ANSWER: Task[AnswerRequest, str] = Task(
    "local_answer", offline=_offline_answer, model=_model_answer, limit="local_answer"
)
