"""Offline extraction: entities, relationships and claims from one text unit with rules, no model.

The idea behind GraphRAG's "fast" method, without its downloaded NLTK/spaCy models:
- entities are capitalised (multi-word) names, acronyms, honorific titles ('Mr. Fezziwig') and quoted
  titles, cleaned with a stop list; a name seen only at a sentence start and written in lower case
  elsewhere in the unit ('Person-centred therapy ... a person') is a common word, not a name;
- types come from head words ('... University' -> organization, 'Battle of ...' -> event), honorifics,
  a gazetteer of countries and large places, acronyms and context ('X said', 'in X'), and with `ner`
  (the NLP method's extractor) from spaCy's NER labels (`nlp.py`), which also add the names the rules
  missed; else GENERIC_TYPE;
- relationships are co-occurrences within a window of sentences (default: the same sentence), counted
  once per sentence; significance (NPMI) and pruning happen over the whole graph in resolution;
- claims are sentences whose subject is an entity followed by a verb; the object is the next entity;
- descriptions are the sentences themselves.
Spotting and typing live in `spotting.py`. Deterministic: the same text gives the same records.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Sequence

from pipeline.core.ner import NER_MODEL, NerSpan, entity_spans
from pipeline.ops.extraction import lexicon as lx
from pipeline.ops.extraction.models import (
    ExtractionRequest,
    RawClaim,
    RawEntity,
    RawRelationship,
    UnitExtraction,
)
from pipeline.ops.extraction.nlp import CONCEPT_TYPES, apply_ner
from pipeline.ops.extraction.spotting import (
    CALENDAR,
    OPENERS,
    Mention,
    Tok,
    capitalised_inside,
    decide_type,
    is_shouting,
    keep_initial,
    most_common,
    spot,
)
from pipeline.ops.extraction.text import TOKEN, Sentence, find_dates, split_sentences

OFFLINE_VERSION = "offline-2"
NLP_VERSION = f"offline-3+{NER_MODEL}"  # the rules with spaCy's NER on top
DESCRIPTION_SENTENCES = 5  # per entity per text unit
RELATIONSHIP_SENTENCES = 3

_LOWER_WORD = re.compile(r"\b[a-z][a-z'’]*\b")


def extract_request(request: ExtractionRequest) -> UnitExtraction:
    """`extract_unit` for an engine's extraction request, with NER when its options ask for it."""
    return extract_requests([request])[0]


def extract_requests(requests: Sequence[ExtractionRequest]) -> list[UnitExtraction]:
    """`extract_request` for several units, spaCy running over their texts in one `nlp.pipe` batch."""
    with_ner = [r for r in requests if r.options.ner]
    spans = iter(entity_spans([r.text for r in with_ner])) if with_ner else iter(())
    return [
        extract_unit(
            r.text,
            text_unit_id=r.text_unit_id,
            document_id=r.document_id,
            start_char=r.start_char,
            entity_types=r.options.entity_types,
            window=r.options.window,
            claims=r.options.extract_claims,
            ner=next(spans) if r.options.ner else None,
        )
        for r in requests
    ]


def extract_unit(
    text: str,
    *,
    text_unit_id: str,
    document_id: str,
    start_char: int = 0,
    entity_types: Sequence[str] = ("organization", "person", "geo", "event"),
    window: int = 1,
    claims: bool = True,
    ner: list[NerSpan] | None = None,
) -> UnitExtraction:
    """Entities, relationships and claims of one text unit; `start_char` places it in its document.
    `ner`: the unit's NER spans (`pipeline.core.ner.entity_spans`) to type and add names; None: rules only."""
    sentences = split_sentences(text)
    lower_vocab = set(_LOWER_WORD.findall(text))
    allowed = {t.lower() for t in entity_types}
    mentions: list[Mention] = []
    tokens_by_sentence = [
        [Tok(m.group(), m.start(), m.end()) for m in TOKEN.finditer(sentence.text)] for sentence in sentences
    ]
    capitalised = Counter(w for tokens in tokens_by_sentence for w in capitalised_inside(tokens))
    for i, (sentence, tokens) in enumerate(zip(sentences, tokens_by_sentence, strict=True)):
        mentions.extend(spot(sentence, i, tokens, lower_vocab, capitalised))
    mentions = keep_initial(mentions)
    if ner is not None:
        mentions = apply_ner(mentions, sentences, tokens_by_sentence, ner, lower_vocab, allowed)
        allowed = allowed | set(CONCEPT_TYPES.values())

    by_key: dict[str, list[Mention]] = defaultdict(list)
    for m in mentions:
        by_key[m.key].append(m)
    types = {key: decide_type(ms, allowed) for key, ms in by_key.items()}
    surfaces = {key: most_common([m.surface for m in ms]) for key, ms in by_key.items()}

    version = OFFLINE_VERSION if ner is None else NLP_VERSION
    result = UnitExtraction(text_unit_id, document_id, "offline", version, n_sentences=len(sentences))
    subjects = _claim_subjects(mentions, tokens_by_sentence, sentences)
    for key, ms in by_key.items():
        sent_ids = sorted({m.sentence for m in ms})
        ranked = sorted(sent_ids, key=lambda s: (0 if subjects.get(s) == key else 1, s))
        result.entities.append(
            RawEntity(
                name=surfaces[key],
                type=types[key],
                description=" ".join(sentences[s].clean for s in ranked[:DESCRIPTION_SENTENCES]),
                mentions=len(ms),
                evidence=[start_char + sentences[s].start for s in sent_ids],
            )
        )
    result.relationships = _cooccurrences(mentions, sentences, surfaces, start_char, window)
    if claims:
        result.claims = _claims(mentions, subjects, tokens_by_sentence, sentences, surfaces, start_char)
    return result


# ---- relationships ---------------------------------------------------------------------------------
def _cooccurrences(
    mentions: list[Mention],
    sentences: list[Sentence],
    surfaces: dict[str, str],
    start_char: int,
    window: int,
) -> list[RawRelationship]:
    """Pairs of entities in the same window of sentences; window 0 = the whole text unit."""
    keys_by_sentence: dict[int, list[str]] = defaultdict(list)
    for m in mentions:
        if m.key not in keys_by_sentence[m.sentence]:
            keys_by_sentence[m.sentence].append(m.key)
    # pair -> {first sentence index of each co-occurrence}, pair orientation: the earlier-mentioned first
    pairs: dict[tuple[str, str], set[int]] = defaultdict(set)
    order: dict[str, int] = {}
    for m in mentions:
        order.setdefault(m.key, len(order))
    items = sorted(keys_by_sentence.items())
    for idx, (i, keys_i) in enumerate(items):
        partners = [(i, keys_i)]
        for j, keys_j in items[idx + 1 :]:
            if window == 0 or j - i < window:
                partners.append((j, keys_j))
        for _j, keys_j in partners:
            for a in keys_i:
                for b in keys_j:
                    if a != b:
                        pair = (a, b) if order[a] < order[b] else (b, a)
                        pairs[pair].add(i)
    out = []
    for (a, b), sent_ids in sorted(pairs.items(), key=lambda kv: (order[kv[0][0]], order[kv[0][1]])):
        ids = sorted(sent_ids)
        text = " ".join(sentences[s].clean for s in ids[:RELATIONSHIP_SENTENCES])
        evidence = [] if window == 0 else [start_char + sentences[s].start for s in ids]
        strength = 1.0 if window == 0 else float(len(ids))
        out.append(RawRelationship(surfaces[a], surfaces[b], text, strength, evidence=evidence))
    return out


# ---- claims --------------------------------------------------------------------------------------
def _claim_subjects(
    mentions: list[Mention], tokens_by_sentence: list[list[Tok]], sentences: list[Sentence]
) -> dict[int, str]:
    """sentence index -> key of the entity that is the sentence's subject, for declarative sentences."""
    subjects: dict[int, str] = {}
    for m in sorted(mentions, key=lambda m: (m.sentence, m.first_token)):
        if m.sentence in subjects:
            continue
        tokens = tokens_by_sentence[m.sentence]
        clean = sentences[m.sentence].clean
        words = [t for t in tokens if t.text[0].isalnum()]
        if not 4 <= len(words) <= 60 or clean[0] in OPENERS or clean.endswith("?") or is_shouting(tokens):
            continue
        if not _opens_sentence(tokens[: m.first_token]):
            continue
        if _predicate(tokens, m.last_token) is not None:
            subjects[m.sentence] = m.key
    return subjects


_LEADING_WORDS = frozenset({"the", "a", "an", "and", "but", "then", "so"})
_DATE_PREPOSITIONS = frozenset({"in", "on", "by", "during", "after", "before", "since", "from", "until"})


def _opens_sentence(before: list[Tok]) -> bool:
    """Whether only articles/conjunctions or a date phrase ('In 1895,', 'On 3 May 1901') precede."""
    words = [t for t in before if t.text[0].isalnum()]
    if words and words[0].word in _DATE_PREPOSITIONS:
        rest = words[1:]
        return bool(rest) and all(t.text.isdigit() or t.word in CALENDAR for t in rest)
    return all(t.word in _LEADING_WORDS for t in words)


def _predicate(tokens: list[Tok], after: int) -> int | None:
    for k in range(after + 1, min(len(tokens), after + 13)):
        w = tokens[k].text
        if not w[0].isalpha():
            continue
        lw = w.lower()
        if lw in lx.CLAIM_VERBS or (w.islower() and lw.endswith("ed") and len(lw) >= 5):
            return k
    return None


def _claims(
    mentions: list[Mention],
    subjects: dict[int, str],
    tokens_by_sentence: list[list[Tok]],
    sentences: list[Sentence],
    surfaces: dict[str, str],
    start_char: int,
) -> list[RawClaim]:
    out = []
    for s, key in sorted(subjects.items()):
        sentence = sentences[s]
        tokens = tokens_by_sentence[s]
        subject = min((m for m in mentions if m.sentence == s and m.key == key), key=lambda m: m.first_token)
        pred = _predicate(tokens, subject.last_token)
        obj = next(
            (
                m.key
                for m in sorted(mentions, key=lambda m: m.first_token)
                if m.sentence == s and m.key != key and pred is not None and m.first_token > pred
            ),
            None,
        )
        words = {t.word for t in tokens}
        dates = find_dates(sentence.clean)
        out.append(
            RawClaim(
                subject=surfaces[key],
                object=surfaces[obj] if obj else None,
                claim_type=_claim_type(words, tokens, pred),
                status=_claim_status(words),
                start_date=dates[0] if dates else None,
                end_date=dates[-1] if dates else None,
                description=sentence.clean,
                source_text=sentence.text,
                start_char=start_char + sentence.start,
                end_char=start_char + sentence.end,
            )
        )
    return out


def _claim_type(words: set[str], tokens: list[Tok], pred: int | None) -> str:
    for claim_type, cues in lx.CLAIM_TYPES:
        if words & cues:
            return claim_type
    if pred is not None and tokens[pred].word in lx.DEFINITION_CUES:
        nxt = tokens[pred + 1].word if pred + 1 < len(tokens) else ""
        if nxt in lx.DEFINITION_FOLLOWERS:
            return "DEFINITION"
    return "STATEMENT"


def _claim_status(words: set[str]) -> str:
    if words & lx.FALSE_CUES:
        return "FALSE"
    if words & lx.SUSPECTED_CUES:
        return "SUSPECTED"
    return "TRUE"
