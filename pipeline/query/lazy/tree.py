"""What lazy search walks: the community hierarchy over text units, and each subquery's ranking of units.

The tree comes from the communities table (any index: NLP or model-built; no reports needed): a
community holds the text units of its member entities (its `text_unit_ids`, or its members' when a table
lacks them), its children partition its members. Units that
no community holds (no entity was found in them) form one extra root, `ORPHANS`, so no unit is out of
reach. A namespace without communities is that one root.

A subquery ranks units with local search's passage ranking (`local.passage_rank`: dense best-piece cosine
and BM25, fused by RRF; `SIGNALS`); a community ranks by its best-ranked unit.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from pipeline.embeddings.base import Embedder
from pipeline.io.store import NamespaceStore
from pipeline.query.caches.index_cache import cached_index
from pipeline.query.retrieval.local_index import LocalIndex
from pipeline.query.retrieval.passage_index import PassageIndex
from pipeline.query.retrieval.passage_rank import PassageRankOptions, rank_passages

ORPHANS = -1  # the root of the units no community holds
# Local search's dense and BM25 signals. Its entity walk (seeded by the nearest passages, lazy search has
# no matched entities) added nothing on MuSiQue-100: 171 gold passages in the contexts with it, 172 without.
SIGNALS: tuple[str, ...] = ("dense", "bm25")


@dataclass
class CommunityTree:
    roots: list[int]
    children: dict[int, list[int]]
    units: dict[int, list[int]]  # community -> its unit rows in the passage index
    levels: dict[int, int] = field(default_factory=dict)


def build_tree(graph: LocalIndex, passages: PassageIndex) -> CommunityTree:
    units: dict[int, list[int]] = {}
    children: dict[int, list[int]] = {}
    roots: list[int] = []
    levels: dict[int, int] = {}
    held: set[int] = set()
    for c, row in sorted(graph.communities.items()):
        ids = row.get("text_unit_ids") or [  # a table without the column: its members' units
            u
            for e in row.get("entity_ids") or []
            for u in graph.entities.get(e, {}).get("text_unit_ids") or []
        ]
        rows = sorted({passages.position[u] for u in ids if u in passages.position})
        units[c], levels[c] = rows, int(row.get("level") or 0)
        children[c] = [int(x) for x in row.get("children") or [] if x in graph.communities]
        held.update(rows)
        if row.get("parent") in (-1, None) or row.get("parent") not in graph.communities:
            roots.append(c)
    orphans = [r for r in range(passages.n_units) if r not in held]
    if orphans:
        roots.append(ORPHANS)
        units[ORPHANS], children[ORPHANS], levels[ORPHANS] = orphans, [], 0
    return CommunityTree(roots, children, units, levels)


def load_tree(store: NamespaceStore, graph: LocalIndex, passages: PassageIndex) -> CommunityTree:
    """The tree for these passage-index versions, built once per version (`index_cache`)."""
    return cached_index(store, "lazy_tree", passages.versions, lambda: build_tree(graph, passages))


@dataclass
class Ranking:
    """One subquery's units, best first: rank of each unit row (0 = best) and its nearest piece."""

    subquery: str
    vector: np.ndarray
    rank: dict[int, int]

    def best(self, rows: list[int]) -> int | None:
        ranks = [self.rank[r] for r in rows if r in self.rank]
        return min(ranks) if ranks else None

    def order(self, communities: list[int], tree: CommunityTree) -> list[int]:
        """The communities holding a ranked unit, by their best-ranked unit."""
        scored = [(b, c) for c in communities if (b := self.best(tree.units.get(c, []))) is not None]
        return [c for _, c in sorted(scored)]


def rank_units(
    store: NamespaceStore, passages: PassageIndex, embedder: Embedder, subqueries: list[str], depth: int
) -> list[Ranking]:
    options = PassageRankOptions(signals=SIGNALS, depth=depth)
    vectors = embedder.embed(subqueries)
    out = []
    for subquery, vector in zip(subqueries, vectors, strict=True):
        ranked = rank_passages(store, passages, subquery, vector, [], options)
        rows = [passages.position[p.id] for p in ranked[:depth]]
        out.append(Ranking(subquery, vector, {r: i for i, r in enumerate(rows)}))
    return out


def nearest_pieces(passages: PassageIndex, ranking: Ranking, rows: list[int]) -> list[np.ndarray]:
    """Each unit's piece nearest the subquery (its cosine is the unit's dense score)."""
    out = []
    for row in rows:
        pieces = np.flatnonzero(passages.piece_owner == row)
        if not len(pieces):
            out.append(None)
            continue
        sims = passages.piece_vectors[pieces] @ ranking.vector
        out.append(passages.piece_vectors[pieces[int(np.argmax(sims))]])
    return out
