"""DRIFT's tasks — the primer over community reports, a follow-up's answer from a local context, and the
reduce of the whole tree — in their offline and LLM forms: the `PRIMER`, `FOLLOW_UP` and `DRIFT_REDUCE` tasks the engine runs.

A primer or follow-up step answers with a `DriftStep`: an intermediate answer citing its rows as
`[Data: Reports (12)]` / `[Data: Entities (3); Sources (7)]`, a 0-100 score for how well it answers the
overall question, and follow-up questions. Offline, the answer is the rows' sentences that hold most of
the question's words (`pipeline.query.retrieval.sentence_rank`), the score the best one's share of them, and
the follow-ups name the central entities of what was read.
"""

from __future__ import annotations

import re

from pydantic import BaseModel, Field

from pipeline import prompts
from pipeline.core.report_template import TEMPLATE_OPENINGS
from pipeline.core.sentences import split_sentences
from pipeline.engine.task import Task, TaskContext
from pipeline.query.answer.answer_context import LocalContext, citation, ranked_sentences, sentence_key
from pipeline.query.retrieval.sentence_rank import rank_by_question

OFFLINE_STEP_SENTENCES = 3  # per primer fold and per follow-up: the tree's answers stay short
OFFLINE_REDUCE_LINES = 8
# How the offline engine asks about an entity: the overall question stays in, so the follow-up's local
# search ranks passages by it, and the entity's name is written as the index spells it, so it matches.
FOLLOW_UP_TEMPLATE = "Regarding {entity}: {question}"


class PrimerReport(BaseModel):
    community: int
    title: str
    text: str  # the report as the model reads it
    entities: list[str] = Field(default_factory=list)  # its central entities, most connected first


class PrimerRequest(BaseModel):
    question: str
    reports: list[PrimerReport]
    max_follow_ups: int = Field(default=3, ge=0)


class DriftStep(BaseModel):
    answer: str = Field(description="The intermediate answer, each statement citing its rows as [Data: ...]")
    score: float = Field(ge=0, le=100, description="How well the answer answers the overall question, 0-100")
    follow_up_queries: list[str] = Field(
        description="Questions about specific entities whose answers would complete this one"
    )


class FollowUpRequest(BaseModel):
    question: str  # the overall question
    follow_up: str  # the question this step answers
    context: LocalContext
    max_follow_ups: int = Field(default=3, ge=0)


class StepAnswer(BaseModel):
    question: str
    answer: str
    score: float


class DriftReduceRequest(BaseModel):
    question: str
    answers: list[StepAnswer]  # best first
    context: str  # the answers as the reduce prompt holds them (`reduce_block`), within its budget
    response_type: str


def follow_up_for(entity: str, question: str) -> str:
    return FOLLOW_UP_TEMPLATE.format(entity=entity, question=question)


# ---- primer ------------------------------------------------------------------------------------------
def _cell(text: str) -> str:
    return " ".join(str(text).replace("|", "/").split())


def primer_messages(request: PrimerRequest) -> list[dict[str, str]]:
    rows = "\n".join(f"{r.community}|{_cell(r.title)}|{_cell(r.text)}" for r in request.reports)
    return prompts.DRIFT_PRIMER.messages(
        question=request.question, reports=rows, max_follow_ups=request.max_follow_ups
    )


def _report_sentences(report: PrimerReport) -> list[str]:
    out = []
    for line in report.text.splitlines():
        line = line.strip().lstrip("-*").strip()
        if not line or line.startswith("#"):  # headings are titles, not statements
            continue
        out += [
            s.clean
            for s in split_sentences(line)
            if len(s.clean.split()) >= 4 and not s.clean.startswith(TEMPLATE_OPENINGS)  # the report's shape
        ]
    return out


def offline_primer(request: PrimerRequest) -> DriftStep:
    """The reports' sentences that hold most of the question's words (`sentence_rank`), cited to their
    reports; the score is the best one's share of those words (x 100), as a follow-up's is; the
    follow-ups ask about each report's central entities in turn."""
    sentences = [(r.community, s) for r in request.reports for s in _report_sentences(r)]
    picked: list[str] = []
    ranked = rank_by_question(request.question, [s for _, s in sentences])
    score = ranked[0][1] * 100 if ranked else 0.0
    seen: set[str] = set()
    for i, _ in ranked:
        community, s = sentences[i]
        if (key := sentence_key(s)) not in seen:
            seen.add(key)
            picked.append(f"- {s} {citation('reports', [community])}")
        if len(picked) >= OFFLINE_STEP_SENTENCES:
            break
    titles = "; ".join(r.title for r in request.reports[:3])
    intro = f"Relevant topics: {titles} {citation('reports', [r.community for r in request.reports[:3]])}."
    return DriftStep(
        answer="\n".join([intro, *picked]) if request.reports else "",
        score=round(score, 1),
        follow_up_queries=[
            follow_up_for(e, request.question)
            for e in central_entities(request.reports, request.max_follow_ups)
        ],
    )


def central_entities(reports: list[PrimerReport], limit: int) -> list[str]:
    """The reports' central entities, the first of each report, then the second of each, ..., each once."""
    out: list[str] = []
    depth = max((len(r.entities) for r in reports), default=0)
    for i in range(depth):
        for r in reports:
            if i < len(r.entities) and r.entities[i] not in out:
                out.append(r.entities[i])
                if len(out) >= limit:
                    return out
    return out


# ---- follow-up ---------------------------------------------------------------------------------------
def follow_up_messages(request: FollowUpRequest) -> list[dict[str, str]]:
    return prompts.DRIFT_FOLLOW_UP.messages(
        question=request.question,
        follow_up=request.follow_up,
        context=request.context.text or "(no data)",
        max_follow_ups=request.max_follow_ups,
    )


def offline_follow_up(request: FollowUpRequest) -> DriftStep:
    """The context's sentences that hold most of the follow-up's words, cited to their rows; the score is
    the best one's share of those words (x 100); the follow-ups ask about the context's entities, best-ranked first
    (the builder put the matched ones first), other than those the follow-up already names."""
    ranked = ranked_sentences(request.follow_up, request.context)
    lines = [
        f"- {s} {citation(section, [row_id])}" for section, row_id, s, _ in ranked[:OFFLINE_STEP_SENTENCES]
    ]
    score = max(0.0, ranked[0][3]) * 100 if ranked else 0.0
    asked = request.follow_up.lower()
    names = [
        r.ref.get("title") or ""
        for r in request.context.of("entities")
        if r.ref.get("title") and r.ref["title"].lower() not in asked
    ]
    return DriftStep(
        answer="\n".join(lines),
        score=round(score, 1),
        follow_up_queries=[follow_up_for(n, request.question) for n in names[: request.max_follow_ups]],
    )


# ---- reduce ------------------------------------------------------------------------------------------
def reduce_block(answer: StepAnswer) -> str:
    return f"[Question: {answer.question} | Score: {answer.score:g}]\n{answer.answer.strip()}"


def reduce_messages(question: str, context: str, response_type: str) -> list[dict[str, str]]:
    return prompts.DRIFT_REDUCE.messages(question=question, context=context, response_type=response_type)


def offline_reduce(request: DriftReduceRequest) -> str:
    """The first answer's topics line, then the answers' cited statements, best answer first, each
    statement once, at most `OFFLINE_REDUCE_LINES`."""
    intro, lines, seen = "", [], []
    for answer in request.answers:
        for line in answer.answer.splitlines():
            line = line.strip()
            if line.startswith("Relevant topics:"):
                intro = intro or line
                continue
            text = line.lstrip("- ").strip()
            key = sentence_key(re.sub(r"\[Data:[^\]]*\]", "", text))
            # The same statement from two steps, one a part of the other ('Fezziwig took their
            # stations' in 'Mr. and Mrs. Fezziwig took their stations'), is kept once.
            if key and not any(key in k or k in key for k in seen) and len(lines) < OFFLINE_REDUCE_LINES:
                seen.append(key)
                lines.append(f"- {text}")
    return "\n".join(([intro] if intro else []) + lines)


# ---- the tasks ---------------------------------------------------------------------------------------
async def _offline_primer(request: PrimerRequest, ctx: TaskContext) -> DriftStep:
    return offline_primer(request)


async def _model_primer(request: PrimerRequest, ctx: TaskContext) -> DriftStep:
    return await ctx.ask(prompts.DRIFT_PRIMER, primer_messages(request), DriftStep)


async def _offline_follow_up(request: FollowUpRequest, ctx: TaskContext) -> DriftStep:
    return offline_follow_up(request)


async def _model_follow_up(request: FollowUpRequest, ctx: TaskContext) -> DriftStep:
    return await ctx.ask(prompts.DRIFT_FOLLOW_UP, follow_up_messages(request), DriftStep)


async def _offline_reduce(request: DriftReduceRequest, ctx: TaskContext) -> str:
    answer = offline_reduce(request)
    for line in answer.splitlines(keepends=True):  # a streaming door shows it line by line
        ctx.written(line)
    return answer


async def _model_reduce(request: DriftReduceRequest, ctx: TaskContext) -> str:
    messages = reduce_messages(request.question, request.context, request.response_type)
    return await ctx.ask_text(prompts.DRIFT_REDUCE, messages, answer=True)


# A step's answer is as long as a local answer; the tree's reduce as global search's.
PRIMER: Task[PrimerRequest, DriftStep] = Task(
    "drift_primer", offline=_offline_primer, model=_model_primer, limit="local_answer"
)
FOLLOW_UP: Task[FollowUpRequest, DriftStep] = Task(
    "drift_follow_up", offline=_offline_follow_up, model=_model_follow_up, limit="local_answer"
)
DRIFT_REDUCE: Task[DriftReduceRequest, str] = Task(
    "drift_reduce", offline=_offline_reduce, model=_model_reduce, limit="reduce"
)
