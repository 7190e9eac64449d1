"""Lazy search's model tasks — the query expansion (`EXPAND`) and the relevance test (`RATE_UNITS`) — in
their offline and LLM forms. The answer is basic search's task (`BASIC_ANSWER`) over the extracted
sentences, so it cites `[Data: Sources (n)]` the same way.

Rules:
1. Expansion: the model writes at most `n` standalone sub-questions; offline, they are the question itself
   and then its parsed entities (`common.intent.offline_intent`), then its keywords together, so a
   two-entity question also searches for each entity on its own.
2. Rating: several units per call, 0-10 each (validated: a score outside 0-10 fails the reply, which the
   client repairs once); a unit the reply leaves out or names with an unknown id gets no rating and stays
   untested. Offline, a unit's rating is the embedding model's similarity of the sub-question to the unit's
   best piece, on the calibrated usefulness scale / 10 (as global search rates reports offline), so the
   relevance threshold means the same with either engine.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from pydantic import BaseModel, Field, field_validator

from pipeline import prompts
from pipeline.engine.task import Task, TaskContext
from pipeline.query.answer.offline_rating import RelevanceScore, similarity_ratings
from pipeline.query.retrieval.intent import offline_intent

UNIT_CHARS = 1200  # of a unit, in the rating prompt: a MuSiQue paragraph whole, a long chunk's opening


@dataclass(frozen=True)
class ExpandRequest:
    question: str
    n: int  # at most this many subqueries


class Expansion(BaseModel):
    subqueries: list[str] = Field(description="Standalone sub-questions, the question itself first")

    @field_validator("subqueries")
    @classmethod
    def _clean(cls, values: list[str]) -> list[str]:
        return list(
            dict.fromkeys(" ".join(v.split())[:300] for v in values if isinstance(v, str) and v.strip())
        )


def offline_subqueries(question: str, n: int) -> list[str]:
    intent = offline_intent(question)
    out = [question, *intent.entities]
    if intent.keywords:
        out.append(" ".join(intent.keywords))
    return list(dict.fromkeys(" ".join(q.split()) for q in out if q.strip()))[:n]


async def _offline_expand(request: ExpandRequest, ctx: TaskContext) -> Expansion:
    return Expansion(subqueries=offline_subqueries(request.question, request.n))


async def _model_expand(request: ExpandRequest, ctx: TaskContext) -> Expansion:
    prompt = prompts.LAZY_EXPAND
    messages = prompt.messages(question=request.question, n=request.n)
    answer = await ctx.ask(prompt, messages, Expansion)
    # The question itself always leads: a reply that rewords it away cannot lose the original search.
    subqueries = list(dict.fromkeys([request.question, *answer.subqueries]))[: request.n]
    return Expansion(subqueries=subqueries)


@dataclass(frozen=True)
class UnitItem:
    id: int  # the unit's number within this call (1..k): short ids the model copies reliably
    text: str
    vector: np.ndarray | None = None  # the unit's piece nearest the subquery (the offline form reads it)


@dataclass(frozen=True)
class RateUnitsRequest:
    subquery: str
    units: list[UnitItem]


class UnitRating(BaseModel):
    id: int = Field(description="The passage's id, as given")
    score: RelevanceScore


class UnitRatings(BaseModel):
    ratings: list[UnitRating] = Field(description="One rating per passage given")


def rate_messages(request: RateUnitsRequest) -> list[dict[str, str]]:
    lines = [f"{u.id}: {' '.join(u.text.split())[:UNIT_CHARS]}" for u in request.units]
    return prompts.LAZY_RATE.messages(question=request.subquery, passages="\n".join(lines))


def offline_rate_units(request: RateUnitsRequest, ctx: TaskContext) -> UnitRatings:
    embedder = ctx.need_embedder("relevance test")
    scores = similarity_ratings(embedder, request.subquery, [(u.vector, u.text) for u in request.units])
    return UnitRatings(
        ratings=[UnitRating(id=u.id, score=s) for u, s in zip(request.units, scores, strict=True)]
    )


async def _offline_rate(request: RateUnitsRequest, ctx: TaskContext) -> UnitRatings:
    return offline_rate_units(request, ctx)


async def _model_rate(request: RateUnitsRequest, ctx: TaskContext) -> UnitRatings:
    return await ctx.ask(prompts.LAZY_RATE, rate_messages(request), UnitRatings)


# Expansions and ratings are short lists: the map's output limit, as global's ratings.
EXPAND: Task[ExpandRequest, Expansion] = Task(
    "lazy_expand", offline=_offline_expand, model=_model_expand, limit="map"
)
RATE_UNITS: Task[RateUnitsRequest, UnitRatings] = Task(
    "lazy_rate", offline=_offline_rate, model=_model_rate, limit="map"
)
