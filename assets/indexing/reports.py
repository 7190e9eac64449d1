"""Report assets: communities -> community reports (Parquet) -> report and entity embeddings (LanceDB)."""

from dagster import AssetCheckSpec, AssetExecutionContext, MaterializeResult, asset

from assets.indexing.blocking import blocking_specs
from assets.indexing.observe import index_context, materialize
from assets.indexing.stages import deps, group
from assets.partitions import namespace_partitions
from assets.resources import LLM_POOL, EmbedderResource, PipelineSettingsResource
from pipeline.index import community_reports as community_reports_runner
from pipeline.index import report_embeddings as report_embeddings_runner


@asset(
    partitions_def=namespace_partitions,
    group_name=group("community_reports"),
    deps=deps("community_reports"),
    description=(
        "One report per community (GraphRAG's community_reports columns + fingerprint), written bottom-up: "
        "a community over the context budget stands on its sub-communities' reports. An unchanged "
        "fingerprint reuses the stored report without an engine call; failures go to failed_reports."
    ),
    kinds={"parquet"},
    check_specs=[
        AssetCheckSpec("no_failed_reports", asset="community_reports"),
        AssetCheckSpec("one_report_per_community", asset="community_reports"),
        *blocking_specs("community_reports"),
    ],
    pool=LLM_POOL,
)
def community_reports(
    context: AssetExecutionContext, pipeline_settings: PipelineSettingsResource
) -> MaterializeResult:
    ctx = index_context(context, pipeline_settings)
    return materialize(community_reports_runner.run(ctx), ctx=ctx)


@asset(
    partitions_def=namespace_partitions,
    group_name=group("report_embeddings"),
    deps=deps("report_embeddings"),
    description=(
        "LanceDB tables `community_reports` (vector of the title and the summary's first 24 words) and "
        "`entities` (vector of the title), with full-text "
        "indexes; only rows whose embedded text changed are embedded again."
    ),
    kinds={"lancedb"},
    check_specs=[
        AssetCheckSpec("every_row_has_vector", asset="report_embeddings"),
        *blocking_specs("report_embeddings"),
    ],
)
def report_embeddings(
    context: AssetExecutionContext, pipeline_settings: PipelineSettingsResource, embedder: EmbedderResource
) -> MaterializeResult:
    ctx = index_context(context, pipeline_settings, embedder)
    return materialize(report_embeddings_runner.run(ctx), ctx=ctx)


report_assets = [community_reports, report_embeddings]
