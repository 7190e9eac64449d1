"""``create_graph_rag_tool``: the vector tool's contract over a chunk graph (Mastra's createGraphRAGTool).

The graph is built from *all* rows of the request's store and index (``pipeline.chunk_graph``, no
O(n^2) build), cached under the store's identity and index name, and rebuilt when the index's
fingerprint changes. Mastra builds one graph from the first query's top-K results and keeps it for
every later query, whatever the topic or tenant; here two tenants never share a graph and a
re-indexed corpus is never answered from a stale one.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any

from pipeline.chunk_graph import ChunkGraph
from pipeline.vector_tool.filters import FilterError, conditions
from pipeline.vector_tool.options import coerce_top_k
from pipeline.vector_tool.resolver import RequestContext, resolve_store
from pipeline.vector_tool.stores.base import VectorStore
from pipeline.vector_tool.tool import (
    Tool,
    check_index_name,
    degraded,
    pick,
    store_filter,
    tool_input,
)

log = logging.getLogger(__name__)

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


class GraphRAGTool(Tool):
    def __init__(
        self,
        *,
        index_name: str,
        embedder: Any,
        store: Any = None,
        store_name: str | None = None,
        stores: Mapping[str, VectorStore] | None = None,
        include_sources: bool = True,
        enable_filter: bool = False,
        random_walk_steps: int = 100,
        restart_prob: float = 0.15,
        threshold: float = 0.7,
        seed: int | None = None,
        id: str | None = None,
        description: str | None = None,
    ) -> None:
        self._init_store_tool(
            kind="GraphRAG",
            index_name=index_name,
            embedder=embedder,
            store=store,
            store_name=store_name,
            stores=stores,
            include_sources=include_sources,
            enable_filter=enable_filter,
            id=id,
            description=description,
            default_description=DEFAULT_DESCRIPTION,
            context_item_schema={"type": "string"},
        )
        self.random_walk_steps = random_walk_steps
        self.restart_prob = restart_prob
        self.threshold = threshold
        self.seed = seed
        self.graphs = GraphCache()

    async def aexecute(
        self, input: Mapping[str, Any], context: RequestContext | None = None
    ) -> dict[str, Any]:
        ctx: RequestContext = context or {}
        input = tool_input(input)
        store_name = pick(ctx, "store_name", self.store_name)
        include_sources = bool(pick(ctx, "include_sources", self.include_sources))
        steps = pick(ctx, "random_walk_steps", self.random_walk_steps)
        restart_prob = pick(ctx, "restart_prob", self.restart_prob)
        top_k = coerce_top_k(pick(ctx, "top_k", input.get("top_k")))
        query_text = input.get("query_text")
        try:
            index_name = check_index_name(pick(ctx, "index_name", self.index_name))
            if not isinstance(query_text, str) or not query_text.strip():
                raise ValueError(f"query_text must be a non-empty string, got {query_text!r}")
            store = await resolve_store(self.store, ctx, store_name=store_name, registry=self.stores)
            if store is None:
                log.error("Vector store not found: %r (tool %s)", store_name, self.id)
                return degraded(f"vector store not found: {store_name!r}")
            graph_filter = equality_filter(store_filter(store, ctx, input, self.enable_filter))
            vector = (await asyncio.to_thread(self.embedder.embed, [query_text]))[0]
            graph = await asyncio.to_thread(self.graphs.get, store, index_name, self.threshold)
            nodes = graph.query(
                vector,
                top_k=top_k,
                random_walk_steps=int(steps),
                restart_prob=float(restart_prob),
                filter=graph_filter,
                seed=self.seed,
            )
        except Exception as exc:
            log.exception("graph RAG tool %s failed", self.id)
            return degraded(f"{type(exc).__name__}: {exc}")
        sources = [
            {"id": n.id, "metadata": n.metadata, "vector": [], "score": n.score, "document": n.content}
            for n in nodes
        ]
        return {"relevant_context": [n.content for n in nodes], "sources": sources if include_sources else []}


def create_graph_rag_tool(
    index_name: str,
    embedder: Any,
    *,
    store: Any = None,
    store_name: str | None = None,
    stores: Mapping[str, VectorStore] | None = None,
    include_sources: bool = True,
    enable_filter: bool = False,
    random_walk_steps: int = 100,
    restart_prob: float = 0.15,
    threshold: float = 0.7,
    seed: int | None = None,
    id: str | None = None,
    description: str | None = None,
) -> GraphRAGTool:
    """A chunk-graph tool over ``index_name``; overrides per request: index_name, store_name,
    include_sources, random_walk_steps, restart_prob, top_k, filter (equality only)."""
    return GraphRAGTool(
        index_name=index_name,
        embedder=embedder,
        store=store,
        store_name=store_name,
        stores=stores,
        include_sources=include_sources,
        enable_filter=enable_filter,
        random_walk_steps=random_walk_steps,
        restart_prob=restart_prob,
        threshold=threshold,
        seed=seed,
        id=id,
        description=description,
    )
