"""The tasks of local search after parsing — community selection and the answer — in their offline and
LLM forms. The engine picks the form (`Engine.select_communities`, `Engine.local_answer`), so this module
is part of the engine's contract and imports nothing of query time (see tests/test_layout.py)."""

from __future__ import annotations

import re
from typing import Any

import numpy as np
from pydantic import BaseModel, Field

from pipeline import prompts
from pipeline.embeddings.base import Embedder

OFFLINE_ANSWER_SENTENCES = 5
OFFLINE_ANSWER_EVIDENCE = 12


class CommunitySelection(BaseModel):
    selected_community_ids: list[int] = Field(description="Ids of the communities relevant to the question")


class LocalAnswer(BaseModel):
    answer: str


def candidates_text(candidates: list[dict[str, Any]]) -> str:
    return "\n".join(
        f"{c['id']}: {' '.join((c.get('summary') or c.get('title') or '').split())[:600]}" for c in candidates
    )


async def llm_select(
    client: Any, question: str, candidates: list[dict[str, Any]], *, deadline: float | None, cancel: Any
) -> CommunitySelection:
    prompt = prompts.LOCAL_SELECT_COMMUNITIES
    return await client.complete_json(
        prompt.messages(question=question, candidates=candidates_text(candidates)),
        CommunitySelection,
        task=prompt.name,
        prompt_version=prompt.version,
        deadline=deadline,
        cancel=cancel,
    )


def offline_select(question: str, candidates: list[dict[str, Any]], embedder: Embedder) -> CommunitySelection:
    """Keep communities that contain a matched entity or whose summary is relevant to the question (a
    cosine of at least the embedding model's `relevant` level)."""
    if not candidates:
        return CommunitySelection(selected_community_ids=[])
    texts = [c.get("summary") or c.get("title") or "" for c in candidates]
    vectors = embedder.embed([question, *texts])
    sims = vectors[1:] @ vectors[0]
    floor = embedder.calibration.relevant
    keep = [c["id"] for c, s in zip(candidates, sims, strict=True) if s >= floor or c["matched_entities"]]
    return CommunitySelection(selected_community_ids=keep)


def answer_context(summaries: list[dict[str, Any]], evidence: list[dict[str, Any]]) -> tuple[str, str]:
    s = "\n".join(
        f"[Community {c['id']}] {c['title']}: {' '.join((c.get('summary') or '').split())}" for c in summaries
    )
    e = "\n".join(f"[{ev['ref']}] ({ev['kind']}) {' '.join(ev['text'].split())}" for ev in evidence)
    return s or "(none)", e or "(none)"


async def llm_answer(
    client: Any,
    question: str,
    summaries: list[dict[str, Any]],
    evidence: list[dict[str, Any]],
    *,
    deadline: float | None,
    cancel: Any,
) -> str:
    prompt = prompts.LOCAL_ANSWER
    s, e = answer_context(summaries, evidence)
    return await client.complete_text(
        prompt.messages(question=question, summaries=s, evidence=e),
        task=prompt.name,
        prompt_version=prompt.version,
        deadline=deadline,
        cancel=cancel,
    )


_SENTENCE = re.compile(r"(?<=[.!?])\s+")


def offline_answer(
    question: str, summaries: list[dict[str, Any]], evidence: list[dict[str, Any]], embedder: Embedder
) -> str:
    """The evidence sentences closest to the question, each cited by its evidence id."""
    sentences: list[tuple[str, str]] = []
    # The best-ranked evidence carries the answer; embedding every sentence of all 40 items would
    # cost seconds per question on a CPU for little gain.
    for ev in evidence[:OFFLINE_ANSWER_EVIDENCE]:
        for s in _SENTENCE.split(" ".join(ev["text"].split())):
            if len(s.split()) >= 4:
                sentences.append((ev["ref"], s.strip()))
    if not sentences:
        return "The index holds no evidence for this question."
    vectors = embedder.embed([question] + [s for _, s in sentences])
    order = np.argsort(-(vectors[1:] @ vectors[0]), kind="stable")
    picked, seen = [], set()
    for i in order:
        ref, s = sentences[int(i)]
        if s.lower() not in seen:
            seen.add(s.lower())
            picked.append(f"{s} [{ref}]")
        if len(picked) >= OFFLINE_ANSWER_SENTENCES:
            break
    intro = ""
    if summaries:
        intro = "Relevant topics: " + "; ".join(c["title"] for c in summaries[:3]) + ".\n"
    return intro + "\n".join(f"- {p}" for p in picked)
