"""The two tasks of global search — map (one batch of reports → scored points) and reduce (the best
points of all batches → one cited answer) — in their offline and LLM forms, as Microsoft GraphRAG's.

Rules of a map answer (`MapAnswer`, then `batch_points`):
- A reply is a list of points `{description, score 0-100, communities}`. Each point is validated on
  its own: one that is not an object, has no description or a score that is not a number is dropped
  and counted (`MapAnswer.dropped`), never the whole batch. A score outside 0-100 is clamped.
- A point keeps only the communities of its own batch, from its `communities` field and from the
  citations in its description. A point that cites none of them is attributed to the whole batch
  rather than dropped: it came from the batch's reports, and a model that forgets to cite is not
  wrong about the content. Points scored 0 are dropped (they answer nothing).

The engine runs the `MAP` and `REDUCE` tasks below and picks their form.
"""

from __future__ import annotations

import math
import re
from typing import Any

import numpy as np
from pydantic import BaseModel, Field, PrivateAttr, field_validator, model_validator

from pipeline import prompts
from pipeline.core.report_template import TEMPLATE_OPENINGS
from pipeline.core.sentences import split_sentences
from pipeline.embeddings.base import Embedder
from pipeline.engine.task import Task, TaskContext, cpu_bound
from pipeline.query.answer.prompt_text import DEFAULT_RESPONSE_TYPE
from pipeline.query.global_.themes import MAX_THEMES, SENTENCES_PER_THEME, group_into_themes, theme_label
from pipeline.query.retrieval.intent import is_broad
from pipeline.query.retrieval.sentence_rank import rank_by_question

OFFLINE_MAX_POINTS = 4
# Sentences of one community the offline map reads: its report's summary and findings come first, then
# its claims and source excerpts. A broad question's map embeds them (about 120 sentences a second on 2
# cores); on MuSiQue-100 it maps 34 reports: 12.5 s cold uncapped, 4 s with 6 each.
OFFLINE_SENTENCES_PER_COMMUNITY = 6
# Share of the question's words added, for ordering only, to a sentence naming a title entity.
CENTRAL_BONUS = 0.1
MAX_SCORE = 100.0


class MapRequest(BaseModel):
    question: str
    context: str
    community_ids: list[int] = Field(default_factory=list)
    max_tokens: int | None = None  # the answer's limit: the output reserve the batcher left room for
    ranks: dict[int, float] = Field(default_factory=dict)  # the batch's report ranks (offline broad map)


class MapPoint(BaseModel):
    description: str = Field(
        description="One statement that helps answer the question, from the excerpts only"
    )
    score: float = Field(description="0-100: how important the point is for answering the question")
    communities: list[int] = Field(
        default_factory=list, description="The community ids of the excerpts the point draws on"
    )


def _clean_point(raw: Any) -> dict[str, Any] | None:
    """The point with its score clamped and its ids made integers, or None when it is unusable."""
    if isinstance(raw, MapPoint):
        raw = raw.model_dump()
    if not isinstance(raw, dict) or not isinstance(raw.get("description"), str):
        return None
    description = raw["description"].strip()
    try:
        score = float(raw.get("score"))  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
    if not description or math.isnan(score):
        return None
    ids = raw.get("communities") or []
    ids = [ids] if isinstance(ids, int | str) else ids
    communities = []
    for c in ids if isinstance(ids, list) else []:
        try:
            communities.append(int(c))
        except (TypeError, ValueError):
            continue  # a stray id does not make the point's content wrong
    return {"description": description, "score": min(MAX_SCORE, max(0.0, score)), "communities": communities}


class MapAnswer(BaseModel):
    points: list[MapPoint] = Field(
        description="The points that answer the question, or an empty list when the excerpts hold nothing relevant"
    )
    _dropped: int = PrivateAttr(default=0)

    @property
    def dropped(self) -> int:
        """Points of the reply that failed validation and were left out."""
        return self._dropped

    @model_validator(mode="wrap")
    @classmethod
    def _point_by_point(cls, data: Any, handler: Any) -> MapAnswer:
        if isinstance(data, list):  # a bare list of points is still the answer
            data = {"points": data}
        dropped = 0
        if isinstance(data, dict) and isinstance(data.get("points"), list):
            cleaned = [_clean_point(p) for p in data["points"]]
            dropped = sum(p is None for p in cleaned)
            data = {**data, "points": [p for p in cleaned if p is not None]}
        answer = handler(data)
        answer._dropped += dropped
        return answer


class ReducePoint(BaseModel):
    description: str
    score: float
    community_ids: list[int]
    batch: int = 0


class ReduceRequest(BaseModel):
    question: str
    points: list[ReducePoint]  # the ones that fit the reduce budget, best first
    context: str
    response_type: str = DEFAULT_RESPONSE_TYPE
    max_tokens: int | None = None  # the answer's limit: the reduce's output reserve


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


def reduce_messages(
    question: str, context: str, response_type: str = DEFAULT_RESPONSE_TYPE
) -> list[dict[str, str]]:
    return prompts.GLOBAL_REDUCE.messages(question=question, context=context, response_type=response_type)


def reduce_block(point: ReducePoint) -> str:
    """How one point is shown to the reduce."""
    ids = ", ".join(str(i) for i in point.community_ids)
    return f"[Score: {point.score:g}; Community IDs: {ids}]\n{point.description}"


_CITATION = re.compile(r"\[(?:Community ID|Communities|Community IDs?):\s*([-\d,\s]+(?:,?\s*\+more)?)\]")
# Report texts cite their own context rows (`[Data: Entities (3)]`); those ids mean nothing here.
_DATA_CITATION = re.compile(r"\s*\[Data:[^\]]*\]")


def cited_communities(text: str) -> list[int]:
    """Community ids an answer cites, in order of first citation: `[Community ID: 3]` or
    `[Communities: 3, 7, +more]`. (`[Data: Reports (1)]` in a report's text names a row of that
    report's own context, not a community, so it is not read as one.)"""
    ids: list[int] = []
    for group in _CITATION.findall(text):
        ids += [int(x) for x in re.findall(r"-?\d+", group)]
    return list(dict.fromkeys(ids))


def batch_points(answer: MapAnswer, batch_community_ids: list[int]) -> list[MapPoint]:
    """The answer's points with a score above 0, each citing communities of its batch (module docstring)."""
    batch = list(dict.fromkeys(batch_community_ids))
    allowed = set(batch)
    out = []
    for p in answer.points:
        if p.score <= 0:
            continue
        ids = [c for c in dict.fromkeys([*p.communities, *cited_communities(p.description)]) if c in allowed]
        out.append(MapPoint(description=p.description, score=p.score, communities=ids or batch))
    return out


# ---- offline -----------------------------------------------------------------------------------------
_WORD = re.compile(r"\w+")
_HEADER = re.compile(r"^\[Community ID: (-?\d+) \| summary part \d+\]$")
_LABEL = re.compile(r"^[-*#\s]*(\[(?:Claim|Text unit) [^\]]*\]\s*(\([A-Z]+\)\s*)?)?")
_SKIP = {"claims:", "source excerpts:", "findings:", "summary:"}


def _sentences_by_community(context: str) -> list[tuple[int, str, bool]]:
    """(community, sentence, whether it names one of the community's title entities) for each sentence."""
    out: list[tuple[int, str, bool]] = []
    community = -1
    names: list[str] = []
    taken: dict[int, int] = {}
    for line in context.splitlines():
        line = line.strip()
        m = _HEADER.match(line)
        if m:
            community, names = int(m.group(1)), []
            continue
        if line.startswith("#"):  # a report's title: its central entities ('A, B and C'), not a statement
            names = [n for n in _TITLE_SPLIT.split(line.lstrip("# ").strip()) if len(n) > 2]
            continue
        if not line or line.lower() in _SKIP:
            continue
        body = _DATA_CITATION.sub("", _LABEL.sub("", line)).strip().strip('"')
        for sentence in (s.text for s in split_sentences(body)):
            # The offline report's own framing lines describe the community's shape, not the corpus.
            if len(sentence.split()) >= 4 and not sentence.startswith(TEMPLATE_OPENINGS):
                if taken.get(community, 0) >= OFFLINE_SENTENCES_PER_COMMUNITY:
                    continue
                taken[community] = taken.get(community, 0) + 1
                central = any(_names_in(sentence, n) for n in names)
                out.append((community, sentence, central))
    return out


_TITLE_SPLIT = re.compile(r",\s*|\s+and\s+")


def _names_in(sentence: str, name: str) -> bool:
    """Whether the sentence names `name` or its last word ('Scrooge' for 'Ebenezer Scrooge')."""
    last = name.split()[-1]
    return re.search(rf"(?<!\w){re.escape(last)}(?!\w)", sentence) is not None


def offline_map(request: MapRequest, embedder: Embedder) -> MapAnswer:
    """One point per sentence of the batch among those holding most of the question's words
    (`pipeline.query.retrieval.sentence_rank`), cited by its community; its score is that share on the
    0-100 scale, so a sentence with none of them scores 0 and is left out (broad: see below). Embedding
    the batch's sentences instead was 84% of an offline global search on 11 MB of text."""
    sentences = _sentences_by_community(request.context)
    if not sentences:
        return MapAnswer(points=[])
    if request.ranks and is_broad(request.question):
        return MapAnswer(points=_central_points(request, sentences, embedder))
    shares = dict(rank_by_question(request.question, [s for _, s, _ in sentences]))
    # A sentence about the community's central entities is what the community is about: it ranks ahead
    # of an equally good aside (a meal, the weather). Its score stays its own share.
    order = sorted(range(len(sentences)), key=lambda i: -(shares[i] + CENTRAL_BONUS * sentences[i][2]))
    points: list[MapPoint] = []
    seen: set[str] = set()
    for i in order:
        score = round(shares[i] * 100, 1)
        if len(points) >= OFFLINE_MAX_POINTS:
            break
        if score == 0:
            continue
        community, sentence, _ = sentences[i]
        if sentence.lower() in seen:
            continue
        seen.add(sentence.lower())
        points.append(MapPoint(description=sentence, score=score, communities=[community]))
    return MapAnswer(points=points)


def _central_points(
    request: MapRequest, sentences: list[tuple[int, str, bool]], embedder: Embedder
) -> list[MapPoint]:
    """A broad question's words say nothing of which report matters; the ranks do. One point per
    community of the batch, scored by its rank (0-10 as 0-100): its title, then its report's sentences
    nearest that title (what the community is about), each once, none only repeating the title."""
    titles = dict(_TITLE_LINE.findall(request.context))
    vectors = embedder.embed([titles.get(str(c), "") for c, _, _ in sentences] + [s for _, s, _ in sentences])
    sims = np.einsum("ij,ij->i", vectors[: len(sentences)], vectors[len(sentences) :])
    points = []
    for community in dict.fromkeys(c for c, _, _ in sentences):
        title, rank = titles.get(str(community), ""), request.ranks.get(community, 0.0)
        mine = sorted((i for i, s in enumerate(sentences) if s[0] == community), key=lambda i: -sims[i])
        words = set(_WORD.findall(title.lower()))
        best = [
            _sentence(sentences[i][1])
            for i in mine
            if not set(_WORD.findall(sentences[i][1].lower())) <= words
        ]
        text = " ".join(list(dict.fromkeys(best))[:SENTENCES_PER_THEME])
        description = f"**{title}** (rank {rank:.1f}). {text}" if title else text
        points.append(
            MapPoint(
                description=description, score=min(MAX_SCORE, max(rank * 10, 1.0)), communities=[community]
            )
        )
    return points


# A part header followed by the report's title line: "[Community ID: 2 | summary part 1]\n# A, B and C"
_TITLE_LINE = re.compile(r"^\[Community ID: (-?\d+) \| summary part 1\]\n# ([^\n]+)$", re.MULTILINE)


def _cite(ids: list[int]) -> str:
    if len(ids) == 1:
        return f"[Community ID: {ids[0]}]"
    return f"[Communities: {', '.join(str(i) for i in ids)}]"


def offline_reduce(request: ReduceRequest) -> ReduceAnswer:
    """The points grouped into themes (`pipeline.query.themes`): each theme named by the words its
    points share and told by its best points, cited with the communities of all its points."""
    points, seen = [], set()
    for p in request.points:  # best first
        key = " ".join(p.description.lower().split())
        if key and key not in seen:
            seen.add(key)
            points.append(p)
    if is_broad(request.question) and all(p.description.startswith("**") for p in points):
        return ReduceAnswer(answer=_central_answer(request, points))
    descriptions = [p.description for p in points]
    themes = group_into_themes(descriptions, [p.community_ids for p in points])
    blocks = []
    for n, theme in enumerate(themes, 1):
        ids = list(dict.fromkeys(c for i in theme.points for c in points[i].community_ids))
        text = " ".join(_sentence(descriptions[i]) for i in theme.points[:SENTENCES_PER_THEME])
        label = theme_label(theme, descriptions)
        blocks.append(f"{n}. **{label[:1].upper() + label[1:]}.** {text} {_cite(ids)}")
    ids = ", ".join(str(i) for i in dict.fromkeys(c for p in request.points for c in p.community_ids))
    batches = len({p.batch for p in request.points})
    text = (
        f"{len(themes)} themes run through the {len(request.points)} points of {batches} partial answers "
        "over the community reports:\n" + "\n".join(blocks) + f"\n\n[Communities: {ids}]"
    )
    return ReduceAnswer(answer=text)


def _central_answer(request: ReduceRequest, points: list[ReducePoint]) -> str:
    """The central communities' points (`_central_points`) in rank order, one numbered block each."""
    shown = points[:MAX_THEMES]
    blocks = "\n".join(f"{n}. {p.description} {_cite(p.community_ids)}" for n, p in enumerate(shown, 1))
    head = (
        f"The {len(shown)} most central of the collection's {len(points)} communities, by the index's rank:"
    )
    return f"{head}\n{blocks}"


def _sentence(text: str) -> str:
    text = " ".join(text.split())
    return text if text[-1:] in ".!?\"'”’…" else text + "."


# ---- the tasks ----------------------------------------------------------------------------------
async def _offline_map(request: MapRequest, ctx: TaskContext) -> MapAnswer:
    return await cpu_bound(offline_map, request, ctx.need_embedder("global search"))


async def _model_map(request: MapRequest, ctx: TaskContext) -> MapAnswer:
    messages = map_messages(request.question, request.context)
    return await ctx.ask(prompts.GLOBAL_MAP, messages, MapAnswer, max_tokens=request.max_tokens)


async def _offline_reduce(request: ReduceRequest, ctx: TaskContext) -> ReduceAnswer:
    reduced = offline_reduce(request)
    for line in reduced.answer.splitlines(keepends=True):  # a streaming door shows it theme by theme
        ctx.written(line)
    return reduced


async def _model_reduce(request: ReduceRequest, ctx: TaskContext) -> ReduceAnswer:
    """The answer in prose, streamed to a listening door as the model writes it (as JSON it could only
    be shown once whole)."""
    messages = reduce_messages(request.question, request.context, request.response_type)
    text = await ctx.ask_text(prompts.GLOBAL_REDUCE, messages, answer=True, max_tokens=request.max_tokens)
    return ReduceAnswer(answer=text)


# The batcher leaves room for exactly the reserve a request carries; without one, the task's limit.
MAP: Task[MapRequest, MapAnswer] = Task("map_answer", offline=_offline_map, model=_model_map, limit="map")
REDUCE: Task[ReduceRequest, ReduceAnswer] = Task(
    "reduce_answer", offline=_offline_reduce, model=_model_reduce, limit="reduce"
)


__all__ = [
    "MapAnswer",
    "MapPoint",
    "MapRequest",
    "ReduceAnswer",
    "ReducePoint",
    "ReduceRequest",
    "batch_points",
    "MAP",
    "REDUCE",
    "offline_map",
    "offline_reduce",
    "reduce_block",
]
