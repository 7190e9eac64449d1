"""extracted_graph_shard: one document shard's part of extracted_graph / failed_extractions (under
shards/ in the namespace), which `extracted_graph` merges."""

from __future__ import annotations

from pipeline.index.context import IndexContext
from pipeline.index.extracted_graph import extraction_loss, index_extraction_shard
from pipeline.index.report import StageReport


def run(ctx: IndexContext, shard: int, shards: int) -> StageReport:
    ctx.log(f"extracting shard {shard}/{shards} of {ctx.namespace!r}")
    summary = index_extraction_shard(
        ctx.store,
        ctx.settings,
        shard,
        shards,
        ctx.engine_for("extraction"),
        progress=ctx.progress("extracted text units"),
    )
    return StageReport(
        rows=summary.counts["text_units"],
        usage=ctx.engine_for("extraction").usage,
        metadata={
            "shard": shard,
            "shards": shards,
            "method": summary.method,
            **summary.counts,
            "failed_extractions": len(summary.failures),
        },
        duration_s=summary.duration_s,
        loss=extraction_loss(f"extracted_graph_shard {shard}/{shards}", summary, ctx.settings),
    )
