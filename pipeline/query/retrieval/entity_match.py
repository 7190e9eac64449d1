"""Entity matching for local search: exact, alias, fuzzy and semantic channels fused with RRF.

Unlike graphrag-ts, each channel is ranked by its own score before fusion (there, rank was database
load order), aliases gathered during resolution are used (there, an empty list), the semantic channel
searches the entity vectors precomputed in LanceDB (there, every entity name was embedded on every
query), and the fused list is capped.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from rapidfuzz import fuzz, process

from pipeline.core import schema
from pipeline.core.names import normalize_name
from pipeline.core.rrf import reciprocal_rank_fusion
from pipeline.io.store import NamespaceStore
from pipeline.query.caches.vector_cache import nearest
from pipeline.query.retrieval.intent import STOPWORDS, QueryIntent
from pipeline.settings.bound import FromSettings, setting


@dataclass(frozen=True)
class MatchOptions(FromSettings):
    rrf_k: int = setting("local_rrf_k")  # graphrag-ts's service default (Settings.local_rrf_k)
    max_seeds: int = 10
    fuzzy_threshold: float = 88.0  # rapidfuzz ratio, 0-100
    # Cosine of the question and the entity's vector (of its title); None: the embedder's `calibration.entity`
    # (local search fills it in).
    semantic_threshold: float | None = None
    semantic_top_k: int = 20


@dataclass
class EntityMatch:
    id: str
    title: str
    score: float  # fused RRF score
    channels: dict[str, float] = field(default_factory=dict)  # channel -> that channel's own score


@dataclass(frozen=True)
class NameLookup:
    """Entity ids by normalised name and by normalised alias, built once per loaded index: matching a
    question is then a dictionary lookup per word n-gram instead of a regex per entity (10,000
    entities took 1 s a question that way)."""

    names: dict[str, tuple[str, ...]]
    aliases: dict[str, tuple[str, ...]]
    longest: int  # words in the longest key
    keys: tuple[str, ...] = ()  # the distinct names, for fuzzy matching
    # How names and questions are made comparable: entity resolution's merge key by default; any
    # normaliser that leaves words separated by single spaces keeps `grams` exact.
    normalize: Callable[[str], str] = normalize_name

    @classmethod
    def build(
        cls, entities: dict[str, dict[str, Any]], normalize: Callable[[str], str] = normalize_name
    ) -> NameLookup:
        names: dict[str, list[str]] = {}
        aliases: dict[str, list[str]] = {}
        for eid, e in entities.items():
            key = e.get("name_key") or normalize(e["title"])
            names.setdefault(key, []).append(eid)
            for alias in e.get("aliases") or []:
                if k := normalize(alias):
                    aliases.setdefault(k, []).append(eid)
        longest = max((len(k.split()) for k in [*names, *aliases]), default=0)
        return cls(
            {k: tuple(v) for k, v in names.items()},
            {k: tuple(v) for k, v in aliases.items()},
            longest,
            tuple(names),
            normalize,
        )

    def grams(self, question: str) -> list[str]:
        """The normalised question's word n-grams up to the longest key: exactly the strings that occur
        in it on word boundaries (normalisation leaves single spaces between words)."""
        words = self.normalize(question).split()
        return [
            " ".join(words[i : i + n])
            for n in range(1, min(self.longest, len(words)) + 1)
            for i in range(len(words) - n + 1)
        ]


def _lookup_channel(keys: dict[str, tuple[str, ...]], grams: list[str]) -> list[tuple[str, float]]:
    best: dict[str, float] = {}
    for gram in grams:
        if len(gram) < 2 or gram in STOPWORDS:
            continue
        for eid in keys.get(gram, ()):
            best[eid] = max(best.get(eid, 0.0), float(len(gram)))
    return sorted(best.items(), key=lambda h: (-h[1], h[0]))


def exact_channel(
    question: str, entities: dict[str, dict[str, Any]], lookup: NameLookup | None = None
) -> list[tuple[str, float]]:
    """Entities whose name occurs in the question on word boundaries; longer names rank first."""
    lookup = lookup or NameLookup.build(entities)
    return _lookup_channel(lookup.names, lookup.grams(question))


def alias_channel(
    question: str, entities: dict[str, dict[str, Any]], lookup: NameLookup | None = None
) -> list[tuple[str, float]]:
    lookup = lookup or NameLookup.build(entities)
    return _lookup_channel(lookup.aliases, lookup.grams(question))


def _phrases(question: str, intent: QueryIntent, max_len: int = 4) -> list[str]:
    words = [w for w in normalize_name(question).split() if w]
    grams = {" ".join(words[i : i + n]) for n in range(1, max_len + 1) for i in range(len(words) - n + 1)}
    grams |= {normalize_name(e) for e in intent.entities}
    return [g for g in grams if len(g) >= 4 and g not in STOPWORDS]


FUZZY_PER_PHRASE = 5  # names kept per question phrase: a phrase is one name, misspelt at most a few ways


def fuzzy_channel(
    question: str,
    intent: QueryIntent,
    entities: dict[str, dict[str, Any]],
    threshold: float,
    lookup: NameLookup | None = None,
) -> list[tuple[str, float]]:
    """Names within `threshold` (rapidfuzz ratio) of a phrase of the question: typos, plurals, spellings.
    All phrases against all names in one rapidfuzz matrix (C, with the cutoff pruning) instead of one
    Python-level scan per phrase."""
    lookup = lookup or NameLookup.build(entities)
    phrases = sorted(_phrases(question, intent))
    if not phrases or not lookup.keys:
        return []
    scores = process.cdist(phrases, lookup.keys, scorer=fuzz.ratio, score_cutoff=threshold, workers=1)
    best: dict[str, float] = {}
    for row in scores:
        hits = np.flatnonzero(row)
        for idx in hits[np.lexsort((hits, -row[hits]))][:FUZZY_PER_PHRASE]:
            for eid in lookup.names[lookup.keys[idx]]:
                best[eid] = max(best.get(eid, 0.0), float(row[idx]))
    return sorted(best.items(), key=lambda h: (-h[1], h[0]))


def semantic_channel(
    store: NamespaceStore, query_vector: np.ndarray, threshold: float, top_k: int
) -> list[tuple[str, float]]:
    """Nearest entity vectors (of their titles) above `threshold` cosine: in memory, or in LanceDB for
    a table too large to hold (`vector_cache`)."""
    hits = nearest(store, schema.LANCE_ENTITIES, "id", query_vector, top_k)
    if hits is None:  # too many entities to hold in memory: LanceDB searches them
        table = store.open_lance_table(schema.LANCE_ENTITIES)
        rows = table.search(query_vector).metric("cosine").select(["id", "_distance"]).limit(top_k).to_list()
        hits = [(r["id"], 1.0 - float(r["_distance"])) for r in rows]
    return [h for h in hits if h[1] >= threshold]


def match_entities(
    question: str,
    intent: QueryIntent,
    entities: dict[str, dict[str, Any]],
    store: NamespaceStore,
    query_vector: np.ndarray | None,
    options: MatchOptions = MatchOptions(),
    lookup: NameLookup | None = None,
) -> list[EntityMatch]:
    """Seed entities, best first: the four channels fused with RRF, capped, plus exact intent matches."""
    if query_vector is not None and options.semantic_threshold is None:
        raise ValueError(
            "a query vector needs options.semantic_threshold (the embedder's calibration.entity)"
        )
    lookup = lookup or NameLookup.build(entities)
    channels = {
        "exact": exact_channel(question, entities, lookup),
        "alias": alias_channel(question, entities, lookup),
        "fuzzy": fuzzy_channel(question, intent, entities, options.fuzzy_threshold, lookup),
        "semantic": (
            semantic_channel(store, query_vector, options.semantic_threshold, options.semantic_top_k)
            if query_vector is not None
            else []
        ),
    }
    channels = {name: [h for h in hits if h[0] in entities] for name, hits in channels.items()}
    fused = reciprocal_rank_fusion([[eid for eid, _ in hits] for hits in channels.values()], k=options.rrf_k)
    matches = []
    for eid, score in fused[: options.max_seeds]:
        own = {name: s for name, hits in channels.items() for e, s in hits if e == eid}
        matches.append(EntityMatch(eid, entities[eid]["title"], score, own))
    # Entities the parsed intent names exactly are seeds even if the cap cut them.
    have = {m.id for m in matches}
    for name in intent.entities:
        for eid in lookup.names.get(normalize_name(name), ()):
            if eid not in have:
                have.add(eid)
                matches.append(EntityMatch(eid, entities[eid]["title"], 0.0, {"intent": 1.0}))
    return matches
