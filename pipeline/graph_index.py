"""The graph stages over one namespace's store: read the previous stage's tables, compute, write.

Each function is one indexing step (and one Dagster asset): extraction -> entities/relationships ->
claims (covariates) -> communities. They return what the asset reports as metadata and checks.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa

from pipeline import schema
from pipeline.claims import ClaimStats, build_covariates
from pipeline.communities import build_communities, check_communities, level_summary
from pipeline.extraction import ExtractionFailure, extract_graph, failures_table, from_table, to_table
from pipeline.graph_export import degree_summary, write_graphml
from pipeline.incremental import offline_extraction_config, reuse_extractions, tag_extraction_config
from pipeline.resolution import ResolutionStats, link_text_units, resolve_graph
from pipeline.store import NamespaceStore


@dataclass
class ExtractionSummary:
    method: str
    counts: dict[str, int]
    failures: list[ExtractionFailure]
    duration_s: float
    reused: int = 0  # offline: units taken from the previous extracted_graph (same text, same config)


@dataclass
class EntitiesSummary:
    stats: ResolutionStats
    types: dict[str, int]
    degrees: dict[str, Any]
    dangling_relationships: int  # relationships whose endpoint id is not an entity
    duplicate_entity_ids: int
    duration_s: float


@dataclass
class ClaimsSummary:
    stats: ClaimStats
    types: dict[str, int]
    duration_s: float


@dataclass
class CommunitiesSummary:
    communities: int
    levels: dict[int, dict[str, float]]
    problems: dict[str, int]
    by_method: dict[str, int]
    graphml_path: Path
    duration_s: float = 0.0
    extra: dict[str, Any] = field(default_factory=dict)


def graphml_path(store: NamespaceStore) -> Path:
    return store.root / schema.GRAPHML_EXPORT


def index_extracted_graph(
    store: NamespaceStore,
    settings: Any,
    engine: Any = None,
    progress: Callable[[int, int], None] | None = None,
) -> ExtractionSummary:
    """text_units -> extracted_graph + failed_extractions.

    Offline, a unit extracted before with the same configuration is reused (its id fixes its text);
    the LLM path asks again and the LLM cache answers every call made before, crash or not."""
    units = store.read_table(schema.TEXT_UNITS)
    if engine is not None and getattr(engine, "kind", "offline") != "offline":
        run = extract_graph(units, settings, engine, progress=progress)
        table = to_table(run.units)
        reused = {}
    else:
        config = offline_extraction_config(settings)
        previous = (
            store.read_table(schema.EXTRACTED_GRAPH) if store.has_table(schema.EXTRACTED_GRAPH) else None
        )
        ids = units.column("id").to_pylist()
        reused = reuse_extractions(previous, config, ids)
        todo = [i for i, uid in enumerate(ids) if uid not in reused]
        run = extract_graph(units.take(pa.array(todo, pa.int64())), settings, engine, progress=progress)
        fresh = {u.text_unit_id: u for u in run.units}
        run.units = [reused[uid] if uid in reused else fresh[uid] for uid in ids]
        table = tag_extraction_config(to_table(run.units), config)
    store.write_table(schema.EXTRACTED_GRAPH, table)
    store.write_table(schema.FAILED_EXTRACTIONS, failures_table(run.failures))
    return ExtractionSummary(run.method, run.counts(), run.failures, round(run.duration_s, 3), len(reused))


def index_entities(store: NamespaceStore, settings: Any, engine: Any = None) -> EntitiesSummary:
    """extracted_graph -> entities + relationships; text_units gain entity_ids and relationship_ids."""
    started = time.monotonic()
    units = from_table(store.read_table(schema.EXTRACTED_GRAPH))
    graph = resolve_graph(units, settings, engine)
    store.write_table(schema.ENTITIES, graph.entities)
    store.write_table(schema.RELATIONSHIPS, graph.relationships)
    text_units = store.read_table(schema.TEXT_UNITS)
    text_units = link_text_units(text_units, "entity_ids", graph.entities)
    text_units = link_text_units(text_units, "relationship_ids", graph.relationships)
    store.write_table(schema.TEXT_UNITS, text_units)

    ids = graph.entities.column("id").to_pylist()
    known = set(ids)
    rels = graph.relationships.select(["source_id", "target_id"]).to_pylist()
    return EntitiesSummary(
        stats=graph.stats,
        types=dict(Counter(graph.entities.column("type").to_pylist()).most_common()),
        degrees=degree_summary(graph.entities),
        dangling_relationships=sum(
            1 for r in rels if r["source_id"] not in known or r["target_id"] not in known
        ),
        duplicate_entity_ids=len(ids) - len(known),
        duration_s=round(time.monotonic() - started, 3),
    )


def index_claims(store: NamespaceStore) -> ClaimsSummary:
    """extracted_graph + entities -> covariates; text_units gain covariate_ids."""
    started = time.monotonic()
    units = from_table(store.read_table(schema.EXTRACTED_GRAPH))
    covariates, stats = build_covariates(units, store.read_table(schema.ENTITIES))
    store.write_table(schema.COVARIATES, covariates)
    text_units = link_text_units(
        store.read_table(schema.TEXT_UNITS), "covariate_ids", covariates, "text_unit_id"
    )
    store.write_table(schema.TEXT_UNITS, text_units)
    return ClaimsSummary(
        stats,
        dict(Counter(covariates.column("type").to_pylist()).most_common()),
        round(time.monotonic() - started, 3),
    )


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
    path = write_graphml(graphml_path(store), entities, relationships, communities)
    return CommunitiesSummary(
        communities=communities.num_rows,
        levels=level_summary(communities),
        problems=check_communities(communities, set(entities.column("id").to_pylist())),
        by_method=dict(Counter(communities.column("method").to_pylist())),
        graphml_path=path,
        duration_s=round(time.monotonic() - started, 3),
    )
