"""chunk_graph: the similarity graph over the namespace's text-unit vectors (Mastra GraphRAG semantics:
an edge when cosine > threshold), saved as a versioned Arrow snapshot and rebuilt only when its inputs
change (`pipeline.chunk_graph`).

The threshold defaults to the `related` level the text-unit stage measured on the embedding model
(`pipeline.embeddings.levels`): what counts as "related" is a property of the model's cosines, not of
the chunk graph."""

from __future__ import annotations

from dataclasses import replace

from pipeline.chunk_graph import BuildOptions
from pipeline.chunk_graph.indexing import build_namespace_chunk_graph
from pipeline.embeddings import levels
from pipeline.index.context import IndexContext
from pipeline.index.report import StageReport, Stopwatch


def run(
    ctx: IndexContext,
    options: BuildOptions | None = None,
    *,
    threshold: float | None = None,
    force: bool = False,
) -> StageReport:
    clock = Stopwatch()
    options = options or BuildOptions()
    options = replace(
        options,
        threshold=threshold
        if threshold is not None
        else levels.for_namespace(ctx.embedder, levels.stored(ctx.store)).calibration.related,
    )
    built = build_namespace_chunk_graph(ctx.store, options, force=force)
    ctx.log(
        f"chunk graph for {ctx.namespace!r}: {built.nodes} nodes, {built.edges} edges, "
        f"mode {built.mode}" + (" (inputs unchanged: snapshot reused)" if built.reused else "")
    )
    return StageReport(
        rows=built.nodes,
        metadata={
            "nodes": built.nodes,
            "edges": built.edges,
            "avg_degree": round(2 * built.edges / built.nodes, 2) if built.nodes else 0.0,
            "isolated_nodes": built.isolated_nodes,
            "mode": built.mode,
            "threshold": options.threshold,
            "build_seconds": built.build_seconds,
            "snapshot_bytes": built.snapshot_bytes,
            "snapshot_path": str(built.path),
            "reused": built.reused,
            "fingerprint": built.fingerprint[:16],
        },
        duration_s=clock.seconds(),
    )
