"""The typed NLP layer of offline extraction: spaCy's NER spans (`pipeline.core.ner`) on top of the rules.

- A rule mention that an NER span overlaps gets the span's type as a vote of NER_VOTE (a rule's head-word
  or honorific vote, 3, still wins over one statistical label; labels repeated over a unit's mentions win
  over context cues, 1). The rules keep spotting and cleaning the name: the span only types it.
- An NER span no rule spotted ('Tiny Tim' after a quote, 'de Gaulle') becomes a mention of its own, cleaned
  by the same stop list and name checks as the rules'.
- Labels map onto GraphRAG's types (person, organization, geo, event); the other naming labels stay typed
  concepts (NORP -> group, WORK_OF_ART -> work, PRODUCT -> product, LAW -> law, LANGUAGE -> language)
  instead of GENERIC_TYPE; numbers, dates and quantities are not entities and type nothing.
"""

from __future__ import annotations

from collections import Counter

from pipeline.core.names import normalize_name
from pipeline.core.ner import NerSpan
from pipeline.ops.extraction.spotting import (
    Mention,
    Tok,
    acceptable_name,
    is_shouting,
    surface_form,
    trim_span,
)
from pipeline.ops.extraction.text import Sentence

NER_TYPES = {
    "PERSON": "person",
    "ORG": "organization",
    "GPE": "geo",
    "LOC": "geo",
    "FAC": "geo",
    "EVENT": "event",
}
# Types of the other labels that name something: kept as typed concepts, never offered as GraphRAG types.
CONCEPT_TYPES = {
    "NORP": "group",
    "WORK_OF_ART": "work",
    "PRODUCT": "product",
    "LAW": "law",
    "LANGUAGE": "language",
}
# Between a rule's weak context cue (1) and its strong head-word/honorific rule (3): see the docstring.
NER_VOTE = 2


def ner_type(label: str, allowed: set[str]) -> str | None:
    """The type an NER label gives, or None (a number or date, or a GraphRAG type not requested)."""
    if label in NER_TYPES:
        return NER_TYPES[label] if NER_TYPES[label] in allowed else None
    return CONCEPT_TYPES.get(label)


def apply_ner(
    mentions: list[Mention],
    sentences: list[Sentence],
    tokens_by_sentence: list[list[Tok]],
    spans: list[NerSpan],
    lower_vocab: set[str],
    allowed: set[str],
) -> list[Mention]:
    """`mentions` with the spans' type votes added, plus a mention for each span no rule spotted."""
    by_sentence: dict[int, list[Mention]] = {}
    for m in mentions:
        by_sentence.setdefault(m.sentence, []).append(m)
    added: list[Mention] = []
    for span in spans:
        etype = ner_type(span.label, allowed)
        if etype is None:
            continue
        s = next((i for i, sent in enumerate(sentences) if sent.start <= span.start < sent.end), None)
        if s is None:
            continue
        offset, tokens = sentences[s].start, tokens_by_sentence[s]
        inside = [
            k for k, t in enumerate(tokens) if t.start + offset >= span.start and t.end + offset <= span.end
        ]
        if not inside:
            continue
        first, last = inside[0], inside[-1]
        overlapping = [m for m in by_sentence.get(s, []) if m.first_token <= last and m.last_token >= first]
        for m in overlapping:
            m.votes[etype] += NER_VOTE
        if overlapping:
            continue
        mention = _span_mention(sentences[s], s, tokens, first, last, lower_vocab, etype)
        if mention is not None:
            added.append(mention)
            by_sentence.setdefault(s, []).append(mention)
    return mentions + added


def _span_mention(
    sentence: Sentence,
    index: int,
    tokens: list[Tok],
    first: int,
    last: int,
    lower_vocab: set[str],
    etype: str,
) -> Mention | None:
    trimmed = trim_span(tokens, first, last, lower_vocab)
    if trimmed is None:
        return None
    first, last = trimmed
    words = [tokens[k].text for k in range(first, last + 1)]
    if not any(w[0].isupper() for w in words):
        return None  # the small model tags some lower-case phrases ('the ghost'); a name is capitalised
    surface = surface_form(sentence.text[tokens[first].start : tokens[last].end])
    key = normalize_name(surface)
    if not key or not acceptable_name(words, key, is_shouting(tokens)):
        return None
    return Mention(key, surface, index, first, last, Counter({etype: NER_VOTE}))
