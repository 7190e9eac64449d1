"""Graph assets: text units -> extracted graph -> entities / relationships -> claims, communities."""

import json
import time
from collections.abc import Iterator
from typing import Any

from dagster import (
    AssetCheckResult,
    AssetCheckSeverity,
    AssetCheckSpec,
    AssetDep,
    AssetExecutionContext,
    AssetKey,
    AssetSpec,
    MaterializeResult,
    MetadataValue,
    asset,
    multi_asset,
)

from assets.indexing.assets import BY_NAMESPACE, GROUP, _md_table, text_units
from assets.indexing.observe import standard_metadata
from assets.partitions import namespace_partitions
from assets.resources import PipelineSettingsResource
from pipeline import schema
from pipeline.communities import size_histogram
from pipeline.graph_index import index_claims, index_communities, index_entities, index_extracted_graph
from pipeline.llm import make_engine

ENTITIES = AssetKey("entities")
RELATIONSHIPS = AssetKey("relationships")


def _engine_label(engine: Any) -> str:
    return getattr(engine, "kind", "offline")


@asset(
    partitions_def=namespace_partitions,
    group_name=GROUP,
    deps=[text_units, AssetDep("extracted_graph_shard", partition_mapping=BY_NAMESPACE)],
    description=(
        "Raw entities, relationships and claims per text unit, every gleaning round kept (offline rules "
        "by default, the LLM when configured). Text units whose extraction failed go to failed_extractions."
    ),
    kinds={"parquet"},
    check_specs=[AssetCheckSpec("no_failed_extractions", asset="extracted_graph")],
)
def extracted_graph(
    context: AssetExecutionContext, pipeline_settings: PipelineSettingsResource
) -> MaterializeResult:
    started = time.monotonic()
    settings = pipeline_settings.get_settings()
    store = pipeline_settings.store(context.partition_key)
    engine = make_engine(settings)
    context.log.info(
        f"extracting the graph of {context.partition_key!r} with the {_engine_label(engine)} engine"
    )

    def progress(done: int, total: int) -> None:
        context.log.info(f"extracted {done}/{total} text units")

    summary = index_extracted_graph(store, settings, engine, progress=progress)
    for f in summary.failures[:20]:
        context.log.warning(f"text unit {f.text_unit_id[:12]} round {f.round}: {f.error_type}: {f.reason}")
    failed = [f.__dict__ for f in summary.failures]
    return MaterializeResult(
        metadata={
            **standard_metadata(started, summary.counts["text_units"], engine.usage),
            "method": summary.method,
            **summary.counts,
            "reused_offline_extractions": summary.reused,
            "failed_extractions": len(summary.failures),
            "entity_types": ", ".join(settings.entity_types),
            "max_gleanings": settings.extraction_max_gleanings,
            "failures": MetadataValue.md(
                _md_table(failed, ["text_unit_id", "document_id", "round", "error_type", "reason"])
                if failed
                else "No failures."
            ),
        },
        check_results=[
            AssetCheckResult(
                check_name="no_failed_extractions",
                passed=not summary.failures,
                severity=AssetCheckSeverity.WARN,
                metadata={"failed_extractions": len(summary.failures)},
            )
        ],
    )


@multi_asset(
    specs=[
        AssetSpec(
            ENTITIES,
            deps=[extracted_graph],
            group_name=GROUP,
            kinds={"parquet"},
            description="Resolved entities (GraphRAG columns + aliases, document_ids); text_units gain entity_ids.",
        ),
        AssetSpec(
            RELATIONSHIPS,
            deps=[extracted_graph],
            group_name=GROUP,
            kinds={"parquet"},
            description="Resolved relationships, weights summed over mentions; text_units gain relationship_ids.",
        ),
    ],
    partitions_def=namespace_partitions,
    can_subset=False,
    check_specs=[
        AssetCheckSpec("entity_ids_unique", asset=ENTITIES),
        AssetCheckSpec("relationships_reference_entities", asset=RELATIONSHIPS),
    ],
)
def entities_and_relationships(
    context: AssetExecutionContext, pipeline_settings: PipelineSettingsResource
) -> Iterator[MaterializeResult]:
    started = time.monotonic()
    settings = pipeline_settings.get_settings()
    store = pipeline_settings.store(context.partition_key)
    engine = make_engine(settings)
    summary = index_entities(store, settings, engine)
    s = summary.stats
    yield MaterializeResult(
        asset_key=ENTITIES,
        metadata={
            **standard_metadata(started, s.entities, engine.usage),
            "entities": s.entities,
            "entity_mentions": s.entity_mentions,
            "fuzzy_merges": s.fuzzy_merges,
            "untyped_mentions_typed_by_name": s.generic_mentions_typed,
            "names_with_several_types": s.keys_with_several_types,
            "inferred_entities": s.inferred_entities,
            "types": MetadataValue.json(summary.types),
            "degree_distribution": MetadataValue.json(summary.degrees),
            "descriptions_kept_as_is": s.summaries.kept_as_is,
            "descriptions_offline": s.summaries.offline,
            "description_llm_calls": s.summaries.llm_calls,
            "description_llm_failures": s.summaries.llm_failures,
        },
        check_results=[
            AssetCheckResult(
                check_name="entity_ids_unique",
                asset_key=ENTITIES,
                passed=summary.duplicate_entity_ids == 0,
                severity=AssetCheckSeverity.ERROR,
                metadata={"duplicates": summary.duplicate_entity_ids},
            )
        ],
    )
    yield MaterializeResult(
        asset_key=RELATIONSHIPS,
        metadata={
            # one resolution step writes both tables: its LLM usage is reported once, on entities
            **standard_metadata(started, s.relationships),
            "relationships": s.relationships,
            "relationship_mentions": s.relationship_mentions,
            "pruned_low_npmi_edges": s.pruned_edges,
            "self_loops_dropped": s.self_loops_dropped,
            "unresolved_endpoints": s.unresolved_endpoints,
        },
        check_results=[
            AssetCheckResult(
                check_name="relationships_reference_entities",
                asset_key=RELATIONSHIPS,
                passed=summary.dangling_relationships == 0,
                severity=AssetCheckSeverity.ERROR,
                metadata={"dangling": summary.dangling_relationships},
            )
        ],
    )


@asset(
    partitions_def=namespace_partitions,
    group_name=GROUP,
    deps=[extracted_graph, ENTITIES],
    description="Claims (GraphRAG's `covariates` table) with subjects/objects resolved to entities; text_units gain covariate_ids.",
    kinds={"parquet"},
)
def claims(context: AssetExecutionContext, pipeline_settings: PipelineSettingsResource) -> MaterializeResult:
    started = time.monotonic()
    summary = index_claims(pipeline_settings.store(context.partition_key))
    s = summary.stats
    return MaterializeResult(
        metadata={
            **standard_metadata(started, s.claims),
            "claims": s.claims,
            "subjects_resolved": s.subjects_resolved,
            "objects": s.objects,
            "objects_resolved": s.objects_resolved,
            "by_status": MetadataValue.json(s.by_status or {}),
            "by_type": MetadataValue.json(summary.types),
        }
    )


@asset(
    partitions_def=namespace_partitions,
    group_name=GROUP,
    deps=[ENTITIES, RELATIONSHIPS],
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
    started = time.monotonic()
    settings = pipeline_settings.get_settings()
    store = pipeline_settings.store(context.partition_key)
    summary = index_communities(store, settings)
    p = summary.problems
    level_rows = [{"level": lv, **v} for lv, v in summary.levels.items()]
    histogram = size_histogram(store.read_table(schema.COMMUNITIES, ["level", "size"]))
    return MaterializeResult(
        metadata={
            **standard_metadata(started, summary.communities),
            "communities": summary.communities,
            "communities_per_level": MetadataValue.json(
                {str(r["level"]): r["communities"] for r in level_rows}
            ),
            "size_histogram": MetadataValue.md(
                "Communities per level by size (entities):\n\n"
                + _md_table(histogram, list(histogram[0]) if histogram else ["level"])
            ),
            "levels": len(summary.levels),
            "by_method": MetadataValue.json(summary.by_method),
            "sizes_per_level": MetadataValue.md(
                _md_table(
                    level_rows, ["level", "communities", "entities", "min_size", "median_size", "max_size"]
                )
            ),
            "sizes_per_level_json": MetadataValue.json(json.loads(json.dumps(summary.levels))),
            "max_cluster_size": settings.max_cluster_size,
            "leiden_seed": settings.leiden_seed,
            "graphml": MetadataValue.path(str(summary.graphml_path)),
        },
        check_results=[
            AssetCheckResult(
                check_name="every_entity_in_one_community_per_level",
                passed=p["entities_without_community"] == 0
                and p["entities_in_two_communities_at_a_level"] == 0,
                severity=AssetCheckSeverity.ERROR,
                metadata={
                    "entities_without_community": p["entities_without_community"],
                    "entities_in_two_communities_at_a_level": p["entities_in_two_communities_at_a_level"],
                },
            ),
            AssetCheckResult(
                check_name="no_empty_community",
                passed=p["empty_communities"] == 0,
                severity=AssetCheckSeverity.ERROR,
                metadata={"empty_communities": p["empty_communities"]},
            ),
            AssetCheckResult(
                check_name="levels_nest",
                passed=p["broken_parent_links"] == 0
                and p["children_not_a_partition"] == 0
                and p["roots_below_level_0"] == 0,
                severity=AssetCheckSeverity.ERROR,
                metadata={
                    "broken_parent_links": p["broken_parent_links"],
                    "children_not_a_partition": p["children_not_a_partition"],
                    "roots_below_level_0": p["roots_below_level_0"],
                },
            ),
        ],
    )


graph_assets = [extracted_graph, entities_and_relationships, claims, communities]
