"""Chunk-graph search as every door sees it (`pipeline.query.common.mode`): the namespace's chunk graph
walked from the chunks nearest the query; no model call."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pipeline.chunk_graph.errors import ChunkGraphError
from pipeline.query.chunks.terminal import TERMINAL
from pipeline.query.common.mode import Mode
from pipeline.query.common.retrieval import Hits, checkpoint
from pipeline.query.common.scope import QueryScope
from pipeline.query.requests import ChunkOptions


@dataclass(frozen=True)
class ChunkSearchConfig:
    """The walk's options given; one left out takes `ChunkGraph.query`'s default."""

    options: dict[str, Any]


async def chunk_search(scope: QueryScope, query: str, config: ChunkSearchConfig) -> Hits:
    from pipeline.chunk_graph.indexing import load_namespace_chunk_graph

    if stop := checkpoint(scope, "loading the chunk graph"):
        return stop
    graph = load_namespace_chunk_graph(scope.store, dimension=scope.embedder.dimension)
    if stop := checkpoint(scope, "embedding the query"):
        return stop
    vector = scope.embedder.embed([query])[0]
    if stop := checkpoint(scope, "the walk"):
        return stop
    options = dict(config.options)
    options["filter"] = options.get("filter") or None
    hits = graph.query(vector, **options)
    return Hits(query, "completed" if hits else "no_results", hits)


MODE = Mode(
    name="chunks",
    summary="chunk-graph search: random walk with restart from the nearest chunks",
    options=ChunkOptions,
    configure=lambda settings, given: ChunkSearchConfig(dict(given)),
    search=chunk_search,
    needs=(("snapshot", "chunk_graph"),),
    tool="chunk_graph_search",
    question="query",
    errors=(ChunkGraphError,),
    lane="quick",
    uses_model=False,
    http_doc="Chunk graph: random walk with restart from the nearest chunks (`ChunkGraph.query`).",
    tool_doc="Text chunks ranked by a random walk with restart over the chunk-similarity graph, seeded by "
    'the chunks nearest the query. `filter`: metadata equality, e.g. {"document_title": "a.txt"}.',
    hint="returns the text chunks a walk over the chunk-similarity graph ranks first",
    terminal=TERMINAL,
)
