"""Description summaries for resolved entities and relationships.

- No description, or one distinct description: kept as it is, no call (GraphRAG does the same).
- Two or more, offline: representative sentences within `description_max_tokens`: sentences that open
  with one of the names (they say what the entity is) first, then informative-length sentences, each
  group in text order; duplicates dropped.
- Two or more, LLM: one `summarize_descriptions` call; when the descriptions exceed
  `summarize_max_input_tokens` they are summarized iteratively (a batch that fits, then its summary
  plus the next batch, ...). A call that fails after its retries falls back to the offline summary and
  is counted; it never fails the run.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pipeline import prompts
from pipeline.core.names import normalize_name
from pipeline.core.tokens import count_tokens
from pipeline.ops.extraction.text import split_sentences

_INFORMATIVE_WORDS = (8, 50)


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


def distinct(descriptions: Sequence[str]) -> tuple[str, ...]:
    seen: dict[str, None] = {}
    for d in descriptions:
        d = d.strip()
        if d and d not in seen:
            seen[d] = None
    return tuple(seen)


def offline_summary(names: Sequence[str], descriptions: Sequence[str], max_tokens: int, encoding: str) -> str:
    """Representative sentences of the descriptions within `max_tokens` (at least one sentence)."""
    keys = [normalize_name(n) for n in names if n]
    longest = max((len(n) for n in names), default=0)
    sentences: dict[str, None] = {}
    for d in descriptions:
        for s in split_sentences(d):
            sentences.setdefault(s.clean, None)

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
) -> tuple[str, int]:
    """(summary, number of calls made); raises LLMError when a call fails."""
    prompt = prompts.SUMMARIZE_DESCRIPTIONS
    overhead = count_tokens(prompt.system + prompt.user, encoding) + sum(
        count_tokens(n, encoding) for n in names
    )
    budget = max(max_input_tokens - overhead, 64)
    calls = 0

    async def call(batch: list[str]) -> str:
        nonlocal calls
        from pipeline.engine.base import Summary

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


def summarize_all(
    items: Sequence[DescriptionItem], settings: Any, engine: Any = None
) -> tuple[list[str], SummaryStats]:
    """One description per item, in order, following the rules in the module docstring."""
    stats = SummaryStats()
    out: list[str | None] = [None] * len(items)
    pending: list[int] = []
    use_llm = engine is not None and getattr(engine, "kind", "offline") == "llm"
    for i, item in enumerate(items):
        if not item.descriptions:
            out[i] = ""
            stats.kept_as_is += 1
        elif len(item.descriptions) == 1 and use_llm:
            out[i] = item.descriptions[0]
            stats.kept_as_is += 1
        elif use_llm:
            pending.append(i)
        else:
            out[i] = offline_summary(
                item.names, item.descriptions, settings.description_max_tokens, settings.encoding
            )
            stats.offline += 1
    if pending:

        async def one(i: int) -> tuple[str, int]:
            item = items[i]
            return await llm_summary(
                engine.client,
                item.names,
                item.descriptions,
                max_input_tokens=settings.summarize_max_input_tokens,
                max_words=settings.summarize_max_words,
                encoding=settings.encoding,
            )

        for i, outcome in zip(pending, engine.run_batch(pending, one), strict=True):
            if isinstance(outcome, Exception):
                stats.llm_failures += 1
                item = items[i]
                out[i] = offline_summary(
                    item.names, item.descriptions, settings.description_max_tokens, settings.encoding
                )
            else:
                out[i], calls = outcome
                stats.llm_calls += calls
    return [o or "" for o in out], stats
