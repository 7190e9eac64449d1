"""Shard assets: one namespace's embedding and extraction work split by document shard, so that the
runs of several shards spread over the workers of a distributed executor. The namespace-level assets
(`text_unit_embeddings`, `extracted_graph`) merge them and do themselves whatever no shard did."""

from dagster import AssetExecutionContext, MaterializeResult, MultiPartitionKey, asset

from assets.indexing.observe import index_context, materialize
from assets.indexing.stages import deps, group
from assets.partitions import SHARD_COUNT, namespace_shard_partitions
from assets.resources import LLM_POOL, EmbedderResource, PipelineSettingsResource
from pipeline.index import extracted_graph_shard as extracted_graph_shard_runner
from pipeline.index import text_unit_embeddings_shard as text_unit_embeddings_shard_runner


def _keys(context: AssetExecutionContext) -> tuple[str, int]:
    key = context.partition_key
    if not isinstance(key, MultiPartitionKey):
        raise TypeError(f"expected a namespace|shard partition key, got {key!r}")
    return key.keys_by_dimension["namespace"], int(key.keys_by_dimension["shard"])


@asset(
    partitions_def=namespace_shard_partitions,
    group_name=group("text_unit_embeddings_shard"),
    deps=deps("text_unit_embeddings_shard"),
    description="One shard's text-unit vectors computed into the embedding cache (no table is written).",
    kinds={"python"},
)
def text_unit_embeddings_shard(
    context: AssetExecutionContext, pipeline_settings: PipelineSettingsResource, embedder: EmbedderResource
) -> MaterializeResult:
    namespace, shard = _keys(context)
    ctx = index_context(context, pipeline_settings, embedder, namespace=namespace)
    return materialize(text_unit_embeddings_shard_runner.run(ctx, shard, SHARD_COUNT), ctx=ctx)


@asset(
    partitions_def=namespace_shard_partitions,
    group_name=group("extracted_graph_shard"),
    deps=deps("extracted_graph_shard"),
    description="One shard's part of extracted_graph / failed_extractions (under shards/ in the namespace).",
    kinds={"parquet"},
    pool=LLM_POOL,
)
def extracted_graph_shard(
    context: AssetExecutionContext, pipeline_settings: PipelineSettingsResource
) -> MaterializeResult:
    namespace, shard = _keys(context)
    ctx = index_context(context, pipeline_settings, namespace=namespace)
    return materialize(extracted_graph_shard_runner.run(ctx, shard, SHARD_COUNT), ctx=ctx)


shard_assets = [text_unit_embeddings_shard, extracted_graph_shard]
