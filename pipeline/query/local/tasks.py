"""The tasks of local search after parsing — community selection and the answer — in their offline and
LLM forms, as the `SELECT` and `ANSWER` tasks the engine runs.

Both answer forms read the same `LocalContext` (built by `pipeline.query.local.context`) and cite its
rows the same way, `[Data: Entities (3, 7); Relationships (12); Sources (4)]`, so one parser resolves
the citations of either. The answer prompt is rendered here only (`answer_messages`), and the context
builder measures the budget on that same rendering.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, Field

from pipeline import prompts
from pipeline.core.sentences import split_sentences
from pipeline.embeddings.base import Embedder
from pipeline.engine.task import Task, TaskContext
from pipeline.query.common.sentence_rank import rank_by_question

OFFLINE_ANSWER_SENTENCES = 5
OFFLINE_ANSWER_ROWS = 12  # per section: the best-ranked rows carry the answer (see offline_answer)

Section = Literal["reports", "entities", "relationships", "claims", "sources"]
SECTIONS: tuple[Section, ...] = ("reports", "entities", "relationships", "claims", "sources")
# The name a section has in the context and in citations (GraphRAG's).
LABELS: dict[Section, str] = {
    "reports": "Reports",
    "entities": "Entities",
    "relationships": "Relationships",
    "claims": "Claims",
    "sources": "Sources",
}


class CommunitySelection(BaseModel):
    selected_community_ids: list[int] = Field(description="Ids of the communities relevant to the question")


class ContextRow(BaseModel):
    """One row of the answer's context: the short id the model sees and cites, and what it stands for."""

    section: Section
    id: int  # the table's human_readable_id (reports: the community number), unique within the section
    text: str  # the row's prose (summary, description, passage): what the offline answer quotes
    ref: dict[str, Any]  # what the id resolves to: entity/relationship/claim/text-unit id, offsets, ...


class LocalContext(BaseModel):
    """The mixed context of one local answer, within its token budget."""

    text: str  # the sections as the model reads them
    rows: list[ContextRow]
    budget: int  # tokens the whole answer prompt may take
    prompt_tokens: int  # tokens the answer prompt (system + user) takes with this context
    section_tokens: dict[str, int] = Field(default_factory=dict)

    def row(self, section: Section, row_id: int) -> ContextRow | None:
        return next((r for r in self.rows if r.section == section and r.id == row_id), None)

    def of(self, section: Section) -> list[ContextRow]:
        return [r for r in self.rows if r.section == section]


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


def citation(section: Section, ids: list[int]) -> str:
    return f"[Data: {LABELS[section]} ({', '.join(str(i) for i in ids)})]"


def ranked_sentences(
    question: str, context: LocalContext, sections: tuple[Section, ...] = SECTIONS[1:]
) -> list[tuple[Section, int, str, float]]:
    """The sentences of the context's best-ranked rows, those that hold most of the question's words
    first (`pipeline.query.common.sentence_rank`), each statement once: (section, row id, sentence,
    score in [0, 1]).

    Candidates are the passages of the best-ranked sources and the descriptions of the best-ranked
    claims, relationships and entities (the builder put those touching the matched entities first), in
    that order, which breaks ties: an offline description is a sentence of a passage, and the passage
    is the citation a reader can check at its document offsets."""
    sentences: list[tuple[Section, int, str]] = []
    for section in ("sources", "claims", "relationships", "entities", "reports"):
        if section not in sections:
            continue
        for row in context.of(section)[:OFFLINE_ANSWER_ROWS]:
            for s in split_sentences(row.text):
                if len(s.clean.split()) >= 4:
                    sentences.append((section, row.id, s.clean))
    out, seen = [], set()
    for i, score in rank_by_question(question, [s for *_, s in sentences]):
        section, row_id, s = sentences[i]
        if (key := sentence_key(s)) not in seen:
            seen.add(key)
            out.append((section, row_id, s, score))
    return out


_WORD = re.compile(r"[^\W\d_]+")


def sentence_key(sentence: str) -> str:
    """What makes two sentences the same statement: their words, lower-cased, without a caption's
    'Illustration:' label, numbers or punctuation (a book repeats its captions in the text)."""
    words = _WORD.findall(sentence.lower())
    return " ".join(words[1:] if words[:1] == ["illustration"] else words)


NO_EVIDENCE = "The index holds no evidence for this question."


def offline_answer(question: str, context: LocalContext) -> str:
    """The context's sentences that say most of what the question asks (`ranked_sentences`), each cited
    to its row as the LLM answer is, after the titles of the best three reports."""
    picked = [
        f"{s} {citation(section, [row_id])}"
        for section, row_id, s, _ in ranked_sentences(question, context)[:OFFLINE_ANSWER_SENTENCES]
    ]
    if not picked:
        return NO_EVIDENCE
    intro = ""
    if reports := context.of("reports")[:3]:
        titles = "; ".join(r.ref.get("title") or "" for r in reports)
        intro = f"Relevant topics: {titles} {citation('reports', [r.id for r in reports])}.\n"
    return intro + "\n".join(f"- {p}" for p in picked)


# ---- the tasks ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class SelectRequest:
    question: str
    candidates: list[dict[str, Any]]  # {id, title, summary, matched_entities}
    # Offline only: the candidates' stored report vectors and the question's, so nothing is embedded again.
    vectors: dict[int, np.ndarray] = field(default_factory=dict)
    query_vector: np.ndarray | None = None


@dataclass(frozen=True)
class AnswerRequest:
    question: str
    context: LocalContext


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
