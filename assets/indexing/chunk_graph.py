"""Chunk-graph asset: the similarity graph over a namespace's text units, saved as a snapshot."""

from typing import Literal

from dagster import AssetExecutionContext, Config, MaterializeResult, asset

from assets.indexing.observe import index_context, materialize
from assets.indexing.stages import deps, group
from assets.partitions import namespace_partitions
from assets.resources import EmbedderResource, PipelineSettingsResource
from pipeline.chunk_graph import BuildOptions
from pipeline.index import chunk_graph as chunk_graph_runner


class ChunkGraphConfig(Config):
    threshold: float | None = None
    """An edge joins two chunks whose cosine is strictly above this; default: the embedding model's
    calibrated `related` level (0.7 for MiniLM, Mastra's default)."""
    mode: Literal["auto", "exact", "approximate"] = "auto"
    """auto: exact (all pairs, blocked) up to exact_max_nodes chunks, approximate (partitioned) above."""
    exact_max_nodes: int = 50_000
    neighbors: int = 64
    """Approximate mode: the heaviest edges a chunk keeps (caps the degree)."""
    nprobes: int = 20
    """Approximate mode: partitions each partition of chunks is compared with."""
    force: bool = False
    """Rebuild even when the inputs match the saved snapshot's fingerprint."""


@asset(
    partitions_def=namespace_partitions,
    group_name=group("chunk_graph"),
    deps=deps("chunk_graph"),
    description=(
        "Chunk-similarity graph (Mastra GraphRAG semantics: edge when cosine > threshold) over the "
        "namespace's text-unit embeddings, saved as a versioned Arrow snapshot; rebuilt when its inputs change."
    ),
    kinds={"arrow"},
)
def chunk_graph(
    context: AssetExecutionContext,
    config: ChunkGraphConfig,
    pipeline_settings: PipelineSettingsResource,
    embedder: EmbedderResource,
) -> MaterializeResult:
    options = BuildOptions(
        mode=config.mode,
        exact_max_nodes=config.exact_max_nodes,
        neighbors=config.neighbors,
        nprobes=config.nprobes,
    )
    ctx = index_context(context, pipeline_settings, embedder)
    return materialize(
        chunk_graph_runner.run(ctx, options, threshold=config.threshold, force=config.force), ctx=ctx
    )
