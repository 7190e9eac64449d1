"""The context an answer reads and cites: rows in sections (reports, entities, relationships, claims,
sources), each with the short id the model cites as `[Data: Entities (3, 7); Sources (4)]`, and the
offline answer from it.

Local search builds the whole mixed context (`pipeline.query.retrieval.local_context`), DRIFT's follow-ups
the same, basic and lazy search one holding only Sources (`pipeline.query.answer.passage_answer`); one
citation parser (`pipeline.query.answer.citations`) resolves the answers of all of them.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, Field

from pipeline.core.sentences import split_sentences
from pipeline.engine.task import Task, TaskContext
from pipeline.prompts import Prompt
from pipeline.query.retrieval.sentence_rank import rank_by_question

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


def citation(section: Section, ids: list[int]) -> str:
    return f"[Data: {LABELS[section]} ({', '.join(str(i) for i in ids)})]"


def ranked_sentences(
    question: str, context: LocalContext, sections: tuple[Section, ...] = SECTIONS[1:]
) -> list[tuple[Section, int, str, float]]:
    """The sentences of the context's best-ranked rows, those that hold most of the question's words
    first (`pipeline.query.retrieval.sentence_rank`), each statement once: (section, row id, sentence,
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


@dataclass(frozen=True)
class AnswerRequest:
    question: str
    context: LocalContext


def answer_task(
    name: str, prompt: Prompt, messages: Callable[[str, str], list[dict[str, str]]]
) -> Task[AnswerRequest, str]:
    """A written answer over a `LocalContext`: offline, `offline_answer`; with a model, `prompt` as
    `messages(question, context text)` renders it. Local and basic search differ only in the prompt, and
    both forms cite rows as `offline_answer` does, so one citation parser reads either."""

    async def offline(request: AnswerRequest, ctx: TaskContext) -> str:
        answer = offline_answer(request.question, request.context)
        for line in answer.splitlines(keepends=True):  # a streaming door shows it line by line
            ctx.written(line)
        return answer

    async def model(request: AnswerRequest, ctx: TaskContext) -> str:
        return await ctx.ask_text(prompt, messages(request.question, request.context.text), answer=True)

    return Task(name, offline=offline, model=model, limit="local_answer")
