"""Entity matching for local search: exact, alias, fuzzy and semantic channels fused with RRF.

Unlike graphrag-ts, each channel is ranked by its own score before fusion (there, rank was database
load order), aliases gathered during resolution are used (there, an empty list), the semantic channel
searches the entity vectors precomputed in LanceDB (there, every entity name was embedded on every
query), and the fused list is capped.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from rapidfuzz import fuzz, process

from pipeline.core import schema
from pipeline.core.names import normalize_name
from pipeline.core.rrf import reciprocal_rank_fusion
from pipeline.io.store import NamespaceStore
from pipeline.query.query_intent import STOPWORDS, QueryIntent


@dataclass(frozen=True)
class MatchOptions:
    rrf_k: int = 60
    max_seeds: int = 10
    fuzzy_threshold: float = 88.0  # rapidfuzz ratio, 0-100
    # Cosine of the question and "title: description"; None: the embedder's `calibration.entity`
    # (local search fills it in).
    semantic_threshold: float | None = None
    semantic_top_k: int = 20


@dataclass
class EntityMatch:
    id: str
    title: str
    score: float  # fused RRF score
    channels: dict[str, float] = field(default_factory=dict)  # channel -> that channel's own score


def _contains(haystack: str, needle: str) -> bool:
    return bool(needle) and re.search(rf"(?<!\w){re.escape(needle)}(?!\w)", haystack) is not None


def exact_channel(question: str, entities: dict[str, dict[str, Any]]) -> list[tuple[str, float]]:
    """Entities whose name occurs in the question on word boundaries; longer names rank first."""
    q = normalize_name(question)
    hits = []
    for eid, e in entities.items():
        key = e.get("name_key") or normalize_name(e["title"])
        if len(key) >= 2 and key not in STOPWORDS and _contains(q, key):
            hits.append((eid, float(len(key))))
    return sorted(hits, key=lambda h: -h[1])


def alias_channel(question: str, entities: dict[str, dict[str, Any]]) -> list[tuple[str, float]]:
    q = normalize_name(question)
    hits = []
    for eid, e in entities.items():
        best = max(
            (
                len(k)
                for a in e.get("aliases") or []
                if (k := normalize_name(a)) and len(k) >= 2 and _contains(q, k)
            ),
            default=0,
        )
        if best:
            hits.append((eid, float(best)))
    return sorted(hits, key=lambda h: -h[1])


def _phrases(question: str, intent: QueryIntent, max_len: int = 4) -> list[str]:
    words = [w for w in normalize_name(question).split() if w]
    grams = {" ".join(words[i : i + n]) for n in range(1, max_len + 1) for i in range(len(words) - n + 1)}
    grams |= {normalize_name(e) for e in intent.entities}
    return [g for g in grams if len(g) >= 4 and g not in STOPWORDS]


def fuzzy_channel(
    question: str, intent: QueryIntent, entities: dict[str, dict[str, Any]], threshold: float
) -> list[tuple[str, float]]:
    """Names within `threshold` (rapidfuzz ratio) of a phrase of the question: typos, plurals, spellings."""
    ids = list(entities)
    names = [entities[i].get("name_key") or normalize_name(entities[i]["title"]) for i in ids]
    best: dict[str, float] = {}
    for phrase in _phrases(question, intent):
        for _, score, idx in process.extract(
            phrase, names, scorer=fuzz.ratio, limit=5, score_cutoff=threshold
        ):
            eid = ids[idx]
            best[eid] = max(best.get(eid, 0.0), float(score))
    return sorted(best.items(), key=lambda h: -h[1])


def semantic_channel(
    store: NamespaceStore, query_vector: np.ndarray, threshold: float, top_k: int
) -> list[tuple[str, float]]:
    """Nearest entity vectors ("title: description") in LanceDB above `threshold` cosine."""
    if not store.has_lance_table(schema.LANCE_ENTITIES):
        return []
    rows = (
        store.open_lance_table(schema.LANCE_ENTITIES)
        .search(query_vector)
        .metric("cosine")
        .select(["id", "_distance"])
        .limit(top_k)
        .to_list()
    )
    hits = [(r["id"], 1.0 - float(r["_distance"])) for r in rows]
    return [h for h in hits if h[1] >= threshold]


def match_entities(
    question: str,
    intent: QueryIntent,
    entities: dict[str, dict[str, Any]],
    store: NamespaceStore,
    query_vector: np.ndarray | None,
    options: MatchOptions = MatchOptions(),
) -> list[EntityMatch]:
    """Seed entities, best first: the four channels fused with RRF, capped, plus exact intent matches."""
    if query_vector is not None and options.semantic_threshold is None:
        raise ValueError(
            "a query vector needs options.semantic_threshold (the embedder's calibration.entity)"
        )
    channels = {
        "exact": exact_channel(question, entities),
        "alias": alias_channel(question, entities),
        "fuzzy": fuzzy_channel(question, intent, entities, options.fuzzy_threshold),
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
    by_key: dict[str, list[str]] = {}
    for eid, e in entities.items():
        by_key.setdefault(e.get("name_key") or normalize_name(e["title"]), []).append(eid)
    have = {m.id for m in matches}
    for name in intent.entities:
        for eid in by_key.get(normalize_name(name), []):
            if eid not in have:
                have.add(eid)
                matches.append(EntityMatch(eid, entities[eid]["title"], 0.0, {"intent": 1.0}))
    return matches
