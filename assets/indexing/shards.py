"""Shard assets: one namespace's embedding and extraction work split by document shard, so that the
runs of several shards spread over the workers of a distributed executor. The namespace-level assets
(`text_unit_embeddings`, `extracted_graph`) merge them and do themselves whatever no shard did."""

import time

from dagster import AssetExecutionContext, MaterializeResult, MultiPartitionKey, asset

from assets.indexing.assets import text_units
from assets.indexing.observe import standard_metadata
from assets.partitions import SHARD_COUNT, namespace_shard_partitions
from assets.resources import EmbedderResource, PipelineSettingsResource
from pipeline import schema
from pipeline.graph_index import index_extraction_shard
from pipeline.llm import make_engine
from pipeline.shards import shard_units
from pipeline.vectors import embed_text_units

SHARD_GROUP = "indexing_shards"


def _keys(context: AssetExecutionContext) -> tuple[str, int]:
    key = context.partition_key
    if not isinstance(key, MultiPartitionKey):
        raise TypeError(f"expected a namespace|shard partition key, got {key!r}")
    return key.keys_by_dimension["namespace"], int(key.keys_by_dimension["shard"])


@asset(
    partitions_def=namespace_shard_partitions,
    group_name=SHARD_GROUP,
    deps=[text_units],
    description="One shard's text-unit vectors computed into the embedding cache (no table is written).",
    kinds={"python"},
)
def text_unit_embeddings_shard(
    context: AssetExecutionContext, pipeline_settings: PipelineSettingsResource, embedder: EmbedderResource
) -> MaterializeResult:
    started = time.monotonic()
    namespace, shard = _keys(context)
    store = pipeline_settings.store(namespace)
    units = shard_units(store.read_table(schema.TEXT_UNITS), shard, SHARD_COUNT)
    cached = embedder.get_embedder()
    context.log.info(f"embedding {units.num_rows} text units of shard {shard}/{SHARD_COUNT} of {namespace!r}")

    def progress(done: int, total: int) -> None:
        context.log.info(f"embedded {done}/{total} new text units")

    stats = embed_text_units(units, cached, progress=progress)
    return MaterializeResult(
        metadata={
            **standard_metadata(started, stats.rows),
            "shard": shard,
            "shards": SHARD_COUNT,
            "pieces": stats.pieces,
            "embeddings_computed": stats.embedded,
            "embedding_cache_hits": stats.cache_hits,
            "model": cached.model_id,
        }
    )


@asset(
    partitions_def=namespace_shard_partitions,
    group_name=SHARD_GROUP,
    deps=[text_units],
    description="One shard's part of extracted_graph / failed_extractions (under shards/ in the namespace).",
    kinds={"parquet"},
)
def extracted_graph_shard(
    context: AssetExecutionContext, pipeline_settings: PipelineSettingsResource
) -> MaterializeResult:
    started = time.monotonic()
    namespace, shard = _keys(context)
    settings = pipeline_settings.get_settings()
    store = pipeline_settings.store(namespace)
    engine = make_engine(settings)
    context.log.info(f"extracting shard {shard}/{SHARD_COUNT} of {namespace!r}")

    def progress(done: int, total: int) -> None:
        context.log.info(f"extracted {done}/{total} text units")

    summary = index_extraction_shard(store, settings, shard, SHARD_COUNT, engine, progress=progress)
    return MaterializeResult(
        metadata={
            **standard_metadata(started, summary.counts["text_units"], engine.usage),
            "shard": shard,
            "shards": SHARD_COUNT,
            "method": summary.method,
            **summary.counts,
            "failed_extractions": len(summary.failures),
        }
    )


shard_assets = [text_unit_embeddings_shard, extracted_graph_shard]
