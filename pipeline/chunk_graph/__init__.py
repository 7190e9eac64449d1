"""Chunk graph: a similarity graph over text units queried by random walk with restart (Mastra's
GraphRAG), built without an O(n^2) memory footprint and saved as a versioned, validated snapshot."""

from pipeline.chunk_graph.edges import BuildOptions
from pipeline.chunk_graph.errors import ChunkGraphError, SnapshotError
from pipeline.chunk_graph.graph import DEFAULT_SEED, ChunkGraph, RankedNode
from pipeline.chunk_graph.mastra import GraphRAG
from pipeline.chunk_graph.snapshot import FORMAT_VERSION

__all__ = [
    "DEFAULT_SEED",
    "FORMAT_VERSION",
    "BuildOptions",
    "ChunkGraph",
    "ChunkGraphError",
    "GraphRAG",
    "RankedNode",
    "SnapshotError",
]
