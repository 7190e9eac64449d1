"""ChunkGraph: Mastra's GraphRAG (chunk-similarity graph + random walk with restart) on a CSR.

Semantics follow Mastra's ``GraphRAG`` class (packages/rag/src/graph-rag): an undirected edge when
cosine > threshold (strict) with weight = cosine; a query takes the top-K chunks by cosine as seeds,
runs one walk with restart of ``random_walk_steps`` steps from each seed, and scores a node by
sum over seeds of (seed similarity x visit frequency); metadata filters are strict equality and
restrict both the seeds and the walk. Differences on purpose: the build never compares all pairs
one by one nor holds an n x n matrix, walks run on a CSR and are seeded (reproducible), an exact
personalized-PageRank mode gives the walk's limit, and snapshots are compact and validated.
"""

from __future__ import annotations

import json
import math
import os
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from functools import cached_property
from typing import Any, Literal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from pipeline.chunk_graph import snapshot as snap
from pipeline.chunk_graph.edges import BuildOptions, Mode, find_edges
from pipeline.chunk_graph.errors import ChunkGraphError
from pipeline.chunk_graph.walk import Adjacency, personalized_pagerank, random_walk_scores

DEFAULT_SEED = 0
# A query's defaults, Mastra's GraphRAG's (topK 10, randomWalkSteps 100, restartProb 0.15): the Mastra
# shim, the graph tool and the request models take them from here.
TOP_K = 10
RANDOM_WALK_STEPS = 100
RESTART_PROB = 0.15
Method = Literal["walk", "ppr"]


@dataclass(frozen=True)
class RankedNode:
    id: str
    content: str
    metadata: dict[str, Any]
    score: float

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _top(scores: np.ndarray, k: int) -> np.ndarray:
    """Indices of the k largest scores, best first; ties keep index order (a stable sort, as in JS)."""
    if k < len(scores):
        kth = np.partition(scores, len(scores) - k)[len(scores) - k]
        candidates = np.flatnonzero(scores >= kth)
    else:
        candidates = np.arange(len(scores))
    return candidates[np.argsort(-scores[candidates], kind="stable")][:k]


def _value_key(value: Any) -> tuple[str, Any] | None:
    """A key under which JSON scalars that JavaScript's ``===`` calls equal collide: booleans are not
    numbers, 1 and 1.0 are the same number. Objects and arrays are never ``===`` a filter value."""
    if value is None:
        return ("null", None)
    if isinstance(value, bool):
        return ("boolean", value)
    if isinstance(value, int | float):
        return ("number", float(value))
    if isinstance(value, str):
        return ("string", value)
    return None


class ChunkGraph:
    """A similarity graph over chunks; build with ``ChunkGraph.build`` or load a snapshot."""

    def __init__(self, data: snap.GraphData) -> None:
        self._data = data
        self._value_index: dict[str, dict[tuple[str, Any], np.ndarray]] = {}

    # ---- construction ---------------------------------------------------------------------
    @classmethod
    def build(
        cls,
        ids: Sequence[str] | pa.Array,
        contents: Sequence[str] | pa.Array,
        metadata: Sequence[Mapping[str, Any]] | None,
        vectors: np.ndarray | Sequence[Sequence[float]],
        threshold: float = 0.7,
        mode: Mode = "auto",
        **options: Any,
    ) -> ChunkGraph:
        """Build the graph. ``options`` are the other fields of ``BuildOptions`` (exact_max_nodes,
        block_size, neighbors, nprobes); ``build_info`` reports the mode chosen."""
        started = time.perf_counter()
        opts = BuildOptions(threshold=threshold, mode=mode, **options)
        matrix = np.asarray(vectors, dtype=np.float32)
        n = len(ids)
        if matrix.ndim != 2 or (n and matrix.shape[0] != n):
            raise ChunkGraphError(
                f"vectors must be a 2-D array with one row per id: got shape {matrix.shape} for {n} ids"
            )
        if len(contents) != n or (metadata is not None and len(metadata) != n):
            raise ChunkGraphError(
                f"ids, contents and metadata must have the same length: {n}, {len(contents)}, "
                f"{n if metadata is None else len(metadata)}"
            )
        if n == 0:
            matrix = matrix.reshape(0, matrix.shape[-1] if matrix.ndim == 2 else 0)
        if matrix.shape[1] < 1:
            raise ChunkGraphError("vectors must have at least one dimension")
        if not np.isfinite(matrix).all():
            bad = int(np.flatnonzero(~np.isfinite(matrix).all(axis=1))[0])
            raise ChunkGraphError(f"the vector of node {ids[bad]!r} has values that are not finite")
        id_array = pa.array(ids, pa.string()) if not isinstance(ids, pa.Array) else ids.cast(pa.string())
        if id_array.null_count or len(pc.unique(id_array)) != n:
            raise ChunkGraphError("node ids must be unique non-null strings")
        # One encoder for all rows: json.dumps with an option builds a new encoder per call, which was
        # a third of a 1,000-node build.
        encode = json.JSONEncoder(ensure_ascii=False).encode
        try:
            meta_json = ["{}"] * n if metadata is None else [encode(dict(m)) for m in metadata]
        except (TypeError, ValueError) as exc:
            raise ChunkGraphError(f"node metadata must be JSON objects: {exc}") from exc
        edges = find_edges(matrix, opts)
        adjacency = Adjacency.from_pairs(n, edges.rows, edges.cols, edges.weights, symmetric=True)
        info = {
            "mode": edges.mode,
            "requested_mode": mode,
            "nodes": n,
            "edges": len(edges.rows),
            "directed_edges": len(adjacency.indices),
            "threshold": threshold,
            **edges.params,
            "build_seconds": round(time.perf_counter() - started, 4),
        }
        contents_array = (
            contents.cast(pa.large_string())
            if isinstance(contents, pa.Array | pa.ChunkedArray)
            else pa.array(contents, pa.large_string())
        )
        if isinstance(contents_array, pa.ChunkedArray):
            contents_array = contents_array.combine_chunks()
        data = snap.GraphData(
            ids=id_array,
            contents=contents_array,
            metadata=pa.array(meta_json, pa.string()),
            vectors=matrix,
            adjacency=adjacency,
            dimension=int(matrix.shape[1]),
            threshold=float(threshold),
            info=info,
        )
        return cls(data)

    # ---- snapshots ------------------------------------------------------------------------
    def serialize(self) -> bytes:
        """The Arrow IPC snapshot as bytes (see ``pipeline.chunk_graph.snapshot``)."""
        return snap.serialize(self._data)

    @classmethod
    def deserialize(cls, snapshot: snap.Source, dimension: int | None = None) -> ChunkGraph:
        """Load a snapshot from bytes or a file path; raises SnapshotError on a bad one."""
        return cls(snap.deserialize(snapshot, dimension))

    def save(self, path: str | os.PathLike[str]) -> int:
        return snap.save(self._data, path)

    load = deserialize

    def to_mastra_json(self) -> dict[str, Any]:
        return snap.to_mastra_json(self._data)

    @classmethod
    def from_mastra_json(cls, snapshot: Mapping[str, Any]) -> ChunkGraph:
        return cls(snap.from_mastra_json(snapshot))

    # ---- inspection -----------------------------------------------------------------------
    @property
    def dimension(self) -> int:
        return self._data.dimension

    @property
    def threshold(self) -> float:
        return self._data.threshold

    @property
    def build_info(self) -> dict[str, Any]:
        return self._data.info

    @property
    def num_nodes(self) -> int:
        return self._data.adjacency.n

    @property
    def num_directed_edges(self) -> int:
        """Edges counted in both directions, as in Mastra's edge list."""
        return len(self._data.adjacency.indices)

    @property
    def num_edges(self) -> int:
        """Undirected edges (a graph built here is symmetric)."""
        return self.num_directed_edges // 2

    @cached_property
    def ids(self) -> list[str]:
        return self._data.ids.to_pylist()

    @cached_property
    def _index(self) -> dict[str, int]:
        return {node_id: i for i, node_id in enumerate(self.ids)}

    @cached_property
    def _metadata(self) -> list[dict[str, Any]]:
        return [json.loads(m) for m in self._data.metadata.to_pylist()]

    @cached_property
    def _norms(self) -> np.ndarray:
        # float32 is plenty for ranking the seeds, and avoids a float64 copy of every vector.
        vectors = self._data.vectors
        return np.sqrt(np.einsum("ij,ij->i", vectors, vectors)).astype(np.float64)

    def degrees(self) -> np.ndarray:
        """Out-degree of each node (its number of neighbours)."""
        return np.diff(self._data.adjacency.indptr)

    def neighbors(self, node_id: str) -> dict[str, float]:
        """Neighbour id -> edge weight of one node."""
        if node_id not in self._index:
            raise ChunkGraphError(f"no node with id {node_id!r}")
        adj, i = self._data.adjacency, self._index[node_id]
        lo, hi = adj.indptr[i], adj.indptr[i + 1]
        return {self.ids[j]: float(w) for j, w in zip(adj.indices[lo:hi], adj.weights[lo:hi], strict=True)}

    # ---- query ----------------------------------------------------------------------------
    def _allowed(self, filter: Mapping[str, Any] | None) -> np.ndarray | None:
        if not filter:
            return None
        if not isinstance(filter, Mapping):
            raise ChunkGraphError(f"filter must be a mapping of metadata key to value, got {filter!r}")
        for key, value in filter.items():
            if value is not None and not isinstance(value, str | int | float | bool):
                raise ChunkGraphError(
                    f"filter value for {key!r} must be a string, number, boolean or null, "
                    f"got {type(value).__name__}"
                )
        allowed: np.ndarray | None = None
        for key, value in filter.items():
            nodes = self._nodes_with(key, value)
            allowed = nodes if allowed is None else np.intersect1d(allowed, nodes, assume_unique=True)
        return allowed

    def _nodes_with(self, key: str, value: Any) -> np.ndarray:
        """Sorted indices of nodes whose metadata[key] === value (an index per key, built on first use)."""
        if key not in self._value_index:
            buckets: dict[tuple[str, Any], list[int]] = {}
            for i, meta in enumerate(self._metadata):
                if key in meta and (k := _value_key(meta[key])) is not None:
                    buckets.setdefault(k, []).append(i)
            self._value_index[key] = {k: np.asarray(v, dtype=np.int64) for k, v in buckets.items()}
        return self._value_index[key].get(_value_key(value), np.zeros(0, dtype=np.int64))

    def _validate(
        self, query_vector: Any, top_k: int, steps: int, restart_prob: float, method: str
    ) -> np.ndarray:
        q = np.asarray(query_vector, dtype=np.float32)
        if q.ndim != 1 or len(q) != self.dimension:
            raise ChunkGraphError(f"Query embedding must have dimension {self.dimension}")
        if not np.isfinite(q).all():
            raise ChunkGraphError("Query embedding values must be finite numbers")
        if not isinstance(top_k, int | np.integer) or top_k < 1:
            raise ChunkGraphError(f"TopK must be greater than 0 (got {top_k!r})")
        if not isinstance(steps, int | np.integer) or steps < 1:
            raise ChunkGraphError(f"Random walk steps must be greater than 0 (got {steps!r})")
        if not (isinstance(restart_prob, int | float) and 0 < restart_prob < 1):
            raise ChunkGraphError(f"Restart probability must be between 0 and 1 (got {restart_prob!r})")
        if method not in ("walk", "ppr"):
            raise ChunkGraphError(f"method must be 'walk' or 'ppr', got {method!r}")
        return q

    def similarities(self, query_vector: Any, nodes: np.ndarray | None = None) -> np.ndarray:
        """Cosine of the query with each node (or the given nodes); 0 where either vector is zero."""
        q = np.asarray(query_vector, dtype=np.float32)
        vectors = self._data.vectors if nodes is None else self._data.vectors[nodes]
        norms = self._norms if nodes is None else self._norms[nodes]
        denom = norms * float(np.linalg.norm(q.astype(np.float64)))
        # einsum, not BLAS: a multi-threaded gemv stalls for tens of ms on a busy machine, and this
        # product is memory-bound anyway.
        dots = np.einsum("ij,j->i", vectors, q).astype(np.float64)
        sims = np.where(denom > 0, dots / np.where(denom > 0, denom, 1.0), 0.0)
        return np.clip(sims, -1.0, 1.0)

    def query(
        self,
        query_vector: Sequence[float] | np.ndarray,
        top_k: int = TOP_K,
        random_walk_steps: int = RANDOM_WALK_STEPS,
        restart_prob: float = RESTART_PROB,
        filter: Mapping[str, Any] | None = None,
        seed: int | np.random.Generator | None = None,
        method: Method = "walk",
    ) -> list[RankedNode]:
        """Top-K nodes by graph score, best first.

        ``method="walk"`` runs Mastra's random walks, seeded: ``seed=None`` uses ``DEFAULT_SEED`` so
        the same query gives the same answer; pass ``np.random.default_rng()`` for Mastra's unseeded
        behaviour. ``method="ppr"`` returns the walks' limit, personalized PageRank by power iteration
        (``random_walk_steps`` and ``seed`` are then unused).
        """
        q = self._validate(query_vector, top_k, random_walk_steps, restart_prob, method)
        allowed = self._allowed(filter)
        if self.num_nodes == 0 or (allowed is not None and len(allowed) == 0):
            return []
        sims = self.similarities(q, allowed)
        seeds = _top(sims, int(top_k))
        adjacency = self._data.adjacency if allowed is None else self._data.adjacency.subgraph(allowed)
        if method == "walk":
            rng = (
                seed
                if isinstance(seed, np.random.Generator)
                else np.random.default_rng(DEFAULT_SEED if seed is None else seed)
            )
            nodes, scores = random_walk_scores(
                adjacency, seeds, sims[seeds], int(random_walk_steps), float(restart_prob), rng
            )
        else:
            nodes, dist = personalized_pagerank(adjacency, seeds, float(restart_prob))
            scores = np.einsum("k,km->m", sims[seeds], dist)
            reached = (dist > 0).any(axis=0)
            nodes, scores = nodes[reached], scores[reached]
        best = _top(scores, int(top_k))
        chosen = nodes[best] if allowed is None else allowed[nodes[best]]
        return [self._ranked(int(i), float(s)) for i, s in zip(chosen, scores[best], strict=True)]

    def _ranked(self, i: int, score: float) -> RankedNode:
        return RankedNode(
            id=self._data.ids[i].as_py(),
            content=self._data.contents[i].as_py(),
            metadata=json.loads(self._data.metadata[i].as_py()),
            score=score if math.isfinite(score) else 0.0,
        )
