"""Graph assets: base text units -> extracted graph -> entities / relationships -> claims, communities;
and the final `text_units` with the ids of what was found in each."""

from collections.abc import Iterator

from dagster import (
    AssetCheckSpec,
    AssetExecutionContext,
    AssetKey,
    AssetSpec,
    MaterializeResult,
    asset,
    multi_asset,
)

from assets.indexing.blocking import blocking_specs
from assets.indexing.observe import index_context, materialize
from assets.indexing.stages import deps, group
from assets.partitions import namespace_partitions
from assets.resources import LLM_POOL, PipelineSettingsResource
from pipeline.index import claims as claims_runner
from pipeline.index import communities as communities_runner
from pipeline.index import entities_and_relationships as entities_runner
from pipeline.index import extracted_graph as extracted_graph_runner
from pipeline.index import text_units as text_units_runner

ENTITIES = AssetKey("entities")
RELATIONSHIPS = AssetKey("relationships")


@asset(
    partitions_def=namespace_partitions,
    group_name=group("extracted_graph"),
    deps=deps("extracted_graph"),
    description=(
        "Raw entities, relationships and claims per text unit, every gleaning round kept (offline rules "
        "by default, the LLM when configured). Text units whose extraction failed go to failed_extractions."
    ),
    kinds={"parquet"},
    check_specs=[
        AssetCheckSpec("no_failed_extractions", asset="extracted_graph"),
        *blocking_specs("extracted_graph"),
    ],
    pool=LLM_POOL,
)
def extracted_graph(
    context: AssetExecutionContext, pipeline_settings: PipelineSettingsResource
) -> MaterializeResult:
    ctx = index_context(context, pipeline_settings)
    return materialize(extracted_graph_runner.run(ctx), ctx=ctx)


@multi_asset(
    specs=[
        AssetSpec(
            ENTITIES,
            deps=deps("entities"),
            group_name=group("entities"),
            kinds={"parquet"},
            description="Resolved entities (GraphRAG columns + aliases, document_ids).",
        ),
        AssetSpec(
            RELATIONSHIPS,
            deps=deps("relationships"),
            group_name=group("relationships"),
            kinds={"parquet"},
            description="Resolved relationships, weights summed over mentions.",
        ),
    ],
    partitions_def=namespace_partitions,
    can_subset=False,
    pool=LLM_POOL,  # description summaries
    check_specs=[
        AssetCheckSpec("entity_ids_unique", asset=ENTITIES),
        *blocking_specs("entities"),
        *blocking_specs("relationships"),  # relationships_reference_entities, computed by its runner
    ],
)
def entities_and_relationships(
    context: AssetExecutionContext, pipeline_settings: PipelineSettingsResource
) -> Iterator[MaterializeResult]:
    ctx = index_context(context, pipeline_settings)
    reports = entities_runner.run(ctx)
    yield materialize(reports["entities"], ENTITIES, ctx=ctx)
    yield materialize(reports["relationships"], RELATIONSHIPS, ctx=ctx)


@asset(
    partitions_def=namespace_partitions,
    group_name=group("claims"),
    deps=deps("claims"),
    description="Claims (GraphRAG's `covariates` table) with subjects/objects resolved to entities.",
    kinds={"parquet"},
)
def claims(context: AssetExecutionContext, pipeline_settings: PipelineSettingsResource) -> MaterializeResult:
    ctx = index_context(context, pipeline_settings)
    return materialize(claims_runner.run(ctx), ctx=ctx)


@asset(
    partitions_def=namespace_partitions,
    group_name=group("text_units"),
    deps=deps("text_units"),
    description="GraphRAG's final text units: the base text units with the ids of their entities, "
    "relationships and claims.",
    kinds={"parquet"},
)
def text_units(
    context: AssetExecutionContext, pipeline_settings: PipelineSettingsResource
) -> MaterializeResult:
    return materialize(text_units_runner.run(index_context(context, pipeline_settings)))


@asset(
    partitions_def=namespace_partitions,
    group_name=group("communities"),
    deps=deps("communities"),
    description=(
        "Hierarchical Leiden communities over the whole graph (every component; edgeless entities grouped "
        "by document), levels 0..n with parent/children; plus a GraphML export."
    ),
    kinds={"parquet"},
    check_specs=[
        AssetCheckSpec("every_entity_in_one_community_per_level", asset="communities"),
        AssetCheckSpec("no_empty_community", asset="communities"),
        AssetCheckSpec("levels_nest", asset="communities"),
    ],
)
def communities(
    context: AssetExecutionContext, pipeline_settings: PipelineSettingsResource
) -> MaterializeResult:
    ctx = index_context(context, pipeline_settings)
    return materialize(communities_runner.run(ctx), ctx=ctx)


graph_assets = [extracted_graph, entities_and_relationships, claims, text_units, communities]
