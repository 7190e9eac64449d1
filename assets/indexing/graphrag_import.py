"""The Microsoft GraphRAG import as a Dagster asset and job (`import_graphrag`), so an import is a run
in the UI with its metadata like any index; `pipeline import graphrag` launches it (`run_import`).

The asset is outside the `indexing` group: `index_namespace` never runs it, and a later index of the
namespace simply writes the same tables from the namespace's documents. `pipeline import graphrag`
launches the job through `assets.import_launch`."""

from dagster import (
    AssetCheckSpec,
    AssetExecutionContext,
    Config,
    MaterializeResult,
    asset,
    define_asset_job,
)

from assets.indexing.observe import index_context, materialize
from assets.partitions import namespace_partitions
from assets.resources import EmbedderResource, PipelineSettingsResource
from pipeline.index import graphrag_import as graphrag_import_runner
from pipeline.io.manifest import commit_manifest

GROUP = "interop"
JOB = "import_graphrag"


class GraphRAGImportConfig(Config):
    source: str
    """The output folder `graphrag index` wrote (holding documents.parquet, text_units.parquet, ...)."""


@asset(
    partitions_def=namespace_partitions,
    group_name=GROUP,
    description="A Microsoft GraphRAG 2.x/3.x output folder imported as this namespace's tables: offsets "
    "located, ids and fingerprints filled, vectors embedded again, reports kept as written; no LLM call.",
    kinds={"parquet", "lancedb"},
    check_specs=[AssetCheckSpec("every_text_unit_located", asset="graphrag_import")],
)
def graphrag_import(
    context: AssetExecutionContext,
    config: GraphRAGImportConfig,
    pipeline_settings: PipelineSettingsResource,
    embedder: EmbedderResource,
) -> MaterializeResult:
    ctx = index_context(context, pipeline_settings, embedder)
    result = materialize(graphrag_import_runner.run(ctx, config.source))
    commit_manifest(ctx.store)  # the imported tables are one index version: queries move to it at once
    return result


import_graphrag_job = define_asset_job(
    name=JOB,
    selection=[graphrag_import],
    partitions_def=namespace_partitions,
    description="Import a Microsoft GraphRAG output folder into one namespace (no LLM call).",
)
