"""The two tasks of global search — map (one batch of reports → a partial answer with a usefulness
score) and reduce (the useful partial answers → one cited answer) — in their offline and LLM forms.

The engine picks the form (`Engine.map_answer`, `Engine.reduce_answer`), so this module is part of the
engine's contract: it imports nothing of query time beyond its own models (see tests/test_layout.py).
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np
from pydantic import BaseModel, Field, field_validator, model_validator

from pipeline import prompts
from pipeline.embeddings.base import Embedder

OFFLINE_MAX_POINTS = 4
OFFLINE_REDUCE_MAX_POINTS = 10


class MapRequest(BaseModel):
    question: str
    context: str
    community_ids: list[int] = Field(default_factory=list)


class MapAnswer(BaseModel):
    answer: str = Field(description="The answer drawn only from the excerpts, citing [Community ID: n]")
    usefulness: float = Field(ge=0, le=100, description="0-100: how useful the answer is for the question")

    @field_validator("answer")
    @classmethod
    def _trim(cls, v: str) -> str:
        return v.strip()

    @model_validator(mode="after")
    def _answer_when_useful(self) -> MapAnswer:
        if self.usefulness > 0 and not self.answer:
            raise ValueError("answer must be non-empty when usefulness > 0")
        return self


class ReduceBlock(BaseModel):
    answer: str
    usefulness: float
    community_ids: list[int]


class ReduceRequest(BaseModel):
    question: str
    blocks: list[ReduceBlock]
    context: str


class ReduceAnswer(BaseModel):
    answer: str = Field(min_length=1, description="The final answer, citing [Communities: ids]")

    @field_validator("answer")
    @classmethod
    def _non_empty(cls, v: str) -> str:
        if not v.strip():
            raise ValueError("answer must not be empty")
        return v.strip()


def map_messages(question: str, context: str) -> list[dict[str, str]]:
    return prompts.GLOBAL_MAP.messages(question=question, context=context)


def reduce_messages(question: str, context: str) -> list[dict[str, str]]:
    return prompts.GLOBAL_REDUCE.messages(question=question, context=context)


def skeleton_text(messages: list[dict[str, str]]) -> str:
    return "\n".join(m["content"] for m in messages)


def reduce_block(block: ReduceBlock) -> str:
    ids = ", ".join(str(i) for i in block.community_ids)
    return f"[Usefulness: {block.usefulness:g}; Community IDs: {ids}]\n{block.answer}"


# ---- offline -----------------------------------------------------------------------------------------
_HEADER = re.compile(r"^\[Community ID: (-?\d+) \| summary part \d+\]$")
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'\[(])")
_LABEL = re.compile(r"^[-*#\s]*(\[(?:Claim|Text unit) [^\]]*\]\s*(\([A-Z]+\)\s*)?)?")
_SKIP = {"claims:", "source excerpts:", "findings:", "summary:"}


def _sentences_by_community(context: str) -> list[tuple[int, str]]:
    out: list[tuple[int, str]] = []
    community = -1
    for line in context.splitlines():
        line = line.strip()
        m = _HEADER.match(line)
        if m:
            community = int(m.group(1))
            continue
        if not line or line.lower() in _SKIP or line.startswith("#"):
            continue  # markdown headings are report titles, not statements that answer anything
        body = _LABEL.sub("", line).strip().strip('"')
        for sentence in _SENTENCE.split(body):
            sentence = sentence.strip()
            if len(sentence.split()) >= 4:
                out.append((community, sentence))
    return out


_CITATION = re.compile(r"\[(?:Community ID|Communities|Community IDs?):\s*([-\d,\s]+)\]")


def cited_communities(text: str) -> list[int]:
    """Community ids an answer cites, in order of first citation."""
    ids: list[int] = []
    for group in _CITATION.findall(text):
        ids += [int(x) for x in re.findall(r"-?\d+", group)]
    return list(dict.fromkeys(ids))


def offline_map(request: MapRequest, embedder: Embedder) -> MapAnswer:
    """The batch's sentences most similar to the question, cited by community; usefulness is the best
    similarity on the embedding model's usefulness scale (`Calibration.usefulness`)."""
    sentences = _sentences_by_community(request.context)
    if not sentences:
        return MapAnswer(answer="", usefulness=0)
    calibration = embedder.calibration
    vectors = embedder.embed([request.question] + [s for _, s in sentences])
    sims = vectors[1:] @ vectors[0]
    order = np.argsort(-sims, kind="stable")
    best = float(sims[order[0]])
    usefulness = calibration.usefulness(best)
    if usefulness == 0:
        return MapAnswer(answer="", usefulness=0)
    points, seen = [], set()
    for i in order:
        if len(points) >= OFFLINE_MAX_POINTS or calibration.usefulness(float(sims[i])) == 0:
            break
        community, sentence = sentences[int(i)]
        if sentence.lower() in seen:
            continue
        seen.add(sentence.lower())
        points.append(f"- {sentence} [Community ID: {community}]")
    return MapAnswer(answer="\n".join(points), usefulness=usefulness)


def offline_reduce(request: ReduceRequest) -> ReduceAnswer:
    """Merge the map answers' points in usefulness order, de-duplicated, with the communities cited."""
    points, seen = [], set()
    for block in request.blocks:
        for line in block.answer.splitlines():
            key = re.sub(r"\[Community ID: -?\d+\]", "", line).strip(" -").lower()
            if key and key not in seen and len(points) < OFFLINE_REDUCE_MAX_POINTS:
                seen.add(key)
                points.append(line if line.startswith("- ") else f"- {line}")
    cited = cited_communities("\n".join(points)) or [c for b in request.blocks for c in b.community_ids]
    ids = ", ".join(str(i) for i in dict.fromkeys(cited))
    text = (
        f"From {len(request.blocks)} partial answers over the community reports, the most relevant points are:\n"
        + "\n".join(points)
        + f"\n\n[Communities: {ids}]"
    )
    return ReduceAnswer(answer=text)


# ---- LLM ---------------------------------------------------------------------------------------------
async def llm_map(client: Any, request: MapRequest, *, deadline: float | None, cancel: Any) -> MapAnswer:
    prompt = prompts.GLOBAL_MAP
    return await client.complete_json(
        map_messages(request.question, request.context),
        MapAnswer,
        task=prompt.name,
        prompt_version=prompt.version,
        deadline=deadline,
        cancel=cancel,
    )


async def llm_reduce(
    client: Any, request: ReduceRequest, *, deadline: float | None, cancel: Any
) -> ReduceAnswer:
    prompt = prompts.GLOBAL_REDUCE
    return await client.complete_json(
        reduce_messages(request.question, request.context),
        ReduceAnswer,
        task=prompt.name,
        prompt_version=prompt.version,
        deadline=deadline,
        cancel=cancel,
    )


__all__ = [
    "MapAnswer",
    "MapRequest",
    "ReduceAnswer",
    "ReduceBlock",
    "ReduceRequest",
    "llm_map",
    "llm_reduce",
    "offline_map",
    "offline_reduce",
    "reduce_block",
]
