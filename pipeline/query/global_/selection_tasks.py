"""Global search's dynamic community selection task — rate a few community reports for relevance to a
question — in its offline and LLM forms (the `RATE` task).

A rating is 0-10 (Microsoft GraphRAG rates 0-5 and keeps 1 and up; 0-10 leaves room to rank what is
kept). The LLM form asks for one rating per report of the batch; a rating outside 0-10 fails validation
(the client repairs once), and a report the reply leaves out gets no rating: the caller keeps it, never
drops the branch silently. The offline form is the embedding model's similarity of the question to the
report's vector (the one its report was indexed with), on the map answers' usefulness scale, / 10.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from pipeline import prompts
from pipeline.embeddings.base import Embedder
from pipeline.engine.task import Task, TaskContext
from pipeline.query.answer.offline_rating import RelevanceScore, similarity_ratings

SUMMARY_CHARS = 600  # of a report, in the rating prompt: enough to judge, cheap to send


class RateItem(BaseModel):
    community: int
    title: str
    summary: str
    vector: list[float] | None = None  # the report's indexed vector (offline rating reads it)


class RateRequest(BaseModel):
    question: str
    reports: list[RateItem]


class Rating(BaseModel):
    community: int = Field(description="The report's community id, as given")
    score: RelevanceScore


class RateAnswer(BaseModel):
    ratings: list[Rating] = Field(description="One rating per report given")


def rate_messages(request: RateRequest) -> list[dict[str, str]]:
    lines = []
    for r in request.reports:
        summary = " ".join(r.summary.split())[:SUMMARY_CHARS]
        lines.append(f"{r.community}: {' '.join(r.title.split())} — {summary}")
    return prompts.GLOBAL_RATE.messages(question=request.question, reports="\n".join(lines))


def offline_rate(request: RateRequest, embedder: Embedder) -> RateAnswer:
    """Each report's similarity to the question on the usefulness scale (0-100) / 10; a report without
    a vector is embedded from its title and summary."""
    items = [(r.vector, f"{r.title}\n{r.summary}") for r in request.reports]
    scores = similarity_ratings(embedder, request.question, items)
    return RateAnswer(
        ratings=[Rating(community=r.community, score=s) for r, s in zip(request.reports, scores, strict=True)]
    )


async def _offline(request: RateRequest, ctx: TaskContext) -> RateAnswer:
    return offline_rate(request, ctx.need_embedder("report rating"))


async def _model(request: RateRequest, ctx: TaskContext) -> RateAnswer:
    return await ctx.ask(prompts.GLOBAL_RATE, rate_messages(request), RateAnswer)


# Ratings are as short as map points: the map's output limit.
RATE: Task[RateRequest, RateAnswer] = Task("rate_reports", offline=_offline, model=_model, limit="map")
