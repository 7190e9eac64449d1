"""Chunk-graph asset: the similarity graph over a namespace's text units, saved as a snapshot."""

import time
from typing import Literal

from dagster import AssetExecutionContext, Config, MaterializeResult, asset

from assets.indexing.assets import GROUP, text_unit_embeddings
from assets.indexing.observe import standard_metadata
from assets.partitions import namespace_partitions
from assets.resources import PipelineSettingsResource
from pipeline.chunk_graph import BuildOptions
from pipeline.chunk_graph.indexing import build_namespace_chunk_graph


class ChunkGraphConfig(Config):
    threshold: float = 0.7
    """An edge joins two chunks whose cosine is strictly above this."""
    mode: Literal["auto", "exact", "approximate"] = "auto"
    """auto: exact (all pairs, blocked) up to exact_max_nodes chunks, approximate (LanceDB ANN) above."""
    exact_max_nodes: int = 100_000
    neighbors: int = 64
    """Approximate mode: nearest neighbours asked for per chunk (caps the degree)."""
    nprobes: int = 20
    """Approximate mode: IVF partitions searched per chunk."""
    force: bool = False
    """Rebuild even when the inputs match the saved snapshot's fingerprint."""


@asset(
    partitions_def=namespace_partitions,
    group_name=GROUP,
    deps=[text_unit_embeddings],
    description=(
        "Chunk-similarity graph (Mastra GraphRAG semantics: edge when cosine > threshold) over the "
        "namespace's text-unit embeddings, saved as a versioned Arrow snapshot; rebuilt when its inputs change."
    ),
    kinds={"arrow"},
)
def chunk_graph(
    context: AssetExecutionContext, config: ChunkGraphConfig, pipeline_settings: PipelineSettingsResource
) -> MaterializeResult:
    started = time.monotonic()
    store = pipeline_settings.store(context.partition_key)
    options = BuildOptions(
        threshold=config.threshold,
        mode=config.mode,
        exact_max_nodes=config.exact_max_nodes,
        neighbors=config.neighbors,
        nprobes=config.nprobes,
    )
    built = build_namespace_chunk_graph(store, options, force=config.force)
    context.log.info(
        f"chunk graph for {context.partition_key!r}: {built.nodes} nodes, {built.edges} edges, "
        f"mode {built.mode}" + (" (inputs unchanged: snapshot reused)" if built.reused else "")
    )
    return MaterializeResult(
        metadata={
            **standard_metadata(started, built.nodes),
            "nodes": built.nodes,
            "edges": built.edges,
            "avg_degree": round(2 * built.edges / built.nodes, 2) if built.nodes else 0.0,
            "isolated_nodes": built.isolated_nodes,
            "mode": built.mode,
            "threshold": config.threshold,
            "build_seconds": built.build_seconds,
            "snapshot_bytes": built.snapshot_bytes,
            "snapshot_path": str(built.path),
            "reused": built.reused,
            "fingerprint": built.fingerprint[:16],
        }
    )
