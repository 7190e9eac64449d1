"""Random walk with restart on a CSR adjacency, and the exact personalized PageRank it estimates.

The walk is Mastra's: at each step the current node is recorded; then with probability
``restart_prob`` the walker jumps back to its seed, otherwise it moves to a neighbour picked with
probability proportional to the edge weight (a node without neighbours sends it back to the seed).
Mastra finds neighbours by scanning the whole edge list at every step (O(E) per step); here a step
is a binary search in the row's cumulative weights, and the walks of all seeds advance together.

Over a long walk the visit frequencies converge to the stationary distribution of that chain,
which is personalized PageRank with the seed as restart vector and dangling nodes restarting too:
``ppr`` computes it by power iteration.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components


@dataclass
class Adjacency:
    """Directed weighted adjacency in CSR form: the neighbours of node i are
    ``indices[indptr[i]:indptr[i+1]]`` with ``weights`` in the same positions."""

    indptr: np.ndarray  # int64, n + 1
    indices: np.ndarray  # int32
    weights: np.ndarray  # float32, > 0

    @property
    def n(self) -> int:
        return len(self.indptr) - 1

    @classmethod
    def from_pairs(
        cls, n: int, rows: np.ndarray, cols: np.ndarray, weights: np.ndarray, symmetric: bool
    ) -> Adjacency:
        """CSR from (row, col, weight) triples; ``symmetric`` adds each pair in both directions.
        Repeated pairs are merged with their weights summed, which keeps transition odds unchanged."""
        if symmetric:
            rows, cols = np.concatenate([rows, cols]), np.concatenate([cols, rows])
            weights = np.concatenate([weights, weights])
        matrix = sp.csr_matrix(
            (weights.astype(np.float64), (rows.astype(np.int64), cols.astype(np.int64))), shape=(n, n)
        )
        matrix.sum_duplicates()
        matrix.sort_indices()
        return cls(
            matrix.indptr.astype(np.int64),
            matrix.indices.astype(np.int32),
            matrix.data.astype(np.float32),
        )

    @cached_property
    def csr(self) -> sp.csr_matrix:
        return sp.csr_matrix((self.weights, self.indices, self.indptr), shape=(self.n, self.n))

    def subgraph(self, nodes: np.ndarray) -> Adjacency:
        """The adjacency induced on ``nodes`` (sorted indices), renumbered 0..len(nodes)-1."""
        sub = self.csr[nodes][:, nodes].tocsr()
        sub.sort_indices()
        return Adjacency(sub.indptr.astype(np.int64), sub.indices.astype(np.int32), sub.data)

    @cached_property
    def cumulative(self) -> np.ndarray:
        """Running sum of all weights, row after row, with a leading 0 (float64 for exact picks)."""
        return np.concatenate([[0.0], np.cumsum(self.weights, dtype=np.float64)])

    @cached_property
    def components(self) -> np.ndarray:
        """Weakly connected component label of each node."""
        if self.n == 0:
            return np.zeros(0, dtype=np.int32)
        return connected_components(self.csr, directed=True, connection="weak")[1]


def random_walk_scores(
    adj: Adjacency,
    seeds: np.ndarray,
    seed_weights: np.ndarray,
    steps: int,
    restart_prob: float,
    rng: np.random.Generator,
) -> tuple[np.ndarray, np.ndarray]:
    """(visited nodes, score of each) where score = sum over seeds of weight * visit frequency."""
    k = len(seeds)
    seeds = seeds.astype(np.int64)
    cum = adj.cumulative
    restart_draws = rng.random((steps, k))
    pick_draws = rng.random((steps, k))
    visits = np.empty((steps, k), dtype=np.int64)
    pos = seeds.copy()
    for t in range(steps):
        visits[t] = pos
        start, end = adj.indptr[pos], adj.indptr[pos + 1]
        base = cum[start]
        # First neighbour whose running weight reaches r * total: Mastra's subtract-until-<=0 pick.
        target = base + pick_draws[t] * (cum[end] - base)
        chosen = np.searchsorted(cum, target, side="left") - 1
        chosen = np.clip(chosen, start, np.maximum(end - 1, start))
        move = (restart_draws[t] >= restart_prob) & (end > start)
        if not move.any():
            pos = seeds.copy()
            continue
        # Rows without neighbours get a harmless in-range index; `move` sends them to the seed.
        pos = np.where(move, adj.indices[np.minimum(chosen, len(adj.indices) - 1)], seeds)
    per_visit = np.broadcast_to(seed_weights / steps, (steps, k)).ravel()
    nodes, inverse = np.unique(visits.ravel(), return_inverse=True)
    scores = np.bincount(inverse, weights=per_visit, minlength=len(nodes))
    return nodes, scores


def personalized_pagerank(
    adj: Adjacency,
    seeds: np.ndarray,
    restart_prob: float,
    tol: float = 1e-10,
    max_iter: int = 10_000,
) -> tuple[np.ndarray, np.ndarray]:
    """(nodes, K x len(nodes) stationary visit distributions of the walk from each seed).

    Only the components holding a seed are iterated: the walk can never leave them.
    """
    seeds = seeds.astype(np.int64)
    labels = adj.components
    nodes = np.flatnonzero(np.isin(labels, labels[seeds]))
    sub = adj.subgraph(nodes) if len(nodes) < adj.n else adj
    local = np.searchsorted(nodes, seeds)
    m, k = len(nodes), len(seeds)
    matrix = sub.csr.astype(np.float64)
    out_weight = np.asarray(matrix.sum(axis=1)).ravel()
    dangling = out_weight == 0
    transition_t = (sp.diags(np.where(dangling, 0.0, 1.0 / np.where(dangling, 1.0, out_weight))) @ matrix).T
    transition_t = transition_t.tocsr()
    restart = np.zeros((m, k))
    restart[local, np.arange(k)] = 1.0
    dist = restart.copy()
    for _ in range(max_iter):
        stuck = dist[dangling].sum(axis=0)  # mass on nodes without neighbours goes back to the seed
        new = restart_prob * restart + (1.0 - restart_prob) * (transition_t @ dist + restart * stuck)
        delta = np.abs(new - dist).sum(axis=0).max()
        dist = new
        if delta < tol:
            break
    return nodes, dist.T
