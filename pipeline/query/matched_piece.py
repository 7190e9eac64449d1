"""The piece of a retrieved passage that matched a query, for a person to read.

A vector hit is a whole text unit (thousands of characters) while what matched is one part of it. Rules:
1. The passage's front matter (`pipeline.core.boilerplate`) is blanked first, so a list of
   illustrations or a caption is never the part shown.
2. The passage is split into sentences (`pipeline.core.sentences`, offsets kept) and each is embedded
   with the embedder that indexed it; the sentence nearest the query by cosine is the match. Its
   offsets are the document's, like the passage's.
3. The query's content words (not stop words) are marked in the match as `**word**`.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from pipeline.core.sentences import split_sentences
from pipeline.embeddings.base import Embedder
from pipeline.query.retrieval.intent import QUESTION_WORDS, STOPWORDS

_WORD = re.compile(r"[\w'’-]+", re.UNICODE)
MAX_SENTENCES = 200  # per passage: a unit is at most a few thousand tokens


@dataclass(frozen=True)
class Match:
    text: str  # whitespace collapsed
    start_char: int  # in the document
    end_char: int
    score: float
    marked: str  # `text` with the query's words as **word**

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def query_terms(query: str) -> list[str]:
    """The query's content words, lower-cased, in order, once each."""
    words = (w.lower().strip("'’-") for w in _WORD.findall(query))
    return list(dict.fromkeys(w for w in words if len(w) > 2 and w not in STOPWORDS | QUESTION_WORDS))


def mark_terms(text: str, terms: list[str]) -> str:
    """`text` with each whole-word occurrence of `terms` (any case) wrapped in ** **."""
    if not terms:
        return text
    pattern = re.compile(r"\b(" + "|".join(re.escape(t) for t in terms) + r")\b", re.IGNORECASE)
    return pattern.sub(lambda m: f"**{m.group(0)}**", text)


def matching_pieces(
    query: str, passages: list[dict[str, Any]], embedder: Embedder | Any
) -> list[Match | None]:
    """For each passage ({text, start_char}, its text already masked) the sentence nearest `query`;
    None for a passage with no sentence left. One embedding call for all of them."""
    spans: list[tuple[int, int, int, str]] = []  # passage, start, end, clean text
    for i, p in enumerate(passages):
        offset = int(p.get("start_char") or 0)
        sentences = [s for s in split_sentences(p.get("text") or "") if s.clean][:MAX_SENTENCES]
        spans.extend((i, offset + s.start, offset + s.end, s.clean) for s in sentences)
    out: list[Match | None] = [None] * len(passages)
    if not spans:
        return out
    vectors = np.asarray(embedder.embed([query] + [s[3] for s in spans]), dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=1)
    norms[norms == 0] = 1.0
    scores = (vectors[1:] @ vectors[0]) / (norms[1:] * norms[0])
    terms = query_terms(query)
    for (i, start, end, text), score in zip(spans, scores.tolist(), strict=True):
        best = out[i]
        if best is None or score > best.score:
            out[i] = Match(text, start, end, round(float(score), 4), mark_terms(text, terms))
    return out
