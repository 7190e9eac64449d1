"""The last indexing asset: commits the run's tables as the namespace's next index version (runner:
`pipeline.index.version`). The stage table makes it read every other indexing asset's leaves, so it
runs only when all of them succeeded."""

from dagster import AssetExecutionContext, MaterializeResult, asset

from assets.indexing.observe import index_context, materialize
from assets.indexing.stages import deps, group
from assets.partitions import namespace_partitions
from assets.resources import PipelineSettingsResource
from pipeline.index import version as version_runner


@asset(
    partitions_def=namespace_partitions,
    group_name=group("index_version"),
    deps=deps("index_version"),
    description="Commits the run's tables as one index version (_manifest.json): queries switch to it at once.",
    kinds={"json"},
)
def index_version(
    context: AssetExecutionContext, pipeline_settings: PipelineSettingsResource
) -> MaterializeResult:
    ctx = index_context(context, pipeline_settings)
    return materialize(version_runner.run(ctx), ctx=ctx)
