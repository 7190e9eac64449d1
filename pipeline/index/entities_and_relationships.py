"""entities and relationships (one Dagster multi-asset): the extracted graph resolved into entities and
relationships (`pipeline.ops.resolution`); the final `text_units` take their entity and relationship
ids from these tables (`pipeline.index.text_units`).

Returns one report per asset: `entities` carries the resolution step's LLM usage (descriptions),
`relationships` none, so a sum over the run counts it once.
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from pipeline.core import schema
from pipeline.engine.base import Engine
from pipeline.index.context import IndexContext
from pipeline.index.report import Check, Json, StageReport
from pipeline.io.store import NamespaceStore
from pipeline.ops.descriptions import SummaryReuse
from pipeline.ops.extraction import from_table
from pipeline.ops.graph_export import degree_summary
from pipeline.ops.resolution import (
    ResolutionOptions,
    ResolutionStats,
    lowercase_words,
    resolve_graph,
)


@dataclass
class EntitiesSummary:
    stats: ResolutionStats
    types: dict[str, int]
    degrees: dict[str, Any]
    dangling_relationships: int  # relationships whose endpoint id is not an entity
    duplicate_entity_ids: int
    duration_s: float


def previous_summaries(store: NamespaceStore) -> dict[str, str]:
    """The last resolution's description summaries by digest (none before the first run)."""
    if not store.has_table(schema.DESCRIPTION_SUMMARIES):
        return {}
    table = store.read_table(schema.DESCRIPTION_SUMMARIES)
    return dict(zip(table.column("digest").to_pylist(), table.column("summary").to_pylist(), strict=True))


def index_entities(store: NamespaceStore, settings: Any, engine: Engine) -> EntitiesSummary:
    """extracted_graph -> entities + relationships."""
    started = time.monotonic()
    units = from_table(store.read_table(schema.EXTRACTED_GRAPH))
    options = ResolutionOptions.from_settings(settings)
    # the corpus's lower-case words: read only for the opt-in common-word rule
    lowercase = (
        lowercase_words(store.read_table(schema.BASE_TEXT_UNITS, ["text"]).column("text").to_pylist())
        if options.drop_common_words
        else None
    )
    reuse = SummaryReuse(previous_summaries(store))
    graph = resolve_graph(units, options, engine, lowercase, reuse)
    store.write_table(schema.ENTITIES, graph.entities)
    store.write_table(schema.RELATIONSHIPS, graph.relationships)
    # Keyed by content, so whatever run wrote them last, a summary found under a digest is still right.
    store.write_table(
        schema.DESCRIPTION_SUMMARIES,
        pa.table(
            {"digest": list(reuse.current), "summary": list(reuse.current.values())},
            schema=schema.DESCRIPTION_SUMMARIES_SCHEMA,
        ),
    )

    entity_ids = graph.entities.column("id").combine_chunks()
    rels = graph.relationships
    resolved = pc.and_(
        pc.is_in(rels.column("source_id"), value_set=entity_ids),
        pc.is_in(rels.column("target_id"), value_set=entity_ids),
    )
    return EntitiesSummary(
        stats=graph.stats,
        types=dict(Counter(graph.entities.column("type").to_pylist()).most_common()),
        degrees=degree_summary(graph.entities),
        dangling_relationships=rels.num_rows - (pc.sum(resolved).as_py() or 0),
        duplicate_entity_ids=len(entity_ids) - pc.count_distinct(entity_ids).as_py(),
        duration_s=round(time.monotonic() - started, 3),
    )


def run(ctx: IndexContext) -> dict[str, StageReport]:
    summary = index_entities(ctx.store, ctx.settings, ctx.engine_for("descriptions"))
    s = summary.stats
    entities = StageReport(
        rows=s.entities,
        usage=ctx.engine_for("descriptions").usage,
        metadata={
            "entities": s.entities,
            "entity_mentions": s.entity_mentions,
            "fuzzy_merges": s.fuzzy_merges,
            "name_forms_merged": len(s.canonical_merges),
            "common_words_dropped": s.common_words_dropped,
            "name_form_merges": Json(s.canonical_merges[:200]),
            "untyped_mentions_typed_by_name": s.generic_mentions_typed,
            "names_with_several_types": s.keys_with_several_types,
            "inferred_entities": s.inferred_entities,
            "types": Json(summary.types),
            "degree_distribution": Json(summary.degrees),
            "descriptions_kept_as_is": s.summaries.kept_as_is,
            "descriptions_offline": s.summaries.offline,
            "descriptions_reused": s.summaries.reused,
            "description_llm_calls": s.summaries.llm_calls,
            "description_llm_failures": s.summaries.llm_failures,
        },
        checks=[Check.of_counts("entity_ids_unique", {"duplicates": summary.duplicate_entity_ids})],
        duration_s=summary.duration_s,
    )
    relationships = StageReport(
        rows=s.relationships,
        metadata={
            "relationships": s.relationships,
            "relationship_mentions": s.relationship_mentions,
            "pruned_low_npmi_edges": s.pruned_edges,
            "self_loops_dropped": s.self_loops_dropped,
            "unresolved_endpoints": s.unresolved_endpoints,
            "relationships_to_common_words": s.relationships_to_common_words,
        },
        checks=[
            Check.of_counts("relationships_reference_entities", {"dangling": summary.dangling_relationships})
        ],
        duration_s=summary.duration_s,
    )
    return {"entities": entities, "relationships": relationships}
