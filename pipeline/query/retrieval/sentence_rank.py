"""Which sentences of an answer's context say most of what the question asks, without embedding them.

The offline answers (basic, local, DRIFT's steps) quote the context's best sentences. They used to embed
every candidate sentence at query time: 100-500 sentences, 2-5 s of the embedding model per question on
a 2-core CPU, over 90% of an offline basic search (`bench/bench_scale.py`). The rows themselves are
already ranked by meaning (basic's passages by their best window's cosine, local's by the builder), so
what is left to decide is which sentence of those rows answers, and the question's own words say that:

- a sentence's score is the share of the question's content words it contains (Snowball stems, stop and
  question words left out), each word counted once. Not weighted by rarity among the candidates: in a
  retrieved context the question's subject is in most sentences, and that weighting would count it
  least ('What happens at Fezziwig's party?' would prefer any sentence with 'happen' to the party's);
- the share is of all the question's words, so that a score is comparable across contexts (DRIFT
  orders its steps by their best sentence's);
- equal scores keep the rows' order, so that a question whose words the context lacks gets the best
  rows' sentences first.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache

from pipeline.query.retrieval.intent import QUESTION_WORDS, STOPWORDS

_WORD = re.compile(r"[^\W_]+", re.UNICODE)


@lru_cache(maxsize=1)
def stemmer():  # noqa: ANN202 - Stemmer.Stemmer
    """The English Snowball stemmer (PyStemmer, its data in the wheel), built once: the offline answers'
    sentence ranking and local search's BM25 index stem alike."""
    import Stemmer

    return Stemmer.Stemmer("english")


def stems(text: str) -> frozenset[str]:
    """The content words of `text` as Snowball stems (lower-cased; stop and question words out)."""
    return _sentence_stems(text) if len(text) <= _CACHED_CHARS else _stems(text)


# A context's sentences come back on other questions: a sentence's stems are remembered, a long text's
# (a whole context) are not, so the cache holds at most 65,536 x 1,000 characters and their stems.
_CACHED_CHARS = 1_000


@lru_cache(maxsize=65_536)
def _sentence_stems(text: str) -> frozenset[str]:
    return _stems(text)


def _stems(text: str) -> frozenset[str]:
    words = [
        w for w in (m.lower() for m in _WORD.findall(text)) if w not in STOPWORDS and w not in QUESTION_WORDS
    ]
    return frozenset(stemmer().stemWords([w for w in words if len(w) > 1 or w.isdigit()]))


def rank_by_question(question: str, sentences: Sequence[str]) -> list[tuple[int, float]]:
    """(index into `sentences`, score in [0, 1]) for every sentence, best first; ties in the given order."""
    terms = stems(question)
    if not terms:
        return [(i, 0.0) for i in range(len(sentences))]
    scores = [len(terms & stems(s)) / len(terms) for s in sentences]
    return sorted(enumerate(scores), key=lambda kv: -kv[1])
