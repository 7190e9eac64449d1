"""Which communities a local question reaches: the matched entities' graph neighbourhood, the reports
nearest to the question, and their reciprocal-rank fusion (graphrag-ts's local retrieval, seed-systems-
notes §A3, with the semantic search at the requested level and structural overlap as a third list)."""

from __future__ import annotations

from collections import deque
from typing import Any

import numpy as np

from pipeline.core import schema
from pipeline.core.rrf import reciprocal_rank_fusion
from pipeline.io.store import NamespaceStore
from pipeline.query.caches.vector_cache import held_vectors, nearest
from pipeline.query.retrieval.local_index import LocalIndex


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
    """The communities of the reached entities: their leaves, or at `level` their ancestor (or self) at
    that level. An entity whose branch stops above `level` has no community there and adds none (asking
    for level 1 never returns a level-0 community)."""
    found = {index.lift(index.leaf_of[e], level) for e in reached if e in index.leaf_of}
    return sorted(c for c in found if _eligible(index, c, level) or level is None)


def _eligible(index: LocalIndex, community: int, level: int | None) -> bool:
    row = index.communities.get(community)
    if row is None:
        return False
    return row["level"] == level if level is not None else not row["children"]


def semantic_candidates(index: LocalIndex, vector: Any, level: int | None, k: int) -> list[tuple[int, float]]:
    """Community reports nearest to the question-and-themes vector, at the requested level (default: leaves)."""
    store, limit = index.store, max(4 * k, 32)
    hits = nearest(store, schema.LANCE_COMMUNITY_REPORTS, "community", vector, limit, level)
    if hits is None:  # too many reports to hold in memory: LanceDB searches them
        table = store.open_lance_table(schema.LANCE_COMMUNITY_REPORTS)
        search = table.search(vector).metric("cosine").select(["community", "_distance"]).limit(limit)
        if level is not None:
            search = search.where(f"level = {int(level)}", prefilter=True)
        hits = [(row["community"], 1.0 - float(row["_distance"])) for row in search.to_list()]
    return [(c, sim) for c, sim in hits if _eligible(index, c, level)][:k]


def report_vectors(store: NamespaceStore, communities: list[int]) -> dict[int, Any]:
    """community -> the report vector `report_embeddings` stored, for those of `communities` it has.

    All of a namespace's report vectors are read once per version of the table and kept
    (`vector_cache`): a filtered scan per question cost 60 ms on 1 MB of text."""
    if not communities:
        return {}
    matrix = held_vectors(store, schema.LANCE_COMMUNITY_REPORTS, "community")
    if matrix is None:
        return _report_vectors_of(store, communities)  # too many to hold: only these are read
    return {c: v for c in communities if (v := matrix.vector(c)) is not None}


def _report_vectors_of(store: NamespaceStore, communities: list[int]) -> dict[int, np.ndarray]:
    wanted = ", ".join(str(int(c)) for c in communities)
    table = store.open_lance_table(schema.LANCE_COMMUNITY_REPORTS)
    rows = table.search().where(f"community IN ({wanted})").select(["community", "vector"]).to_list()
    return {int(r["community"]): np.asarray(r["vector"], dtype=np.float32) for r in rows}


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
    # The seeds' edge weight to each neighbour, summed once: a hub seed has thousands of neighbours, and
    # walking them again for every candidate was most of this ranking's time.
    towards: dict[str, float] = {}
    for s in seeds:
        for m, w in index.neighbours.get(s, {}).items():
            towards[m] = towards.get(m, 0.0) + w
    overlap, structural = {}, {}
    for c in candidates:
        members = index.members(c)
        union = members | seed_set
        overlap[c] = len(members & seed_set) / len(union) if union else 0.0
        if len(members) <= len(towards):
            structural[c] = sum(towards[m] for m in members if m in towards)
        else:
            structural[c] = sum(w for m, w in towards.items() if m in members)
    lists = [
        [c for c, _ in semantic],
        [c for c in sorted(candidates, key=lambda c: -overlap[c]) if overlap[c] > 0],
        [c for c in sorted(candidates, key=lambda c: -structural[c]) if structural[c] > 0],
    ]
    return [(int(c), s) for c, s in reciprocal_rank_fusion(lists, k=rrf_k)][:top_k]


def community_row(index: LocalIndex, community: int, score: float, seeds: list[str]) -> dict[str, Any]:
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
