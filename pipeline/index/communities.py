"""communities: hierarchical Leiden over the whole graph (every component; edgeless entities grouped
by document), levels 0..n with parent/children (`pipeline.ops.communities`), plus a GraphML export."""

from __future__ import annotations

import json
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from pipeline.core import schema
from pipeline.core.location import Location
from pipeline.index.context import IndexContext
from pipeline.index.graph_view import write_graph_view
from pipeline.index.report import Check, Json, Markdown, PathValue, StageReport, md_table
from pipeline.io.store import NamespaceStore
from pipeline.ops.communities import build_communities, check_communities, level_summary, size_histogram
from pipeline.ops.graph_export import write_graphml


@dataclass
class CommunitiesSummary:
    communities: int
    levels: dict[int, dict[str, float]]
    problems: dict[str, int]
    by_method: dict[str, int]
    graphml_path: Location
    duration_s: float = 0.0
    extra: dict[str, Any] = field(default_factory=dict)


def graphml_path(store: NamespaceStore) -> Location:
    return store.location(schema.GRAPHML_EXPORT)


def index_communities(store: NamespaceStore, settings: Any) -> CommunitiesSummary:
    """entities + relationships -> communities, and the GraphML export."""
    started = time.monotonic()
    entities = store.read_table(schema.ENTITIES)
    relationships = store.read_table(schema.RELATIONSHIPS)
    communities = build_communities(
        entities,
        relationships,
        max_cluster_size=settings.max_cluster_size,
        seed=settings.leiden_seed,
        resolution=settings.leiden_resolution,
    )
    store.write_table(schema.COMMUNITIES, communities)
    with store.open_output(schema.GRAPHML_EXPORT) as sink:
        write_graphml(sink, entities, relationships, communities)
    write_graph_view(store, built=(entities, relationships, communities))
    return CommunitiesSummary(
        communities=communities.num_rows,
        levels=level_summary(communities),
        problems=check_communities(communities, set(entities.column("id").to_pylist())),
        by_method=dict(Counter(communities.column("method").to_pylist())),
        graphml_path=graphml_path(store),
        duration_s=round(time.monotonic() - started, 3),
    )


def run(ctx: IndexContext) -> StageReport:
    settings, store = ctx.settings, ctx.store
    summary = index_communities(store, settings)
    p = summary.problems
    level_rows = [{"level": lv, **v} for lv, v in summary.levels.items()]
    histogram = size_histogram(store.read_table(schema.COMMUNITIES, ["level", "size"]))
    return StageReport(
        rows=summary.communities,
        metadata={
            "communities": summary.communities,
            "communities_per_level": Json({str(r["level"]): r["communities"] for r in level_rows}),
            "size_histogram": Markdown(
                "Communities per level by size (entities):\n\n"
                + md_table(histogram, list(histogram[0]) if histogram else ["level"])
            ),
            "levels": len(summary.levels),
            "by_method": Json(summary.by_method),
            "sizes_per_level": Markdown(
                md_table(
                    level_rows, ["level", "communities", "entities", "min_size", "median_size", "max_size"]
                )
            ),
            "sizes_per_level_json": Json(json.loads(json.dumps(summary.levels))),
            "max_cluster_size": settings.max_cluster_size,
            "leiden_seed": settings.leiden_seed,
            "graphml": PathValue(str(summary.graphml_path)),
            "graph_view": PathValue(str(store.location(schema.GRAPH_VIEW))),
        },
        checks=[
            Check.of_counts(
                "every_entity_in_one_community_per_level",
                {k: p[k] for k in ("entities_without_community", "entities_in_two_communities_at_a_level")},
            ),
            Check.of_counts("no_empty_community", {"empty_communities": p["empty_communities"]}),
            Check.of_counts(
                "levels_nest",
                {k: p[k] for k in ("broken_parent_links", "children_not_a_partition", "roots_below_level_0")},
            ),
        ],
        duration_s=summary.duration_s,
    )
