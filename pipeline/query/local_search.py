"""Local search: entities matched in the question → graph neighbourhood → ranked communities → evidence
(chunks and claims cited to document offsets) → an answer that labels summaries and evidence apart.

The flow is graphrag-ts's local retrieval (seed-systems-notes §A3); where it differs it fixes a flaw
noted there: channels ranked by their own scores, aliases used, precomputed entity vectors, a seed
cap, themes used for the community search, and a selector that falls back to the ranking instead
of answering from nothing.
"""

from __future__ import annotations

import time
from collections import deque
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from pipeline.core import schema
from pipeline.core.rrf import reciprocal_rank_fusion
from pipeline.embeddings.base import Embedder
from pipeline.engine.base import Engine
from pipeline.io.store import NamespaceStore
from pipeline.llm.batch import CancelSignal, is_cancelled
from pipeline.llm.errors import LLMCancelledError, LLMError, LLMTimeoutError
from pipeline.query.entity_match import EntityMatch, MatchOptions, match_entities
from pipeline.query.local_index import LocalIndex, load_local_index
from pipeline.query.local_tasks import CommunitySelection
from pipeline.query.query_intent import QueryIntent
from pipeline.query.search import text_search, vector_search


class LocalSearchError(ValueError):
    """The request is invalid for this namespace (e.g. a community level that does not exist)."""


class _Stopped(Exception):
    pass


@dataclass(frozen=True)
class LocalSearchConfig:
    top_k: int = 8
    community_level: int | None = None
    max_hops: int = 2
    report_top_k: int = 8
    vector_chunk_top_k: int = 12
    keyword_limit: int = 24
    max_keyword_terms: int = 16
    evidence_limit: int = 40
    max_claims: int = 20
    rrf_k: int = 60
    match: MatchOptions = field(default_factory=MatchOptions)


@dataclass
class LocalSearchResult:
    question: str
    status: str  # completed | no_results | cancelled
    answer: str = ""
    intent: dict[str, Any] = field(default_factory=dict)
    seeds: list[dict[str, Any]] = field(default_factory=list)
    communities: list[dict[str, Any]] = field(default_factory=list)
    evidence: list[dict[str, Any]] = field(default_factory=list)
    selection: str = ""  # llm | offline | fallback
    reason: str | None = None
    usage: dict[str, Any] = field(default_factory=dict)
    duration_s: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def expand(index: LocalIndex, seeds: list[str], hops: int) -> list[str]:
    """Entities within `hops` edges of the seeds (seeds first, then by distance)."""
    dist = {s: 0 for s in seeds}
    queue = deque(seeds)
    while queue:
        node = queue.popleft()
        if dist[node] >= hops:
            continue
        for nb in sorted(index.neighbours.get(node, {})):
            if nb not in dist:
                dist[nb] = dist[node] + 1
                queue.append(nb)
    return sorted(dist, key=lambda e: (dist[e], e))


def topology_candidates(index: LocalIndex, reached: list[str], level: int | None) -> list[int]:
    found = {index.lift(index.leaf_of[e], level) for e in reached if e in index.leaf_of}
    return sorted(found)


def _eligible(index: LocalIndex, community: int, level: int | None) -> bool:
    row = index.communities.get(community)
    if row is None:
        return False
    return row["level"] == level if level is not None else not row["children"]


def semantic_candidates(index: LocalIndex, vector: Any, level: int | None, k: int) -> list[tuple[int, float]]:
    """Community reports nearest to the question-and-themes vector, at the requested level (default: leaves)."""
    store = index.store
    if not store.has_lance_table(schema.LANCE_COMMUNITY_REPORTS):
        return []
    table = store.open_lance_table(schema.LANCE_COMMUNITY_REPORTS)
    search = table.search(vector).metric("cosine").select(["community", "_distance"]).limit(max(4 * k, 32))
    if level is not None:
        search = search.where(f"level = {int(level)}", prefilter=True)
    out = []
    for row in search.to_list():
        if _eligible(index, row["community"], level):
            out.append((row["community"], 1.0 - float(row["_distance"])))
        if len(out) >= k:
            break
    return out


def rank_communities(
    index: LocalIndex,
    seeds: list[str],
    topology: list[int],
    semantic: list[tuple[int, float]],
    top_k: int,
    rrf_k: int,
) -> list[tuple[int, float]]:
    """RRF of semantic rank, Jaccard overlap of seeds and members, and seed-member edge-weight sum."""
    candidates = list(dict.fromkeys([*topology, *(c for c, _ in semantic)]))
    seed_set = set(seeds)
    overlap, structural = {}, {}
    for c in candidates:
        members = index.members(c)
        union = members | seed_set
        overlap[c] = len(members & seed_set) / len(union) if union else 0.0
        structural[c] = sum(w for s in seeds for m, w in index.neighbours.get(s, {}).items() if m in members)
    lists = [
        [c for c, _ in semantic],
        [c for c in sorted(candidates, key=lambda c: -overlap[c]) if overlap[c] > 0],
        [c for c in sorted(candidates, key=lambda c: -structural[c]) if structural[c] > 0],
    ]
    return [(int(c), s) for c, s in reciprocal_rank_fusion(lists, k=rrf_k)][:top_k]


def keyword_terms(intent: QueryIntent, seeds: list[EntityMatch], cap: int) -> list[str]:
    ordered = [
        *intent.entities,
        *(m.title for m in seeds if {"exact", "alias"} & set(m.channels)),
        *intent.keywords,
        *(m.title for m in seeds),
    ]
    return list(dict.fromkeys(t.strip() for t in ordered if t and t.strip()))[:cap]


def recall_chunks(
    store: NamespaceStore, embedder: Embedder, question: str, terms: list[str], cfg: LocalSearchConfig
) -> list[dict]:
    """Vector hits first, then keyword hits by matched-term count and length; deduplicated, capped."""
    vector_hits = vector_search(store, embedder, question, k=cfg.vector_chunk_top_k)
    counts: dict[str, int] = {}
    rows: dict[str, dict] = {}
    for term in terms:
        for hit in text_search(store, term, k=cfg.keyword_limit):
            counts[hit["id"]] = counts.get(hit["id"], 0) + 1
            rows.setdefault(hit["id"], hit)
    keyword_hits = sorted(rows.values(), key=lambda h: (-counts[h["id"]], -len(h["text"])))[
        : cfg.keyword_limit
    ]
    merged, seen = [], set()
    for hit, channel in [*((h, "vector") for h in vector_hits), *((h, "keyword") for h in keyword_hits)]:
        if hit["id"] not in seen:
            seen.add(hit["id"])
            merged.append({**hit, "channel": channel, "matched_terms": counts.get(hit["id"], 0)})
    return merged[: cfg.evidence_limit]


def gather_evidence(
    index: LocalIndex, selected: list[int], chunks: list[dict], cfg: LocalSearchConfig
) -> list[dict]:
    """Chunks tied to the selected communities' members first, then other recalled chunks; then members' claims."""
    members = set().union(*(index.members(c) for c in selected)) if selected else set()
    tied_units = {u for e in members for u in (index.entities.get(e, {}).get("text_unit_ids") or [])}
    ordered = [c for c in chunks if c["id"] in tied_units] + [c for c in chunks if c["id"] not in tied_units]
    evidence: list[dict] = []
    for c in ordered[: cfg.evidence_limit]:
        evidence.append(
            {
                "id": c["id"],
                "kind": "chunk",
                "text": c["text"],
                "document_id": c["document_id"],
                "document_title": c.get("document_title") or index.document_titles.get(c["document_id"]),
                "start_char": c["start_char"],
                "end_char": c["end_char"],
                "score": round(float(c.get("score") or 0.0), 4),
                "tied_to_community": c["id"] in tied_units,
                "channel": c["channel"],
            }
        )
    seen: set[str] = set()
    claims = 0
    for e in sorted(members):
        for claim in index.claims_by_entity.get(e, []):
            if claim["id"] in seen or claims >= cfg.max_claims:
                continue
            seen.add(claim["id"])
            claims += 1
            unit = index.text_units.get(claim.get("text_unit_id") or "", {})
            has_span = claim.get("start_char") is not None and claim.get("end_char") is not None
            evidence.append(
                {
                    "id": claim["id"],
                    "kind": "claim",
                    "text": (claim.get("source_text") if has_span else None)
                    or claim.get("description")
                    or "",
                    "description": claim.get("description"),
                    "status": claim.get("status"),
                    "document_id": claim.get("document_id") or unit.get("document_id"),
                    "document_title": index.document_titles.get(
                        claim.get("document_id") or unit.get("document_id") or ""
                    ),
                    "start_char": claim["start_char"] if has_span else unit.get("start_char"),
                    "end_char": claim["end_char"] if has_span else unit.get("end_char"),
                    "score": None,
                    "tied_to_community": True,
                    "channel": "claim",
                }
            )
    for i, ev in enumerate(evidence, start=1):
        ev["ref"] = f"E{i}"
    return evidence


async def local_search_async(
    store: NamespaceStore,
    question: str,
    engine: Engine,
    embedder: Embedder,
    cfg: LocalSearchConfig = LocalSearchConfig(),
    deadline: float | None = None,
    cancel: CancelSignal | None = None,
) -> LocalSearchResult:
    started = time.monotonic()
    if not question or not question.strip():
        raise ValueError("question must not be empty")
    level = cfg.community_level
    if level is not None and (isinstance(level, bool) or not isinstance(level, int) or level < 0):
        raise LocalSearchError(f"community level must be a non-negative integer, got {level!r}")
    index = load_local_index(store)
    if level is not None and level not in index.levels:
        raise LocalSearchError(
            f"community level {level} does not exist in namespace {store.namespace!r}; levels are {index.levels}"
        )
    result = LocalSearchResult(question, "completed")
    match = cfg.match
    if match.semantic_threshold is None:
        match = replace(match, semantic_threshold=embedder.calibration.entity)

    def check(stage: str) -> None:
        if is_cancelled(cancel):
            raise _Stopped(f"cancelled before {stage}")
        if deadline is not None and time.monotonic() >= deadline:
            raise _Stopped(f"deadline passed before {stage}")

    try:
        check("query parsing")
        intent = await engine.query_intent(question, deadline=deadline, cancel=cancel)
        result.intent = intent.model_dump()
        check("entity matching")
        query_vector = embedder.embed([question])[0]
        theme_vector = embedder.embed([" ".join([question, *intent.themes])])[0]
        seeds = match_entities(question, intent, index.entities, store, query_vector, match)
        result.seeds = [
            {"id": m.id, "title": m.title, "score": round(m.score, 6), "channels": m.channels} for m in seeds
        ]
        check("community resolution")
        seed_ids = [m.id for m in seeds]
        topology = topology_candidates(index, expand(index, seed_ids, cfg.max_hops), level)
        semantic = semantic_candidates(index, theme_vector, level, cfg.report_top_k)
        ranked = rank_communities(index, seed_ids, topology, semantic, cfg.top_k, cfg.rrf_k)
        check("recall")
        chunks = recall_chunks(
            store, embedder, question, keyword_terms(intent, seeds, cfg.max_keyword_terms), cfg
        )
        candidates = [_community_row(index, c, score, seed_ids) for c, score in ranked]
        check("community selection")
        selection = await _select(engine, embedder, question, candidates, deadline, cancel)
        chosen = [c for c in candidates if c["id"] in set(selection.selected_community_ids)]
        result.selection = engine.kind  # metadata: whose selector chose
        if not chosen:
            chosen, result.selection = candidates, "fallback"
        result.communities = chosen
        result.evidence = gather_evidence(index, [c["id"] for c in chosen], chunks, cfg)
        if not result.evidence and not chosen:
            result.status, result.reason = "no_results", "no entity, community or chunk matched the question"
            result.answer = "The index holds nothing relevant to this question."
        else:
            check("answer")
            result.answer = await engine.local_answer(
                question, chosen, result.evidence, embedder, deadline=deadline, cancel=cancel
            )
    except (_Stopped, LLMCancelledError, LLMTimeoutError) as exc:
        result.status, result.reason = "cancelled", str(exc)
    result.usage = dict(engine.usage.counters())
    result.duration_s = round(time.monotonic() - started, 3)
    return result


async def _select(
    engine: Engine,
    embedder: Embedder,
    question: str,
    candidates: list[dict],
    deadline: float | None,
    cancel: CancelSignal | None,
) -> CommunitySelection:
    try:
        return await engine.select_communities(
            question, candidates, embedder, deadline=deadline, cancel=cancel
        )
    except (LLMCancelledError, LLMTimeoutError):
        raise
    except LLMError:
        return CommunitySelection(selected_community_ids=[])  # invalid selection -> the ranked fallback


def _community_row(index: LocalIndex, community: int, score: float, seeds: list[str]) -> dict[str, Any]:
    row = index.communities.get(community, {})
    report = index.reports.get(community, {})
    members = index.members(community)
    return {
        "id": community,
        "level": row.get("level"),
        "title": report.get("title") or row.get("title") or f"Community {community}",
        "summary": report.get("summary") or "",
        "score": round(score, 6),
        "matched_entities": [index.entities[s]["title"] for s in seeds if s in members],
    }


def local_search(
    namespace: str,
    question: str,
    top_k: int = 8,
    community_level: int | None = None,
    *,
    settings: Any = None,
    engine: Engine | None = None,
    embedder: Embedder | None = None,
    config: LocalSearchConfig | None = None,
    deadline: float | None = None,
    cancel: CancelSignal | None = None,
) -> LocalSearchResult:
    """Answer a question about specific entities for one namespace, with evidence cited to source offsets.
    The engine and embedder default to the configured ones (`pipeline.runtime.query_runtime`)."""
    from pipeline.runtime import query_runtime

    rt = query_runtime(namespace, settings=settings, engine=engine, embedder=embedder)
    cfg = config or LocalSearchConfig()
    cfg = LocalSearchConfig(**{**cfg.__dict__, "top_k": top_k, "community_level": community_level})
    return rt.engine.run_sync(
        local_search_async(rt.store, question, rt.engine, rt.embedder, cfg, deadline, cancel)
    )
