"""The scores of one answered question and their aggregates per mode and type (`pipeline eval`).

- context recall: the share of the gold documents (matched by title or id, a file extension ignored) the
  context came from; with no gold documents, the share of the gold passages found in the context (a
  passage counts when `PASSAGE_FOUND` of its content words are in it: GraphRAG-Bench's evidence is a
  paraphrase, seldom verbatim);
- answer coverage: the share of the gold answer's content words found in the context (the best of the
  answer and its aliases). A proxy that needs no model: the words being there does not make the answer
  right, only possible;
- answer words: the share of the gold answer's content words found in the mode's answer itself (what the
  user reads; offline, the sentences the extractive answer quoted), by the same rule;
- judge: the model's verdict when one is configured (`pipeline.eval.judge`), correct = 1, partially = 0.5.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from pipeline.eval.questions import EvalQuestion
from pipeline.query.common.shown import Context
from pipeline.query.retrieval.intent import STOPWORDS

PASSAGE_FOUND = 0.8
_WORD = re.compile(r"\w+", re.UNICODE)
_CITATION = re.compile(r"\[Data: [^\]]*\]")
VERDICT_SCORE = {"correct": 1.0, "partially": 0.5, "incorrect": 0.0}


def content_words(text: str) -> list[str]:
    """Lower-cased words less the stop words, in order, once each (numbers kept, single letters not)."""
    words = (w.lower() for w in _WORD.findall(text))
    return list(dict.fromkeys(w for w in words if (len(w) > 1 or w.isdigit()) and w not in STOPWORDS))


def _doc_key(name: str) -> str:
    name = " ".join(name.lower().split())
    return re.sub(r"\.(txt|md|json|jsonl|csv|html?|pdf)$", "", name)


@dataclass
class Scored:
    """One question asked of one mode: what it scored and what was missing."""

    id: str
    type: str
    mode: str
    question: str
    status: str
    context_recall: float | None = None
    answer_coverage: float | None = None
    answer_words: float | None = None  # the gold answer's words in the mode's answer
    page_hit: float | None = None  # a gold page among the first five cited places (pipeline.eval.pages)
    page_spans: list[int] = field(default_factory=list)  # pages each cited passage covers
    missing_gold: list[str] = field(default_factory=list)
    missing_words: list[str] = field(default_factory=list)
    judge: str | None = None  # correct | partially | incorrect | unjudged; None: no judge configured
    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_s: float = 0.0
    route: str | None = None  # auto: the mode it chose
    error: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def score(q: EvalQuestion, context: Context) -> tuple[float | None, list[str], float | None, list[str]]:
    """(context recall, the gold items missing, answer coverage, the answer words missing)."""
    words = set(content_words(" ".join(context.texts)))
    recall: float | None = None
    missing_gold: list[str] = []
    if q.gold_documents:
        have = {_doc_key(d) for d in context.documents}
        missing_gold = [d for d in q.gold_documents if _doc_key(d) not in have]
        recall = 1 - len(missing_gold) / len(q.gold_documents)
    elif q.gold_passages:
        for p in q.gold_passages:
            need = content_words(p)
            if need and sum(w in words for w in need) / len(need) < PASSAGE_FOUND:
                missing_gold.append(p)
        recall = 1 - len(missing_gold) / len(q.gold_passages)
    coverage, missing_words = words_found(q, words)
    return recall, missing_gold, coverage, missing_words


def words_found(q: EvalQuestion, words: set[str]) -> tuple[float | None, list[str]]:
    """The share of the gold answer's content words in `words` (the best of the answer and its aliases)
    and those missing; None when the question has no answer with a content word."""
    coverage: float | None = None
    missing_words: list[str] = []
    for answer in q.answers:
        need = content_words(answer)
        if not need:
            continue
        missing = [w for w in need if w not in words]
        share = 1 - len(missing) / len(need)
        if coverage is None or share > coverage:
            coverage, missing_words = share, missing
    return coverage, missing_words


def answer_words(q: EvalQuestion, answer: str) -> float | None:
    """The share of the gold answer's content words in the mode's answer (citations left out)."""
    return words_found(q, set(content_words(_CITATION.sub(" ", answer))))[0]


def _mean(values: list[float | None]) -> float | None:
    given = [v for v in values if v is not None]
    return round(100 * sum(given) / len(given), 1) if given else None


def _median(values: list[int]) -> float | None:
    return float(np.median(values)) if values else None


def aggregate(rows: list[Scored]) -> dict[str, Any]:
    """Means (in %), counts, tokens and latency percentiles of one group of scored questions."""
    latency = [r.latency_s for r in rows] or [0.0]
    judged = [VERDICT_SCORE[r.judge] for r in rows if r.judge in VERDICT_SCORE]
    return {
        "questions": len(rows),
        "context_recall": _mean([r.context_recall for r in rows]),
        "answer_coverage": _mean([r.answer_coverage for r in rows]),
        "answer_words": _mean([r.answer_words for r in rows]),
        "page_recall_at_5": _mean([r.page_hit for r in rows]),
        "median_page_span": _median([s for r in rows for s in r.page_spans]),
        "judge_accuracy": round(100 * sum(judged) / len(judged), 1) if judged else None,
        "judged": len(judged),
        "unjudged": sum(r.judge == "unjudged" for r in rows),
        "calls": sum(r.calls for r in rows),
        "prompt_tokens": sum(r.prompt_tokens for r in rows),
        "completion_tokens": sum(r.completion_tokens for r in rows),
        "latency_p50_ms": round(1000 * float(np.percentile(latency, 50)), 1),
        "latency_p95_ms": round(1000 * float(np.percentile(latency, 95)), 1),
        "statuses": dict(Counter(r.status for r in rows)),
        "failures": sum(r.error is not None or r.status in ("failed", "cancelled") for r in rows),
        **({"routes": dict(Counter(r.route for r in rows))} if any(r.route for r in rows) else {}),
    }


def summarize(rows: list[Scored], modes: list[str]) -> dict[str, Any]:
    """Per mode: the aggregate overall and per question type (types in order of first appearance)."""
    types = list(dict.fromkeys(r.type for r in rows))
    out: dict[str, Any] = {}
    for mode in modes:
        mine = [r for r in rows if r.mode == mode]
        out[mode] = {
            "overall": aggregate(mine),
            "by_type": {t: aggregate([r for r in mine if r.type == t]) for t in types},
        }
    return out
