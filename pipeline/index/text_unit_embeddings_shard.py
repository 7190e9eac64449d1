"""text_unit_embeddings_shard: one document shard's text-unit vectors computed into the embedding
cache (no table is written), so that shards spread over the workers of a distributed executor;
`text_unit_embeddings` then finds them in the cache."""

from __future__ import annotations

from pipeline.core import schema
from pipeline.core.shards import shard_units
from pipeline.index.context import IndexContext
from pipeline.index.report import StageReport, Stopwatch
from pipeline.index.text_unit_embeddings import embed_text_units


def run(ctx: IndexContext, shard: int, shards: int) -> StageReport:
    clock = Stopwatch()
    units = shard_units(ctx.store.read_table(schema.BASE_TEXT_UNITS), shard, shards)
    cached = ctx.embedder
    ctx.log(f"embedding {units.num_rows} text units of shard {shard}/{shards} of {ctx.namespace!r}")
    docs = ctx.store.read_table(schema.INPUT_DOCUMENTS, columns=["id", "title"])
    stats = embed_text_units(units, docs, cached, progress=ctx.progress("embedded new text units"))
    return StageReport(
        rows=stats.rows,
        metadata={
            "shard": shard,
            "shards": shards,
            "pieces": stats.pieces,
            "embeddings_computed": stats.embedded,
            "embedding_cache_hits": stats.cache_hits,
            "model": cached.model_id,
        },
        duration_s=clock.seconds(),
    )
