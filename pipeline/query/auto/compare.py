"""Offline auto's choice among the passage modes (rule 4 of `pipeline.query.auto.search`): which of
basic's, local's and lazy's contexts to keep for a question, from what each shows of the question.

Rules, in order:
1. The question's content words (Snowball stems, `sentence_rank.stems`) are weighted by their rarity
   in the namespace's text units: idf = log(1 + N / (1 + df)). A name in three passages says more
   about where the answer is than a word in most of them.
2. Each mode's context is scored by its best passage: the weighted share of the question held by
   its one row that holds most of it. The answer to a lookup usually sits in one passage that
   matches the question well, and a large context (lazy's) does not win by its size.
3. Equal best passages (the same passage tops several contexts, as it often does) are told apart by
   the share of the question's words the whole context holds: a multi-hop question's parts are
   spread over several passages, and the context that reaches them all holds more of it.
4. Still equal: basic, then local, then lazy.

Chosen on MuSiQue-100's first 50 questions and GraphRAG-Bench novel split A's first five books, and
checked on the other halves (`bench/auto_rule.py`, gold answer coverage of the kept context, %):

| rule | MuSiQue 1-50 | MuSiQue 51-100 | novel books 1-5 | novel books 6-10 |
| --- | --- | --- | --- | --- |
| best single mode | 86.7 (lazy) | 97.7 (local) | 81.5 (basic) | 80.9 (basic) |
| the whole context's share alone (the rule before) | 87.0 | 86.3 | 79.7 | 81.1 |
| best passage, then the whole context (these rules) | 89.7 | 91.0 | 81.6 | 81.4 |

No constant is fitted: the weights are the corpus's own frequencies, the order of the two keys the
argument above.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass
from typing import Any

from pipeline.core import schema
from pipeline.io.store import NamespaceStore
from pipeline.query.caches.index_cache import cached_index, table_versions
from pipeline.query.common.mode import Mode
from pipeline.query.retrieval.sentence_rank import stems

TIE_ORDER = ("basic", "local", "lazy")  # rule 4


@dataclass(frozen=True)
class StemFrequencies:
    """In how many of the namespace's text units each stem occurs (rule 1), per text-units version."""

    units: int
    df: Counter

    def idf(self, stem: str) -> float:
        return math.log(1 + self.units / (1 + self.df.get(stem, 0)))


def stem_frequencies(store: NamespaceStore) -> StemFrequencies:
    versions = table_versions(store, parquet=[schema.TEXT_UNITS])

    def build() -> StemFrequencies:
        df: Counter = Counter()
        texts = store.read_table(schema.TEXT_UNITS, ["text"]).column("text").to_pylist()
        for text in texts:
            df.update(stems(text or ""))
        return StemFrequencies(len(texts), df)

    return cached_index(store, "auto_stem_frequencies", versions, build)


def context_scores(question: str, texts: list[str], frequencies: StemFrequencies) -> dict[str, float]:
    """`best_passage`: the weighted share of the question's words in the context's best row (rule 2);
    `context`: the share of them in the whole context (rule 3)."""
    terms = stems(question)
    if not terms:
        return {"best_passage": 0.0, "context": 0.0}
    weight = {t: frequencies.idf(t) for t in terms}
    total = sum(weight.values())
    per_text = [terms & stems(t) for t in texts]
    best = max((sum(weight[t] for t in found) for found in per_text), default=0.0)
    shown = set().union(*per_text) if per_text else set()
    # rounded so that shares equal but for float noise count as equal (rule 4 then decides)
    return {"best_passage": round(best / total, 4), "context": round(len(shown) / len(terms), 4)}


def keep(scores: dict[str, dict[str, float]]) -> str:
    """The mode whose context to keep, by rules 2-4."""
    order = {m: i for i, m in enumerate(TIE_ORDER)}
    return max(
        scores,
        key=lambda m: (scores[m]["best_passage"], scores[m]["context"], -order.get(m, len(order))),
    )


def mode_scores(mode: Mode, question: str, result: dict[str, Any], store: NamespaceStore) -> dict[str, float]:
    """The scores of one mode's result, on the context it shows (its record's `shown`)."""
    shown = mode.shown(result, store).texts if mode.shown else []
    return context_scores(question, shown, stem_frequencies(store))
