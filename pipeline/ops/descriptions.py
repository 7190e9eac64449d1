"""Description summaries for resolved entities and relationships, each asked of the engine
(the `DESCRIBE` task: `offline_description` or `llm_description` below).

- No description: an empty one, no engine call.
- Offline: representative sentences within `description_max_tokens`: sentences that open with one of
  the names (they say what the entity is) first, then informative-length sentences, each group in text
  order; duplicates dropped.
- LLM: one distinct description is kept as it is, no call (GraphRAG does the same); several that
  together are no longer than the summary asked for (`summarize_max_words`) are joined as they are, no
  call (a summary could not be shorter than its budget allows anyway); longer ones get one
  `summarize_descriptions` call; when they exceed `summarize_max_input_tokens` they are summarized
  iteratively (a batch that fits, then its summary plus the next batch, ...). A call that fails after
  its retries falls back to the offline summary and is counted; it never fails the run.

Re-runs (`SummaryReuse`): the offline summary is a pure function of the names, the descriptions and the
options, so a run keeps each summary under a digest of those (and the rules' version) and the next run
takes an unchanged item's summary from there instead of writing it again: after a 1% change most of the
graph's 57k items on the 11 MB scale corpus are unchanged, and writing them was most of entity
resolution. A model's summary is not kept that way: the LLM cache, keyed by the full request, answers a
repeated one.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from pydantic import BaseModel

from pipeline import prompts
from pipeline.core.names import normalize_name
from pipeline.core.tokens import count_tokens
from pipeline.engine.base import Engine, runner
from pipeline.engine.summarize import Summary
from pipeline.engine.task import Task, TaskContext
from pipeline.ops.extraction.text import split_sentences
from pipeline.settings.bound import FromSettings, setting

_INFORMATIVE_WORDS = (8, 50)
# The offline summary's rules; a change to `offline_summary` that changes its output bumps it, so that a
# re-run writes every summary again instead of reusing one written under the old rules.
OFFLINE_DESCRIPTION_VERSION = "offline-description-1"


@dataclass(frozen=True)
class DescriptionOptions(FromSettings):
    """How long a merged description may be, offline and asked of a model."""

    max_tokens: int = setting("description_max_tokens")  # offline: the extractive description's budget
    # LLM: descriptions per summarize call (iterative beyond)
    max_input_tokens: int = setting("summarize_max_input_tokens")
    max_words: int = setting("summarize_max_words")  # LLM: the summary's length
    encoding: str = setting("encoding")


class DescriptionRequest(BaseModel):
    names: tuple[str, ...]  # the entity's title, or a relationship's (source, target)
    descriptions: tuple[str, ...]  # distinct, in order of first appearance; at least one
    options: DescriptionOptions


class DescriptionSummary(BaseModel):
    summary: str
    calls: int = 0  # model calls it took (0: written offline, or kept)
    kept: bool = False  # the single description, unchanged


@dataclass(frozen=True)
class DescriptionItem:
    names: tuple[str, ...]  # the entity's title, or a relationship's (source, target)
    descriptions: tuple[str, ...]  # distinct, in order of first appearance


@dataclass
class SummaryStats:
    kept_as_is: int = 0
    offline: int = 0
    llm_calls: int = 0
    llm_failures: int = 0
    reused: int = 0  # taken from the previous run's summaries (`SummaryReuse`)


def distinct(descriptions: Sequence[str]) -> tuple[str, ...]:
    seen: dict[str, None] = {}
    for d in descriptions:
        d = d.strip()
        if d and d not in seen:
            seen[d] = None
    return tuple(seen)


# An offline description is a unit's sentences, and one sentence describes every entity it names: 93k
# descriptions of the 11 MB scale corpus's 57k items are 34k distinct texts, so each is split once.
@lru_cache(maxsize=65_536)
def _clean_sentences(description: str) -> tuple[str, ...]:
    return tuple(s.clean for s in split_sentences(description))


def offline_summary(names: Sequence[str], descriptions: Sequence[str], max_tokens: int, encoding: str) -> str:
    """Representative sentences of the descriptions within `max_tokens` (at least one sentence)."""
    sentences: dict[str, None] = {}
    for d in descriptions:
        for s in _clean_sentences(d):
            sentences.setdefault(s, None)
    if len(sentences) <= 1:  # nine in ten on MuSiQue: one sentence is kept whatever its length
        return next(iter(sentences), "")
    keys = [normalize_name(n) for n in names if n]
    longest = max((len(n) for n in names), default=0)

    def rank(item: tuple[int, str]) -> tuple[int, int]:
        index, sentence = item
        opening = normalize_name(sentence[: longest + 16])  # enough of the sentence to hold a name
        opens_with_name = any(opening.startswith(k) for k in keys if k)
        n_words = len(sentence.split())
        informative = _INFORMATIVE_WORDS[0] <= n_words <= _INFORMATIVE_WORDS[1]
        return (-(2 * opens_with_name + informative), index)

    chosen: list[str] = []
    used = 0
    for _, sentence in sorted(enumerate(sentences), key=rank):
        cost = count_tokens(sentence, encoding)
        if chosen and used + cost > max_tokens:
            continue  # a shorter sentence further down may still fit
        chosen.append(sentence)
        used += cost
    return " ".join(chosen)


async def llm_summary(
    client: Any,
    names: Sequence[str],
    descriptions: Sequence[str],
    *,
    max_input_tokens: int,
    max_words: int,
    encoding: str,
    max_tokens: int | None = None,
) -> tuple[str, int]:
    """(summary, number of calls made); raises LLMError when a call fails. `max_tokens` limits each
    call's output (None: the client's default)."""
    prompt = prompts.SUMMARIZE_DESCRIPTIONS
    overhead = count_tokens(prompt.system + prompt.user, encoding) + sum(
        count_tokens(n, encoding) for n in names
    )
    budget = max(max_input_tokens - overhead, 64)
    calls = 0

    async def call(batch: list[str]) -> str:
        nonlocal calls
        calls += 1
        out = await client.complete_json(
            prompt.messages(
                names=", ".join(names),
                descriptions="\n".join(f"- {d}" for d in batch),
                max_words=max_words,
            ),
            Summary,
            task=prompt.name,
            prompt_version=prompt.version,
            max_tokens=max_tokens,
        )
        return out.summary.strip()

    batch: list[str] = []
    used = 0
    for d in descriptions:
        cost = count_tokens(d, encoding)
        if batch and used + cost > budget:
            summary = await call(batch)
            batch, used = [summary], count_tokens(summary, encoding)
        batch.append(d)
        used += cost
    return await call(batch), calls


def offline_description(request: DescriptionRequest) -> DescriptionSummary:
    """The offline engine's description: `offline_summary`, even of a single description (an offline
    description is its unit's sentences, which this trims to the budget)."""
    options = request.options
    summary = offline_summary(request.names, request.descriptions, options.max_tokens, options.encoding)
    return DescriptionSummary(summary=summary)


async def llm_description(
    client: Any, request: DescriptionRequest, *, max_tokens: int | None = None
) -> DescriptionSummary:
    """The LLM engine's description: a single one kept as it is, several that together are no longer
    than the summary asked for (`max_words`) joined as they are, else `llm_summary`; raises LLMError."""
    if len(request.descriptions) == 1:
        return DescriptionSummary(summary=request.descriptions[0], kept=True)
    options = request.options
    joined = " ".join(d.strip() for d in request.descriptions)
    if len(joined.split()) <= options.max_words:  # a summary could only be as long: nothing to gain
        return DescriptionSummary(summary=joined, kept=True)
    summary, calls = await llm_summary(
        client,
        request.names,
        request.descriptions,
        max_input_tokens=options.max_input_tokens,
        max_words=options.max_words,
        encoding=options.encoding,
        max_tokens=max_tokens,
    )
    return DescriptionSummary(summary=summary, calls=calls)


async def _offline(request: DescriptionRequest, ctx: TaskContext) -> DescriptionSummary:
    return offline_description(request)


async def _model(request: DescriptionRequest, ctx: TaskContext) -> DescriptionSummary:
    return await llm_description(ctx.llm, request, max_tokens=ctx.max_tokens)


@dataclass(frozen=True)
class DescriptionIdentity:
    """What an engine's descriptions are, for `SummaryReuse`."""

    config: str  # everything a summary depends on besides its item
    reusable: bool  # True: a summary kept under the same config and item is taken as it is


def _offline_identity(options: DescriptionOptions) -> DescriptionIdentity:
    config = {
        "version": OFFLINE_DESCRIPTION_VERSION,
        "max_tokens": options.max_tokens,
        "encoding": options.encoding,
    }
    return DescriptionIdentity(json.dumps(config, sort_keys=True), reusable=True)


def _model_identity(client: Any, options: DescriptionOptions) -> DescriptionIdentity:
    # Not reused from the table: the LLM cache answers a repeated request, and a failed call's offline
    # fallback must be asked again on the next run.
    return DescriptionIdentity(f"llm:{client.endpoint}/{client.model}", reusable=False)


DESCRIBE: Task[DescriptionRequest, DescriptionSummary] = Task(
    "summarize_descriptions",
    offline=_offline,
    model=_model,
    limit="description",
    offline_identity=_offline_identity,
    model_identity=_model_identity,
)


@dataclass
class SummaryReuse:
    """The previous run's summaries by digest (`previous`), and this run's (`current`, filled by
    `summarize_all`) for the next run. Only an engine whose identity is reusable takes or keeps any."""

    previous: Mapping[str, str] = field(default_factory=dict)
    current: dict[str, str] = field(default_factory=dict)


def summary_digest(config: str, item: DescriptionItem) -> str:
    """What a summary is kept under: the engine's description config, the names and the descriptions."""
    payload = json.dumps([config, item.names, item.descriptions], ensure_ascii=False)
    return hashlib.blake2b(payload.encode("utf-8"), digest_size=16).hexdigest()


def summarize_all(
    items: Sequence[DescriptionItem],
    options: DescriptionOptions,
    engine: Engine,
    reuse: SummaryReuse | None = None,
) -> tuple[list[str], SummaryStats]:
    """One description per item, in order, following the rules in the module docstring; with `reuse`,
    an item whose digest the previous run kept takes that summary, and every summary written or taken
    is kept in `reuse.current`."""
    stats = SummaryStats()
    out = [""] * len(items)
    pending = [i for i, item in enumerate(items) if item.descriptions]
    stats.kept_as_is += len(items) - len(pending)
    digests: dict[int, str] = {}
    for_next: dict[str, str] = {}  # reuse.current
    if reuse is not None and (identity := engine.identity(DESCRIBE, options)).reusable:
        for_next = reuse.current
        digests = {i: summary_digest(identity.config, items[i]) for i in pending}
        still = []
        for i in pending:
            summary = reuse.previous.get(digests[i])
            if summary is None:
                still.append(i)
            else:
                out[i] = for_next[digests[i]] = summary
                stats.reused += 1
        pending = still

    def request(item: DescriptionItem) -> DescriptionRequest:
        return DescriptionRequest(names=item.names, descriptions=item.descriptions, options=options)

    describe = runner(engine, DESCRIBE)
    outcomes = engine.run_batch([request(items[i]) for i in pending], describe)
    for i, outcome in zip(pending, outcomes, strict=True):
        if isinstance(outcome, Exception):  # failed after its retries: never worth failing the run
            stats.llm_failures += 1
            out[i] = offline_description(request(items[i])).summary
            continue
        out[i] = outcome.summary
        if i in digests:
            for_next[digests[i]] = outcome.summary
        if outcome.kept:
            stats.kept_as_is += 1
        elif outcome.calls:
            stats.llm_calls += outcome.calls
        else:
            stats.offline += 1
    return out, stats
