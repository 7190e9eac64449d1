"""Local search's passage ranking: several signals, each a ranked list of text units, fused with RRF.

The signals (each measured alone and left out in turn by `make eval`; docs/query-modes.md has the table):
- `dense`: cosine of the question and each unit's best piece (the unit's vector is the embedding of its
  document title and text, see `pipeline.index.text_unit_embeddings`);
- `bm25`: BM25 over each unit's document title and text;
- `ppr`: personalized PageRank over the entity–passage graph (`passage_index`), HippoRAG's idea: the
  walk restarts at the question's entities (weighted by specificity) and at the question's nearest
  passages, so it reaches the passage that shares an entity with the first hop but not the question's
  words, the second passage of a two-hop question. The passage nodes' scores rank passages;
- `walk`: the chunk graph's personalized PageRank from the question's nearest chunks (similarity edges
  instead of shared entities). Off by default: on MuSiQue it added nothing the other three did not.

Fusion is reciprocal rank fusion (k = 60, Cormack et al.'s constant, used unchanged elsewhere in the
pipeline): the signals' scores live on unrelated scales, and RRF needs no weights to be fitted.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from pipeline.chunk_graph.indexing import load_namespace_chunk_graph
from pipeline.core import schema
from pipeline.core.rrf import reciprocal_rank_fusion
from pipeline.io.store import NamespaceStore
from pipeline.query.caches.index_cache import cached_index, table_versions
from pipeline.query.retrieval.passage_index import PassageIndex, tokenize

SIGNALS = ("dense", "bm25", "ppr", "walk")


@dataclass(frozen=True)
class PassageRankOptions:
    signals: tuple[str, ...] = ("dense", "bm25", "ppr")
    # Each signal's list is cut here before fusion: RRF gives rank 100 a weight of 1/160, which
    # can no longer lift a passage into the evidence (40 passages) on its own.
    depth: int = 100
    rrf_k: int = 60
    # HippoRAG's damping: half of the walk's mass returns to the seeds at each step, so the scores
    # stay within two or three hops of the question, where multi-hop answers are.
    damping: float = 0.5
    iterations: int = 30  # 0.5**30 < 1e-9: converged far below any rank change
    # The nearest passages that seed the walk beside the question's entities: the first hop is
    # usually among them (dense R@5 is ~65 on MuSiQue), and their entities lead to the second.
    dense_seeds: int = 5
    walk_seeds: int = 10  # the chunk graph's seeds when `walk` is on
    # The restart mass on the question's entities; the rest goes to the nearest passages. Even
    # shares: neither kind of seed can drown the other, whichever corpus gives more of one.
    entity_share: float = 0.5

    def __post_init__(self) -> None:
        unknown = set(self.signals) - set(SIGNALS)
        if unknown or not self.signals:
            raise ValueError(f"passage signals must be a non-empty subset of {SIGNALS}, got {self.signals}")


@dataclass
class RankedPassage:
    id: str
    score: float  # fused RRF score
    ranks: dict[str, int] = field(default_factory=dict)  # signal -> 1-based rank in that signal's list


def dense_scores(index: PassageIndex, query_vector: np.ndarray) -> np.ndarray:
    """Each unit's best piece cosine (-1 for a unit without pieces)."""
    out = np.full(index.n_units, -1.0, dtype=np.float32)
    if len(index.piece_vectors):
        np.maximum.at(out, index.piece_owner, index.piece_vectors @ np.asarray(query_vector, np.float32))
    return out


def bm25_scores(index: PassageIndex, question: str) -> np.ndarray:
    out = np.zeros(index.n_units, dtype=np.float32)
    if index.bm25 is None:
        return out
    tokens = tokenize([question])
    if not tokens.ids or not tokens.ids[0]:
        return out  # only stop words
    docs, scores = index.bm25.retrieve(tokens, k=index.n_units, show_progress=False, n_threads=1)
    out[docs[0]] = scores[0]
    return out


def ppr_scores(
    index: PassageIndex, seed_entities: list[str], dense: np.ndarray, options: PassageRankOptions
) -> np.ndarray:
    """Personalized PageRank mass of each unit node. The restart vector gives half its mass to the
    question's entities in proportion to their specificity (`entity_share`) and the rest to the
    `dense_seeds` nearest passages in proportion to their cosine."""
    n_e = index.n_entities
    reset = np.zeros(n_e + index.n_units)
    ents = [index.entity_position[e] for e in dict.fromkeys(seed_entities) if e in index.entity_position]
    spec = index.specificity[ents] if ents else np.zeros(0)
    if ents and spec.sum() > 0:
        np.add.at(reset, np.asarray(ents), options.entity_share * spec / spec.sum())
    top = _top(dense, options.dense_seeds)
    cos = np.clip(dense[top], 0.0, None)
    if len(top) and cos.sum() > 0:
        reset[n_e + top] += (1.0 - options.entity_share) * cos / cos.sum()
    if reset.sum() <= 0:
        return np.zeros(index.n_units)
    reset /= reset.sum()
    x = reset.copy()
    for _ in range(options.iterations):
        x = (1.0 - options.damping) * reset + options.damping * (index.transition_t @ x)
    return x[n_e:]


def walk_ranking(store: NamespaceStore, index: PassageIndex, query_vector: np.ndarray, k: int) -> list[int]:
    """Units by the chunk graph's personalized PageRank from the nearest chunks; [] without a graph."""
    versions = table_versions(store, files=[schema.CHUNK_GRAPH_SNAPSHOT])
    if versions == (None,):
        return []
    graph = cached_index(store, "chunk_graph", versions, lambda: load_namespace_chunk_graph(store))
    hits = graph.query(query_vector, top_k=k, method="ppr")
    return [index.position[h.id] for h in hits if h.id in index.position]


def _top(scores: np.ndarray, k: int) -> np.ndarray:
    """Indices of the k highest scores, best first; ties by position (deterministic)."""
    if k <= 0 or len(scores) == 0:
        return np.zeros(0, dtype=np.int64)
    k = min(k, len(scores))
    part = np.argpartition(-scores, k - 1)[:k]
    return part[np.lexsort((part, -scores[part]))]


def signal_rankings(
    store: NamespaceStore,
    index: PassageIndex,
    question: str,
    query_vector: np.ndarray,
    seed_entities: list[str],
    options: PassageRankOptions,
) -> dict[str, list[int]]:
    """Each enabled signal's ranked unit rows (at most `depth`), best first."""
    dense = dense_scores(index, query_vector)
    out: dict[str, list[int]] = {}
    for signal in options.signals:
        if signal == "dense":
            scores = dense
        elif signal == "bm25":
            scores = bm25_scores(index, question)
        elif signal == "ppr":
            scores = ppr_scores(index, seed_entities, dense, options)
        else:
            out[signal] = walk_ranking(store, index, query_vector, options.walk_seeds)
            continue
        top = _top(scores, options.depth)
        out[signal] = [int(i) for i in top if scores[i] > (0 if signal != "dense" else -1)]
    return out


def rank_passages(
    store: NamespaceStore,
    index: PassageIndex,
    question: str,
    query_vector: np.ndarray,
    seed_entities: list[str],
    options: PassageRankOptions = PassageRankOptions(),
) -> list[RankedPassage]:
    """Units fused over the enabled signals, best first, each with its rank in every signal."""
    rankings = signal_rankings(store, index, question, query_vector, seed_entities, options)
    ranks = {s: {row: r + 1 for r, row in enumerate(rows)} for s, rows in rankings.items()}
    fused = reciprocal_rank_fusion(list(rankings.values()), k=options.rrf_k)
    return [
        RankedPassage(
            index.unit_ids[row],
            float(score),
            {s: ranks[s][row] for s in rankings if row in ranks[s]},
        )
        for row, score in fused
    ]
