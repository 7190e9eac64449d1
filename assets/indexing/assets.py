"""Indexing assets: input documents -> base text units -> text-unit embeddings (LanceDB), and the final
`documents` (with their text unit ids), per namespace. Each table has one asset that writes it.

Each body builds the runner's context from the resources, calls its `pipeline.index` runner and turns
the report into a materialization."""

from dagster import AssetCheckSpec, AssetExecutionContext, Config, Failure, MaterializeResult, asset

from assets.indexing.blocking import blocking_specs
from assets.indexing.observe import index_context, materialize
from assets.indexing.stages import deps, group
from assets.partitions import namespace_partitions
from assets.resources import EmbedderResource, PipelineSettingsResource
from pipeline.index import base_text_units as base_text_units_runner
from pipeline.index import documents as documents_runner
from pipeline.index import input_documents as input_documents_runner
from pipeline.index import text_unit_embeddings as text_unit_embeddings_runner


class DocumentsConfig(Config):
    input_dir: str | None = None
    """Folder holding this namespace's documents; default <input_root>/<namespace>/."""


@asset(
    partitions_def=namespace_partitions,
    group_name=group("input_documents"),
    deps=deps("input_documents"),
    description="Documents read from the namespace's input folder; id = sha256 of the text. Bad files go to ingest_errors.",
    kinds={"parquet"},
)
def input_documents(
    context: AssetExecutionContext, config: DocumentsConfig, pipeline_settings: PipelineSettingsResource
) -> MaterializeResult:
    ctx = index_context(context, pipeline_settings)
    try:
        report = input_documents_runner.run(ctx, config.input_dir)
    except input_documents_runner.NoDocumentsError as exc:
        # nothing is materialized, so the failure itself carries the count the run's metadata shows
        meta = {"input_files": exc.files, "files_rejected": exc.files_rejected}
        raise Failure(description=str(exc), metadata=meta, allow_retries=False) from exc
    return materialize(report, ctx=ctx)


@asset(
    partitions_def=namespace_partitions,
    group_name=group("base_text_units"),
    deps=deps("base_text_units"),
    description="Token-window chunks of each document with exact character offsets (GraphRAG's base text units).",
    kinds={"parquet"},
)
def base_text_units(
    context: AssetExecutionContext, pipeline_settings: PipelineSettingsResource
) -> MaterializeResult:
    ctx = index_context(context, pipeline_settings)
    return materialize(base_text_units_runner.run(ctx), ctx=ctx)


@asset(
    partitions_def=namespace_partitions,
    group_name=group("documents"),
    deps=deps("documents"),
    description="GraphRAG's final documents: the input documents with the ids of their text units.",
    kinds={"parquet"},
)
def documents(
    context: AssetExecutionContext, pipeline_settings: PipelineSettingsResource
) -> MaterializeResult:
    ctx = index_context(context, pipeline_settings)
    return materialize(documents_runner.run(ctx), ctx=ctx)


@asset(
    partitions_def=namespace_partitions,
    group_name=group("text_unit_embeddings"),
    deps=deps("text_unit_embeddings"),
    description="LanceDB table `text_units`: text, document id, offsets and vector, with a full-text index.",
    kinds={"lancedb"},
    check_specs=[
        AssetCheckSpec("every_text_unit_has_vector", asset="text_unit_embeddings"),
        AssetCheckSpec("offsets_round_trip", asset="text_unit_embeddings"),
        *blocking_specs("text_unit_embeddings"),
    ],
)
def text_unit_embeddings(
    context: AssetExecutionContext, pipeline_settings: PipelineSettingsResource, embedder: EmbedderResource
) -> MaterializeResult:
    ctx = index_context(context, pipeline_settings, embedder)
    return materialize(text_unit_embeddings_runner.run(ctx), ctx=ctx)


indexing_assets = [input_documents, base_text_units, documents, text_unit_embeddings]
