"""Mastra's ``GraphRAG`` class, as a thin facade over ``ChunkGraph``: code written for Mastra ports line
by line, and Mastra's JSON snapshots (version 1) load unchanged.

    graph = GraphRAG(dimension=384, threshold=0.7)
    graph.create_graph(chunks, embeddings)      # or createGraph; chunks [{text, metadata}], embeddings [{vector}]
    graph.query(query=vector, top_k=5)          # or topK / randomWalkSteps / restartProb
    snapshot = graph.serialize()                # Mastra's {version: 1, dimension, threshold, nodes, edges}
    again = GraphRAG.deserialize(snapshot)

As in Mastra: node ids are the chunks' positions ("0".."n-1"), an empty chunk list or a length mismatch is
an error, an embedding of the wrong length is an error, and an edge joins two chunks whose cosine is above
the threshold. Unlike Mastra, the walks are seeded (the same query gives the same answer) and
``create_graph`` replaces the graph rather than adding to it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from pipeline.chunk_graph.errors import ChunkGraphError
from pipeline.chunk_graph.graph import RANDOM_WALK_STEPS, RESTART_PROB, TOP_K, ChunkGraph

_CAMEL = {"topK": "top_k", "randomWalkSteps": "random_walk_steps", "restartProb": "restart_prob"}


class GraphRAG:
    def __init__(self, dimension: int = 1536, threshold: float = 0.7) -> None:
        self.dimension = dimension
        self.threshold = threshold
        self._graph: ChunkGraph | None = None

    def create_graph(self, chunks: Sequence[Mapping[str, Any]], embeddings: Sequence[Any]) -> None:
        if not chunks or not embeddings:
            raise ChunkGraphError("Chunks and embeddings arrays must not be empty")
        if len(chunks) != len(embeddings):
            raise ChunkGraphError("Chunks and embeddings must have the same length")
        vectors = [e.get("vector") if isinstance(e, Mapping) else e for e in embeddings]
        for i, v in enumerate(vectors):
            if v is None or len(v) != self.dimension:
                got = None if v is None else len(v)
                raise ChunkGraphError(f"Embedding {i} must have {self.dimension} values, got {got}")
        self._graph = ChunkGraph.build(
            [str(i) for i in range(len(chunks))],
            [str(c.get("text", "")) for c in chunks],
            [dict(c.get("metadata") or {}) for c in chunks],
            np.asarray(vectors, dtype=np.float32),
            threshold=self.threshold,
        )

    createGraph = create_graph  # noqa: N815 - Mastra's name

    def query(
        self,
        query: Sequence[float],
        top_k: int = TOP_K,
        random_walk_steps: int = RANDOM_WALK_STEPS,
        restart_prob: float = RESTART_PROB,
        filter: Mapping[str, Any] | None = None,
        **mastra: Any,
    ) -> list[dict[str, Any]]:
        """Top-K chunks ``{id, content, metadata, score}``, best first; Mastra's camelCase options work too."""
        options = {"top_k": top_k, "random_walk_steps": random_walk_steps, "restart_prob": restart_prob}
        for name, value in mastra.items():
            if name not in _CAMEL:
                raise TypeError(f"query() got an unexpected keyword argument {name!r}")
            options[_CAMEL[name]] = value
        if len(query) != self.dimension:
            raise ChunkGraphError(f"Query embedding must have dimension {self.dimension}")
        nodes = self._built().query(np.asarray(query, dtype=np.float32), filter=filter, **options)
        return [{"id": n.id, "content": n.content, "metadata": n.metadata, "score": n.score} for n in nodes]

    def serialize(self) -> dict[str, Any]:
        return self._built().to_mastra_json()

    @classmethod
    def deserialize(cls, snapshot: Mapping[str, Any]) -> GraphRAG:
        graph = ChunkGraph.from_mastra_json(snapshot)
        out = cls(graph.dimension, graph.threshold)
        out._graph = graph
        return out

    @property
    def graph(self) -> ChunkGraph:
        """The ChunkGraph underneath (Arrow snapshots, PPR queries, degrees)."""
        return self._built()

    def _built(self) -> ChunkGraph:
        if self._graph is None:
            raise ChunkGraphError("the graph is empty: call create_graph(chunks, embeddings) first")
        return self._graph
