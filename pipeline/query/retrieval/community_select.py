"""Local search's community selection (`SELECT`), in its offline and LLM forms: which of the ranked
communities' reports are relevant to the question. Local search asks it; DRIFT's follow-ups keep the
ranking as it is (`pipeline.query.retrieval.local_retrieval`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
from pydantic import BaseModel, Field

from pipeline import prompts
from pipeline.embeddings.base import Embedder
from pipeline.engine.task import Task, TaskContext


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


SELECT: Task[SelectRequest, CommunitySelection] = Task(
    "select_communities", offline=_offline_select, model=_model_select
)
