"""``create_graph_rag_tool``: the vector tool's contract over a chunk graph (Mastra's createGraphRAGTool).

The graph is built from *all* rows of the request's store and index (``pipeline.chunk_graph``, no
O(n^2) build), cached under the store's identity and index name, and rebuilt when the index's
fingerprint changes. Mastra builds one graph from the first query's top-K results and keeps it for
every later query, whatever the topic or tenant; here two tenants never share a graph and a
re-indexed corpus is never answered from a stale one.
"""

from __future__ import annotations

import asyncio
import threading
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from pipeline.chunk_graph import ChunkGraph
from pipeline.chunk_graph.graph import RANDOM_WALK_STEPS, RESTART_PROB
from pipeline.vector_tool.filters import FilterError, conditions
from pipeline.vector_tool.resolver import RequestContext
from pipeline.vector_tool.stores.base import VectorStore
from pipeline.vector_tool.tool import StoreRequest, StoreTool, pick

DEFAULT_DESCRIPTION = (
    "Access and analyze relationships between information in the knowledge base to answer complex "
    "questions about connections and patterns."
)


def equality_filter(query_filter: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """The chunk graph filters by metadata equality; other operators are refused with a clear error."""
    if not query_filter:
        return None
    if any(k.startswith("$") for k in query_filter):
        raise FilterError("the graph tool filters by field equality only ($and / $or are not supported)")
    out = {}
    for field, op, value in conditions(query_filter):
        if op != "$eq":
            raise FilterError(f"the graph tool filters by field equality only; {field!r} uses {op}")
        out[field] = value
    return out


class GraphCache:
    """Graphs by (store identity, index name), each with the fingerprint it was built from."""

    def __init__(self, max_graphs: int = 8) -> None:
        self.max_graphs = max_graphs
        self.builds = 0
        self._graphs: OrderedDict[tuple[str, str], tuple[str, ChunkGraph]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, store: VectorStore, index_name: str, threshold: float) -> ChunkGraph:
        key = (store.identity, index_name)
        fingerprint = store.index_fingerprint(index_name)
        with self._lock:
            cached = self._graphs.get(key)
            if cached is not None and cached[0] == fingerprint:
                self._graphs.move_to_end(key)
                return cached[1]
            rows = store.index_rows(index_name)
            metadata = [{k: v for k, v in m.items() if k != "text"} for m in rows.metadata]  # text = content
            graph = ChunkGraph.build(rows.ids, rows.documents, metadata, rows.vectors, threshold=threshold)
            self.builds += 1
            self._graphs[key] = (fingerprint, graph)
            self._graphs.move_to_end(key)
            while len(self._graphs) > self.max_graphs:
                self._graphs.popitem(last=False)
            return graph


@dataclass(eq=False, repr=False, kw_only=True)
class GraphRAGTool(StoreTool):
    kind: ClassVar[str] = "GraphRAG"
    failure_label: ClassVar[str] = "graph RAG tool"
    default_description: ClassVar[str] = DEFAULT_DESCRIPTION
    context_item_schema: ClassVar[dict[str, Any]] = {"type": "string"}

    random_walk_steps: int = RANDOM_WALK_STEPS
    restart_prob: float = RESTART_PROB
    threshold: float = 0.7
    seed: int | None = None

    def __post_init__(self) -> None:
        super().__post_init__()
        self.graphs = GraphCache()

    def _overrides(self, context: RequestContext) -> dict[str, Any]:
        return {
            "random_walk_steps": pick(context, "random_walk_steps", self.random_walk_steps),
            "restart_prob": pick(context, "restart_prob", self.restart_prob),
        }

    async def _search(self, request: StoreRequest) -> list[Any]:
        graph_filter = equality_filter(request.filter)
        vector = (await asyncio.to_thread(self.embedder.embed, [request.query_text]))[0]
        graph = await asyncio.to_thread(self.graphs.get, request.store, request.index_name, self.threshold)
        return graph.query(
            vector,
            top_k=request.top_k,
            random_walk_steps=int(request.overrides["random_walk_steps"]),
            restart_prob=float(request.overrides["restart_prob"]),
            filter=graph_filter,
            seed=self.seed,
        )

    async def _answer(self, request: StoreRequest, found: list[Any]) -> dict[str, Any]:
        sources = [
            {"id": n.id, "metadata": n.metadata, "vector": [], "score": n.score, "document": n.content}
            for n in found
        ]
        return {
            "relevant_context": [n.content for n in found],
            "sources": sources if request.include_sources else [],
        }


def create_graph_rag_tool(index_name: str, embedder: Any, **options: Any) -> GraphRAGTool:
    """A chunk-graph tool over ``index_name``; ``options`` are ``GraphRAGTool``'s (keywords only): store,
    store_name, stores, include_sources, enable_filter, random_walk_steps, restart_prob, threshold,
    seed, id, description. Overrides per request: index_name, store_name, include_sources,
    random_walk_steps, restart_prob, top_k, filter (equality only)."""
    return GraphRAGTool(index_name=index_name, embedder=embedder, **options)
